//! Replay: what would these limits have done to the requests of a real log?
//!
//! Each request of the log goes through the rule's own script with its log time as `now_ms`
//! ([`At::Virtual`]), in a private key namespace (`<prefix>:replay:<run id>:…`, deleted after
//! the run) and without live telemetry (those counters are per wall-clock second). Several
//! rules, and a sweep's grid of configurations, are decided side by side in one pass. The same
//! log and rules give the same decisions, byte for byte in the CSV.
//!
//! - [`input`]    files, stdin, gzip; lines of bounded length
//! - [`format`]   combined, common, JSON lines, CSV; detection; one view of a parsed line
//! - [`clf`], [`jsonl`], [`csvlog`], [`time`]  the parsers
//! - [`key`]      client key expressions (`ip`, `header:x-api-key`, `ip+path[1]`, …)
//! - [`order`]    sorting within a lookahead; whole seconds spread over the second
//! - [`pace`]     a warning when the replay ran slower than the log for longer than a key's TTL
//! - [`read`]     from a log to requests in order, on a thread of its own
//! - [`decide`]   pipelined decisions in lanes, each key's in log order
//! - [`stats`], [`keytable`], [`series`], [`distinct`]  bounded-memory figures
//! - [`sweep`]    grids of one or two parameters
//! - [`report`]   the serializable report

pub mod clf;
pub mod csvlog;
pub mod csvrecord;
pub mod decide;
pub mod distinct;
pub mod format;
pub mod input;
pub mod jsonl;
pub mod key;
pub mod keytable;
pub mod order;
pub mod pace;
pub mod read;
pub mod report;
pub mod series;
pub mod stats;
pub mod sweep;
pub mod time;

pub use format::{FieldNames, LogFormat};
pub use input::LogSource;
pub use key::KeyExpr;
pub use report::{
    LineIssue, PeakRates, ReplayPoint, ReplayReport, ReplaySeries, RuleReport, Suggestion,
    SweepPoint, TopKey,
};
pub use sweep::SweepAxis;

use crate::decision::Decision;
use crate::error::RedisFailure;
use crate::export::ExportError;
use crate::keys::KeySpace;
use crate::limiter::Limiter;
use crate::rule::Rule;
use crate::scripts::{At, Call};
use crate::sim::{Record, RecordSink};
use crate::telemetry::COUNTER_TTL_SECS;
use read::{ReadStats, Req};
use serde::{Deserialize, Serialize};
use stats::RuleTally;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How a log is read: its format, fields, client key and filters.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ParseSpec {
    /// None: detected from the first line.
    pub format: Option<LogFormat>,
    pub fields: FieldNames,
    /// A key expression ([`key`]); default `ip`.
    pub key: String,
    /// Only these methods (any case); empty: all.
    pub methods: Vec<String>,
    /// Only request targets (path and query, as logged) matching this regex.
    pub path: Option<String>,
    /// How far out of order requests may arrive and still be sorted ([`order`]).
    pub lookahead_ms: u64,
}

impl Default for ParseSpec {
    fn default() -> Self {
        ParseSpec {
            format: None,
            fields: FieldNames::default(),
            key: "ip".into(),
            methods: Vec::new(),
            path: None,
            lookahead_ms: order::DEFAULT_LOOKAHEAD_MS,
        }
    }
}

/// A [`ParseSpec`], checked and compiled.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub format: Option<LogFormat>,
    pub fields: FieldNames,
    pub key: KeyExpr,
    pub methods: Vec<String>,
    pub path: Option<regex::Regex>,
    pub lookahead_ms: u64,
}

impl ParseSpec {
    pub fn compile(&self) -> Result<Compiled, ReplayError> {
        let invalid = |parameter: &'static str, reason: String| ReplayError::InvalidSpec {
            parameter,
            reason,
        };
        let key = self
            .key
            .parse::<KeyExpr>()
            .map_err(|reason| invalid("key", reason))?;
        let path = self
            .path
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| invalid("path", format!("not a regular expression: {e}")))?;
        if self.lookahead_ms > 3_600_000 {
            return Err(invalid("lookahead", "at most an hour (3600 s)".into()));
        }
        Ok(Compiled {
            format: self.format,
            fields: self.fields.clone(),
            key,
            methods: self.methods.clone(),
            path,
            lookahead_ms: self.lookahead_ms,
        })
    }
}

/// A replay: how to read the log, the rules, and what to report.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplaySpec {
    pub parse: ParseSpec,
    /// The candidate rules, side by side.
    pub rules: Vec<Rule>,
    /// A grid around the first rule (one or two axes).
    #[serde(default)]
    pub sweep: Vec<SweepAxis>,
    /// Top keys per rule.
    pub top: usize,
    /// The suggestion's target: at most this percentage of keys ever denied.
    pub suggest_max_keys_pct: f64,
    /// Keys held per rule for per-key figures ([`keytable`]).
    pub key_capacity: usize,
    /// Lanes (connections) deciding at once ([`decide`]).
    pub lanes: usize,
    /// Decisions per pipeline round (requests × rules; at least 16 requests), split over the
    /// lanes.
    pub batch: usize,
}

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            parse: ParseSpec::default(),
            rules: Vec::new(),
            sweep: Vec::new(),
            top: 10,
            suggest_max_keys_pct: 1.0,
            key_capacity: keytable::DEFAULT_CAPACITY,
            lanes: 4,
            batch: 1024,
        }
    }
}

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

/// How far a replay is.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReplayProgress {
    /// Requests decided (by every rule).
    pub requests: u64,
    /// Bytes of the source read (compressed bytes for gzip), and its size when known.
    pub bytes_read: u64,
    pub bytes_total: Option<u64>,
    /// The log time reached.
    pub log_ms: Option<u64>,
    pub elapsed_ms: u64,
}

/// Sees a replay as it runs (progress bars).
pub trait ReplayObserver: Send + Sync {
    /// About every 100 ms, and once at the end.
    fn on_progress(&self, _progress: &ReplayProgress) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReplayObserver;
impl ReplayObserver for NoReplayObserver {}

/// A percentage, rounded to 1/1000 so that reports print the same everywhere.
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 100_000.0 / whole as f64).round() / 1000.0
    }
}

/// One rule of a run: a candidate, or a configuration of the sweep.
struct RuleRun {
    stats: RuleTally,
    sweep: Option<std::collections::BTreeMap<String, f64>>,
}

/// The rules of a spec: the candidates, then the sweep's grid (around the first candidate).
fn rule_runs(spec: &ReplaySpec) -> Result<Vec<RuleRun>, ReplayError> {
    if spec.rules.is_empty() {
        return Err(ReplayError::InvalidSpec {
            parameter: "rules",
            reason: "name at least one rule".into(),
        });
    }
    let mut names = std::collections::BTreeSet::new();
    for rule in &spec.rules {
        if !names.insert(rule.name()) {
            return Err(ReplayError::InvalidSpec {
                parameter: "rules",
                reason: format!("two rules are named {:?}", rule.name()),
            });
        }
    }
    let mut runs: Vec<RuleRun> = spec
        .rules
        .iter()
        .map(|r| RuleRun {
            stats: RuleTally::new(r.clone(), spec.key_capacity),
            sweep: None,
        })
        .collect();
    if !spec.sweep.is_empty() {
        let grid = sweep::grid(&spec.rules[0], &spec.sweep).map_err(|reason| {
            ReplayError::InvalidSpec {
                parameter: "sweep",
                reason,
            }
        })?;
        for point in grid {
            runs.push(RuleRun {
                stats: RuleTally::new(point.rule, 0),
                sweep: Some(point.params),
            });
        }
    }
    Ok(runs)
}

enum ReadMsg {
    Batch(Vec<Req>),
    Done(Result<ReadStats, ReplayError>),
}

/// Replays `source` through `spec`'s rules on the Redis behind `limiter`. `sink` sees one
/// record per decision in log order (request by request, rule by rule); `cancel` stops reading
/// at once, and the report covers what was decided.
pub async fn run(
    limiter: &Limiter,
    source: &LogSource,
    spec: &ReplaySpec,
    mut sink: Option<&mut dyn RecordSink>,
    observer: &dyn ReplayObserver,
    cancel: CancellationToken,
) -> Result<ReplayReport, ReplayError> {
    let compiled = spec.parse.compile()?;
    let mut runs = rule_runs(spec)?;
    let max_cost = runs
        .iter()
        .map(|r| r.stats.rule.algorithm().max_cost())
        .min()
        .unwrap_or(1);
    let lanes = decide::Lanes::start(limiter, spec.lanes).await?;
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let keys = KeySpace::new(format!(
        "{}:replay:{}",
        limiter.keys().prefix(),
        &run_id[..12]
    ));
    let started = Instant::now();

    // The reader thread: parsing is CPU work, and it overlaps with Redis deciding.
    let (tx, mut rx) = mpsc::channel::<ReadMsg>(4);
    let stop = Arc::new(AtomicBool::new(false));
    let bytes_read = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let bytes_total = match source {
        LogSource::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
        _ => None,
    };
    let reader = {
        let (source, stop, cancel) = (source.clone(), stop.clone(), cancel.clone());
        let bytes_read = bytes_read.clone();
        // A round holds about `batch` decisions whatever the number of rules, so a sweep's
        // pipelines stay as long as a single rule's.
        let batch_size = (spec.batch / runs.len()).max(16);
        std::thread::spawn(move || {
            let mut batch = Vec::with_capacity(batch_size);
            let mut open = true;
            let result = read::read(
                &source,
                &compiled,
                max_cost,
                &bytes_read,
                |_| stop.load(Ordering::Relaxed) || cancel.is_cancelled(),
                |req| {
                    batch.push(req);
                    if batch.len() >= batch_size {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_size));
                        open = tx.blocking_send(ReadMsg::Batch(full)).is_ok();
                    }
                    open
                },
            );
            if !batch.is_empty() && open {
                let _ = tx.blocking_send(ReadMsg::Batch(batch));
            }
            let _ = tx.blocking_send(ReadMsg::Done(result));
        })
    };

    let mut all_keys = distinct::Distinct::default();
    let mut first_ms = None;
    let mut last_ms = None;
    let mut seq = 0u64;
    let mut in_flight: VecDeque<(Vec<Req>, Sent)> = VecDeque::new();
    let mut sink_error = None;
    let mut last_progress = Instant::now();
    let rules: Vec<Rule> = runs.iter().map(|r| r.stats.rule.clone()).collect();
    let mut pace = pace::PaceWatch::new(&rules);
    let progress = |requests: u64, log_ms: Option<u64>| ReplayProgress {
        requests,
        bytes_read: bytes_read.load(Ordering::Relaxed),
        bytes_total,
        log_ms,
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    let read_result = loop {
        let Some(msg) = rx.recv().await else {
            break Err(ReplayError::Open {
                log: source.describe(),
                message: "the reader stopped unexpectedly".into(),
            });
        };
        match msg {
            ReadMsg::Batch(reqs) => {
                if let Some(last) = reqs.last() {
                    pace.observe(started.elapsed().as_millis() as u64, last.ms);
                }
                let pending = dispatch(&lanes, &keys, &rules, &reqs).await;
                in_flight.push_back((reqs, pending));
                // Two batches in flight: Redis decides one while the other's replies are read.
                if in_flight.len() > 2 {
                    if let Some((reqs, pending)) = in_flight.pop_front() {
                        let outcomes = collect(limiter, &rules, reqs.len(), pending).await;
                        account(
                            &reqs,
                            &outcomes,
                            &mut runs,
                            &mut sink,
                            &mut sink_error,
                            &mut all_keys,
                            &mut seq,
                            &mut first_ms,
                            &mut last_ms,
                        );
                    }
                }
                if sink_error.is_some() {
                    stop.store(true, Ordering::Relaxed);
                }
                if last_progress.elapsed() >= Duration::from_millis(100) {
                    last_progress = Instant::now();
                    observer.on_progress(&progress(seq, last_ms));
                }
            }
            ReadMsg::Done(result) => break result,
        }
    };
    while let Some((reqs, pending)) = in_flight.pop_front() {
        let outcomes = collect(limiter, &rules, reqs.len(), pending).await;
        account(
            &reqs,
            &outcomes,
            &mut runs,
            &mut sink,
            &mut sink_error,
            &mut all_keys,
            &mut seq,
            &mut first_ms,
            &mut last_ms,
        );
    }
    let _ = reader.join();
    let read_stats = read_result?;
    if let Some(sink) = sink {
        let flushed = sink.flush();
        if sink_error.is_none() {
            sink_error = flushed.err();
        }
    }
    if let Some(err) = sink_error {
        return Err(ReplayError::Export(err));
    }
    cleanup(limiter, &keys).await;
    observer.on_progress(&progress(seq, last_ms));

    let elapsed_ms = started.elapsed().as_millis() as u64;
    let key_count = all_keys.count();
    let mut rules_out = Vec::new();
    let mut sweep_out = Vec::new();
    for run in runs {
        match run.sweep {
            None => rules_out.push(run.stats.finish(
                key_count,
                spec.top,
                spec.suggest_max_keys_pct,
            )),
            Some(params) => {
                let s = &run.stats;
                let keys_denied = s.keys_denied();
                sweep_out.push(SweepPoint {
                    params,
                    rule: s.rule.name().to_string(),
                    requests: s.requests,
                    denied: s.denied,
                    denied_pct: pct(s.denied, s.allowed + s.denied),
                    keys_denied,
                    keys_denied_pct: pct(keys_denied, key_count),
                    fail_open: s.fail_open,
                })
            }
        }
    }
    sweep_suggestion(&mut rules_out, &sweep_out, spec);
    let decisions = seq * rules.len() as u64;
    Ok(ReplayReport {
        source: source.describe(),
        format: read_stats.format.unwrap_or(LogFormat::Combined),
        gzip: read_stats.gzip,
        key: spec.parse.key.clone(),
        lines: read_stats.lines,
        parsed: read_stats.parsed,
        malformed: read_stats.malformed,
        filtered: read_stats.filtered,
        no_key: read_stats.no_key,
        out_of_order: read_stats.out_of_order,
        reordered: read_stats.reordered,
        lookahead_ms: spec.parse.lookahead_ms,
        requests: seq,
        issues: read_stats.issues,
        input_error: read_stats.input_error,
        first_ms,
        last_ms,
        keys: key_count,
        keys_exact: all_keys.is_exact(),
        rules: rules_out,
        sweep: sweep_out,
        elapsed_ms,
        decisions_per_sec: if elapsed_ms == 0 {
            0.0
        } else {
            (decisions as f64 * 1000.0 / elapsed_ms as f64).round()
        },
        cancelled: cancel.is_cancelled(),
        time_spread: "whole-second times spread evenly over their second by arrival order (i-th of n at i*1000/n ms)".into(),
        warnings: pace.warnings(),
    })
}

/// A batch on its way: per lane, the pending replies and each reply's decision slot.
type Sent = Vec<(decide::Pending, Vec<usize>)>;

/// Sends one batch: every request through every rule, each key on its lane. Returns, per lane,
/// the pending replies and the (request × rules + rule) slot of each.
async fn dispatch(lanes: &decide::Lanes, keys: &KeySpace, rules: &[Rule], reqs: &[Req]) -> Sent {
    let n = lanes.count();
    let mut commands: Vec<Vec<redis::Cmd>> = (0..n).map(|_| Vec::new()).collect();
    let mut slots: Vec<Vec<usize>> = (0..n).map(|_| Vec::new()).collect();
    for (j, req) in reqs.iter().enumerate() {
        let lane = lanes.lane_of(req.key_hash);
        for (i, rule) in rules.iter().enumerate() {
            let limiter_key = keys.limiter(rule, &req.key);
            let call = Call {
                algorithm: rule.algorithm(),
                limiter_key: &limiter_key,
                stats_keys: None,
                stats_ttl_secs: COUNTER_TTL_SECS,
                cost: req.cost,
                at: At::Virtual(req.ms),
            };
            commands[lane].push(call.evalsha());
            slots[lane].push(j * rules.len() + i);
        }
    }
    let mut pending = Vec::new();
    for (lane, (cmds, slots)) in commands.into_iter().zip(slots).enumerate() {
        if !cmds.is_empty() {
            pending.push((lanes.submit(lane, cmds).await, slots));
        }
    }
    pending
}

/// The second in which a failed replay decision was last logged.
static LAST_WARNED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Waits for a batch's replies; a failure becomes a fail-open decision, counted in the
/// limiter's ledger like any other.
async fn collect(
    limiter: &Limiter,
    rules: &[Rule],
    requests: usize,
    pending: Sent,
) -> Vec<Decision> {
    let mut decisions = vec![Decision::FAIL_OPEN; requests * rules.len()];
    for (rx, slots) in pending {
        let outcomes = rx.await.unwrap_or_default();
        for (k, slot) in slots.into_iter().enumerate() {
            match outcomes.get(k) {
                Some(Ok(d)) => decisions[slot] = *d,
                Some(Err(failure)) => {
                    limiter.ledger().record_failure(failure.kind);
                    // Once a second at most, however many decisions fail.
                    let second = crate::telemetry::now_ms() / 1000;
                    if LAST_WARNED.swap(second, Ordering::Relaxed) != second {
                        tracing::warn!(redis = %limiter.target(), "replay decisions failed open: {failure}");
                    }
                }
                None => limiter.ledger().record_failure(crate::FailureKind::Other),
            }
        }
    }
    decisions
}

#[allow(clippy::too_many_arguments)]
fn account(
    reqs: &[Req],
    decisions: &[Decision],
    runs: &mut [RuleRun],
    sink: &mut Option<&mut dyn RecordSink>,
    sink_error: &mut Option<ExportError>,
    all_keys: &mut distinct::Distinct,
    seq: &mut u64,
    first_ms: &mut Option<u64>,
    last_ms: &mut Option<u64>,
) {
    let r = runs.len();
    for (j, req) in reqs.iter().enumerate() {
        all_keys.insert(req.key_hash);
        first_ms.get_or_insert(req.ms);
        *last_ms = Some(req.ms);
        for (i, run) in runs.iter_mut().enumerate() {
            let d = &decisions[j * r + i];
            run.stats.add(&req.key, req.key_hash, req.ms, req.cost, d);
            if sink_error.is_none() {
                if let Some(sink) = sink.as_deref_mut() {
                    let record = Record {
                        seq: *seq,
                        sent_at_ms: req.ms,
                        server: 0,
                        rule: run.stats.rule.name().to_string(),
                        algorithm: run.stats.rule.kind().as_str().to_string(),
                        key: req.key.clone(),
                        allowed: d.allowed,
                        remaining: d.remaining_or_unknown(),
                        retry_after_ms: d.retry_after_ms,
                        // Decisions are pipelined: no per-decision latency, and a constant
                        // keeps the CSV deterministic.
                        latency_us: 0,
                        fail_open: d.fail_open(),
                        reset_after_ms: d.reset_after_ms,
                        attempt: 0,
                    };
                    if let Err(e) = sink.write(&record) {
                        *sink_error = Some(e);
                    }
                }
            }
        }
        *seq += 1;
    }
}

/// A sweep over the first rule's `capacity` or `limit` alone also answers the suggestion for
/// algorithms one pass cannot (the sliding window log): the smallest value on the grid.
fn sweep_suggestion(rules: &mut [RuleReport], sweep: &[SweepPoint], spec: &ReplaySpec) {
    let (Some(first), [axis]) = (rules.first_mut(), spec.sweep.as_slice()) else {
        return;
    };
    if first.suggestion.is_some() || !matches!(axis.param.as_str(), "capacity" | "limit") {
        return;
    }
    let best = sweep
        .iter()
        .filter(|p| p.keys_denied_pct <= spec.suggest_max_keys_pct)
        .filter_map(|p| Some((p.params.get(&axis.param).copied()?, p.keys_denied_pct)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((value, keys_denied_pct)) = best {
        first.suggestion = Some(Suggestion {
            parameter: axis.param.clone(),
            value: value as u64,
            max_keys_denied_pct: spec.suggest_max_keys_pct,
            keys_denied_pct,
            method: "sweep".into(),
        });
    }
}

/// Deletes the run's keys (SCAN over its private prefix, UNLINK): a one-off at the end of a
/// replay, never a hot path. Failures are logged; the keys' TTLs evict them anyway.
async fn cleanup(limiter: &Limiter, keys: &KeySpace) {
    let mut conn = limiter.connection();
    let pattern = format!("{}:*", keys.prefix());
    let Ok(found) = conn.scan_match(&pattern).await else {
        tracing::warn!("could not delete the replay's keys under {}", keys.prefix());
        return;
    };
    if conn.unlink(&found).await.is_err() {
        tracing::warn!("could not delete the replay's keys under {}", keys.prefix());
    }
}

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
}

/// Reads the first `n` non-blank lines of `source` the way a replay would (without sorting):
/// cheap, for a preview before a run.
pub fn preview(source: &LogSource, spec: &ParseSpec, n: usize) -> Result<Preview, ReplayError> {
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
            Err(reason) => out.push(issue(reason)),
            Ok(Some(request)) => {
                let key = compiled.key.eval(parser, &request.line);
                out.push(PreviewLine {
                    line: number,
                    time_ms: Some(request.time.ms),
                    key: key.as_ref().ok().cloned(),
                    cost: Some(request.cost),
                    issue: key.err(),
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
    })
}
