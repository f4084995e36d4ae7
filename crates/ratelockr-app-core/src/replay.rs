//! The Replay panel's side: the request (a log by path, how to parse it, the rules, a sweep),
//! the replay's status and where its events go, and a preview of a log's first lines. The
//! replay itself runs in [`crate::app`]; a kept one is [`crate::kept_replay`].

use crate::error::{AppError, ErrorCode};
use crate::rules::RuleDraft;
use ratelockr_lab::replay::{
    self, LogSource, ParseSpec, Preview, ReplayProgress, ReplayReport, SweepAxis,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use ts_rs::TS;

/// Lines a preview shows.
pub const PREVIEW_LINES: usize = 20;

/// A replay as the panel asks for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ReplayRequest {
    /// The log's path (a file; `.gz` too).
    pub path: String,
    #[serde(default)]
    pub parse: ParseSpec,
    /// Names of rules in the rule book.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Or names of policies in the policy book, side by side (not with rules or a sweep).
    #[ts(optional, as = "Option<Vec<String>>")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<String>,
    /// A rule typed in the panel, decided beside the book's.
    #[ts(optional)]
    #[serde(default)]
    pub inline: Option<RuleDraft>,
    /// A grid around the first rule (one or two axes).
    #[serde(default)]
    pub sweep: Vec<SweepAxis>,
    /// Top keys per rule (default 10).
    #[ts(optional)]
    #[serde(default)]
    pub top: Option<usize>,
}

/// The replay slot: running or not, how far, and the last outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, TS)]
pub struct ReplayStatus {
    /// The replay's entry in the run history.
    pub id: Option<String>,
    /// Its name there.
    pub name: Option<String>,
    pub running: bool,
    /// The log being (or last) replayed.
    pub path: Option<String>,
    pub progress: Option<ReplayProgress>,
    /// The last replay's report (partial when it was cancelled).
    pub report: Option<ReplayReport>,
    pub cancelled: bool,
    pub error: Option<AppError>,
    /// What the history said when the replay was kept (older runs dropped to stay in bounds).
    pub notes: Vec<String>,
}

/// Where a replay's progress and ending go (the window, or a test's recorder).
pub trait ReplayEvents: Send + Sync {
    fn progress(&self, progress: &ReplayProgress);
    fn finished(&self, status: &ReplayStatus);
}

/// A log path the user gave: a readable file.
fn log_source(path: &str) -> Result<LogSource, AppError> {
    log_file(path).map(LogSource::File)
}

/// A log path the user gave, trimmed: a file that exists (refused on the `path` field).
pub(crate) fn log_file(path: &str) -> Result<PathBuf, AppError> {
    let trimmed = path.trim();
    if trimmed.is_empty() {
        return Err(
            AppError::new(ErrorCode::LogUnreadable, "choose a log file first").with_field("path"),
        );
    }
    let path = PathBuf::from(trimmed);
    if !path.is_file() {
        return Err(AppError::new(
            ErrorCode::LogUnreadable,
            format!("{} is not a file that can be read", path.display()),
        )
        .with_field("path"));
    }
    Ok(path)
}

/// The first lines of the log at `path`, parsed as `parse` says, with the key each yields.
pub fn preview(path: &str, parse: &ParseSpec) -> Result<Preview, AppError> {
    Ok(replay::preview(&log_source(path)?, parse, PREVIEW_LINES)?)
}
