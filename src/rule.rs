//! Rules: a name and an algorithm with its parameters, validated once at construction.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The largest capacity or limit we accept. Beyond it a limit means "unlimited" and belongs
/// nowhere near a rate limiter (and Lua's doubles would start to lose whole units).
pub const MAX_LIMIT: u64 = 1_000_000_000;
/// The slowest refill we accept: one token in about 17 minutes. Slower buckets would keep
/// their keys for days (the TTL is twice the time to refill).
pub const MIN_REFILL_PER_SEC: f64 = 0.001;
/// The fastest refill we accept.
pub const MAX_REFILL_PER_SEC: f64 = 1e9;
/// The longest window we accept: 30 days.
pub const MAX_WINDOW_MS: u64 = 30 * 24 * 3600 * 1000;
/// Rule names appear inside Redis keys and metric labels, so they are kept short and plain.
pub const MAX_RULE_NAME_LEN: usize = 64;
/// Client keys appear inside Redis keys.
pub const MAX_CLIENT_KEY_LEN: usize = 512;

/// Which of the three scripts decides.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum AlgorithmKind {
    TokenBucket,
    SlidingWindowLog,
    FixedWindow,
}

impl AlgorithmKind {
    pub const ALL: [AlgorithmKind; 3] = [
        AlgorithmKind::TokenBucket,
        AlgorithmKind::SlidingWindowLog,
        AlgorithmKind::FixedWindow,
    ];

    /// The name used in metrics labels, CSV and JSON: `token_bucket`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            AlgorithmKind::TokenBucket => "token_bucket",
            AlgorithmKind::SlidingWindowLog => "sliding_window_log",
            AlgorithmKind::FixedWindow => "fixed_window",
        }
    }

    /// The name used on the command line and as a default rule name: `token-bucket`, ...
    pub fn cli_name(self) -> &'static str {
        match self {
            AlgorithmKind::TokenBucket => "token-bucket",
            AlgorithmKind::SlidingWindowLog => "sliding-window-log",
            AlgorithmKind::FixedWindow => "fixed-window",
        }
    }

    /// The short tag inside limiter keys: `tb`, `sw`, `fw`.
    pub fn key_tag(self) -> &'static str {
        match self {
            AlgorithmKind::TokenBucket => "tb",
            AlgorithmKind::SlidingWindowLog => "sw",
            AlgorithmKind::FixedWindow => "fw",
        }
    }
}

impl fmt::Display for AlgorithmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AlgorithmKind {
    type Err = RuleError;

    /// Accepts both spellings: `token-bucket` and `token_bucket`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AlgorithmKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s || k.cli_name() == s)
            .ok_or_else(|| RuleError::UnknownAlgorithm(s.to_string()))
    }
}

/// An algorithm with its parameters.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "algorithm", rename_all = "snake_case")]
pub enum Algorithm {
    /// Holds up to `capacity` tokens, refilled continuously at `refill_per_sec`.
    TokenBucket { capacity: u64, refill_per_sec: f64 },
    /// At most `limit` requests in any `window_ms` sliding window, exactly.
    SlidingWindowLog { limit: u64, window_ms: u64 },
    /// At most `limit` requests per window, the window starting at a client's first request.
    FixedWindow { limit: u64, window_ms: u64 },
}

impl Algorithm {
    pub fn kind(&self) -> AlgorithmKind {
        match self {
            Algorithm::TokenBucket { .. } => AlgorithmKind::TokenBucket,
            Algorithm::SlidingWindowLog { .. } => AlgorithmKind::SlidingWindowLog,
            Algorithm::FixedWindow { .. } => AlgorithmKind::FixedWindow,
        }
    }

    /// The most a single request may cost: the capacity or the limit.
    pub fn max_cost(&self) -> u64 {
        match *self {
            Algorithm::TokenBucket { capacity, .. } => capacity,
            Algorithm::SlidingWindowLog { limit, .. } | Algorithm::FixedWindow { limit, .. } => {
                limit
            }
        }
    }

    /// Nominal long-run admissions per second, used to equate algorithms in comparisons.
    pub fn nominal_per_sec(&self) -> f64 {
        match *self {
            Algorithm::TokenBucket { refill_per_sec, .. } => refill_per_sec,
            Algorithm::SlidingWindowLog { limit, window_ms }
            | Algorithm::FixedWindow { limit, window_ms } => {
                limit as f64 * 1000.0 / window_ms as f64
            }
        }
    }

    fn validate(&self) -> Result<(), RuleError> {
        match *self {
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            } => {
                check_limit("capacity", capacity)?;
                if !refill_per_sec.is_finite()
                    || !(MIN_REFILL_PER_SEC..=MAX_REFILL_PER_SEC).contains(&refill_per_sec)
                {
                    return Err(RuleError::InvalidParameter {
                        parameter: "refill_per_sec",
                        reason: format!(
                            "must be a number from {MIN_REFILL_PER_SEC} to {MAX_REFILL_PER_SEC} tokens per second, got {refill_per_sec}"
                        ),
                    });
                }
            }
            Algorithm::SlidingWindowLog { limit, window_ms }
            | Algorithm::FixedWindow { limit, window_ms } => {
                check_limit("limit", limit)?;
                if !(1..=MAX_WINDOW_MS).contains(&window_ms) {
                    return Err(RuleError::InvalidParameter {
                        parameter: "window_ms",
                        reason: format!(
                            "must be from 1 to {MAX_WINDOW_MS} milliseconds (30 days), got {window_ms}"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

fn check_limit(parameter: &'static str, value: u64) -> Result<(), RuleError> {
    if !(1..=MAX_LIMIT).contains(&value) {
        return Err(RuleError::InvalidParameter {
            parameter,
            reason: format!("must be a whole number from 1 to {MAX_LIMIT}, got {value}"),
        });
    }
    Ok(())
}

/// Why a rule, a cost or a client key was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    #[error("invalid {parameter}: {reason}")]
    InvalidParameter {
        parameter: &'static str,
        reason: String,
    },
    #[error("invalid rule name {0:?}: use 1 to 64 letters, digits, '_', '-' or '.'")]
    InvalidName(String),
    #[error("unknown algorithm {0:?}: use token-bucket, sliding-window-log or fixed-window")]
    UnknownAlgorithm(String),
    #[error("invalid cost {cost}: must be from 1 to {max} (the rule's {what}); a larger request could never pass")]
    InvalidCost {
        cost: u64,
        max: u64,
        what: &'static str,
    },
    #[error("invalid client key: {0}")]
    InvalidKey(&'static str),
}

/// A named, validated rule. Construct with [`Rule::new`]; deserializing validates too.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawRule")]
pub struct Rule {
    name: String,
    #[serde(flatten)]
    algorithm: Algorithm,
}

#[derive(Deserialize)]
struct RawRule {
    name: String,
    #[serde(flatten)]
    algorithm: Algorithm,
}

impl TryFrom<RawRule> for Rule {
    type Error = RuleError;
    fn try_from(raw: RawRule) -> Result<Self, RuleError> {
        Rule::new(raw.name, raw.algorithm)
    }
}

impl Rule {
    pub fn new(name: impl Into<String>, algorithm: Algorithm) -> Result<Self, RuleError> {
        let name = name.into();
        validate_rule_name(&name)?;
        algorithm.validate()?;
        Ok(Rule { name, algorithm })
    }

    pub fn token_bucket(
        name: impl Into<String>,
        capacity: u64,
        refill_per_sec: f64,
    ) -> Result<Self, RuleError> {
        Rule::new(
            name,
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            },
        )
    }

    pub fn sliding_window_log(
        name: impl Into<String>,
        limit: u64,
        window_ms: u64,
    ) -> Result<Self, RuleError> {
        Rule::new(name, Algorithm::SlidingWindowLog { limit, window_ms })
    }

    pub fn fixed_window(
        name: impl Into<String>,
        limit: u64,
        window_ms: u64,
    ) -> Result<Self, RuleError> {
        Rule::new(name, Algorithm::FixedWindow { limit, window_ms })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn algorithm(&self) -> &Algorithm {
        &self.algorithm
    }

    pub fn kind(&self) -> AlgorithmKind {
        self.algorithm.kind()
    }

    /// Checks that a request of `cost` could ever pass this rule.
    pub fn check_cost(&self, cost: u64) -> Result<(), RuleError> {
        let max = self.algorithm.max_cost();
        if cost == 0 || cost > max {
            let what = match self.algorithm {
                Algorithm::TokenBucket { .. } => "capacity",
                _ => "limit",
            };
            return Err(RuleError::InvalidCost { cost, max, what });
        }
        Ok(())
    }
}

/// Checks a rule name: 1 to 64 ASCII letters, digits, `_`, `-` or `.` (it lives in Redis keys).
pub fn validate_rule_name(name: &str) -> Result<(), RuleError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_RULE_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(RuleError::InvalidName(name.to_string()))
    }
}

/// Checks a client key (the user id, IP, API key... that a rule limits).
pub fn validate_client_key(key: &str) -> Result<(), RuleError> {
    if key.is_empty() {
        return Err(RuleError::InvalidKey("it is empty"));
    }
    if key.len() > MAX_CLIENT_KEY_LEN {
        return Err(RuleError::InvalidKey("it is longer than 512 bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_parameters_naming_them() {
        let cases: Vec<(Algorithm, &str)> = vec![
            (
                Algorithm::TokenBucket {
                    capacity: 0,
                    refill_per_sec: 1.0,
                },
                "capacity",
            ),
            (
                Algorithm::TokenBucket {
                    capacity: MAX_LIMIT + 1,
                    refill_per_sec: 1.0,
                },
                "capacity",
            ),
            (
                Algorithm::TokenBucket {
                    capacity: 5,
                    refill_per_sec: 0.0,
                },
                "refill_per_sec",
            ),
            (
                Algorithm::TokenBucket {
                    capacity: 5,
                    refill_per_sec: -1.0,
                },
                "refill_per_sec",
            ),
            (
                Algorithm::TokenBucket {
                    capacity: 5,
                    refill_per_sec: f64::NAN,
                },
                "refill_per_sec",
            ),
            (
                Algorithm::TokenBucket {
                    capacity: 5,
                    refill_per_sec: f64::INFINITY,
                },
                "refill_per_sec",
            ),
            (
                Algorithm::SlidingWindowLog {
                    limit: 0,
                    window_ms: 10,
                },
                "limit",
            ),
            (
                Algorithm::SlidingWindowLog {
                    limit: 3,
                    window_ms: 0,
                },
                "window_ms",
            ),
            (
                Algorithm::FixedWindow {
                    limit: 3,
                    window_ms: MAX_WINDOW_MS + 1,
                },
                "window_ms",
            ),
        ];
        for (algorithm, parameter) in cases {
            match Rule::new("r", algorithm) {
                Err(RuleError::InvalidParameter { parameter: p, .. }) => {
                    assert_eq!(p, parameter, "{algorithm:?}")
                }
                other => panic!("{algorithm:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn rejects_bad_names_and_costs() {
        assert!(Rule::token_bucket("", 1, 1.0).is_err());
        assert!(Rule::token_bucket("a{b}", 1, 1.0).is_err());
        assert!(Rule::token_bucket("a:b", 1, 1.0).is_err());
        assert!(Rule::token_bucket("x".repeat(65), 1, 1.0).is_err());
        let rule = Rule::fixed_window("api", 10, 1000).expect("valid");
        assert!(rule.check_cost(10).is_ok());
        assert!(matches!(
            rule.check_cost(11),
            Err(RuleError::InvalidCost { max: 10, .. })
        ));
        assert!(rule.check_cost(0).is_err());
    }

    #[test]
    fn serde_round_trip_validates() {
        let rule = Rule::token_bucket("api", 10, 2.5).expect("valid");
        let json = serde_json::to_string(&rule).expect("serializes");
        assert_eq!(
            json,
            r#"{"name":"api","algorithm":"token_bucket","capacity":10,"refill_per_sec":2.5}"#
        );
        assert_eq!(serde_json::from_str::<Rule>(&json).expect("parses"), rule);
        let bad = r#"{"name":"api","algorithm":"fixed_window","limit":0,"window_ms":10}"#;
        let err = serde_json::from_str::<Rule>(bad).expect_err("limit 0 is refused");
        assert!(err.to_string().contains("limit"), "{err}");
    }

    #[test]
    fn algorithm_names_parse_both_spellings() {
        for kind in AlgorithmKind::ALL {
            assert_eq!(kind.as_str().parse::<AlgorithmKind>(), Ok(kind));
            assert_eq!(kind.cli_name().parse::<AlgorithmKind>(), Ok(kind));
        }
        assert!("leaky".parse::<AlgorithmKind>().is_err());
    }
}
