//! The run loop: a reader thread parses the log into requests in order; each batch goes
//! through every rule's script in pipelined lanes ([`super::decide`]) while the next is read;
//! the decisions are accounted per rule, streamed as records, and summed into the report.

use super::calls::{collect, dispatch, Decider, Sent, Verdict};
use super::distinct::Distinct;
use super::error::ReplayError;
use super::format::LogFormat;
use super::input::LogSource;
use super::leases::Releases;
use super::read::{self, ReadStats, Req};
use super::report::{pct, ReplayReport, RuleReport, Suggestion, SweepPoint};
use super::spec::ReplaySpec;
use super::stats::RuleTally;
use super::{changes, decide, pace};
use crate::record::{ExportError, Record, RecordSink};
use crate::sweep;
use ratelockr::keys::KeySpace;
use ratelockr::limiter::Limiter;
use ratelockr::rule::Rule;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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

/// One rule of a run: a candidate, a configuration of the sweep, or a policy.
struct RuleRun {
    stats: RuleTally,
    sweep: Option<std::collections::BTreeMap<String, f64>>,
}

/// Policies side by side (the replay's other mode): no rules, no sweep beside them.
fn policy_runs(spec: &ReplaySpec) -> Result<Vec<RuleRun>, ReplayError> {
    let invalid = |parameter, reason: String| ReplayError::InvalidSpec { parameter, reason };
    if !spec.rules.is_empty() {
        return Err(invalid(
            "rules",
            "replay rules or policies, not both: a rule is a policy of one limit".into(),
        ));
    }
    if !spec.sweep.is_empty() {
        return Err(invalid(
            "sweep",
            "a sweep varies one rule's parameters: replay a rule, not a policy".into(),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut runs = Vec::new();
    for policy in &spec.policies {
        if !names.insert(policy.name()) {
            return Err(invalid(
                "policies",
                format!("two policies are named {:?}", policy.name()),
            ));
        }
        runs.push(RuleRun {
            stats: RuleTally::for_policy(policy.clone(), spec.key_capacity),
            sweep: None,
        });
    }
    Ok(runs)
}

/// The rules of a spec: the candidates, then the sweep's grid (around the first candidate);
/// or its policies.
fn rule_runs(spec: &ReplaySpec) -> Result<Vec<RuleRun>, ReplayError> {
    if !spec.policies.is_empty() {
        return policy_runs(spec);
    }
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
        let grid =
            sweep::grid(&spec.rules[0], &spec.sweep).map_err(|err| ReplayError::InvalidSpec {
                parameter: "sweep",
                reason: err.to_string(),
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
    sink: Option<&mut dyn RecordSink>,
    observer: &dyn ReplayObserver,
    cancel: CancellationToken,
) -> Result<ReplayReport, ReplayError> {
    spec.check_sizes()?;
    let compiled = spec.parse.compile()?;
    let runs = rule_runs(spec)?;
    let deciders: Vec<Decider> = runs
        .iter()
        .map(|r| Decider::new(&r.stats.rule, r.stats.policy()))
        .collect();
    let max_cost = deciders.iter().map(Decider::max_cost).min().unwrap_or(1);
    source.check_readable().map_err(|e| ReplayError::Open {
        log: source.describe(),
        message: e.to_string(),
    })?;
    crate::budget::connections_fit(limiter, spec.lanes as u64)
        .await
        .map_err(|err| ReplayError::InvalidSpec {
            parameter: "lanes",
            reason: err.to_string(),
        })?;
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

    // Eviction is watched on every limit's TTL, a policy's too.
    let pace_rules: Vec<Rule> = deciders
        .iter()
        .flat_map(|d| match &d.policy {
            None => vec![d.rule.clone()],
            Some(policy) => policy
                .all_limits()
                .filter_map(|l| Rule::new(l.name(), *l.algorithm()).ok())
                .collect(),
        })
        .collect();
    let mut tally = Tally {
        runs,
        sink,
        sink_error: None,
        all_keys: Distinct::default(),
        seq: 0,
        first_ms: None,
        last_ms: None,
    };
    let mut in_flight: VecDeque<(Vec<Req>, Sent)> = VecDeque::new();
    let mut releases = Releases::default();
    let mut last_progress = Instant::now();
    let mut pace = pace::PaceWatch::new(&pace_rules);
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
                let pending = dispatch(&lanes, &keys, &deciders, &reqs, &mut releases).await;
                in_flight.push_back((reqs, pending));
                // Two batches in flight: Redis decides one while the other's replies are read.
                if in_flight.len() > 2 {
                    if let Some((reqs, pending)) = in_flight.pop_front() {
                        let outcomes = collect(limiter, &deciders, &reqs, pending).await;
                        tally.account(&reqs, &outcomes);
                    }
                }
                if tally.sink_error.is_some() {
                    stop.store(true, Ordering::Relaxed);
                }
                if last_progress.elapsed() >= Duration::from_millis(100) {
                    last_progress = Instant::now();
                    observer.on_progress(&progress(tally.seq, tally.last_ms));
                }
            }
            ReadMsg::Done(result) => break result,
        }
    };
    while let Some((reqs, pending)) = in_flight.pop_front() {
        let outcomes = collect(limiter, &deciders, &reqs, pending).await;
        tally.account(&reqs, &outcomes);
    }
    let _ = reader.join();
    let read_stats = read_result?;
    let Tally {
        runs,
        sink,
        mut sink_error,
        all_keys,
        seq,
        first_ms,
        last_ms,
    } = tally;
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
    let sides: Vec<changes::Side<'_>> = runs
        .iter()
        .filter(|r| r.sweep.is_none())
        .map(|r| changes::Side {
            name: r.stats.rule.name(),
            denied: r.stats.would_deny(),
            keys_denied: r.stats.keys_denied(),
            table: r.stats.table(),
        })
        .collect();
    let changes = changes::compare(&sides, spec.top);
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
    let decisions = seq * deciders.len() as u64;
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
        changes,
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

/// What a run has decided so far, besides the in-flight batches: each rule's figures, the
/// records' sink and the log's own counts. Batches are accounted in log order.
struct Tally<'s> {
    runs: Vec<RuleRun>,
    sink: Option<&'s mut dyn RecordSink>,
    /// The sink's first failure: nothing is written after it, and the run stops reading.
    sink_error: Option<ExportError>,
    /// Distinct client keys over every rule.
    all_keys: Distinct,
    /// Requests accounted so far: the next record's `seq`.
    seq: u64,
    first_ms: Option<u64>,
    last_ms: Option<u64>,
}

impl Tally<'_> {
    /// Accounts one batch: `decisions` holds, request by request, every rule's decision.
    fn account(&mut self, reqs: &[Req], decisions: &[Verdict]) {
        let r = self.runs.len();
        for (j, req) in reqs.iter().enumerate() {
            self.all_keys.insert(req.key_hash);
            let first_ms = *self.first_ms.get_or_insert(req.ms);
            self.last_ms = Some(req.ms);
            for (i, run) in self.runs.iter_mut().enumerate() {
                let verdict = &decisions[j * r + i];
                let d = &verdict.decision;
                run.stats.add(
                    &req.key,
                    req.key_hash,
                    req.ms,
                    req.cost,
                    d,
                    verdict.would_deny,
                );
                if let Some(duration_ms) = req.duration_ms {
                    run.stats.add_in_flight(&req.key, req.ms, duration_ms);
                }
                run.stats.add_policy(
                    &req.key,
                    req.key_hash,
                    verdict.tier,
                    verdict.binding,
                    verdict.would_deny,
                );
                let (binding, tier) = run.stats.names(verdict.tier, verdict.binding);
                if self.sink_error.is_none() {
                    if let Some(sink) = self.sink.as_deref_mut() {
                        let record = Record {
                            seq: self.seq,
                            sent_at_ms: req.ms,
                            server: 0,
                            rule: run.stats.rule.name().into(),
                            algorithm: run.stats.subject(),
                            key: req.key.as_str().into(),
                            allowed: d.allowed,
                            remaining: d.remaining_or_unknown(),
                            retry_after_ms: d.retry_after_ms,
                            // Decisions are pipelined: no per-decision latency, and a constant
                            // keeps the CSV deterministic.
                            latency_us: 0,
                            fail_open: d.fail_open(),
                            reset_after_ms: d.reset_after_ms,
                            attempt: 0,
                            offset_ms: req.ms.saturating_sub(first_ms),
                            binding: binding.into(),
                            tier: tier.into(),
                            would_deny: verdict.would_deny,
                            ..Record::default()
                        };
                        if let Err(e) = sink.write(&record) {
                            self.sink_error = Some(e);
                        }
                    }
                }
            }
            self.seq += 1;
        }
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
        first.suggestion = Some(Suggestion::new(
            &axis.param,
            value as u64,
            spec.suggest_max_keys_pct,
            keys_denied_pct,
            "sweep",
        ));
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
