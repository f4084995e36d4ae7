//! A request's duration as its log wrote it: how long it was in flight, so that a replay holds
//! a concurrency limit's lease that long and says how many requests a key had in flight.
//!
//! A bare number is read in the field's unit: seconds for nginx's `$request_time` (`0.123`, ms
//! precision; the combined and common formats' field, and a JSON or CSV field named
//! `request_time`), milliseconds otherwise, unless [`DurationUnit`] says. A number with a
//! unit (`250ms`, `1.5s`, `800us`) is read in that unit whatever the default.

use super::line_error::LineError;
use serde::{Deserialize, Serialize};

/// The longest duration a line may give: a day (a longer one is a misread field, most likely).
pub const MAX_DURATION_MS: u64 = 86_400_000;

/// The unit of a duration field's bare numbers.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurationUnit {
    Ms,
    S,
}

impl DurationUnit {
    /// The unit a field's bare numbers are in when none is given: seconds for nginx's
    /// `$request_time` (in a combined or common line, or a field of that name), else ms.
    pub fn default_for(clf: bool, field: &str) -> DurationUnit {
        if clf || field.eq_ignore_ascii_case("request_time") {
            DurationUnit::S
        } else {
            DurationUnit::Ms
        }
    }
}

/// A duration field's text (`0.123`, `250`, `250ms`, `1.5s`) as whole milliseconds, rounded
/// to the nearest; `field` names it in the error.
pub fn parse(text: &str, unit: DurationUnit, field: &str) -> Result<u64, LineError> {
    let bad = || LineError::Duration {
        field: field.to_string(),
        value: text.to_string(),
    };
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (
            t,
            match unit {
                DurationUnit::Ms => 1.0,
                DurationUnit::S => 1000.0,
            },
        )
    };
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    let ms = (value * scale).round();
    if !ms.is_finite() || value < 0.0 || ms > MAX_DURATION_MS as f64 {
        return Err(bad());
    }
    Ok(ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bare_numbers_in_the_fields_unit_and_suffixed_ones_in_theirs() {
        use DurationUnit::{Ms, S};
        assert_eq!(parse("0.123", S, "request_time"), Ok(123));
        assert_eq!(parse("12", S, "request_time"), Ok(12_000));
        assert_eq!(parse("250", Ms, "took"), Ok(250));
        assert_eq!(parse("12.6", Ms, "took"), Ok(13));
        assert_eq!(parse("250ms", S, "took"), Ok(250));
        assert_eq!(parse("1.5s", Ms, "took"), Ok(1500));
        assert_eq!(parse("800us", Ms, "took"), Ok(1));
        assert_eq!(parse(" 0 ", Ms, "took"), Ok(0));
        for bad in ["-", "", "-1", "fast", "NaN", "inf", "2d", "86400.5s"] {
            let err = parse(bad, Ms, "took").expect_err(bad).to_string();
            assert!(
                err.contains("\"took\"") && err.contains(&format!("{bad:?}")),
                "{err}"
            );
        }
        assert_eq!(DurationUnit::default_for(true, "x"), S);
        assert_eq!(DurationUnit::default_for(false, "Request_Time"), S);
        assert_eq!(DurationUnit::default_for(false, "duration_ms"), Ms);
    }
}
