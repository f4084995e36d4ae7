//! A running simulation's observer: the engine's per-record and progress calls turned into
//! [`SimEvents`], fail-open decisions counted, the per-decision cue coalesced to one per
//! `EVENT_GAP` ([`crate::coalesce`]), and (for small runs) the records kept in columns.

use crate::coalesce::{Coalesce, EVENT_GAP};
use crate::records::Columns;
use crate::sim::{SimEvents, SimProgress};
use ratelockr_lab::sim::{self, Record, SimObserver};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Turns the engine's observer calls into [`SimEvents`], counting fail-open decisions and
/// coalescing the per-decision cue to one per `EVENT_GAP` ([`crate::coalesce`]).
pub(crate) struct Relay<'a> {
    events: Arc<dyn SimEvents>,
    /// Every request yields one record per target; the cue counts the first target's.
    first_rule: String,
    fail_open: AtomicU64,
    latest: &'a std::sync::Mutex<Option<SimProgress>>,
    /// Emits happen under this lock, so a flush's cue is ordered after every earlier one.
    cue: Arc<Mutex<Coalesce>>,
    /// Progress goes to the window at most once per `EVENT_GAP`; the latest is always kept
    /// (`latest`), and `sim_status` after `sim-finished` shows the final one.
    progress_gate: Mutex<Coalesce>,
    ticker: CancellationToken,
    /// The run's records in columns, built as they come (see [`Relay::with_columns`]).
    columns: Option<Mutex<Columns>>,
}

impl<'a> Relay<'a> {
    /// A relay with its cue ticker running (call within a Tokio runtime).
    pub fn new(
        events: Arc<dyn SimEvents>,
        first_rule: String,
        latest: &'a std::sync::Mutex<Option<SimProgress>>,
    ) -> Self {
        let cue = Arc::new(Mutex::new(Coalesce::new(EVENT_GAP)));
        let ticker = CancellationToken::new();
        let (tick_cue, tick_events, stop) = (cue.clone(), events.clone(), ticker.clone());
        tokio::spawn(async move {
            let mut frames = tokio::time::interval(EVENT_GAP);
            frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = frames.tick() => {
                        let mut cue = tick_cue.lock().unwrap_or_else(|e| e.into_inner());
                        if cue.tick(Instant::now()) {
                            tick_events.refetch_stats();
                        }
                    }
                }
            }
        });
        Relay {
            events,
            first_rule,
            fail_open: AtomicU64::new(0),
            latest,
            cue,
            progress_gate: Mutex::new(Coalesce::new(EVENT_GAP)),
            ticker,
            columns: None,
        }
    }

    /// Also keeps the run's records in columns, so the run chart of the run that just ended
    /// needs no reading back of its CSV.
    pub fn with_columns(mut self, columns: Columns) -> Self {
        self.columns = Some(Mutex::new(columns));
        self
    }

    /// The columns kept, if any.
    pub fn take_columns(&mut self) -> Option<Columns> {
        self.columns
            .take()
            .map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// Sends the owed cue, if any, and stops the ticker: call after the last record.
    pub fn flush(&self) {
        self.ticker.cancel();
        let mut cue = self.cue.lock().unwrap_or_else(|e| e.into_inner());
        if cue.flush(Instant::now()) {
            self.events.refetch_stats();
        }
    }
}

impl Drop for Relay<'_> {
    fn drop(&mut self) {
        self.ticker.cancel();
    }
}

impl SimObserver for Relay<'_> {
    fn on_start(&self, started_at_ms: u64) {
        if let Some(columns) = &self.columns {
            columns
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .set_start(started_at_ms);
        }
    }

    fn on_record(&self, record: &Record) {
        if let Some(columns) = &self.columns {
            columns
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&record.into());
        }
        if record.fail_open {
            self.fail_open.fetch_add(1, Ordering::Relaxed);
        }
        if *record.rule == *self.first_rule {
            let mut cue = self.cue.lock().unwrap_or_else(|e| e.into_inner());
            if cue.event(Instant::now()) {
                self.events.refetch_stats();
            }
        }
    }

    fn on_progress(&self, p: &sim::Progress) {
        let progress = SimProgress {
            sent: p.sent,
            completed: p.completed,
            planned: p.planned,
            elapsed_ms: p.elapsed_ms,
            fail_open: self.fail_open.load(Ordering::Relaxed),
        };
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress);
        let mut gate = self.progress_gate.lock().unwrap_or_else(|e| e.into_inner());
        if gate.event(Instant::now()) {
            self.events.progress(&progress);
        }
    }
}
