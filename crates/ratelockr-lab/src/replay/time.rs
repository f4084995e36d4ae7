//! Timestamps as logs write them: the common log format's `10/Oct/2000:13:55:36 -0700`,
//! RFC 3339, and epoch seconds or milliseconds. Each says whether it has whole-second
//! resolution, which the replay then spreads over the second (see [`super::order`]).

use super::line_error::LineError;

/// A request's time: milliseconds since the epoch, and whether the log gave only the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    pub ms: u64,
    pub whole_second: bool,
}

/// Epoch values at or above this are milliseconds, below it seconds: 10^11 seconds is the
/// year 5138, 10^11 ms is 1973.
const EPOCH_MS_THRESHOLD: f64 = 1e11;

/// `dd/Mon/yyyy:HH:MM:SS ±hhmm`, the common and combined formats' `%t` (without brackets).
/// Hand-parsed: this runs once per line and chrono's format parser would be a third of the
/// parse time.
pub fn parse_clf(s: &str) -> Result<Timestamp, LineError> {
    let b = s.as_bytes();
    let bad = || LineError::ClfTime(s.to_string());
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[20] != b' ' {
        return Err(bad());
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        b[range].iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let month = match &b[3..6] {
        b"Jan" => 1,
        b"Feb" => 2,
        b"Mar" => 3,
        b"Apr" => 4,
        b"May" => 5,
        b"Jun" => 6,
        b"Jul" => 7,
        b"Aug" => 8,
        b"Sep" => 9,
        b"Oct" => 10,
        b"Nov" => 11,
        b"Dec" => 12,
        _ => return Err(bad()),
    };
    let (Some(day), Some(year), Some(h), Some(m), Some(sec), Some(zone)) = (
        num(0..2),
        num(7..11),
        num(12..14),
        num(15..17),
        num(18..20),
        num(22..26),
    ) else {
        return Err(bad());
    };
    let sign = match b[21] {
        b'+' => 1,
        b'-' => -1,
        _ => return Err(bad()),
    };
    if !(1..=days_in_month(year, month)).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return Err(bad());
    }
    let offset = sign * ((zone / 100) * 3600 + (zone % 100) * 60);
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec - offset;
    if secs < 0 {
        return Err(LineError::Before1970(s.to_string()));
    }
    Ok(Timestamp {
        ms: secs as u64 * 1000,
        whole_second: true,
    })
}

/// A JSON or CSV value: an epoch number (seconds below 10^11, else milliseconds; a fraction
/// of a second gives milliseconds), RFC 3339, or the common log format's time.
pub fn parse_value(s: &str) -> Result<Timestamp, LineError> {
    let s = s.trim();
    if let Ok(n) = s.parse::<f64>() {
        return parse_epoch(n, s);
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        let ms = t.timestamp_millis();
        if ms < 0 {
            return Err(LineError::Before1970(s.to_string()));
        }
        return Ok(Timestamp {
            ms: ms as u64,
            whole_second: t.timestamp_subsec_nanos() == 0 && !s.contains('.'),
        });
    }
    let unbracketed = s.trim_start_matches('[').trim_end_matches(']');
    parse_clf(unbracketed).map_err(|_| LineError::UnknownTime(s.to_string()))
}

/// An epoch number from JSON.
pub fn parse_epoch(n: f64, shown: &str) -> Result<Timestamp, LineError> {
    if !n.is_finite() || n < 0.0 {
        return Err(LineError::NotSinceEpoch(shown.to_string()));
    }
    if n >= EPOCH_MS_THRESHOLD {
        Ok(Timestamp {
            ms: n.round() as u64,
            whole_second: false,
        })
    } else {
        Ok(Timestamp {
            ms: (n * 1000.0).round() as u64,
            whole_second: n.fract() == 0.0,
        })
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_log_times_with_zones() {
        // Apache's documentation example: 13:55:36 at -0700 is 20:55:36 UTC.
        let t = parse_clf("10/Oct/2000:13:55:36 -0700").expect("valid");
        assert_eq!(
            t,
            Timestamp {
                ms: 971_211_336_000,
                whole_second: true
            }
        );
        // The same instant written in three zones.
        for s in [
            "10/Oct/2000:20:55:36 +0000",
            "11/Oct/2000:02:25:36 +0530",
            "10/Oct/2000:10:55:36 -1000",
        ] {
            assert_eq!(parse_clf(s).expect(s).ms, 971_211_336_000, "{s}");
        }
        assert_eq!(
            parse_clf("29/Feb/2024:00:00:00 +0000").expect("leap").ms,
            1_709_164_800_000
        );
        for bad in [
            "30/Feb/2024:00:00:00 +0000",
            "10/Okt/2000:13:55:36 -0700",
            "10/Oct/2000:13:55:36",
            "10/Oct/2000:25:55:36 -0700",
            "",
        ] {
            assert!(parse_clf(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_in_every_spelling() {
        let ms = 1_700_000_000_000;
        assert_eq!(
            parse_value("1700000000").expect("s"),
            Timestamp {
                ms,
                whole_second: true
            }
        );
        assert_eq!(parse_value("1700000000.25").expect("s.f").ms, ms + 250);
        assert!(!parse_value("1700000000.25").expect("s.f").whole_second);
        assert_eq!(parse_value("1700000000123").expect("ms").ms, ms + 123);
        assert_eq!(parse_value("2023-11-14T22:13:20Z").expect("rfc").ms, ms);
        assert!(
            parse_value("2023-11-14T22:13:20Z")
                .expect("rfc")
                .whole_second
        );
        assert_eq!(
            parse_value("2023-11-15T03:43:20.5+05:30").expect("rfc").ms,
            ms + 500
        );
        assert_eq!(
            parse_value("[14/Nov/2023:22:13:20 +0000]").expect("clf").ms,
            ms
        );
        for bad in ["yesterday", "-5", "NaN", "2023-13-01T00:00:00Z"] {
            assert!(parse_value(bad).is_err(), "{bad}");
        }
    }
}
