//! One decision of one request as a row: the [`Record`] the simulator and replay both emit,
//! the [`RecordSink`] they stream it to, and the [`ExportError`] that writing it (or any
//! export) fails with. They live below `sim`, `replay` and `export`, so that the runs that
//! make rows and the exports that read them both import them and neither imports the other.

use crate::subject::Subject;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One decision of one request by one target: a CSV row. Its strings are shared (`Arc<str>`):
/// a run makes one record per request and target, and the rule and key are the same few
/// strings over and over, so a record costs no allocation for them (issue 22); the algorithm
/// is a [`Subject`], written as its label.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The request's number in the schedule (shared by the targets it was offered to).
    pub seq: u64,
    pub sent_at_ms: u64,
    pub server: u32,
    pub rule: Arc<str>,
    pub algorithm: Subject,
    pub key: Arc<str>,
    pub allowed: bool,
    pub remaining: i64,
    pub retry_after_ms: u64,
    pub latency_us: u64,
    pub fail_open: bool,
    /// The wait until the limiter was back to its full allowance (the `RateLimit` header's
    /// `t` when allowed). Columns after design.md's own; absent in older CSVs.
    #[serde(default)]
    pub reset_after_ms: u64,
    /// 0 for a request's first try; n for its nth retry in a retry storm.
    #[serde(default)]
    pub attempt: u32,
    /// Milliseconds since the run started (a simulation's start, a replay's first request):
    /// the charts' time axis, beside the absolute `sent_at_ms`. 0 in older CSVs.
    #[serde(default)]
    pub offset_ms: u64,
    /// A policy's decision only: the limit that decided (design.md's `binding`: the denying
    /// limit with the longest wait, or the one with the least remaining). Empty for a rule's
    /// decision and when Redis could not be asked.
    #[serde(default)]
    pub binding: Arc<str>,
    /// A policy's decision only: the tier whose limits applied; empty for the policy's own.
    #[serde(default)]
    pub tier: Arc<str>,
    /// A policy's decision only: some limit denied. Under enforcement the request was denied;
    /// in shadow mode it was admitted all the same (`allowed` and `would_deny`).
    #[serde(default)]
    pub would_deny: bool,
    /// A run with holds (`--hold-ms`): how long this admitted request was in flight after its
    /// answer, in ms; empty for a denied request and in runs without holds.
    #[serde(default)]
    pub hold_ms: Option<u64>,
    /// Microseconds from the run's start to the answer, where its time in flight begins (a
    /// delayed admission's: after its wait); 0 where not measured (replays, older CSVs).
    #[serde(default)]
    pub answered_us: u64,
}

impl Record {
    /// When this request was in flight, µs from the run's start: from its answer until its
    /// hold ended. None when it was not (denied, or a run without holds).
    pub fn in_flight_us(&self) -> Option<(u64, u64)> {
        in_flight_span(self.allowed, self.hold_ms, self.answered_us)
    }
}

/// An admitted request's time in flight, µs from the run's start: from its answer for its hold.
pub(crate) fn in_flight_span(
    allowed: bool,
    hold_ms: Option<u64>,
    answered_us: u64,
) -> Option<(u64, u64)> {
    let hold = hold_ms.filter(|h| allowed && *h > 0)?;
    Some((answered_us, answered_us + hold.saturating_mul(1000)))
}

/// Where records go as they complete (the CSV writer).
pub trait RecordSink: Send {
    fn write(&mut self, record: &Record) -> Result<(), ExportError>;
    fn flush(&mut self) -> Result<(), ExportError>;
}

/// Why an export failed. Names the path, so the user knows what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write CSV to {path}: {source}")]
    Csv { path: PathBuf, source: ::csv::Error },
    #[error("cannot draw the chart {path}: {message}")]
    Chart { path: PathBuf, message: String },
    #[error("{path}: unknown chart format; end the file name with .png or .svg")]
    UnknownFormat { path: PathBuf },
    #[error("the run has no data to chart")]
    Empty,
    #[error("invalid chart view: {field} {reason}")]
    InvalidView { field: String, reason: String },
}

impl ExportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ExportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
