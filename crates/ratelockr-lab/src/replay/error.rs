//! Why a replay could not run: a parameter (named), the log, Redis, or the records' sink.

use crate::record::ExportError;
use ratelockr::RedisFailure;

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("invalid {parameter}: {reason}")]
    InvalidSpec {
        parameter: &'static str,
        reason: String,
    },
    #[error("cannot read {log}: {message}")]
    Open { log: String, message: String },
    #[error("cannot tell the format of {log} from line {line} ({sample:?}); pass --format combined, common, jsonl or csv")]
    Detect {
        log: String,
        line: u64,
        sample: String,
    },
    #[error("no request in {log} parsed as {format}: {lines} lines, {malformed} malformed, {filtered} filtered out or without a key{}", first_issue.as_ref().map(|i| format!("; first: {i}")).unwrap_or_default())]
    NothingParsed {
        log: String,
        format: String,
        lines: u64,
        malformed: u64,
        filtered: u64,
        first_issue: Option<String>,
    },
    #[error("Redis could not prepare the replay: {0}")]
    Redis(#[from] RedisFailure),
    #[error("the replay stopped because its records could not be written: {0}")]
    Export(#[from] ExportError),
}
