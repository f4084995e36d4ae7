//! The run loop: the simulated servers (each with its own Redis connection) offer the
//! workload's schedule, open-loop by the clock or closed-loop as fast as possible, to every
//! target at once; records stream to a [`RecordSink`] and a [`SimObserver`] as they complete,
//! and are summed into the [`Report`].

use super::error::SimError;
use super::naive;
use super::report::{Report, Series, TargetAccumulator, TargetSummary};
use super::spec::{SimClock, SimSpec, Target};
use super::workload::{self, Length, Workload};
use crate::record::{Record, RecordSink};
use crate::subject::Subject;
use ratelockr::limiter::Limiter;
use ratelockr::scripts::At;
use ratelockr::telemetry::now_ms;
use ratelockr::Decision;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// The most requests one simulated server keeps in flight; beyond it the schedule waits.
const MAX_IN_FLIGHT_PER_SERVER: usize = 4096;
/// The most requests' records the collector takes at once.
const COLLECT_AT_ONCE: usize = 1024;
/// How long the collector waits after a take that did not fill up.
const COLLECT_PAUSE: Duration = Duration::from_millis(2);
/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How far a run is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Requests sent so far (each offered to every target).
    pub sent: u64,
    /// Requests whose decisions have all come back.
    pub completed: u64,
    /// Requests the workload plans, when known.
    pub planned: Option<u64>,
    pub elapsed_ms: u64,
}

/// Sees a run as it happens: the live chart's `refetch-stats`, progress bars.
pub trait SimObserver: Send + Sync {
    /// Called once before the first request, with the run's start (ms since the epoch): the
    /// origin of the report's series and of `Record::sent_at_ms` offsets.
    fn on_start(&self, _started_at_ms: u64) {}
    /// Called for every record, in completion order.
    fn on_record(&self, _record: &Record) {}
    /// Called about every 100 ms, and once at the end.
    fn on_progress(&self, _progress: &Progress) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;
impl SimObserver for NoObserver {}

/// Runs `spec` against the Redis behind `limiter`. Each simulated server gets its own
/// connection (or takes one of the spec's shared [`SimSpec::connections`] in turn); the
/// servers run on a one-thread runtime of their own (a blocking task of the caller's
/// runtime), the records are summed on the caller's. `cancel` stops the schedule at once and
/// the run ends when in-flight decisions are back (each is bounded by the limiter's deadline).
/// The sink sees every record before the report is returned; on a sink error the run stops and
/// the error is returned.
pub async fn run(
    limiter: &Limiter,
    spec: &SimSpec,
    mut sink: Option<&mut dyn RecordSink>,
    observer: &dyn SimObserver,
    cancel: CancellationToken,
) -> Result<Report, SimError> {
    spec.validate()?;
    // One connection per simulated server (or the pool's): refused before any opens when
    // they would crowd the Redis out of connections for everyone else.
    let connections = spec.connections.unwrap_or(spec.workload.servers);
    crate::budget::connections_fit(limiter, u64::from(connections))
        .await
        .map_err(|err| SimError::InvalidWorkload {
            parameter: "servers",
            reason: err.to_string(),
        })?;
    let workload = Arc::new(spec.workload.clone());
    // A policy's tiers match client keys; in the run's own key namespace they match the
    // scoped names instead.
    let targets = Arc::new(
        spec.targets
            .iter()
            .map(|t| match (&t.policy, &spec.scope) {
                (Some(policy), Some(scope)) => Target {
                    policy: Some(policy.in_scope(scope)),
                    ..t.clone()
                },
                _ => t.clone(),
            })
            .collect::<Vec<_>>(),
    );
    let planned = workload.planned_requests();
    let evalsha_before = evalsha_stats(limiter).await;
    let started_at_ms = now_ms();
    observer.on_start(started_at_ms);
    let start = Instant::now();
    // A child token: a sink failure stops the run without cancelling the caller's token.
    let stop = cancel.child_token();
    let sent = Arc::new(AtomicU64::new(0));
    let (records_tx, mut records_rx) = mpsc::unbounded_channel::<Vec<Vec<Record>>>();

    // The servers' connections: one each, or a pool they take in turn.
    let pool: Vec<Limiter> = (0..connections)
        .map(|_| limiter.with_own_connection())
        .collect();
    let names: Arc<Vec<(Arc<str>, Subject)>> = Arc::new(
        targets
            .iter()
            .map(|t| (Arc::from(t.name()), t.subject()))
            .collect(),
    );
    let holds: Holds = Arc::default();
    let held_until_us = Arc::new(AtomicU64::new(0));
    let servers: Vec<Server> = (0..workload.servers)
        .map(|index| Server {
            index,
            limiter: pool[(index % connections) as usize].clone(),
            targets: targets.clone(),
            names: names.clone(),
            workload: workload.clone(),
            records: records_tx.clone(),
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT_PER_SERVER)),
            clock: spec.clock,
            scope: spec.scope.clone().map(Arc::from),
            stop: stop.clone(),
            started_at_ms,
            start,
            holds: holds.clone(),
            held_until_us: held_until_us.clone(),
        })
        .collect();
    drop(records_tx);
    // The simulated servers, their connections and their decisions run on a runtime of their
    // own on one thread, as `bench` drives the engine: a decision's answer wakes its request on
    // the thread that reads the connection, not across threads (each a futex wake). The
    // collector below stays on the caller's runtime.
    // When the last request was answered, µs from the start: the rate sent is over the
    // sending, not the holds that outlast it.
    let sent_until_us = Arc::new(AtomicU64::new(0));
    let drive_servers = {
        let (workload, stop, sent) = (workload.clone(), stop.clone(), sent.clone());
        let sent_until_us = sent_until_us.clone();
        move || -> std::io::Result<()> {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async {
                    drive(servers, workload, stop.clone(), sent, start).await;
                    sent_until_us.store(start.elapsed().as_micros() as u64, Ordering::Relaxed);
                    // The run ends when its last request does: the holds still running,
                    // leases or not.
                    let held: Vec<_> = std::mem::take(&mut *lock(&holds));
                    for hold in held {
                        let _ = hold.await;
                    }
                    let until =
                        start + Duration::from_micros(held_until_us.load(Ordering::Relaxed));
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = tokio::time::sleep_until(until.into()) => {}
                    }
                });
            Ok(())
        }
    };
    let driver = tokio::task::spawn_blocking(drive_servers);

    let mut accumulators: Vec<TargetAccumulator> = spec
        .targets
        .iter()
        .map(|t| {
            TargetAccumulator::new(
                t.name().to_string(),
                t.subject(),
                *t.rule.algorithm(),
                t.naive,
            )
            .with_policy(t.policy.clone())
        })
        .collect();
    let mut completed = 0u64;
    let mut last_progress = Instant::now();
    let mut sink_error = None;
    // Every request's records that have arrived, taken at once: the collector wakes once per
    // burst of completions, not once per request.
    let mut arrived = Vec::with_capacity(COLLECT_AT_ONCE);
    while records_rx.recv_many(&mut arrived, COLLECT_AT_ONCE).await > 0 {
        let took = arrived.len();
        for batch in arrived.drain(..) {
            completed += 1;
            // batch[i] holds target i's records of one request: one, or more with retries.
            for (records, accumulator) in batch.iter().zip(accumulators.iter_mut()) {
                for record in records {
                    if sink_error.is_none() {
                        if let Some(sink) = sink.as_deref_mut() {
                            if let Err(err) = sink.write(record) {
                                sink_error = Some(err);
                                stop.cancel();
                            }
                        }
                    }
                    observer.on_record(record);
                    accumulator.add(record, started_at_ms, workload.cost);
                }
            }
        }
        // A short take means the collector keeps up: it waits a little before the next, so
        // the simulated servers' sends accumulate instead of waking this thread once per
        // request (a futex wake each, the most expensive thing a fast run did).
        if took < COLLECT_AT_ONCE {
            tokio::time::sleep(COLLECT_PAUSE).await;
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = Instant::now();
            observer.on_progress(&Progress {
                sent: sent.load(Ordering::Relaxed),
                completed,
                planned,
                elapsed_ms: start.elapsed().as_millis() as u64,
            });
        }
    }
    let servers_failed = match driver.await {
        Ok(Ok(())) => None,
        Ok(Err(err)) => Some(err.to_string()),
        Err(err) => Some(err.to_string()),
    };
    if let Some(sink) = sink {
        let flushed = sink.flush();
        if sink_error.is_none() {
            sink_error = flushed.err();
        }
    }
    if let Some(err) = sink_error {
        return Err(SimError::Export(err));
    }
    if let Some(reason) = servers_failed {
        return Err(SimError::Servers(reason));
    }
    let duration_ms = start.elapsed().as_millis() as u64;
    let requests_sent = sent.load(Ordering::Relaxed);
    observer.on_progress(&Progress {
        sent: requests_sent,
        completed,
        planned,
        elapsed_ms: duration_ms,
    });
    let redis_cost = match (evalsha_before, evalsha_stats(limiter).await) {
        (Some(before), Some(after)) => before.cost_until(&after),
        _ => None,
    };
    let (summaries, series): (Vec<TargetSummary>, Vec<Series>) = accumulators
        .into_iter()
        .map(TargetAccumulator::finish)
        .unzip();
    Ok(Report {
        workload: spec.describe(),
        started_at_ms,
        duration_ms,
        cancelled: cancel.is_cancelled(),
        planned_requests: planned,
        requests_sent,
        requested_rps: workload.offered_rps(),
        achieved_rps: match sent_until_us.load(Ordering::Relaxed) {
            0 => 0.0,
            us => requests_sent as f64 * 1_000_000.0 / us as f64,
        },
        sweep: if spec.sweep.is_empty() {
            Vec::new()
        } else {
            super::report::sweep_points(&spec.targets, &summaries)
        },
        targets: summaries,
        series,
        redis_cost,
    })
}

/// EVALSHA's counters now, or None when Redis does not answer within the deadline (a run
/// against a dead Redis still runs, failing open, just without this figure).
async fn evalsha_stats(limiter: &Limiter) -> Option<ratelockr::commandstats::EvalshaStats> {
    let mut conn = limiter.connection();
    let read = ratelockr::commandstats::read_evalsha(&mut conn);
    match tokio::time::timeout(limiter.options().deadline, read).await {
        Ok(Ok(stats)) => Some(stats),
        _ => None,
    }
}

/// One simulated app instance.
struct Server {
    index: u32,
    /// Its own connection (a separate `Conn`: on a cluster, its own cluster connection), like a separate process would have.
    limiter: Limiter,
    targets: Arc<Vec<Target>>,
    /// Each target's name and subject as its records carry them, made once.
    names: Arc<Vec<(Arc<str>, Subject)>>,
    workload: Arc<Workload>,
    records: mpsc::UnboundedSender<Vec<Vec<Record>>>,
    in_flight: Arc<Semaphore>,
    clock: SimClock,
    /// The run's key namespace, if it has its own (see [`SimSpec::scope`]).
    scope: Option<Arc<str>>,
    /// Stops retries waiting for their turn when the run is cancelled.
    stop: CancellationToken,
    /// The run's start, ms since the epoch: records carry their offset from it.
    started_at_ms: u64,
    /// The run's start: records' answers are timed from it (`Record::answered_us`).
    start: Instant,
    /// Admitted requests still holding a lease ([`Workload::hold`]): the run waits for them.
    holds: Holds,
    /// When the last admitted request's hold ends, µs from the start: the run waits for it
    /// (under a rate limit a request is in flight too, though it holds nothing).
    held_until_us: Arc<AtomicU64>,
}

/// The tasks holding leases for requests' time in flight.
type Holds = Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

fn lock(holds: &Holds) -> std::sync::MutexGuard<'_, Vec<tokio::task::JoinHandle<()>>> {
    holds
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Offers the schedule: open-loop by the clock, or closed-loop per server for `rps = 0`.
async fn drive(
    servers: Vec<Server>,
    workload: Arc<Workload>,
    stop: CancellationToken,
    sent: Arc<AtomicU64>,
    start: Instant,
) {
    if workload.rps == 0.0 {
        let next = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = servers
            .into_iter()
            .map(|server| {
                tokio::spawn(closed_loop(
                    server,
                    next.clone(),
                    stop.clone(),
                    sent.clone(),
                    start,
                ))
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
        return;
    }
    let count = servers.len() as u64;
    let mut pickers: Vec<_> = (0..count as u32).map(|s| workload.key_picker(s)).collect();
    let mut in_flight = Vec::new();
    for (seq, offset_us) in workload.schedule().enumerate() {
        let seq = seq as u64;
        let due = start + Duration::from_micros(offset_us);
        if due > Instant::now() {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep_until(due.into()) => {}
            }
        } else if stop.is_cancelled() {
            break;
        }
        let server = &servers[(seq % count) as usize];
        let key = workload::key_name(pickers[server.index as usize].pick());
        let Ok(permit) = server.in_flight.clone().acquire_owned().await else {
            break;
        };
        sent.fetch_add(1, Ordering::Relaxed);
        let request = server.request(seq, key);
        in_flight.push(tokio::spawn(async move {
            request.await;
            drop(permit);
        }));
        if in_flight.len() >= 1024 {
            in_flight.retain(|t: &tokio::task::JoinHandle<()>| !t.is_finished());
        }
    }
    for task in in_flight {
        let _ = task.await;
    }
}

async fn closed_loop(
    server: Server,
    next: Arc<AtomicU64>,
    stop: CancellationToken,
    sent: Arc<AtomicU64>,
    start: Instant,
) {
    let mut picker = server.workload.key_picker(server.index);
    loop {
        if stop.is_cancelled() {
            break;
        }
        let seq = next.fetch_add(1, Ordering::Relaxed);
        let more = match server.workload.length {
            Length::Requests(n) => seq < n,
            Length::DurationMs(ms) => start.elapsed() < Duration::from_millis(ms),
        };
        if !more {
            break;
        }
        sent.fetch_add(1, Ordering::Relaxed);
        let key = workload::key_name(picker.pick());
        server.request(seq, key).await;
    }
}

impl Server {
    /// One request, offered to every target at once; its records go out together. In a retry
    /// storm a denied request is sent again to the target that denied it, after that denial's
    /// `retry_after_ms`, up to the workload's retry limit.
    fn request(
        &self,
        seq: u64,
        key: String,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let limiter = self.limiter.clone();
        let targets = self.targets.clone();
        let names = self.names.clone();
        let key: Arc<str> = key.into();
        let records = self.records.clone();
        let cost = self.workload.cost;
        let retries = self.workload.retry.map_or(0, |r| r.max_attempts);
        // The request's time in flight, the same for every target it is offered to.
        let hold = self.workload.hold.map(|h| h.draw(self.workload.seed, seq));
        let server = self.index;
        let clock = self.clock;
        let stop = self.stop.clone();
        let started_at_ms = self.started_at_ms;
        let start = self.start;
        let holds = self.holds.clone();
        let held_until_us = self.held_until_us.clone();
        // The limiter sees the scoped name; records keep the client's own key.
        let scoped = self
            .scope
            .as_deref()
            .map(|scope| SimSpec::decided_as(Some(scope), &key));
        async move {
            // Every target sees the first try at the same time, so compare runs stay fair.
            let first_sent_ms = now_ms();
            let batch = futures::future::join_all(targets.iter().zip(names.iter()).map(
                |(target, &(ref name, subject))| {
                    let decided_as = scoped.as_deref().unwrap_or(&key);
                    let (limiter, key, stop, holds, held_until_us) =
                        (&limiter, &key, &stop, &holds, &held_until_us);
                    async move {
                        let mut out = Vec::with_capacity(1);
                        for attempt in 0..=retries {
                            let sent_at_ms = if attempt == 0 {
                                first_sent_ms
                            } else {
                                now_ms()
                            };
                            let at = match clock {
                                SimClock::Client => At::Millis(sent_at_ms),
                                SimClock::Server => At::ServerClock,
                            };
                            let started = Instant::now();
                            let decided = decide(limiter, target, decided_as, cost, at).await;
                            let answered = Instant::now();
                            let decision = &decided.decision;
                            // An admitted request is in flight from its answer (a delayed
                            // one's from the end of its wait) for its hold; then its lease, if
                            // it took one, goes back (a stop ends the hold at once: the run is
                            // over). The record says when, so the count of requests in flight
                            // stays inside the leases' lives.
                            let serves = answered + Duration::from_millis(decision.delay_ms);
                            let answered_us = serves.duration_since(start).as_micros() as u64;
                            let held = hold.filter(|_| decision.allowed);
                            if let Some(hold) = held {
                                let ends = serves + hold;
                                held_until_us.fetch_max(
                                    ends.duration_since(start).as_micros() as u64,
                                    Ordering::Relaxed,
                                );
                                if let Some(lease) = &decision.lease {
                                    let (lease, stop) = (lease.clone(), stop.clone());
                                    let task = tokio::spawn(async move {
                                        tokio::select! {
                                            _ = stop.cancelled() => {}
                                            _ = tokio::time::sleep_until(ends.into()) => {}
                                        }
                                        let _ = lease.release().await;
                                    });
                                    let mut holds = lock(holds);
                                    holds.retain(|t| !t.is_finished());
                                    holds.push(task);
                                }
                            }
                            // Delay instead of deny: a delayed admission starts (and is
                            // recorded as sent) delay_ms later, so the charts show the
                            // smoothed line the caller would serve.
                            let sent_at_ms = sent_at_ms + decision.delay_ms;
                            out.push(Record {
                                seq,
                                sent_at_ms,
                                server,
                                rule: name.clone(),
                                algorithm: subject,
                                key: key.clone(),
                                allowed: decision.allowed,
                                remaining: decision.remaining_or_unknown(),
                                retry_after_ms: decision.retry_after_ms,
                                latency_us: answered.duration_since(started).as_micros() as u64,
                                fail_open: decision.fail_open(),
                                reset_after_ms: decision.reset_after_ms,
                                attempt,
                                offset_ms: sent_at_ms.saturating_sub(started_at_ms),
                                binding: decided.binding,
                                tier: decided.tier,
                                would_deny: decided.would_deny,
                                hold_ms: held.map(|h| h.as_millis() as u64),
                                answered_us,
                            });
                            if decision.allowed || attempt == retries {
                                break;
                            }
                            // A wait of 0 (a fail-closed answer) would spin: wait at least 1 ms.
                            let wait = Duration::from_millis(decision.retry_after_ms.max(1));
                            tokio::select! {
                                _ = stop.cancelled() => break,
                                _ = tokio::time::sleep(wait) => {}
                            }
                        }
                        out
                    }
                },
            ))
            .await;
            let _ = records.send(batch);
        }
    }
}

/// A target's answer: the decision, and for a policy what its record adds.
struct Decided {
    decision: Decision,
    binding: Arc<str>,
    tier: Arc<str>,
    would_deny: bool,
}

impl From<Decision> for Decided {
    fn from(decision: Decision) -> Self {
        Decided {
            decision,
            binding: Arc::default(),
            tier: Arc::default(),
            would_deny: false,
        }
    }
}

/// One decision by a target's script, the naive limiter, or a policy's stacked script.
async fn decide(limiter: &Limiter, target: &Target, key: &str, cost: u64, at: At) -> Decided {
    if target.naive {
        let mut conn = limiter.connection();
        naive::decide(
            &mut conn,
            limiter.keys(),
            &target.rule,
            key,
            cost,
            limiter.options().deadline,
        )
        .await
        .into()
    } else if let Some(policy) = &target.policy {
        // Costs were checked against every limit of every tier before the run.
        match limiter.check_policy_at(policy, key, cost, at).await {
            Ok(d) => {
                let verdict = d.verdict();
                Decided {
                    // The combined answer, with the lease it took (held for the request's hold).
                    decision: Decision {
                        lease: d.lease.clone(),
                        ..d.combined()
                    },
                    binding: verdict
                        .and_then(|v| v.binding.as_deref())
                        .map(Arc::from)
                        .unwrap_or_default(),
                    tier: verdict
                        .and_then(|v| v.tier.as_deref())
                        .map(Arc::from)
                        .unwrap_or_default(),
                    would_deny: d.would_deny(),
                }
            }
            Err(_) => Decision::FAIL_OPEN.into(),
        }
    } else {
        // Costs were checked against every rule before the run.
        limiter
            .check_at(&target.rule, key, cost, at)
            .await
            .unwrap_or(Decision::FAIL_OPEN)
            .into()
    }
}
