//! Decisions per second and latency through the engine, measured honestly: the connection is
//! up and every script loaded before the clock starts, a warm-up is excluded, and Redis errors
//! and fail-open answers are counted apart from decisions, never as decisions.

use super::client_key;
use super::load::{on_own_runtime, Phase, Step, Tally, Totals};
use ratelockr::limiter::{CheckError, Limiter};
use ratelockr::rule::Rule;
use ratelockr::scripts::At;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct EngineBench {
    /// The rules decided, in turn: one on a single Redis; on a cluster, a copy of one rule on
    /// each master ([`super::ceiling::cluster_rules`]).
    pub rules: Vec<Rule>,
    /// Tasks deciding at once, each waiting for its answer before asking again (closed loop).
    pub concurrency: usize,
    /// Distinct client keys, visited round-robin.
    pub keys: usize,
    pub warmup: Duration,
    pub duration: Duration,
    /// An attack mix: most requests from a few keys already over their limit. `None`: every
    /// request from the ordinary keys.
    pub attack: Option<Attack>,
}

/// An attack mix for [`EngineBench`]: `per_mille` of every 1000 requests come from
/// `attackers` keys (`attacker-<n>`), which are soon over their limit; the rest from the
/// ordinary keys. Meant for a limiter with the deny cache on
/// ([`LimiterOptions::deny_cache`](ratelockr::LimiterOptions)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attack {
    pub per_mille: u16,
    pub attackers: usize,
}

/// What was measured.
#[derive(Debug, Clone, Serialize)]
pub struct EngineReport {
    pub algorithm: &'static str,
    pub concurrency: usize,
    pub keys: usize,
    /// The measured interval (warm-up excluded).
    pub seconds: f64,
    /// Decisions Redis made (allowed or denied) within the measured interval.
    pub decisions: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Calls that failed and so made no decision (each would have been a fail-open).
    pub errors: u64,
    pub decisions_per_sec: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Of `decisions`, those the local deny cache made without Redis (0 without the cache).
    pub cache_denied: u64,
    /// Decisions Redis made, per second: `decisions - cache_denied` over the interval.
    pub redis_decisions_per_sec: f64,
    /// CPU this process spent per decision while measuring (the engine, the runtime, the
    /// benchmark loop itself), in microseconds.
    pub client_cpu_us_per_decision: Option<f64>,
    /// CPU Redis spent per decision while measuring, in microseconds.
    pub redis_cpu_us_per_decision: Option<f64>,
    /// The attack mix as it was achieved while measuring (None without `attack`).
    pub mix: Option<AchievedMix>,
}

/// What an attack mix achieved while measuring: the offered share, and whether the ordinary
/// keys stayed under their limit (each is used at most [`ORDINARY_USES`] times, under every
/// attack rule's allowance, so none should be denied).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct AchievedMix {
    /// Decisions for attacking keys.
    pub attack: u64,
    /// Decisions for ordinary keys.
    pub ordinary: u64,
    /// Ordinary decisions that were denials (0 when the mix holds).
    pub ordinary_denied: u64,
    /// `attack` of all, percent.
    pub attack_pct: f64,
}

/// The most requests one ordinary key makes in an attack mix: half the attack rule's
/// allowance, so ordinary keys are never denied however fast the benchmark runs (they are
/// renamed, a generation at a time, rather than revisited).
pub const ORDINARY_USES: usize = 50;

/// Decisions counted by class while measuring.
#[derive(Default)]
struct MixCounts {
    attack: AtomicU64,
    ordinary: AtomicU64,
    ordinary_denied: AtomicU64,
}

impl EngineBench {
    /// Runs the benchmark on a runtime of its own with `threads` workers (1: a current-thread
    /// runtime), through a fresh connection of `limiter` (same options, ledger and observer)
    /// that is opened on that runtime, so the connection's driver and the callers share it.
    pub async fn run_on_own_runtime(
        &self,
        limiter: &Limiter,
        threads: usize,
    ) -> anyhow::Result<EngineReport> {
        let bench = self.clone();
        let limiter = limiter.with_own_connection();
        on_own_runtime(threads, move || async move { bench.run(&limiter).await }).await
    }

    /// Runs the benchmark through `limiter` (use the limiter that production would: same
    /// options, same observer). Fails only when Redis cannot be reached before the start.
    pub async fn run(&self, limiter: &Limiter) -> anyhow::Result<EngineReport> {
        anyhow::ensure!(self.concurrency >= 1, "concurrency must be at least 1");
        anyhow::ensure!(!self.rules.is_empty(), "at least one rule");
        anyhow::ensure!(self.keys >= 1, "keys must be at least 1");
        if let Some(attack) = self.attack {
            anyhow::ensure!(
                attack.per_mille <= 1000,
                "the attack share is at most 1000 per mille"
            );
            anyhow::ensure!(
                attack.attackers >= 1,
                "an attack needs at least 1 attacking key"
            );
        }
        // Connect and load the script before the clock starts: one decision does both.
        limiter
            .ping()
            .await
            .map_err(|e| anyhow::anyhow!("Redis at {} does not answer: {e}", limiter.target()))?;
        // Each rule's first decision puts its script in the cache of the node serving it.
        for rule in &self.rules {
            limiter
                .try_check_at(rule, &client_key(0), 1, At::ServerClock)
                .await
                .map_err(|e| anyhow::anyhow!("the first decision failed: {e}"))?;
        }

        let keys: Arc<[String]> = (0..self.keys).map(client_key).collect();
        let attack = self.attack.unwrap_or(Attack {
            per_mille: 0,
            attackers: 1,
        });
        let attackers: Arc<[String]> = (0..attack.attackers)
            .map(|i| format!("attacker-{i}"))
            .collect();
        let phase = Phase::default();
        let mix = Arc::new(MixCounts::default());
        let attacking = self.attack.is_some();
        let mut tasks = Vec::with_capacity(self.concurrency);
        for task in 0..self.concurrency {
            let (limiter, rules, keys, attackers, phase, mix) = (
                limiter.clone(),
                self.rules.clone(),
                keys.clone(),
                attackers.clone(),
                phase.clone(),
                mix.clone(),
            );
            let stride = self.concurrency;
            tasks.push(tokio::spawn(async move {
                let mut tally = Tally::new();
                let mut i = task;
                loop {
                    // The attack's share of every 1000 requests, spread over the attackers.
                    let rule = &rules[i % rules.len()];
                    let attacker = ((i * 7) % 1000) < usize::from(attack.per_mille);
                    let ordinary;
                    let key = if attacker {
                        &attackers[(i / 3) % attackers.len()]
                    } else if attacking {
                        // Each ordinary key a few dozen times, then the next generation's:
                        // however fast the run, ordinary keys stay under their limit.
                        let visit = i / rules.len();
                        let generation = visit / (keys.len() * ORDINARY_USES);
                        ordinary = format!("{}-g{generation}", keys[visit % keys.len()]);
                        &ordinary
                    } else {
                        &keys[(i / rules.len()) % keys.len()]
                    };
                    i += stride;
                    let started = Instant::now();
                    let result = limiter.try_check_at(rule, key, 1, At::ServerClock).await;
                    let elapsed = started.elapsed();
                    match phase.now() {
                        Step::Measuring => {}
                        Step::Warming => continue,
                        Step::Stopped => break,
                    }
                    if attacking {
                        let class = if attacker { &mix.attack } else { &mix.ordinary };
                        class.fetch_add(1, Ordering::Relaxed);
                        if !attacker && matches!(&result, Ok(d) if !d.allowed) {
                            mix.ordinary_denied.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    match result {
                        Ok(d) if d.is_fallback() => tally.error(),
                        Ok(d) => tally.decided(d.allowed, elapsed),
                        Err(CheckError::Redis(_)) => tally.error(),
                        Err(CheckError::Rule(err)) => return Err(err),
                    }
                }
                Ok(tally)
            }));
        }

        // A separate connection reads Redis's CPU, so the probe does not queue behind the load.
        let mut probe = limiter.with_own_connection().connection();
        tokio::time::sleep(self.warmup).await;
        let cpu_before = (
            super::process_cpu_secs(),
            super::redis_cpu_secs(&mut probe).await,
        );
        let hits = || limiter.deny_cache_stats().map_or(0, |s| s.hits);
        let hits_before = hits();
        phase.measure();
        let started = Instant::now();
        tokio::time::sleep(self.duration).await;
        phase.stop();
        let cache_denied = hits() - hits_before;
        let seconds = started.elapsed().as_secs_f64();
        let cpu_after = (
            super::process_cpu_secs(),
            super::redis_cpu_secs(&mut probe).await,
        );

        let totals = Totals::merge(tasks).await?;
        let decisions = totals.decisions();
        let per_decision = |before: Option<f64>, after: Option<f64>| {
            Some((after? - before?) * 1e6 / decisions.max(1) as f64)
        };
        Ok(EngineReport {
            algorithm: self.rules[0].kind().as_str(),
            concurrency: self.concurrency,
            keys: self.keys,
            seconds,
            decisions,
            allowed: totals.allowed,
            denied: totals.denied,
            errors: totals.errors,
            decisions_per_sec: decisions as f64 / seconds,
            p50_us: totals.us(0.50),
            p95_us: totals.us(0.95),
            p99_us: totals.us(0.99),
            max_us: totals.max_us(),
            cache_denied,
            redis_decisions_per_sec: decisions.saturating_sub(cache_denied) as f64 / seconds,
            client_cpu_us_per_decision: per_decision(cpu_before.0, cpu_after.0),
            redis_cpu_us_per_decision: per_decision(cpu_before.1, cpu_after.1),
            mix: attacking.then(|| {
                let attack = mix.attack.load(Ordering::Relaxed);
                let ordinary = mix.ordinary.load(Ordering::Relaxed);
                AchievedMix {
                    attack,
                    ordinary,
                    ordinary_denied: mix.ordinary_denied.load(Ordering::Relaxed),
                    attack_pct: 100.0 * attack as f64 / (attack + ordinary).max(1) as f64,
                }
            }),
        })
    }
}
