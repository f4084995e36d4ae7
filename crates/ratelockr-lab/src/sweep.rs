//! Sweeps: a grid over one or two of a rule's parameters (`capacity=10,20,40`, `limit=...`,
//! `refill_per_sec=...`, `window_ms=...`), each configuration decided beside the others on
//! the same traffic: a replayed log in one pass, or a simulated workload in one run. Shared by
//! [`crate::replay`] and [`crate::sim`], with each configuration's result ([`SweepPoint`]) and
//! the smallest configuration that meets a bound ([`SweepChoice`]), said as a sentence.
//!
//! Parameters are set through the rule's serde form, so any algorithm's parameters can be
//! swept, including ones added later, and each configuration is validated as a rule is.

use ratelockr::rule::{Algorithm, Rule, RuleError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One configuration of a sweep, and what it did.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub params: BTreeMap<String, f64>,
    pub rule: String,
    pub requests: u64,
    pub denied: u64,
    pub denied_pct: f64,
    pub keys_denied: u64,
    pub keys_denied_pct: f64,
    pub fail_open: u64,
}

/// What a [`SweepChoice`] bounds: the share of requests denied, or of keys denied at least once.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Requests,
    Keys,
}

impl Bound {
    fn of(self, p: &SweepPoint) -> f64 {
        match self {
            Bound::Requests => p.denied_pct,
            Bound::Keys => p.keys_denied_pct,
        }
    }
}

/// The smallest configuration of a sweep that denies at most `max_pct` (of requests or of
/// keys), or, when none does, the one that denies the least.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepChoice {
    pub params: BTreeMap<String, f64>,
    pub rule: String,
    pub bound: Bound,
    pub max_pct: f64,
    /// What the chosen configuration denied.
    pub pct: f64,
    /// False when no configuration met the bound: `params` then denied the least.
    pub met: bool,
    /// The choice in words, as the CLI prints it and the app shows it.
    pub sentence: String,
}

impl SweepChoice {
    /// Of `points`, the smallest (by the axes' values in `axes` order) that denies at most
    /// `max_pct`; else the one that denies the least. None for an empty sweep.
    pub fn choose(
        points: &[SweepPoint],
        axes: &[SweepAxis],
        bound: Bound,
        max_pct: f64,
    ) -> Option<SweepChoice> {
        let key = |p: &SweepPoint| -> Vec<f64> {
            axes.iter()
                .map(|a| p.params.get(&a.param).copied().unwrap_or(f64::NAN))
                .collect()
        };
        let smaller = |a: &&SweepPoint, b: &&SweepPoint| {
            key(a)
                .iter()
                .zip(key(b).iter())
                .map(|(x, y)| x.total_cmp(y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        };
        let met = points
            .iter()
            .filter(|p| bound.of(p) <= max_pct)
            .min_by(smaller);
        let (point, met) = match met {
            Some(p) => (p, true),
            None => (
                points
                    .iter()
                    .min_by(|a, b| bound.of(a).total_cmp(&bound.of(b)).then(smaller(a, b)))?,
                false,
            ),
        };
        let pct = bound.of(point);
        let of = match bound {
            Bound::Requests => "requests",
            Bound::Keys => "keys",
        };
        let config = axes
            .iter()
            .filter_map(|a| {
                Some(format!(
                    "{} {}",
                    a.param,
                    fmt_value(*point.params.get(&a.param)?)
                ))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let sentence = if met {
            format!(
                "{config} is the smallest that denies at most {} % of {of} ({} %)",
                fmt_pct(max_pct),
                fmt_pct(pct)
            )
        } else {
            format!(
                "no configuration denies at most {} % of {of}; {config} denies the fewest ({} %)",
                fmt_pct(max_pct),
                fmt_pct(pct)
            )
        };
        Some(SweepChoice {
            params: point.params.clone(),
            rule: point.rule.clone(),
            bound,
            max_pct,
            pct,
            met,
            sentence,
        })
    }
}

/// `20`, `2.5`.
fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// `1`, `0.33`, `12.5`: two decimals at most, no trailing zeros.
pub(crate) fn fmt_pct(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// One axis of a grid.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAxis {
    /// A parameter of the rule's algorithm, `refill_per_sec` or `refill-per-sec`.
    pub param: String,
    pub values: Vec<f64>,
}

/// Why an axis or a grid was refused; the message names the `--sweep` and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    #[error("invalid --sweep {axis:?}: write PARAM=V1,V2,...")]
    NoValues { axis: String },
    #[error("invalid --sweep {axis:?}: {value:?} is not a number")]
    NotANumber { axis: String, value: String },
    #[error("invalid --sweep: a grid has one or two parameters")]
    TooManyAxes,
    #[error("invalid --sweep {param}: give at least one value")]
    EmptyAxis { param: String },
    #[error("invalid --sweep: {count} configurations; at most {MAX_POINTS}")]
    TooManyPoints { count: usize },
    /// A parameter the rule's algorithm does not have (`known`: those it has).
    #[error("invalid --sweep {param}: the {algorithm} has {known}")]
    UnknownParam {
        param: String,
        algorithm: &'static str,
        known: String,
    },
    /// A value the parameter cannot take.
    #[error("invalid --sweep {param}={value}: {reason}")]
    InvalidValue {
        param: String,
        value: f64,
        reason: String,
    },
    #[error("invalid --sweep configuration {params:?}: {source}")]
    Configuration {
        params: BTreeMap<String, f64>,
        source: RuleError,
    },
}

impl std::str::FromStr for SweepAxis {
    type Err = SweepError;

    /// `PARAM=V1,V2,...`
    fn from_str(s: &str) -> Result<Self, SweepError> {
        let (param, values) = s.split_once('=').ok_or_else(|| SweepError::NoValues {
            axis: s.to_string(),
        })?;
        let values = values
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| SweepError::NotANumber {
                        axis: s.to_string(),
                        value: v.to_string(),
                    })
            })
            .collect::<Result<Vec<f64>, SweepError>>()?;
        Ok(SweepAxis {
            param: param.trim().replace('-', "_"),
            values,
        })
    }
}

/// The most configurations one sweep may hold.
pub const MAX_POINTS: usize = 100;

/// One configuration: its parameters and its rule.
#[derive(Debug, Clone, PartialEq)]
pub struct GridPoint {
    pub params: BTreeMap<String, f64>,
    pub rule: Rule,
}

/// The grid of `axes` around `base`.
pub fn grid(base: &Rule, axes: &[SweepAxis]) -> Result<Vec<GridPoint>, SweepError> {
    if axes.len() > 2 {
        return Err(SweepError::TooManyAxes);
    }
    let mut points = vec![(BTreeMap::new(), *base.algorithm())];
    for axis in axes {
        if axis.values.is_empty() {
            return Err(SweepError::EmptyAxis {
                param: axis.param.clone(),
            });
        }
        let mut next = Vec::new();
        for (params, algorithm) in &points {
            for &value in &axis.values {
                let mut params = params.clone();
                params.insert(axis.param.clone(), value);
                next.push((params, with_param(algorithm, &axis.param, value)?));
            }
        }
        points = next;
    }
    if points.len() > MAX_POINTS {
        return Err(SweepError::TooManyPoints {
            count: points.len(),
        });
    }
    points
        .into_iter()
        .enumerate()
        .map(|(i, (params, algorithm))| {
            let mut name = base.name().to_string();
            for (p, v) in &params {
                name.push_str(&format!(".{p}-{v}"));
            }
            let rule = Rule::new(name, algorithm)
                .or_else(|_| Rule::new(format!("sweep-{i}"), algorithm))
                .map_err(|source| SweepError::Configuration {
                    params: params.clone(),
                    source,
                })?;
            Ok(GridPoint { params, rule })
        })
        .collect()
}

/// `algorithm` with `param` set to `value`, validated.
fn with_param(algorithm: &Algorithm, param: &str, value: f64) -> Result<Algorithm, SweepError> {
    let invalid = |reason: String| SweepError::InvalidValue {
        param: param.to_string(),
        value,
        reason,
    };
    let mut json = serde_json::to_value(algorithm).map_err(|e| invalid(e.to_string()))?;
    let fields = json
        .as_object_mut()
        .ok_or_else(|| invalid("a rule serializes to an object".into()))?;
    if param == "algorithm" || !fields.contains_key(param) {
        let known: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "algorithm")
            .collect();
        return Err(SweepError::UnknownParam {
            param: param.to_string(),
            algorithm: algorithm.kind().cli_name(),
            known: known.join(", "),
        });
    }
    let number = if value.fract() == 0.0 && (0.0..1e15).contains(&value) {
        serde_json::Value::from(value as u64)
    } else {
        serde_json::Value::from(value)
    };
    fields.insert(param.to_string(), number);
    let changed: Algorithm = serde_json::from_value(json).map_err(|e| invalid(e.to_string()))?;
    Rule::new("sweep", changed).map_err(|e| invalid(e.to_string()))?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_of_one_or_two_parameters() {
        let base = Rule::token_bucket("api", 20, 2.0).expect("valid");
        let axes: Vec<SweepAxis> = ["capacity=10,20", "refill-per-sec=1,2.5"]
            .iter()
            .map(|s| s.parse().expect(s))
            .collect();
        let g = grid(&base, &axes).expect("grid");
        assert_eq!(g.len(), 4);
        assert_eq!(g[1].rule.name(), "api.capacity-10.refill_per_sec-2.5");
        assert_eq!(
            *g[1].rule.algorithm(),
            Algorithm::TokenBucket {
                capacity: 10,
                refill_per_sec: 2.5
            }
        );
        let err = grid(&base, &["limit=1".parse().expect("axis")]).expect_err("no limit");
        assert!(
            err.to_string().contains("capacity, refill_per_sec"),
            "{err}"
        );
        let err = grid(&base, &["capacity=0".parse().expect("axis")]).expect_err("zero");
        assert!(err.to_string().contains("capacity"), "{err}");
        let err = grid(&base, &["capacity=2.5".parse().expect("axis")]).expect_err("fraction");
        assert!(err.to_string().contains("capacity=2.5"), "{err}");
        assert!("capacity".parse::<SweepAxis>().is_err());
        assert!("capacity=a".parse::<SweepAxis>().is_err());
    }

    fn point(capacity: f64, refill: f64, denied_pct: f64) -> SweepPoint {
        SweepPoint {
            params: BTreeMap::from([
                ("capacity".to_string(), capacity),
                ("refill_per_sec".to_string(), refill),
            ]),
            rule: format!("api.{capacity}.{refill}"),
            requests: 1000,
            denied: (denied_pct * 10.0) as u64,
            denied_pct,
            keys_denied: 0,
            keys_denied_pct: 0.0,
            fail_open: 0,
        }
    }

    #[test]
    fn the_choice_is_the_smallest_configuration_within_the_bound() {
        let axes: Vec<SweepAxis> = ["capacity=10,20,50", "refill_per_sec=5,10"]
            .iter()
            .map(|s| s.parse().expect(s))
            .collect();
        let points = [
            point(10.0, 5.0, 30.0),
            point(10.0, 10.0, 12.0),
            point(20.0, 5.0, 4.0),
            point(20.0, 10.0, 0.5),
            point(50.0, 5.0, 0.0),
            point(50.0, 10.0, 0.0),
        ];
        let choice = SweepChoice::choose(&points, &axes, Bound::Requests, 1.0).expect("points");
        assert!(choice.met);
        assert_eq!(choice.rule, "api.20.10");
        assert_eq!(
            choice.sentence,
            "capacity 20, refill_per_sec 10 is the smallest that denies at most 1 % of requests (0.5 %)"
        );
        let none = SweepChoice::choose(&points[..3], &axes, Bound::Requests, 1.0).expect("points");
        assert!(!none.met);
        assert_eq!(
            none.sentence,
            "no configuration denies at most 1 % of requests; capacity 20, refill_per_sec 5 denies the fewest (4 %)"
        );
        assert_eq!(SweepChoice::choose(&[], &axes, Bound::Keys, 1.0), None);
        assert_eq!(fmt_pct(0.333_33), "0.33");
        assert_eq!(fmt_pct(12.5), "12.5");
    }
}
