//! The one way a replay can decide differently from production: eviction in real time.
//!
//! The scripts set their keys' TTLs in real milliseconds (the token bucket twice its time to
//! refill, the windows their window). A replay usually runs far faster than its log, so a key's
//! state outlives every gap of log time that matters. But where the replay runs *slower* than
//! the log (a log denser than Redis's pace), Redis may evict a key that the log's clock still
//! needs, and the next decision would start from a fresh (full) state. Eviction can only
//! matter when, for some stretch of the run, more real time than the shortest TTL passed while
//! less log time than that TTL did; this watch looks for such a stretch, batch by batch, and
//! the report says so when it finds one.

use ratelockr::rule::{Algorithm, Rule};
use std::collections::VecDeque;

/// The shortest real-time TTL any of `rules` gives its keys, in ms.
fn shortest_ttl_ms(rules: &[Rule]) -> u64 {
    rules
        .iter()
        .map(|r| match *r.algorithm() {
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            } => ((capacity as f64 / refill_per_sec * 2.0).ceil() * 1000.0) as u64,
            // GCRA's TTL is the time until full, at most burst x T (a key written full); a key
            // nearer full has less, and loses as little when evicted.
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            } => (u128::from(burst) * u128::from(window_ms)).div_ceil(u128::from(limit)) as u64,
            Algorithm::SlidingWindowCounter { window_ms, .. } => window_ms.saturating_mul(2),
            Algorithm::SlidingWindowLog { window_ms, .. }
            | Algorithm::FixedWindow { window_ms, .. } => window_ms,
            // A set of leases lives at least lease_ms after its last one was taken.
            Algorithm::Concurrency { lease_ms, .. } => lease_ms,
            // A window's key lives until the window ends: at least its shortest length.
            Algorithm::Calendar { period, .. } => period.shortest_ms(),
        })
        .min()
        .unwrap_or(u64::MAX)
}

#[derive(Debug)]
pub struct PaceWatch {
    ttl_ms: u64,
    /// (real ms since the start, log ms), one per batch, covering the last TTL of real time.
    marks: VecDeque<(u64, u64)>,
    /// The worst stretch seen: (real ms, log ms).
    worst: Option<(u64, u64)>,
}

impl PaceWatch {
    pub fn new(rules: &[Rule]) -> Self {
        PaceWatch {
            ttl_ms: shortest_ttl_ms(rules),
            marks: VecDeque::new(),
            worst: None,
        }
    }

    /// A batch is sent `real_ms` after the start, its last request at log time `log_ms`.
    pub fn observe(&mut self, real_ms: u64, log_ms: u64) {
        // Keep the latest mark at least a TTL of real time old at the front.
        while self.marks.len() >= 2 && self.marks[1].0 + self.ttl_ms <= real_ms {
            self.marks.pop_front();
        }
        if let Some(&(then_real, then_log)) = self.marks.front() {
            let (real, log) = (real_ms - then_real, log_ms.saturating_sub(then_log));
            if real >= self.ttl_ms && log < self.ttl_ms && self.worst.is_none() {
                self.worst = Some((real, log));
            }
        }
        self.marks.push_back((real_ms, log_ms));
    }

    pub fn warnings(&self) -> Vec<String> {
        match self.worst {
            None => Vec::new(),
            Some((real, log)) => vec![format!(
                "the replay ran slower than the log: {real} ms of real time passed while the log advanced {log} ms, longer than the shortest key TTL of the rules ({} ms), so Redis may have evicted state the log still needed; decisions after that may admit more than production would have. Replay fewer rules at once, or a less dense stretch of the log",
                self.ttl_ms
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_when_real_time_outruns_log_time_by_a_ttl() {
        let rules =
            [Rule::fixed_window("fw", 10, std::time::Duration::from_secs(1)).expect("valid")];
        let mut fast = PaceWatch::new(&rules);
        for i in 0..100 {
            fast.observe(i * 100, i * 10_000);
        }
        assert!(fast.warnings().is_empty());
        let mut slow = PaceWatch::new(&rules);
        for i in 0..100 {
            slow.observe(i * 100, i * 50);
        }
        let warnings = slow.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("1000 ms"), "{warnings:?}");
    }
}
