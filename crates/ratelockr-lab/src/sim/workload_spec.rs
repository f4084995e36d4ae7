//! A workload as people describe it (the CLI's `simulate` flags, the app's simulator form),
//! turned into a [`Workload`] in one place: every field optional, one set of defaults, and
//! refusals that name the field ([`SimError::InvalidWorkload`]). The fields carry the names the
//! refusals use, so a caller maps a refusal back to its own flag or form field by name.

use super::error::SimError;
use super::workload::{KeyDistribution, Length, Pattern, Retry, Workload};
use serde::{Deserialize, Serialize};

/// The offered rate when none is given.
pub const DEFAULT_RPS: f64 = 100.0;
/// The run's length when neither a number of requests nor a duration is given.
pub const DEFAULT_REQUESTS: u64 = 1000;
/// Simulated app instances when none are given.
pub const DEFAULT_SERVERS: u32 = 4;
/// Distinct client keys when none are given.
pub const DEFAULT_KEYS: u32 = 1;
/// The Zipf exponent when keys are skewed without one (more is more skewed).
pub const DEFAULT_ZIPF_EXPONENT: f64 = 1.2;
/// What a request costs when nothing is said.
pub const DEFAULT_COST: u64 = 1;
/// The seed when none is given, so that a run repeats.
pub const DEFAULT_SEED: u64 = 1;
/// Burst: requests per burst.
pub const DEFAULT_BURST_SIZE: u32 = 50;
/// Burst: milliseconds between bursts.
pub const DEFAULT_BURST_EVERY_MS: u64 = 1000;
/// Ramp: the rate at the end.
pub const DEFAULT_RAMP_TO_RPS: f64 = 1000.0;
/// Spike: how many times the base rate.
pub const DEFAULT_SPIKE_MULTIPLIER: f64 = 10.0;
/// Spike: when it starts, ms after the run starts.
pub const DEFAULT_SPIKE_START_MS: u64 = 2000;
/// Spike: how long it lasts, in ms.
pub const DEFAULT_SPIKE_LENGTH_MS: u64 = 1000;

/// A [`Pattern`] without its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    #[default]
    Constant,
    Burst,
    Ramp,
    Spike,
    Poisson,
}

/// A workload as described: what is not given takes the `DEFAULT_*` above. A pattern's
/// parameters are read only for that pattern.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadSpec {
    pub pattern: PatternKind,
    /// Offered requests per second; 0 = as fast as possible (constant only). The base rate of
    /// every pattern but burst.
    pub rps: Option<f64>,
    pub burst_size: Option<u32>,
    pub burst_every_ms: Option<u64>,
    pub to_rps: Option<f64>,
    pub spike_multiplier: Option<f64>,
    pub spike_start_ms: Option<u64>,
    pub spike_length_ms: Option<u64>,
    /// How many requests to send; or `duration_ms`, not both.
    pub requests: Option<u64>,
    pub duration_ms: Option<u64>,
    pub servers: Option<u32>,
    pub keys: Option<u32>,
    /// Zipf-skewed keys (`client-0` the hot one) instead of uniform.
    pub zipf: bool,
    /// The Zipf exponent, read when `zipf` is on.
    pub zipf_exponent: Option<f64>,
    pub cost: Option<u64>,
    pub seed: Option<u64>,
    /// A retry storm: denied clients retry up to this many times per request.
    pub retry_attempts: Option<u32>,
    /// How long an admitted request is in flight ([`super::hold::Hold`]'s text: `80`,
    /// `uniform:20..200`, `lognormal:median=80,p99=900`).
    pub hold_ms: Option<String>,
}

impl WorkloadSpec {
    /// This description with `pattern`'s kind and every one of its parameters, for a caller
    /// that holds a whole [`Pattern`] (the app's form).
    pub fn with_pattern(mut self, pattern: &Pattern) -> Self {
        self.pattern = match *pattern {
            Pattern::Constant => PatternKind::Constant,
            Pattern::Poisson => PatternKind::Poisson,
            Pattern::Burst { size, every_ms } => {
                self.burst_size = Some(size);
                self.burst_every_ms = Some(every_ms);
                PatternKind::Burst
            }
            Pattern::Ramp { to_rps } => {
                self.to_rps = Some(to_rps);
                PatternKind::Ramp
            }
            Pattern::Spike {
                multiplier,
                start_ms,
                length_ms,
            } => {
                self.spike_multiplier = Some(multiplier);
                self.spike_start_ms = Some(start_ms);
                self.spike_length_ms = Some(length_ms);
                PatternKind::Spike
            }
        };
        self
    }

    /// The workload described, with the defaults filled in and every parameter checked
    /// ([`Workload::validate`]): a refusal names the field.
    pub fn workload(&self) -> Result<Workload, SimError> {
        let pattern = match self.pattern {
            PatternKind::Constant => Pattern::Constant,
            PatternKind::Poisson => Pattern::Poisson,
            PatternKind::Burst => Pattern::Burst {
                size: self.burst_size.unwrap_or(DEFAULT_BURST_SIZE),
                every_ms: self.burst_every_ms.unwrap_or(DEFAULT_BURST_EVERY_MS),
            },
            PatternKind::Ramp => Pattern::Ramp {
                to_rps: self.to_rps.unwrap_or(DEFAULT_RAMP_TO_RPS),
            },
            PatternKind::Spike => Pattern::Spike {
                multiplier: self.spike_multiplier.unwrap_or(DEFAULT_SPIKE_MULTIPLIER),
                start_ms: self.spike_start_ms.unwrap_or(DEFAULT_SPIKE_START_MS),
                length_ms: self.spike_length_ms.unwrap_or(DEFAULT_SPIKE_LENGTH_MS),
            },
        };
        let length = match (self.requests, self.duration_ms) {
            (Some(_), Some(_)) => {
                return Err(SimError::InvalidWorkload {
                    parameter: "requests",
                    reason: "give a number of requests or a duration, not both".into(),
                })
            }
            (Some(n), None) => Length::Requests(n),
            (None, Some(ms)) => Length::DurationMs(ms),
            (None, None) => Length::Requests(DEFAULT_REQUESTS),
        };
        let keys = self.keys.unwrap_or(DEFAULT_KEYS);
        let keys = if self.zipf {
            KeyDistribution::Zipf {
                keys,
                exponent: self.zipf_exponent.unwrap_or(DEFAULT_ZIPF_EXPONENT),
            }
        } else {
            KeyDistribution::Uniform { keys }
        };
        let workload = Workload {
            pattern,
            // A burst schedule has no rate; the engine still wants one above 0 for its checks.
            rps: self.rps.unwrap_or(DEFAULT_RPS),
            length,
            servers: self.servers.unwrap_or(DEFAULT_SERVERS),
            keys,
            cost: self.cost.unwrap_or(DEFAULT_COST),
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            retry: self
                .retry_attempts
                .map(|max_attempts| Retry { max_attempts }),
            hold: match self.hold_ms.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(text) => Some(text.parse::<super::hold::Hold>().map_err(|e| {
                    SimError::InvalidWorkload {
                        parameter: "hold_ms",
                        reason: e.to_string(),
                    }
                })?),
            },
        };
        workload.validate()?;
        Ok(workload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(spec: WorkloadSpec) -> &'static str {
        match spec.workload() {
            Err(SimError::InvalidWorkload { parameter, .. }) => parameter,
            other => panic!("{spec:?}: {other:?}"),
        }
    }

    #[test]
    fn nothing_given_is_the_documented_default() {
        let w = WorkloadSpec::default().workload().expect("valid");
        assert_eq!(
            w,
            Workload {
                pattern: Pattern::Constant,
                rps: 100.0,
                length: Length::Requests(1000),
                servers: 4,
                keys: KeyDistribution::Uniform { keys: 1 },
                cost: 1,
                seed: 1,
                retry: None,
                hold: None,
            }
        );
        let burst = WorkloadSpec {
            pattern: PatternKind::Burst,
            ..WorkloadSpec::default()
        };
        assert_eq!(
            burst.workload().expect("valid").pattern,
            Pattern::Burst {
                size: 50,
                every_ms: 1000
            }
        );
        let zipf = WorkloadSpec {
            zipf: true,
            keys: Some(10),
            ..WorkloadSpec::default()
        };
        assert_eq!(
            zipf.workload().expect("valid").keys,
            KeyDistribution::Zipf {
                keys: 10,
                exponent: 1.2
            }
        );
    }

    #[test]
    fn a_whole_pattern_comes_back_as_it_went_in() {
        let spike = Pattern::Spike {
            multiplier: 3.0,
            start_ms: 10,
            length_ms: 20,
        };
        let w = WorkloadSpec::default()
            .with_pattern(&spike)
            .workload()
            .expect("valid");
        assert_eq!(w.pattern, spike);
    }

    #[test]
    fn refusals_name_the_field() {
        let both = WorkloadSpec {
            requests: Some(10),
            duration_ms: Some(1000),
            ..WorkloadSpec::default()
        };
        assert_eq!(refused(both), "requests");
        let exponent = WorkloadSpec {
            zipf: true,
            zipf_exponent: Some(-1.0),
            ..WorkloadSpec::default()
        };
        assert_eq!(refused(exponent), "zipf_exponent");
        let retries = WorkloadSpec {
            retry_attempts: Some(11),
            ..WorkloadSpec::default()
        };
        assert_eq!(refused(retries), "retry_attempts");
        let size = WorkloadSpec {
            pattern: PatternKind::Burst,
            burst_size: Some(0),
            ..WorkloadSpec::default()
        };
        assert_eq!(refused(size), "burst_size");
    }
}
