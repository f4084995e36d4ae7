//! The first lines of a log as a replay would see them (format, time, key, cost, or why a line
//! would be skipped), read without sorting: cheap, for a preview before a run.

use super::csvrecord;
use super::error::ReplayError;
use super::format::{self, LogFormat};
use super::input::{self, LogSource};
use super::spec::ParseSpec;
use serde::{Deserialize, Serialize};

/// One line as a replay would see it: for previews before a run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewLine {
    pub line: u64,
    /// Its time (whole seconds not yet spread), or None when it was not usable.
    pub time_ms: Option<u64>,
    pub key: Option<String>,
    pub cost: Option<u64>,
    /// Why it would be skipped.
    pub issue: Option<String>,
}

impl PreviewLine {
    /// Line `line`, which a replay would skip for `reason`.
    fn skipped(line: u64, reason: String) -> Self {
        PreviewLine {
            line,
            time_ms: None,
            key: None,
            cost: None,
            issue: Some(reason),
        }
    }
}

/// The first lines of a log and the keys they yield.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    pub format: Option<LogFormat>,
    pub gzip: bool,
    pub lines: Vec<PreviewLine>,
    /// The names `field:NAME` finds in these lines, in first-seen order: what a client key
    /// can be built from in this log.
    pub fields: Vec<String>,
}

/// The most lines a preview reads: it is for a person to look at.
pub const MAX_PREVIEW_LINES: usize = 10_000;

/// Reads the first `n` non-blank lines of `source` the way a replay would (without sorting):
/// cheap, for a preview before a run.
pub fn preview(source: &LogSource, spec: &ParseSpec, n: usize) -> Result<Preview, ReplayError> {
    if !(1..=MAX_PREVIEW_LINES).contains(&n) {
        return Err(ReplayError::InvalidSpec {
            parameter: "preview",
            reason: format!("must be from 1 to {MAX_PREVIEW_LINES} lines, got {n}"),
        });
    }
    let compiled = spec.compile()?;
    let mut lines = source.open().map_err(|e| ReplayError::Open {
        log: source.describe(),
        message: e.to_string(),
    })?;
    let gzip = lines.gzip();
    let mut parser: Option<format::LogParser> = compiled
        .format
        .map(|f| format::LogParser::new(f, compiled.fields.clone()));
    let mut out = Vec::new();
    let mut fields: Vec<String> = Vec::new();
    let mut joiner = csvrecord::RecordJoiner::default();
    while out.len() < n {
        let (number, line) = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                out.push(PreviewLine::skipped(
                    0,
                    format!("the input ended early: {e}"),
                ));
                break;
            }
        };
        let issue = |reason: String| PreviewLine::skipped(number, reason);
        let text = match line {
            input::Line::Text(t) => t,
            input::Line::TooLong(len) => {
                out.push(issue(format!("{len} bytes long: skipped")));
                continue;
            }
            input::Line::Binary => {
                out.push(issue("not text (binary, or not UTF-8)".into()));
                continue;
            }
        };
        let csv = parser
            .as_ref()
            .is_some_and(|p| p.format() == LogFormat::Csv);
        let (text, number) = match joiner.push(csv, number, text) {
            csvrecord::Joined::Record { text, line } => (text, line),
            csvrecord::Joined::Pending => continue,
            csvrecord::Joined::TooLong { line } => {
                out.push(PreviewLine::skipped(line, csvrecord::too_long_reason()));
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let issue = |reason: String| PreviewLine::skipped(number, reason);
        let parser = match &mut parser {
            Some(p) => p,
            None => match LogFormat::detect(text) {
                Some(f) => parser.insert(format::LogParser::new(f, compiled.fields.clone())),
                None => {
                    out.push(issue("cannot tell the log format from this line".into()));
                    continue;
                }
            },
        };
        match parser.parse(text) {
            Ok(None) => continue,
            Err(reason) => out.push(issue(reason.to_string())),
            Ok(Some(request)) => {
                for name in parser.field_names(&request.line) {
                    if !fields.contains(&name) {
                        fields.push(name);
                    }
                }
                let key = super::key::eval(&compiled.key, parser, &request.line);
                out.push(PreviewLine {
                    line: number,
                    time_ms: Some(request.time.ms),
                    key: key.as_ref().ok().cloned(),
                    cost: Some(request.cost),
                    issue: key.err().map(|e| e.to_string()),
                });
            }
        }
    }
    if let Some(line) = joiner.unterminated().filter(|_| out.len() < n) {
        out.push(PreviewLine::skipped(line, csvrecord::UNTERMINATED.into()));
    }
    Ok(Preview {
        format: parser.map(|p| p.format()),
        gzip,
        lines: out,
        fields,
    })
}
