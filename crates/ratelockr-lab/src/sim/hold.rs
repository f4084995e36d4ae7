//! How long a simulated request is in flight (`--hold-ms`): a fixed time, a uniform range, or
//! a log-normal spread given by its median and 99th percentile (the long tail slow endpoints
//! have). An admitted request under a concurrency limit holds its lease that long, then gives
//! it back; drawn per request from the run's seed, so a run can be repeated.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The longest hold a request may have: ten minutes.
pub const MAX_HOLD_MS: u64 = 600_000;

/// A request's time in flight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hold {
    /// Exactly this long: `80`.
    Fixed(u64),
    /// Any time from `low` to `high` ms, evenly: `uniform:20..200`.
    Uniform { low: u64, high: u64 },
    /// Log-normal with this median and 99th percentile: `lognormal:median=80,p99=900`.
    LogNormal { median: u64, p99: u64 },
}

/// A `--hold-ms` that is none of the three forms, named with what was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid hold {given:?}: {reason} (use 80, uniform:20..200 or lognormal:median=80,p99=900; milliseconds from 0 to {MAX_HOLD_MS})")]
pub struct HoldError {
    pub given: String,
    pub reason: &'static str,
}

/// 1 / the standard normal's 99th percentile: sigma = ln(p99 / median) / 2.326.
const Z99: f64 = 2.326_347_874;

impl Hold {
    /// The hold of request `seq` of a run seeded `seed`.
    pub fn draw(&self, seed: u64, seq: u64) -> Duration {
        let ms = match *self {
            Hold::Fixed(ms) => ms,
            Hold::Uniform { low, high } => rng(seed, seq).random_range(low..=high),
            Hold::LogNormal { median, p99 } => {
                let mu = (median.max(1) as f64).ln();
                let sigma = ((p99.max(median).max(1) as f64).ln() - mu) / Z99;
                match LogNormal::new(mu, sigma) {
                    Ok(d) => (d.sample(&mut rng(seed, seq)).round() as u64).min(MAX_HOLD_MS),
                    Err(_) => median,
                }
            }
        };
        Duration::from_millis(ms)
    }
}

fn rng(seed: u64, seq: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x686F_6C64)
}

impl FromStr for Hold {
    type Err = HoldError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason| HoldError {
            given: text.to_string(),
            reason,
        };
        let ms = |s: &str| -> Result<u64, HoldError> {
            let v: u64 = s
                .trim()
                .parse()
                .map_err(|_| bad("not a whole number of milliseconds"))?;
            if v > MAX_HOLD_MS {
                return Err(bad("longer than the longest hold"));
            }
            Ok(v)
        };
        let text = text.trim();
        if let Some(range) = text.strip_prefix("uniform:") {
            let (low, high) = range
                .split_once("..")
                .ok_or_else(|| bad("a range is low..high"))?;
            let (low, high) = (ms(low)?, ms(high)?);
            if low > high {
                return Err(bad("the range's low end is above its high end"));
            }
            return Ok(Hold::Uniform { low, high });
        }
        if let Some(params) = text.strip_prefix("lognormal:") {
            let (mut median, mut p99) = (None, None);
            for part in params.split(',') {
                match part.trim().split_once('=') {
                    Some(("median", v)) => median = Some(ms(v)?),
                    Some(("p99", v)) => p99 = Some(ms(v)?),
                    _ => return Err(bad("a log-normal takes median=MS,p99=MS")),
                }
            }
            let (Some(median), Some(p99)) = (median, p99) else {
                return Err(bad("a log-normal takes median=MS,p99=MS"));
            };
            if median == 0 || p99 < median {
                return Err(bad(
                    "the median must be at least 1 and the p99 at least the median",
                ));
            }
            return Ok(Hold::LogNormal { median, p99 });
        }
        Ok(Hold::Fixed(ms(text)?))
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Hold::Fixed(ms) => write!(f, "{ms}"),
            Hold::Uniform { low, high } => write!(f, "uniform:{low}..{high}"),
            Hold::LogNormal { median, p99 } => write!(f, "lognormal:median={median},p99={p99}"),
        }
    }
}

/// Written and read as its text, as the command line takes it.
impl Serialize for Hold {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Hold {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_read_back_as_written_and_mistakes_are_named() {
        for text in ["80", "uniform:20..200", "lognormal:median=80,p99=900", "0"] {
            let hold: Hold = text.parse().expect(text);
            assert_eq!(hold.to_string(), text);
        }
        for bad in [
            "",
            "-5",
            "80ms",
            "uniform:200..20",
            "uniform:20",
            "lognormal:median=80",
            "lognormal:median=900,p99=80",
            "lognormal:mean=80,p99=900",
            "700000",
        ] {
            let err = bad.parse::<Hold>().expect_err(bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn draws_stay_in_range_repeat_with_the_seed_and_a_log_normal_has_its_median_and_tail() {
        let uniform = Hold::Uniform { low: 20, high: 200 };
        for seq in 0..1000 {
            let d = uniform.draw(7, seq).as_millis() as u64;
            assert!((20..=200).contains(&d), "{d}");
            assert_eq!(uniform.draw(7, seq), uniform.draw(7, seq));
        }
        let tail = Hold::LogNormal {
            median: 80,
            p99: 900,
        };
        let mut draws: Vec<u64> = (0..20_000)
            .map(|s| tail.draw(3, s).as_millis() as u64)
            .collect();
        draws.sort_unstable();
        let (median, p99) = (draws[10_000], draws[19_800]);
        assert!((70..=90).contains(&median), "median {median}");
        assert!((750..=1_080).contains(&p99), "p99 {p99}");
        assert_eq!(Hold::Fixed(80).draw(1, 2), Duration::from_millis(80));
    }
}
