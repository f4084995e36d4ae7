//! Why a log line cannot be used: what the format parsers (`clf`, `jsonl`, `csvlog`, `time`)
//! and the [`super::format::LogParser`] over them fail with, and what replay's line issues and
//! the preview show as its message.

/// Why a log line cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// A field missing or unterminated, or text where none belongs, in words (`no status`,
    /// `an unterminated quoted field`, ...).
    #[error("{0}")]
    Malformed(&'static str),
    #[error("status {0:?} is not a 3-digit code")]
    Status(String),
    #[error("time {0:?} is not dd/Mon/yyyy:HH:MM:SS ±hhmm")]
    ClfTime(String),
    #[error("time {0:?} is before 1970")]
    Before1970(String),
    #[error("time {0:?} is neither RFC 3339, epoch seconds or ms, nor dd/Mon/yyyy:HH:MM:SS ±hhmm")]
    UnknownTime(String),
    /// An epoch number that is negative or not finite (as the line wrote it).
    #[error("time {0} is not a time since 1970")]
    NotSinceEpoch(String),
    /// serde_json's reason.
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("the CSV header {0:?} should name every column (at least two)")]
    CsvHeader(String),
    #[error("{found} fields where the header has {expected}")]
    FieldCount { found: usize, expected: usize },
    #[error("no cost field {0:?}")]
    NoCostField(String),
    #[error("cost {0:?} is not a whole number >= 1")]
    Cost(String),
    /// The duration field named with `--duration-field` is missing.
    #[error("no duration field {0:?} (--duration-field)")]
    NoDurationField(String),
    /// A duration that is not a time (see [`super::duration`]).
    #[error("duration field {field:?}: {value:?} is not a duration (ms, or s for request_time; 250ms and 1.5s say their unit; from 0 to a day)")]
    Duration { field: String, value: String },
    /// The time field named with `--time-field` is missing.
    #[error("no time field {0:?}")]
    NoTimeField(String),
    /// None of the usual time fields (`looked_for`) is there.
    #[error("no time field (looked for {}); name it with --time-field", looked_for.join(", "))]
    NoUsualTimeField { looked_for: &'static [&'static str] },
}
