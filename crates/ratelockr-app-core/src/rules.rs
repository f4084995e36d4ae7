//! The rule book: rules as the user edits them, validated by the engine, kept in order.

use super::book::{Book, Named};
use super::error::{AppError, ErrorCode};
use ratelockr::{Algorithm, AlgorithmKind, Rule};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A rule as the editor holds it: every parameter optional, so a half-filled form still
/// reaches the engine's validation and comes back with a message naming the field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RuleDraft {
    pub name: String,
    pub algorithm: AlgorithmKind,
    #[ts(optional)]
    pub capacity: Option<f64>,
    #[ts(optional)]
    pub refill_per_sec: Option<f64>,
    #[ts(optional)]
    pub limit: Option<f64>,
    #[ts(optional)]
    pub window_ms: Option<f64>,
    /// GCRA only; left out, it is the limit.
    #[ts(optional)]
    pub burst: Option<f64>,
    /// Concurrency only; left out, a minute.
    #[serde(default)]
    #[ts(optional)]
    pub lease_ms: Option<f64>,
    /// Calendar only: hour, day, week or month.
    #[serde(default)]
    #[ts(optional)]
    pub period: Option<String>,
    /// Calendar only: an IANA zone; left out, UTC.
    #[serde(default)]
    #[ts(optional)]
    pub time_zone: Option<String>,
    /// Calendar only: monday (left out) or sunday.
    #[serde(default)]
    #[ts(optional)]
    pub week_start: Option<String>,
}

/// A whole, non-negative number from a form field (JSON numbers arrive as floats).
fn whole(field: &'static str, value: Option<f64>) -> Result<u64, AppError> {
    let value = value.ok_or_else(|| {
        AppError::new(ErrorCode::InvalidRule, format!("{field} is required")).with_field(field)
    })?;
    if !value.is_finite() || value < 0.0 || value.fract() != 0.0 || value > u64::MAX as f64 {
        return Err(AppError::new(
            ErrorCode::InvalidRule,
            format!("invalid {field}: must be a whole number, got {value}"),
        )
        .with_field(field));
    }
    Ok(value as u64)
}

impl RuleDraft {
    /// The engine's rule, or the engine's reason (with the field) why not.
    pub fn to_rule(&self) -> Result<Rule, AppError> {
        let algorithm = match self.algorithm {
            AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
                capacity: whole("capacity", self.capacity)?,
                refill_per_sec: self.refill_per_sec.ok_or_else(|| {
                    AppError::new(ErrorCode::InvalidRule, "refill_per_sec is required")
                        .with_field("refill_per_sec")
                })?,
            },
            AlgorithmKind::Gcra => {
                let limit = whole("limit", self.limit)?;
                Algorithm::Gcra {
                    limit,
                    window_ms: whole("window_ms", self.window_ms)?,
                    burst: match self.burst {
                        Some(_) => whole("burst", self.burst)?,
                        None => limit,
                    },
                }
            }
            AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog {
                limit: whole("limit", self.limit)?,
                window_ms: whole("window_ms", self.window_ms)?,
            },
            AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter {
                limit: whole("limit", self.limit)?,
                window_ms: whole("window_ms", self.window_ms)?,
            },
            AlgorithmKind::FixedWindow => Algorithm::FixedWindow {
                limit: whole("limit", self.limit)?,
                window_ms: whole("window_ms", self.window_ms)?,
            },
            AlgorithmKind::Concurrency => Algorithm::Concurrency {
                limit: whole("limit", self.limit)?,
                lease_ms: match self.lease_ms {
                    Some(_) => whole("lease_ms", self.lease_ms)?,
                    None => ratelockr::rule::DEFAULT_LEASE_MS,
                },
            },
            AlgorithmKind::Calendar => {
                // A blank field is a field left out.
                fn word(value: &Option<String>) -> Option<&str> {
                    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
                }
                let parsed = |field: &'static str, err: ratelockr::calendar::CalendarError| {
                    AppError::new(ErrorCode::InvalidRule, err.to_string()).with_field(field)
                };
                let period = word(&self.period).ok_or_else(|| {
                    AppError::new(
                        ErrorCode::InvalidRule,
                        "period is required: hour, day, week or month",
                    )
                    .with_field("period")
                })?;
                Algorithm::Calendar {
                    limit: whole("limit", self.limit)?,
                    period: period.parse().map_err(|e| parsed("period", e))?,
                    time_zone: match word(&self.time_zone) {
                        Some(zone) => ratelockr::TimeZoneName::new(zone)
                            .map_err(|e| parsed("time_zone", e))?,
                        None => ratelockr::TimeZoneName::UTC,
                    },
                    week_start: match word(&self.week_start) {
                        Some(day) => day.parse().map_err(|e| parsed("week_start", e))?,
                        None => ratelockr::WeekStart::Monday,
                    },
                }
            }
        };
        Ok(Rule::new(self.name.trim(), algorithm)?)
    }
}

/// The user's rules, unique by name, in the order they were created.
pub type RuleBook = Book<Rule>;

impl Named for Rule {
    const WHAT: &'static str = "rule";
    const EXISTS: ErrorCode = ErrorCode::RuleExists;
    const NOT_FOUND: ErrorCode = ErrorCode::RuleNotFound;
    fn name(&self) -> &str {
        Rule::name(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(name: &str, limit: Option<f64>) -> RuleDraft {
        RuleDraft {
            name: name.into(),
            algorithm: AlgorithmKind::FixedWindow,
            capacity: None,
            refill_per_sec: None,
            limit,
            window_ms: Some(1000.0),
            burst: None,
            lease_ms: None,
            period: None,
            time_zone: None,
            week_start: None,
        }
    }

    #[test]
    fn drafts_are_validated_by_the_engine_naming_the_field() {
        assert!(draft("api", Some(10.0)).to_rule().is_ok());
        let err = draft("api", Some(0.0)).to_rule().expect_err("limit 0");
        assert_eq!(
            (err.code, err.field.as_deref()),
            (ErrorCode::InvalidRule, Some("limit"))
        );
        let err = draft("api", None).to_rule().expect_err("missing");
        assert_eq!(err.field.as_deref(), Some("limit"));
        let err = draft("api", Some(2.5)).to_rule().expect_err("fraction");
        assert_eq!(err.field.as_deref(), Some("limit"));
        let err = draft("a b", Some(3.0)).to_rule().expect_err("name");
        assert_eq!(err.field.as_deref(), Some("name"));
    }

    #[test]
    fn names_stay_unique_through_create_rename_and_delete() {
        let mut book = RuleBook::default();
        let rule =
            |n: &str| Rule::fixed_window(n, 5, std::time::Duration::from_secs(1)).expect("valid");
        book.upsert(None, rule("a")).expect("create");
        book.upsert(None, rule("b")).expect("create");
        assert_eq!(
            book.upsert(None, rule("a")).expect_err("dup").code,
            ErrorCode::RuleExists
        );
        assert_eq!(
            book.upsert(Some("b"), rule("a"))
                .expect_err("rename onto a")
                .code,
            ErrorCode::RuleExists
        );
        book.upsert(Some("b"), rule("c")).expect("rename");
        book.upsert(Some("c"), rule("c")).expect("edit in place");
        assert_eq!(
            book.items().iter().map(Rule::name).collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert_eq!(
            book.remove("zz").expect_err("missing").code,
            ErrorCode::RuleNotFound
        );
        book.remove("a").expect("delete");
        assert_eq!(book.items().len(), 1);
    }
}
