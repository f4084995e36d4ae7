//! A limit of a policies file (or a rule of a rules file): its name, algorithm and the
//! parameters that algorithm takes, each checked and named by its path.

use super::tree::{list, number, only, required_string, string, table, whole, Fields, Node};
use crate::calendar::{Period, TimeZoneName, WeekStart};
use crate::policy::{Limit, PolicyError};
use crate::rule::{Algorithm, AlgorithmKind};

/// Every algorithm's parameters: a field among them that the limit's algorithm does not take
/// is named as such (a field among none of them, as unknown).
const ALL_PARAMETERS: [&str; 9] = [
    "capacity",
    "refill_per_sec",
    "limit",
    "window_ms",
    "burst",
    "lease_ms",
    "period",
    "time_zone",
    "week_start",
];

/// A limit, or a rule: `{name, algorithm, parameters}`.
pub(super) fn limit(node: &Node) -> Result<Limit, PolicyError> {
    let fields = table(node, "a limit")?;
    let mut known = vec!["name", "algorithm"];
    known.extend(ALL_PARAMETERS);
    only(fields, &known, "a limit")?;
    let name = required_string(fields, "name")?;
    let algorithm = required_string(fields, "algorithm")?;
    let kind: AlgorithmKind = algorithm
        .parse()
        .map_err(|err: crate::rule::RuleError| PolicyError::at("algorithm", err.to_string()))?;
    let takes = kind.parameters();
    for (field_name, _) in fields {
        if ALL_PARAMETERS.contains(&field_name.as_str()) && !takes.contains(&field_name.as_str()) {
            return Err(PolicyError::at(
                field_name.as_str(),
                format!(
                    "{field_name} is not a parameter of {}; it takes {}",
                    kind.cli_name(),
                    takes.join(", ")
                ),
            ));
        }
    }
    let need = |name: &str| -> Result<u64, PolicyError> {
        whole(fields, name)?
            .ok_or_else(|| PolicyError::at(name, format!("is required by {}", kind.cli_name())))
    };
    let algorithm = match kind {
        AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
            capacity: need("capacity")?,
            refill_per_sec: number(fields, "refill_per_sec")?
                .ok_or_else(|| PolicyError::at("refill_per_sec", "is required by token-bucket"))?,
        },
        AlgorithmKind::Gcra => {
            let limit = need("limit")?;
            Algorithm::Gcra {
                limit,
                window_ms: need("window_ms")?,
                burst: whole(fields, "burst")?.unwrap_or(limit),
            }
        }
        AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog {
            limit: need("limit")?,
            window_ms: need("window_ms")?,
        },
        AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter {
            limit: need("limit")?,
            window_ms: need("window_ms")?,
        },
        AlgorithmKind::FixedWindow => Algorithm::FixedWindow {
            limit: need("limit")?,
            window_ms: need("window_ms")?,
        },
        AlgorithmKind::Concurrency => Algorithm::Concurrency {
            limit: need("limit")?,
            lease_ms: whole(fields, "lease_ms")?.unwrap_or(crate::rule::DEFAULT_LEASE_MS),
        },
        AlgorithmKind::Calendar => {
            // A word's parse error names the field and what it takes.
            let word = |name: &str| string(fields, name);
            let at = |name: &'static str| {
                move |err: crate::calendar::CalendarError| PolicyError::at(name, err.reason)
            };
            let period: Period = word("period")?
                .ok_or_else(|| {
                    PolicyError::at(
                        "period",
                        "is required by calendar: hour, day, week or month",
                    )
                })?
                .parse()
                .map_err(at("period"))?;
            Algorithm::Calendar {
                limit: need("limit")?,
                period,
                time_zone: match word("time_zone")? {
                    Some(zone) => TimeZoneName::new(&zone).map_err(at("time_zone"))?,
                    None => TimeZoneName::UTC,
                },
                week_start: match word("week_start")? {
                    Some(day) => day.parse::<WeekStart>().map_err(at("week_start"))?,
                    None => WeekStart::Monday,
                },
            }
        }
    };
    Limit::new(name, algorithm)
}

pub(super) fn limits(fields: Fields<'_>) -> Result<Vec<Limit>, PolicyError> {
    let items = list(fields, "limits")?
        .ok_or_else(|| PolicyError::at("limits", "is required: a policy holds 1 to 8 limits"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, node)| limit(node).map_err(|e| e.under(&format!("limits[{i}]"))))
        .collect()
}
