//! What the closed-loop load generators ([`super::engine`], [`super::api`]) share: one phase
//! every task reads (warming up, measuring, stopped), a tally per task merged at the end (so
//! the hot loop shares nothing but the phase), and a runtime of the caller's size.

use hdrhistogram::Histogram;
use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where a run is; tasks read it after each call, so a call that straddles a change of phase
/// counts in the phase it ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Warming,
    Measuring,
    Stopped,
}

/// The run's phase, shared by every task.
#[derive(Clone, Default)]
pub(crate) struct Phase(Arc<AtomicU8>);

impl Phase {
    pub(crate) fn now(&self) -> Step {
        match self.0.load(Ordering::Relaxed) {
            0 => Step::Warming,
            1 => Step::Measuring,
            _ => Step::Stopped,
        }
    }

    pub(crate) fn measure(&self) {
        self.0.store(1, Ordering::Relaxed);
    }

    pub(crate) fn stop(&self) {
        self.0.store(2, Ordering::Relaxed);
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 60 s, 3 significant digits.
    Histogram::new_with_bounds(1_000, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// One task's counts while measuring.
pub(crate) struct Tally {
    latency_ns: Histogram<u64>,
    allowed: u64,
    denied: u64,
    errors: u64,
}

impl Tally {
    pub(crate) fn new() -> Self {
        Tally {
            latency_ns: histogram(),
            allowed: 0,
            denied: 0,
            errors: 0,
        }
    }

    /// A decision Redis made, and how long the caller waited for it.
    pub(crate) fn decided(&mut self, allowed: bool, waited: Duration) {
        match allowed {
            true => self.allowed += 1,
            false => self.denied += 1,
        }
        self.latency_ns.saturating_record(waited.as_nanos() as u64);
    }

    /// A call that yielded no decision by Redis (an error, fail-open, degraded).
    pub(crate) fn error(&mut self) {
        self.errors += 1;
    }
}

/// Every task's tally, merged.
pub(crate) struct Totals {
    latency_ns: Histogram<u64>,
    pub allowed: u64,
    pub denied: u64,
    pub errors: u64,
}

impl Totals {
    /// Waits for every task and adds up their tallies; the first task error is returned.
    pub(crate) async fn merge<E: Into<anyhow::Error>>(
        tasks: Vec<tokio::task::JoinHandle<Result<Tally, E>>>,
    ) -> anyhow::Result<Totals> {
        let mut totals = Totals {
            latency_ns: histogram(),
            allowed: 0,
            denied: 0,
            errors: 0,
        };
        for task in tasks {
            let tally = task.await?.map_err(Into::into)?;
            totals.latency_ns.add(&tally.latency_ns)?;
            totals.allowed += tally.allowed;
            totals.denied += tally.denied;
            totals.errors += tally.errors;
        }
        Ok(totals)
    }

    pub(crate) fn decisions(&self) -> u64 {
        self.allowed + self.denied
    }

    /// The latency at quantile `q`, in µs.
    pub(crate) fn us(&self, q: f64) -> f64 {
        self.latency_ns.value_at_quantile(q) as f64 / 1000.0
    }

    pub(crate) fn max_us(&self) -> f64 {
        self.latency_ns.max() as f64 / 1000.0
    }
}

/// Runs `make()`'s future on a runtime of its own with `threads` workers (0 or 1: a
/// current-thread runtime), so that a connection opened inside it is driven on it too.
pub(crate) async fn on_own_runtime<T, Fut>(
    threads: usize,
    make: impl FnOnce() -> Fut + Send + 'static,
) -> anyhow::Result<T>
where
    T: Send + 'static,
    Fut: Future<Output = anyhow::Result<T>>,
{
    tokio::task::spawn_blocking(move || {
        let runtime = match threads {
            0 | 1 => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            n => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .enable_all()
                .build()?,
        };
        runtime.block_on(make())
    })
    .await?
}
