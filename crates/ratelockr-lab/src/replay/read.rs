//! From a log to requests in time order: read, parse, filter, key, sort, spread. Runs on its
//! own thread (parsing is CPU work) and hands requests over in batches.

use super::csvrecord::{too_long_reason, Joined, RecordJoiner, UNTERMINATED};
use super::error::ReplayError;
use super::format::{LogFormat, LogParser};
use super::input::{Line, Lines, LogSource, MAX_LINE_BYTES};
use super::order::{Reorder, Timed};
use super::report::LineIssue;
use super::spec::Compiled;

/// Lines reported with their reasons, at most.
pub const MAX_ISSUES: usize = 10;

/// A request ready to decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Req {
    pub line: u64,
    pub ms: u64,
    pub key: String,
    pub key_hash: u64,
    pub cost: u64,
    /// How long it was in flight (ms), when the log says.
    pub duration_ms: Option<u64>,
}

/// What reading found, besides the requests.
#[derive(Debug, Clone, Default)]
pub struct ReadStats {
    pub format: Option<LogFormat>,
    pub gzip: bool,
    pub lines: u64,
    pub parsed: u64,
    pub malformed: u64,
    pub filtered: u64,
    pub no_key: u64,
    pub out_of_order: u64,
    pub reordered: u64,
    pub requests: u64,
    pub issues: Vec<LineIssue>,
    pub input_error: Option<String>,
}

impl ReadStats {
    fn issue(&mut self, line: u64, reason: String) {
        if self.issues.len() < MAX_ISSUES {
            self.issues.push(LineIssue { line, reason });
        }
    }
}

/// Reads `source` to the end (or until `stop` says so), calling `emit` with each request in
/// order. `max_cost`: the most any rule admits; a costlier request could never pass.
pub fn read(
    source: &LogSource,
    spec: &Compiled,
    max_cost: u64,
    bytes_read: &std::sync::atomic::AtomicU64,
    mut stop: impl FnMut(&ReadStats) -> bool,
    mut emit: impl FnMut(Req) -> bool,
) -> Result<ReadStats, ReplayError> {
    let mut lines = source.open().map_err(|e| ReplayError::Open {
        log: source.describe(),
        message: e.to_string(),
    })?;
    let mut stats = ReadStats {
        gzip: lines.gzip(),
        ..ReadStats::default()
    };
    let mut parser: Option<LogParser> = spec.format.map(|f| LogParser::new(f, spec.fields.clone()));
    let mut reorder: Reorder<(String, u64, Option<u64>)> = Reorder::new(spec.lookahead_ms);
    let mut open = true;
    let mut joiner = RecordJoiner::default();
    while open {
        if stats.lines % 1024 == 0 {
            let read = lines
                .bytes_read()
                .load(std::sync::atomic::Ordering::Relaxed);
            bytes_read.store(read, std::sync::atomic::Ordering::Relaxed);
            if stop(&stats) {
                break;
            }
        }
        let (number, line) = match next(&mut lines) {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                stats.input_error = Some(format!(
                    "{} ended early after line {}: {e}",
                    source.describe(),
                    stats.lines
                ));
                break;
            }
        };
        stats.lines = number;
        let text = match line {
            Line::Text(t) => t,
            Line::TooLong(n) => {
                stats.malformed += 1;
                stats.issue(
                    number,
                    format!("{n} bytes long: lines longer than {MAX_LINE_BYTES} bytes are skipped"),
                );
                continue;
            }
            Line::Binary => {
                stats.malformed += 1;
                stats.issue(number, "not text (binary, or not UTF-8)".into());
                continue;
            }
        };
        let csv = parser
            .as_ref()
            .is_some_and(|p| p.format() == LogFormat::Csv);
        let (text, number) = match joiner.push(csv, number, text) {
            Joined::Record { text, line } => (text, line),
            Joined::Pending => continue,
            Joined::TooLong { line } => {
                stats.malformed += 1;
                stats.issue(line, too_long_reason());
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let parser = match &mut parser {
            Some(p) => p,
            None => {
                let format = LogFormat::detect(text).ok_or_else(|| ReplayError::Detect {
                    log: source.describe(),
                    line: number,
                    sample: text.chars().take(120).collect(),
                })?;
                parser.insert(LogParser::new(format, spec.fields.clone()))
            }
        };
        let request = match parser.parse(text) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(reason) => {
                stats.malformed += 1;
                stats.issue(number, reason.to_string());
                continue;
            }
        };
        stats.parsed += 1;
        if request.cost > max_cost {
            stats.malformed += 1;
            stats.issue(
                number,
                format!(
                    "cost {} exceeds {max_cost}, the most a rule admits: it could never pass",
                    request.cost
                ),
            );
            continue;
        }
        if !spec.methods.is_empty() {
            let method = parser.method(&request.line);
            if !method.is_some_and(|m| {
                spec.methods
                    .iter()
                    .any(|want| want.eq_ignore_ascii_case(&m))
            }) {
                stats.filtered += 1;
                continue;
            }
        }
        if let Some(path) = &spec.path {
            if !parser
                .path(&request.line)
                .is_some_and(|p| path.is_match(&p))
            {
                stats.filtered += 1;
                continue;
            }
        }
        let key = match super::key::eval(&spec.key, parser, &request.line) {
            Ok(k) => k,
            Err(reason) => {
                stats.no_key += 1;
                stats.issue(number, reason.to_string());
                continue;
            }
        };
        let timed = Timed {
            ms: request.time.ms,
            whole_second: request.time.whole_second,
            line: number,
            item: (key, request.cost, request.duration_ms),
        };
        if let Err(late) = reorder.push(timed) {
            stats.out_of_order += 1;
            stats.issue(
                late.line,
                format!(
                    "out of order: {} ms older than a request already decided, beyond the {} ms lookahead (sort the log, or raise --lookahead-secs)",
                    late.behind_ms, spec.lookahead_ms
                ),
            );
            continue;
        }
        while let Some(t) = reorder.pop() {
            if !emit_one(&mut stats, t, &mut emit) {
                open = false;
                break;
            }
        }
    }
    if let Some(line) = joiner.unterminated() {
        stats.malformed += 1;
        stats.issue(line, UNTERMINATED.into());
    }
    stats.format = parser.map(|p| p.format());
    reorder.finish();
    while let Some(t) = reorder.pop() {
        if !emit_one(&mut stats, t, &mut emit) {
            break;
        }
    }
    stats.reordered = reorder.reordered;
    if stats.requests == 0 && !stop(&stats) {
        return Err(ReplayError::NothingParsed {
            log: source.describe(),
            format: stats
                .format
                .or(spec.format)
                .map_or("any known format", |f| f.as_str())
                .to_string(),
            lines: stats.lines,
            malformed: stats.malformed,
            filtered: stats.filtered + stats.no_key,
            first_issue: stats
                .issues
                .first()
                .map(|i| format!("line {}: {}", i.line, i.reason)),
        });
    }
    Ok(stats)
}

fn next(lines: &mut Lines) -> std::io::Result<Option<(u64, Line<'_>)>> {
    lines.next_line()
}

fn emit_one(
    stats: &mut ReadStats,
    t: Timed<(String, u64, Option<u64>)>,
    emit: &mut impl FnMut(Req) -> bool,
) -> bool {
    stats.requests += 1;
    let (key, cost, duration_ms) = t.item;
    let key_hash = super::distinct::hash_key(&key);
    emit(Req {
        line: t.line,
        ms: t.ms,
        key,
        key_hash,
        cost,
        duration_ms,
    })
}
