//! Rules: a name and an algorithm with its parameters, validated once at construction.

use crate::calendar::{Calendar, CalendarError, Period, TimeZoneName, WeekStart};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The largest capacity or limit we accept. Beyond it a limit means "unlimited" and belongs
/// nowhere near a rate limiter (and Lua's doubles would start to lose whole units).
pub(crate) const MAX_LIMIT: u64 = 1_000_000_000;
/// The slowest refill we accept: one token in about 17 minutes. Slower buckets would keep
/// their keys for days (the TTL is twice the time to refill).
pub(crate) const MIN_REFILL_PER_SEC: f64 = 0.001;
/// The fastest refill we accept.
pub(crate) const MAX_REFILL_PER_SEC: f64 = 1e9;
/// The longest window we accept: 30 days.
pub(crate) const MAX_WINDOW_MS: u64 = 30 * 24 * 3600 * 1000;
/// The largest `burst x window_ms` (GCRA) or `limit x window_ms` (sliding window counter): the
/// scripts count in integer units of 1/limit or 1/window_ms and stay exact below 2^53.
pub(crate) const MAX_EXACT_SPAN: u64 = 1 << 52;
/// Every rule parameter's accepted range, `(name, least, most)`, as the checks below apply
/// it: the app's rule form reads the same table (a generated binding), so its messages and the
/// engine's never disagree about a bound.
pub const PARAMETER_RANGES: [(&str, f64, f64); 6] = [
    ("capacity", 1.0, MAX_LIMIT as f64),
    ("refill_per_sec", MIN_REFILL_PER_SEC, MAX_REFILL_PER_SEC),
    ("limit", 1.0, MAX_LIMIT as f64),
    ("window_ms", 1.0, MAX_WINDOW_MS as f64),
    ("burst", 1.0, MAX_LIMIT as f64),
    ("lease_ms", 1.0, MAX_WINDOW_MS as f64),
];
/// A concurrency limit's lease life when the file leaves `lease_ms` out: a minute.
pub const DEFAULT_LEASE_MS: u64 = 60_000;
/// Rule names appear inside Redis keys and metric labels, so they are kept short and plain.
pub(crate) const MAX_RULE_NAME_LEN: usize = 64;
/// Client keys appear inside Redis keys.
pub(crate) const MAX_CLIENT_KEY_LEN: usize = 512;

/// Which script decides: one of the five rate algorithms, or requests in flight.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum AlgorithmKind {
    TokenBucket,
    Gcra,
    SlidingWindowLog,
    SlidingWindowCounter,
    FixedWindow,
    /// Requests in flight at once, each holding a lease until it ends (`lua/concurrency.lua`).
    Concurrency,
    /// Requests per calendar hour, day, week or month in a time zone (`lua/calendar.lua`).
    Calendar,
}

impl AlgorithmKind {
    /// Every kind: the five rate algorithms, then in flight, then calendar quotas.
    pub const ALL: [AlgorithmKind; 7] = [
        AlgorithmKind::TokenBucket,
        AlgorithmKind::Gcra,
        AlgorithmKind::SlidingWindowLog,
        AlgorithmKind::SlidingWindowCounter,
        AlgorithmKind::FixedWindow,
        AlgorithmKind::Concurrency,
        AlgorithmKind::Calendar,
    ];

    /// The five rate algorithms: what compare mode, the demos and the benchmarks run side by
    /// side on the same traffic (a limit on requests in flight counts something else).
    pub const RATES: [AlgorithmKind; 5] = [
        AlgorithmKind::TokenBucket,
        AlgorithmKind::Gcra,
        AlgorithmKind::SlidingWindowLog,
        AlgorithmKind::SlidingWindowCounter,
        AlgorithmKind::FixedWindow,
    ];

    /// True for a limit on requests in flight, whose admissions hold a lease.
    pub fn is_concurrency(self) -> bool {
        self == AlgorithmKind::Concurrency
    }

    /// The parameters a rule of this algorithm takes, by their field names.
    pub fn parameters(self) -> &'static [&'static str] {
        match self {
            AlgorithmKind::TokenBucket => &["capacity", "refill_per_sec"],
            AlgorithmKind::Gcra => &["limit", "window_ms", "burst"],
            AlgorithmKind::SlidingWindowLog
            | AlgorithmKind::SlidingWindowCounter
            | AlgorithmKind::FixedWindow => &["limit", "window_ms"],
            AlgorithmKind::Concurrency => &["limit", "lease_ms"],
            AlgorithmKind::Calendar => &["limit", "period", "time_zone", "week_start"],
        }
    }

    /// The name used in metrics labels, CSV and JSON: `token_bucket`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            AlgorithmKind::TokenBucket => "token_bucket",
            AlgorithmKind::Gcra => "gcra",
            AlgorithmKind::SlidingWindowLog => "sliding_window_log",
            AlgorithmKind::SlidingWindowCounter => "sliding_window_counter",
            AlgorithmKind::FixedWindow => "fixed_window",
            AlgorithmKind::Concurrency => "concurrency",
            AlgorithmKind::Calendar => "calendar",
        }
    }

    /// The name used on the command line and as a default rule name: `token-bucket`, ...
    pub fn cli_name(self) -> &'static str {
        match self {
            AlgorithmKind::TokenBucket => "token-bucket",
            AlgorithmKind::Gcra => "gcra",
            AlgorithmKind::SlidingWindowLog => "sliding-window-log",
            AlgorithmKind::SlidingWindowCounter => "sliding-window-counter",
            AlgorithmKind::FixedWindow => "fixed-window",
            AlgorithmKind::Concurrency => "concurrency",
            AlgorithmKind::Calendar => "calendar",
        }
    }

    /// The short tag inside limiter keys: `tb`, `gc`, `sw`, `sc`, `fw`, `cc`, `cal`.
    pub fn key_tag(self) -> &'static str {
        match self {
            AlgorithmKind::TokenBucket => "tb",
            AlgorithmKind::Gcra => "gc",
            AlgorithmKind::SlidingWindowLog => "sw",
            AlgorithmKind::SlidingWindowCounter => "sc",
            AlgorithmKind::FixedWindow => "fw",
            AlgorithmKind::Concurrency => "cc",
            AlgorithmKind::Calendar => "cal",
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
    /// `limit` requests per `window_ms` (the period), of which up to `burst` may pass at once:
    /// one theoretical arrival time per client. With `burst = limit`, the token bucket of
    /// capacity `limit` refilling `limit` per window.
    Gcra {
        limit: u64,
        window_ms: u64,
        burst: u64,
    },
    /// At most `limit` requests in any `window_ms` sliding window, exactly.
    SlidingWindowLog { limit: u64, window_ms: u64 },
    /// About `limit` requests per sliding `window_ms`: this window's count plus the previous
    /// window's, weighted by how much of it the sliding window still covers.
    SlidingWindowCounter { limit: u64, window_ms: u64 },
    /// At most `limit` requests per window, the window starting at a client's first request.
    FixedWindow { limit: u64, window_ms: u64 },
    /// At most `limit` requests in flight at once: each admission holds a lease until it is
    /// released, or for `lease_ms` if it never is (a caller that died).
    Concurrency {
        limit: u64,
        #[serde(default = "default_lease_ms")]
        lease_ms: u64,
    },
    /// At most `limit` requests per calendar `period` (hour, day, week, month) in `time_zone`:
    /// a day from local midnight to the next, 23 or 25 hours across a daylight-saving change
    /// ([`crate::calendar`]).
    Calendar {
        limit: u64,
        period: Period,
        #[serde(default)]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        time_zone: TimeZoneName,
        #[serde(default)]
        week_start: WeekStart,
    },
}

fn default_lease_ms() -> u64 {
    DEFAULT_LEASE_MS
}

impl Algorithm {
    pub fn kind(&self) -> AlgorithmKind {
        match self {
            Algorithm::TokenBucket { .. } => AlgorithmKind::TokenBucket,
            Algorithm::Gcra { .. } => AlgorithmKind::Gcra,
            Algorithm::SlidingWindowLog { .. } => AlgorithmKind::SlidingWindowLog,
            Algorithm::SlidingWindowCounter { .. } => AlgorithmKind::SlidingWindowCounter,
            Algorithm::FixedWindow { .. } => AlgorithmKind::FixedWindow,
            Algorithm::Concurrency { .. } => AlgorithmKind::Concurrency,
            Algorithm::Calendar { .. } => AlgorithmKind::Calendar,
        }
    }

    /// The most a single request may cost: the capacity, the burst or the limit. A request
    /// in flight is one lease whatever its cost: any cost up to the largest we accept.
    pub fn max_cost(&self) -> u64 {
        match *self {
            Algorithm::TokenBucket { capacity, .. } => capacity,
            Algorithm::Gcra { burst, .. } => burst,
            Algorithm::SlidingWindowLog { limit, .. }
            | Algorithm::SlidingWindowCounter { limit, .. }
            | Algorithm::FixedWindow { limit, .. }
            | Algorithm::Calendar { limit, .. } => limit,
            Algorithm::Concurrency { .. } => MAX_LIMIT,
        }
    }

    /// What [`Algorithm::max_cost`] is called in this algorithm.
    pub fn max_cost_name(&self) -> &'static str {
        match self {
            Algorithm::TokenBucket { .. } => "capacity",
            Algorithm::Gcra { .. } => "burst",
            _ => "limit",
        }
    }

    /// The most this algorithm can admit (in cost units) for one client key over `span_ms`
    /// from its first request: the summary's `over_admitted` bound and the run chart's
    /// envelope. Token bucket: capacity + refill × span; GCRA: burst + limit per period × span
    /// (the TAT only moves forward, by T per unit, within burst × T of now); the log and the
    /// fixed window: limit per started window; the counter: each aligned window holds at most
    /// `limit` and a span touches at most floor(span / window) + 2 of them. In flight bounds
    /// no count over time (short requests pass without end): `u64::MAX`.
    pub fn max_admitted(&self, span_ms: u64) -> u64 {
        match *self {
            Algorithm::Concurrency { .. } => u64::MAX,
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            } => capacity.saturating_add((refill_per_sec * span_ms as f64 / 1000.0).floor() as u64),
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            } => {
                let refill = u128::from(span_ms) * u128::from(limit) / u128::from(window_ms);
                burst.saturating_add(u64::try_from(refill).unwrap_or(u64::MAX))
            }
            Algorithm::SlidingWindowCounter { limit, window_ms } => {
                limit.saturating_mul(span_ms / window_ms + 2)
            }
            Algorithm::SlidingWindowLog { limit, window_ms }
            | Algorithm::FixedWindow { limit, window_ms } => {
                limit.saturating_mul(span_ms / window_ms + 1)
            }
            // Each window holds at most `limit`; a span touches at most the windows that fit in
            // it at their shortest, and one either side.
            Algorithm::Calendar { limit, period, .. } => {
                limit.saturating_mul(span_ms / period.shortest_ms() + 2)
            }
        }
    }

    /// Nominal long-run admissions per second, used to equate algorithms in comparisons.
    pub fn nominal_per_sec(&self) -> f64 {
        match *self {
            Algorithm::TokenBucket { refill_per_sec, .. } => refill_per_sec,
            Algorithm::Gcra {
                limit, window_ms, ..
            }
            | Algorithm::SlidingWindowLog { limit, window_ms }
            | Algorithm::SlidingWindowCounter { limit, window_ms }
            | Algorithm::FixedWindow { limit, window_ms } => {
                limit as f64 * 1000.0 / window_ms as f64
            }
            // Each slot turned over once a lease life: the rate of requests that hold theirs
            // to the end (shorter ones pass more often).
            Algorithm::Concurrency { limit, lease_ms } => limit as f64 * 1000.0 / lease_ms as f64,
            Algorithm::Calendar { limit, period, .. } => {
                limit as f64 * 1000.0 / period.nominal_ms() as f64
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
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            } => {
                check_limit("limit", limit)?;
                check_window(window_ms)?;
                check_limit("burst", burst)?;
                check_exact("burst", burst, window_ms)?;
            }
            Algorithm::SlidingWindowCounter { limit, window_ms } => {
                check_limit("limit", limit)?;
                check_window(window_ms)?;
                check_exact("limit", limit, window_ms)?;
            }
            Algorithm::SlidingWindowLog { limit, window_ms }
            | Algorithm::FixedWindow { limit, window_ms } => {
                check_limit("limit", limit)?;
                check_window(window_ms)?;
            }
            Algorithm::Concurrency { limit, lease_ms } => {
                check_limit("limit", limit)?;
                if !(1..=MAX_WINDOW_MS).contains(&lease_ms) {
                    return Err(RuleError::InvalidParameter {
                        parameter: "lease_ms",
                        reason: format!(
                            "must be from 1 to {MAX_WINDOW_MS} milliseconds (30 days), got {lease_ms}"
                        ),
                    });
                }
            }
            Algorithm::Calendar { limit, .. } => check_limit("limit", limit)?,
        }
        Ok(())
    }

    /// A calendar quota's calendar: its period, zone and week start.
    pub fn calendar(&self) -> Option<Calendar> {
        match *self {
            Algorithm::Calendar {
                period,
                time_zone,
                week_start,
                ..
            } => Some(Calendar {
                period,
                time_zone,
                week_start,
            }),
            _ => None,
        }
    }
}

/// A window given as a [`Duration`] (the constructors'), in the whole milliseconds the
/// scripts count in: a fraction of a millisecond is refused, not rounded away.
pub(crate) fn window_ms_of(window: Duration) -> Result<u64, RuleError> {
    let ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    if window.subsec_nanos() % 1_000_000 != 0 {
        return Err(RuleError::InvalidParameter {
            parameter: "window_ms",
            reason: format!("must be whole milliseconds, got {window:?}"),
        });
    }
    Ok(ms)
}

/// A lease's life given as a [`Duration`], in whole milliseconds as [`window_ms_of`] takes a
/// window.
pub(crate) fn lease_ms_of(lease: Duration) -> Result<u64, RuleError> {
    window_ms_of(lease).map_err(|err| match err {
        RuleError::InvalidParameter { reason, .. } => RuleError::InvalidParameter {
            parameter: "lease_ms",
            reason,
        },
        other => other,
    })
}

fn check_window(window_ms: u64) -> Result<(), RuleError> {
    if !(1..=MAX_WINDOW_MS).contains(&window_ms) {
        return Err(RuleError::InvalidParameter {
            parameter: "window_ms",
            reason: format!(
                "must be from 1 to {MAX_WINDOW_MS} milliseconds (30 days), got {window_ms}"
            ),
        });
    }
    Ok(())
}

/// The integer scripts' bound: `count x window_ms <= 2^52`.
fn check_exact(parameter: &'static str, count: u64, window_ms: u64) -> Result<(), RuleError> {
    if count.saturating_mul(window_ms) > MAX_EXACT_SPAN {
        let most = MAX_EXACT_SPAN / window_ms;
        return Err(RuleError::InvalidParameter {
            parameter,
            reason: format!(
                "must be at most {most} with window_ms {window_ms} ({parameter} x window_ms <= 2^52 keeps the script's integer arithmetic exact), got {count}"
            ),
        });
    }
    Ok(())
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
    #[error("invalid rule name {0:?}: use 1 to 64 ASCII letters, digits, '_', '-' or '.'")]
    InvalidName(String),
    /// A field the rule's algorithm does not take (a typo, or another algorithm's parameter):
    /// never silently ignored.
    #[error("unknown field {field:?} of a {} rule: it takes name, algorithm, {}", .kind.as_str(), .kind.parameters().join(", "))]
    UnknownField { field: String, kind: AlgorithmKind },
    #[error("unknown algorithm {0:?}: use token-bucket, gcra, sliding-window-log, sliding-window-counter, fixed-window, concurrency or calendar")]
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

impl From<CalendarError> for RuleError {
    fn from(err: CalendarError) -> Self {
        RuleError::InvalidParameter {
            parameter: err.parameter,
            reason: err.reason,
        }
    }
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
    /// Every field, to find one the algorithm does not take.
    #[serde(flatten)]
    fields: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

impl TryFrom<RawRule> for Rule {
    type Error = RuleError;
    fn try_from(raw: RawRule) -> Result<Self, RuleError> {
        let kind = raw.algorithm.kind();
        let unknown = raw.fields.keys().find(|f| {
            !matches!(f.as_str(), "name" | "algorithm") && !kind.parameters().contains(&f.as_str())
        });
        if let Some(field) = unknown {
            return Err(RuleError::UnknownField {
                field: field.clone(),
                kind,
            });
        }
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
        window: Duration,
    ) -> Result<Self, RuleError> {
        let window_ms = window_ms_of(window)?;
        Rule::new(name, Algorithm::SlidingWindowLog { limit, window_ms })
    }

    /// A GCRA rule: `limit` per `window`, bursts of up to `burst`.
    pub fn gcra(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
        burst: u64,
    ) -> Result<Self, RuleError> {
        let window_ms = window_ms_of(window)?;
        Rule::new(
            name,
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            },
        )
    }

    pub fn sliding_window_counter(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
    ) -> Result<Self, RuleError> {
        let window_ms = window_ms_of(window)?;
        Rule::new(name, Algorithm::SlidingWindowCounter { limit, window_ms })
    }

    pub fn fixed_window(
        name: impl Into<String>,
        limit: u64,
        window: Duration,
    ) -> Result<Self, RuleError> {
        let window_ms = window_ms_of(window)?;
        Rule::new(name, Algorithm::FixedWindow { limit, window_ms })
    }

    /// At most `limit` requests in flight at once, each lease living `lease` unless released.
    pub fn concurrency(
        name: impl Into<String>,
        limit: u64,
        lease: Duration,
    ) -> Result<Self, RuleError> {
        let lease_ms = lease_ms_of(lease)?;
        Rule::new(name, Algorithm::Concurrency { limit, lease_ms })
    }

    /// At most `limit` requests per calendar `period` in the IANA zone `time_zone` (weeks
    /// begin on Monday): `Rule::calendar("daily", 2000, Period::Day, "Europe/Berlin")`.
    pub fn calendar(
        name: impl Into<String>,
        limit: u64,
        period: Period,
        time_zone: &str,
    ) -> Result<Self, RuleError> {
        let time_zone = TimeZoneName::new(time_zone)?;
        Rule::new(
            name,
            Algorithm::Calendar {
                limit,
                period,
                time_zone,
                week_start: WeekStart::Monday,
            },
        )
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
            let what = self.algorithm.max_cost_name();
            return Err(RuleError::InvalidCost { cost, max, what });
        }
        Ok(())
    }
}

/// Checks a rule name: 1 to 64 ASCII letters, digits, `_`, `-` or `.` (it lives in Redis keys).
pub(crate) fn validate_rule_name(name: &str) -> Result<(), RuleError> {
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
pub(crate) fn validate_client_key(key: &str) -> Result<(), RuleError> {
    if key.is_empty() {
        return Err(RuleError::InvalidKey("it is empty"));
    }
    if key.len() > MAX_CLIENT_KEY_LEN {
        return Err(RuleError::InvalidKey("it is longer than 512 bytes"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
