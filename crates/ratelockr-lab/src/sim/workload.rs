//! What traffic a simulation offers: a pattern of arrival times, a length, servers and keys.

use super::error::SimError;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Zipf};
use serde::{Deserialize, Serialize};

/// The most requests one run may schedule (records stream, but the run must end).
pub const MAX_REQUESTS: u64 = 10_000_000;
/// The most simulated servers (each is a task with its own Redis connection).
pub const MAX_SERVERS: u32 = 256;
/// The most distinct client keys.
pub const MAX_KEYS: u32 = 1_000_000;
/// The fastest offered rate; beyond it use `rps = 0` (as fast as possible).
pub const MAX_RPS: f64 = 1_000_000.0;
/// The longest run: one hour.
pub const MAX_DURATION_MS: u64 = 3_600_000;

/// How arrivals are spaced in time, around the workload's `rps`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    /// Evenly spaced at `rps`.
    Constant,
    /// `size` requests at once, every `every_ms` (ignores `rps`).
    Burst { size: u32, every_ms: u64 },
    /// The rate moves linearly from `rps` to `to_rps` over the run.
    Ramp { to_rps: f64 },
    /// `rps`, times `multiplier` from `start_ms` for `length_ms`.
    Spike {
        multiplier: f64,
        start_ms: u64,
        length_ms: u64,
    },
    /// Poisson arrivals: exponential gaps with mean 1 / `rps`.
    Poisson,
}

/// Which client each request comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KeyDistribution {
    /// Every key equally likely.
    Uniform { keys: u32 },
    /// Zipf-skewed: key 0 is the hot one; `exponent` around 1 to 2.
    Zipf { keys: u32, exponent: f64 },
}

impl KeyDistribution {
    pub fn keys(&self) -> u32 {
        match *self {
            KeyDistribution::Uniform { keys } | KeyDistribution::Zipf { keys, .. } => keys,
        }
    }
}

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Length {
    Requests(u64),
    DurationMs(u64),
}

/// One workload: the same for every algorithm it is run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub pattern: Pattern,
    /// Offered requests per second, held open-loop. 0 means as fast as possible: each server
    /// sends its next request when the previous one is answered.
    pub rps: f64,
    pub length: Length,
    /// Simulated app instances, each with its own Redis connection, sending at once.
    pub servers: u32,
    pub keys: KeyDistribution,
    /// What each request costs.
    pub cost: u64,
    /// Seeds Poisson gaps and key choices, so a run can be repeated.
    pub seed: u64,
    /// A retry storm: denied clients try again after the denial's `retry_after_ms`.
    #[serde(default)]
    pub retry: Option<Retry>,
    /// How long an admitted request is in flight: under a concurrency limit it holds its
    /// lease that long, then gives it back (`None`: it gives it back as soon as it is decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<super::hold::Hold>,
}

/// How denied clients retry: after exactly the wait the limiter named (the synchronised
/// retries that make a storm), at most `max_attempts` times per request.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retry {
    pub max_attempts: u32,
}

/// The most retries per request: beyond it a retry storm is just a longer run.
pub const MAX_RETRY_ATTEMPTS: u32 = 10;

impl Default for Workload {
    fn default() -> Self {
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
    }
}

fn invalid(parameter: &'static str, reason: impl Into<String>) -> SimError {
    SimError::InvalidWorkload {
        parameter,
        reason: reason.into(),
    }
}

fn check_rate(parameter: &'static str, rps: f64, zero_ok: bool) -> Result<(), SimError> {
    let ok = rps.is_finite() && rps <= MAX_RPS && (rps > 0.0 || (zero_ok && rps == 0.0));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            parameter,
            format!(
                "must be a number from {} to {MAX_RPS}, got {rps}",
                if zero_ok {
                    "0 (as fast as possible)"
                } else {
                    "more than 0"
                }
            ),
        ))
    }
}

impl Workload {
    /// Checks every parameter, naming the first bad one.
    pub fn validate(&self) -> Result<(), SimError> {
        check_rate("rps", self.rps, true)?;
        match self.length {
            Length::Requests(n) if !(1..=MAX_REQUESTS).contains(&n) => {
                return Err(invalid(
                    "requests",
                    format!("must be from 1 to {MAX_REQUESTS}, got {n}"),
                ))
            }
            Length::DurationMs(ms) if !(1..=MAX_DURATION_MS).contains(&ms) => {
                return Err(invalid(
                    "duration_ms",
                    format!("must be from 1 to {MAX_DURATION_MS} (one hour), got {ms}"),
                ))
            }
            _ => {}
        }
        if !(1..=MAX_SERVERS).contains(&self.servers) {
            return Err(invalid(
                "servers",
                format!("must be from 1 to {MAX_SERVERS}, got {}", self.servers),
            ));
        }
        let keys = self.keys.keys();
        if !(1..=MAX_KEYS).contains(&keys) {
            return Err(invalid(
                "keys",
                format!("must be from 1 to {MAX_KEYS}, got {keys}"),
            ));
        }
        if let KeyDistribution::Zipf { exponent, .. } = self.keys {
            if !exponent.is_finite() || exponent <= 0.0 || exponent > 10.0 {
                return Err(invalid(
                    "zipf_exponent",
                    format!("must be more than 0 and at most 10, got {exponent}"),
                ));
            }
        }
        if let Some(retry) = self.retry {
            if !(1..=MAX_RETRY_ATTEMPTS).contains(&retry.max_attempts) {
                return Err(invalid(
                    "retry_attempts",
                    format!(
                        "must be from 1 to {MAX_RETRY_ATTEMPTS} retries per request, got {}",
                        retry.max_attempts
                    ),
                ));
            }
        }
        if self.cost == 0 {
            return Err(invalid("cost", "must be at least 1"));
        }
        if self.rps == 0.0 && self.pattern != Pattern::Constant {
            return Err(invalid(
                "rps",
                "0 (as fast as possible) only goes with the constant pattern",
            ));
        }
        match self.pattern {
            Pattern::Constant | Pattern::Poisson => {}
            Pattern::Burst { size, every_ms } => {
                if !(1..=1_000_000).contains(&size) {
                    return Err(invalid(
                        "burst_size",
                        format!("must be from 1 to 1000000, got {size}"),
                    ));
                }
                if !(1..=MAX_DURATION_MS).contains(&every_ms) {
                    return Err(invalid(
                        "burst_every_ms",
                        format!("must be from 1 to {MAX_DURATION_MS}, got {every_ms}"),
                    ));
                }
            }
            Pattern::Ramp { to_rps } => check_rate("to_rps", to_rps, false)?,
            Pattern::Spike {
                multiplier,
                length_ms,
                ..
            } => {
                if !multiplier.is_finite() || multiplier <= 0.0 || self.rps * multiplier > MAX_RPS {
                    return Err(invalid("spike_multiplier", format!("must be more than 0 and keep the rate under {MAX_RPS}, got {multiplier}")));
                }
                if length_ms == 0 {
                    return Err(invalid("spike_length_ms", "must be at least 1"));
                }
            }
        }
        Ok(())
    }

    /// A one-line description for chart titles and summaries.
    pub fn describe(&self) -> String {
        let rate = if self.rps == 0.0 {
            "as fast as possible".to_string()
        } else {
            format!("{} rps", trim(self.rps))
        };
        let pattern = match &self.pattern {
            Pattern::Constant => format!("constant {rate}"),
            Pattern::Burst { size, every_ms } => format!("bursts of {size} every {every_ms} ms"),
            Pattern::Ramp { to_rps } => format!("ramp {rate} to {} rps", trim(*to_rps)),
            Pattern::Spike {
                multiplier,
                start_ms,
                length_ms,
            } => format!(
                "{rate} with a x{} spike at {start_ms} ms for {length_ms} ms",
                trim(*multiplier)
            ),
            Pattern::Poisson => format!("Poisson {rate}"),
        };
        let length = match self.length {
            Length::Requests(n) => format!("{n} requests"),
            Length::DurationMs(ms) => format!("{} s", trim(ms as f64 / 1000.0)),
        };
        let keys = match self.keys {
            KeyDistribution::Uniform { keys: 1 } => "1 key".to_string(),
            KeyDistribution::Uniform { keys } => format!("{keys} keys"),
            KeyDistribution::Zipf { keys, exponent } => {
                format!("{keys} keys, Zipf {}", trim(exponent))
            }
        };
        let servers = if self.servers == 1 {
            "1 server".to_string()
        } else {
            format!("{} servers", self.servers)
        };
        let retries = match self.retry {
            Some(Retry { max_attempts: 1 }) => ", denied clients retry once".to_string(),
            Some(Retry { max_attempts }) => {
                format!(", denied clients retry up to {max_attempts} times")
            }
            None => String::new(),
        };
        format!("{pattern}, {length}, {servers}, {keys}{retries}")
    }

    /// The arrival times of every request, as offsets from the start in microseconds.
    pub fn schedule(&self) -> Schedule {
        Schedule {
            workload: self.clone(),
            index: 0,
            t_us: 0.0,
            rng: StdRng::seed_from_u64(self.seed),
            total: match self.length {
                Length::Requests(n) => Some(n),
                Length::DurationMs(_) => None,
            },
        }
    }

    /// How many requests the schedule holds (counted without sending anything). None for an
    /// as-fast-as-possible run bounded by time.
    pub fn planned_requests(&self) -> Option<u64> {
        match self.length {
            Length::Requests(n) => Some(n),
            Length::DurationMs(_) if self.rps == 0.0 => None,
            Length::DurationMs(_) => Some(self.schedule().count() as u64),
        }
    }

    /// The average rate the schedule offers: requests over the span they are spread across
    /// (for a constant pattern, `rps`). 0 for as fast as possible.
    pub fn offered_rps(&self) -> f64 {
        if self.rps == 0.0 {
            return 0.0;
        }
        let (count, last_us) = self.schedule().fold((0u64, 0u64), |(n, _), t| (n + 1, t));
        // Each arrival stands for one gap at the base rate; a burst run spans whole periods.
        let span_s = match self.pattern {
            Pattern::Burst { every_ms, .. } => (last_us as f64 / 1e6) + every_ms as f64 / 1000.0,
            _ => last_us as f64 / 1e6 + 1.0 / self.rps,
        };
        count as f64 / span_s
    }

    /// Picks client keys for one server.
    pub fn key_picker(&self, server: u32) -> KeyPicker {
        let rng = StdRng::seed_from_u64(
            self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(server),
        );
        let zipf = match self.keys {
            KeyDistribution::Zipf { keys, exponent } => Zipf::new(f64::from(keys), exponent).ok(),
            KeyDistribution::Uniform { .. } => None,
        };
        KeyPicker {
            rng,
            keys: self.keys.keys(),
            zipf,
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Arrival offsets in microseconds, in order. For `rps = 0` every offset is 0: the servers
/// pace themselves on their replies.
#[derive(Debug)]
pub struct Schedule {
    workload: Workload,
    index: u64,
    t_us: f64,
    rng: StdRng,
    total: Option<u64>,
}

impl Iterator for Schedule {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let w = &self.workload;
        if self.total.is_some_and(|n| self.index >= n) {
            return None;
        }
        let t = match w.pattern {
            Pattern::Burst { size, every_ms } => {
                (self.index / u64::from(size)) as f64 * every_ms as f64 * 1000.0
            }
            _ if w.rps == 0.0 => 0.0,
            _ => self.t_us,
        };
        if let Length::DurationMs(ms) = w.length {
            if t >= ms as f64 * 1000.0 {
                return None;
            }
        }
        // The gap to the next arrival, from the rate at this one.
        let rate = match w.pattern {
            Pattern::Constant | Pattern::Poisson | Pattern::Burst { .. } => w.rps,
            Pattern::Ramp { to_rps } => {
                let progress = match (w.length, self.total) {
                    (_, Some(n)) => self.index as f64 / n as f64,
                    (Length::DurationMs(ms), None) => self.t_us / (ms as f64 * 1000.0),
                    _ => 0.0,
                };
                w.rps + (to_rps - w.rps) * progress.clamp(0.0, 1.0)
            }
            Pattern::Spike {
                multiplier,
                start_ms,
                length_ms,
            } => {
                let ms = self.t_us / 1000.0;
                if ms >= start_ms as f64 && ms < (start_ms + length_ms) as f64 {
                    w.rps * multiplier
                } else {
                    w.rps
                }
            }
        };
        if rate > 0.0 {
            self.t_us += match w.pattern {
                Pattern::Poisson => {
                    Exp::new(rate).map_or(1e6 / rate, |e| e.sample(&mut self.rng) * 1e6)
                }
                _ => 1e6 / rate,
            };
        }
        self.index += 1;
        Some(t as u64)
    }
}

/// Draws client keys: `client-0`, `client-1`, ...; under Zipf `client-0` is the hot one.
#[derive(Debug)]
pub struct KeyPicker {
    rng: StdRng,
    keys: u32,
    zipf: Option<Zipf<f64>>,
}

impl KeyPicker {
    pub fn pick(&mut self) -> u32 {
        match &self.zipf {
            Some(zipf) => (zipf.sample(&mut self.rng) as u32)
                .saturating_sub(1)
                .min(self.keys - 1),
            None => self.rng.random_range(0..self.keys),
        }
    }
}

/// The key name for a key index.
pub fn key_name(index: u32) -> String {
    format!("client-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(pattern: Pattern, rps: f64, length: Length) -> Workload {
        Workload {
            pattern,
            rps,
            length,
            ..Workload::default()
        }
    }

    #[test]
    fn constant_spacing_and_count() {
        let offsets: Vec<u64> = workload(Pattern::Constant, 100.0, Length::Requests(5))
            .schedule()
            .collect();
        assert_eq!(offsets, vec![0, 10_000, 20_000, 30_000, 40_000]);
        let w = workload(Pattern::Constant, 100.0, Length::DurationMs(1000));
        assert_eq!(w.planned_requests(), Some(100));
        assert!(
            (w.offered_rps() - 100.0).abs() < 1e-6,
            "{}",
            w.offered_rps()
        );
        let spike = workload(
            Pattern::Spike {
                multiplier: 10.0,
                start_ms: 0,
                length_ms: 1000,
            },
            100.0,
            Length::DurationMs(2000),
        );
        assert!(
            (spike.offered_rps() - 550.0).abs() < 10.0,
            "{}",
            spike.offered_rps()
        );
    }

    #[test]
    fn bursts_arrive_together() {
        let w = workload(
            Pattern::Burst {
                size: 3,
                every_ms: 500,
            },
            1.0,
            Length::Requests(7),
        );
        let offsets: Vec<u64> = w.schedule().collect();
        assert_eq!(offsets, vec![0, 0, 0, 500_000, 500_000, 500_000, 1_000_000]);
    }

    #[test]
    fn ramp_speeds_up_and_spike_is_denser() {
        let ramp: Vec<u64> = workload(
            Pattern::Ramp { to_rps: 1000.0 },
            10.0,
            Length::Requests(100),
        )
        .schedule()
        .collect();
        let first_gap = ramp[1] - ramp[0];
        let last_gap = ramp[99] - ramp[98];
        assert!(first_gap > 10 * last_gap, "{first_gap} vs {last_gap}");
        let spike = workload(
            Pattern::Spike {
                multiplier: 10.0,
                start_ms: 1000,
                length_ms: 1000,
            },
            100.0,
            Length::DurationMs(3000),
        );
        let offsets: Vec<u64> = spike.schedule().collect();
        let in_spike = offsets
            .iter()
            .filter(|&&t| (1_000_000..2_000_000).contains(&t))
            .count();
        let before = offsets.iter().filter(|&&t| t < 1_000_000).count();
        assert!(in_spike > 8 * before, "{in_spike} vs {before}");
    }

    #[test]
    fn poisson_mean_rate_is_close() {
        let w = workload(Pattern::Poisson, 1000.0, Length::DurationMs(10_000));
        let n = w.planned_requests().expect("bounded");
        assert!((9_000..11_000).contains(&n), "{n}");
    }

    #[test]
    fn zipf_has_a_hot_key() {
        let w = Workload {
            keys: KeyDistribution::Zipf {
                keys: 100,
                exponent: 1.2,
            },
            ..Workload::default()
        };
        let mut picker = w.key_picker(0);
        let mut counts = vec![0u32; 100];
        for _ in 0..10_000 {
            counts[picker.pick() as usize] += 1;
        }
        assert!(
            counts[0] > counts[50] * 10,
            "{} vs {}",
            counts[0],
            counts[50]
        );
    }

    #[test]
    fn rejects_bad_parameters_by_name() {
        let bad = [
            (
                Workload {
                    rps: -1.0,
                    ..Workload::default()
                },
                "rps",
            ),
            (
                Workload {
                    servers: 0,
                    ..Workload::default()
                },
                "servers",
            ),
            (
                Workload {
                    keys: KeyDistribution::Uniform { keys: 0 },
                    ..Workload::default()
                },
                "keys",
            ),
            (
                Workload {
                    length: Length::Requests(0),
                    ..Workload::default()
                },
                "requests",
            ),
            (
                Workload {
                    pattern: Pattern::Burst {
                        size: 0,
                        every_ms: 10,
                    },
                    ..Workload::default()
                },
                "burst_size",
            ),
            (
                Workload {
                    pattern: Pattern::Poisson,
                    rps: 0.0,
                    ..Workload::default()
                },
                "rps",
            ),
        ];
        for (w, name) in bad {
            match w.validate() {
                Err(SimError::InvalidWorkload { parameter, .. }) => assert_eq!(parameter, name),
                other => panic!("{w:?}: {other:?}"),
            }
        }
    }
}
