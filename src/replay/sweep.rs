//! Sweeps: a grid over one or two of a rule's parameters (`capacity=10,20,40`, `limit=...`,
//! `refill_per_sec=...`, `window_ms=...`), each configuration replayed beside the others on
//! the same log in the same pass.
//!
//! Parameters are set through the rule's serde form, so any algorithm's parameters can be
//! swept, including ones added later, and each configuration is validated as a rule is.

use crate::rule::{Algorithm, Rule};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One axis of a grid.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAxis {
    /// A parameter of the rule's algorithm, `refill_per_sec` or `refill-per-sec`.
    pub param: String,
    pub values: Vec<f64>,
}

impl std::str::FromStr for SweepAxis {
    type Err = String;

    /// `PARAM=V1,V2,...`
    fn from_str(s: &str) -> Result<Self, String> {
        let (param, values) = s
            .split_once('=')
            .ok_or_else(|| format!("invalid --sweep {s:?}: write PARAM=V1,V2,..."))?;
        let values = values
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("invalid --sweep {s:?}: {v:?} is not a number"))
            })
            .collect::<Result<Vec<f64>, String>>()?;
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
pub fn grid(base: &Rule, axes: &[SweepAxis]) -> Result<Vec<GridPoint>, String> {
    if axes.len() > 2 {
        return Err("invalid --sweep: a grid has one or two parameters".into());
    }
    let mut points = vec![(BTreeMap::new(), *base.algorithm())];
    for axis in axes {
        if axis.values.is_empty() {
            return Err(format!(
                "invalid --sweep {}: give at least one value",
                axis.param
            ));
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
        return Err(format!(
            "invalid --sweep: {} configurations; at most {MAX_POINTS}",
            points.len()
        ));
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
                .map_err(|e| format!("invalid --sweep configuration {params:?}: {e}"))?;
            Ok(GridPoint { params, rule })
        })
        .collect()
}

/// `algorithm` with `param` set to `value`, validated.
fn with_param(algorithm: &Algorithm, param: &str, value: f64) -> Result<Algorithm, String> {
    let mut json = serde_json::to_value(algorithm).map_err(|e| e.to_string())?;
    let fields = json
        .as_object_mut()
        .ok_or("a rule serializes to an object")?;
    if param == "algorithm" || !fields.contains_key(param) {
        let known: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "algorithm")
            .collect();
        return Err(format!(
            "invalid --sweep {param}: the {} has {}",
            algorithm.kind().cli_name(),
            known.join(", ")
        ));
    }
    let number = if value.fract() == 0.0 && (0.0..1e15).contains(&value) {
        serde_json::Value::from(value as u64)
    } else {
        serde_json::Value::from(value)
    };
    fields.insert(param.to_string(), number);
    let changed: Algorithm = serde_json::from_value(json)
        .map_err(|e| format!("invalid --sweep {param}={value}: {e}"))?;
    Rule::new("sweep", changed).map_err(|e| format!("invalid --sweep {param}={value}: {e}"))?;
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
        assert!(err.contains("capacity, refill_per_sec"), "{err}");
        let err = grid(&base, &["capacity=0".parse().expect("axis")]).expect_err("zero");
        assert!(err.contains("capacity"), "{err}");
        let err = grid(&base, &["capacity=2.5".parse().expect("axis")]).expect_err("fraction");
        assert!(err.contains("capacity=2.5"), "{err}");
        assert!("capacity".parse::<SweepAxis>().is_err());
        assert!("capacity=a".parse::<SweepAxis>().is_err());
    }
}
