//! The most a target admitted for one client key in any window of the rule's length, sliding
//! over the run, exact from the records: what makes a boundary burst visible as a number
//! ("60 in 2 s, limit 40") instead of a shape on a chart.

use ratelockr::rule::Algorithm;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The busiest window of one target: the most its limiter admitted (in cost units) for one
/// client key within `window_ms`, against the rule's `limit` for that span.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeakWindow {
    /// Admitted in the window (cost units; fail-open passes are not the limiter's and are
    /// not counted).
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub admitted: u64,
    /// The rule's nominal limit for one window: the windows' and GCRA's `limit`, the token
    /// bucket's `capacity`.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub limit: u64,
    /// The window's length: the windows' and GCRA's `window_ms`, the time a token bucket
    /// takes to refill from empty.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub window_ms: u64,
    /// Where the window starts, in ms since the run started: its first admission.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub start_ms: u64,
    /// The client key whose window it is.
    pub key: String,
}

impl PeakWindow {
    /// True when the window holds more than the limit.
    pub fn exceeds(&self) -> bool {
        self.admitted > self.limit
    }

    /// "60 in 2 s, limit 40".
    pub fn describe(&self) -> String {
        format!(
            "{} in {}, limit {}",
            self.admitted,
            fmt_span(self.window_ms),
            self.limit
        )
    }
}

/// "2 s", "1.5 s", "250 ms".
fn fmt_span(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{} s", ms as f64 / 1000.0)
    }
}

/// The window length and nominal limit a rule's peak is measured against.
pub fn rule_window(algorithm: &Algorithm) -> (u64, u64) {
    match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => {
            let refill_ms = (capacity as f64 * 1000.0 / refill_per_sec).ceil();
            // A refill slower than u64 ms saturates; the peak then spans the run.
            let window = if refill_ms.is_finite() && refill_ms < u64::MAX as f64 {
                refill_ms as u64
            } else {
                u64::MAX
            };
            (window.max(1), capacity)
        }
        Algorithm::Gcra {
            limit, window_ms, ..
        }
        | Algorithm::SlidingWindowLog { limit, window_ms }
        | Algorithm::SlidingWindowCounter { limit, window_ms }
        | Algorithm::FixedWindow { limit, window_ms } => (window_ms, limit),
        Algorithm::Concurrency { limit, lease_ms } => (lease_ms, limit),
        Algorithm::Calendar { limit, period, .. } => (period.nominal_ms(), limit),
    }
}

/// Collects one target's admissions per key (ms since the run's start, 4 bytes each) and
/// finds the busiest window at the end. Records complete out of order (latency, retries), so
/// the times are sorted once at the end rather than slid over as they come.
pub(crate) struct PeakTracker {
    window_ms: u64,
    limit: u64,
    admissions: HashMap<String, Vec<u32>>,
}

impl PeakTracker {
    pub(crate) fn new(window_ms: u64, limit: u64) -> Self {
        PeakTracker {
            window_ms: window_ms.max(1),
            limit,
            admissions: HashMap::new(),
        }
    }

    /// One admission of `key` at `offset_ms` since the run's start.
    pub(crate) fn admit(&mut self, key: &str, offset_ms: u64) {
        let offset = u32::try_from(offset_ms).unwrap_or(u32::MAX);
        match self.admissions.get_mut(key) {
            Some(times) => times.push(offset),
            None => {
                self.admissions.insert(key.to_string(), vec![offset]);
            }
        }
    }

    /// The busiest window (the earliest of equals; keys in name order for ties across keys),
    /// with each admission counting `cost`; None when nothing was admitted.
    pub(crate) fn finish(self, cost: u64) -> Option<PeakWindow> {
        let mut keys: Vec<(String, Vec<u32>)> = self.admissions.into_iter().collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        let mut best: Option<(u64, u64, String)> = None;
        for (key, mut times) in keys {
            times.sort_unstable();
            let (count, start) = busiest(&times, self.window_ms);
            let better = match &best {
                None => true,
                Some((n, s, _)) => count > *n || (count == *n && start < *s),
            };
            if better {
                best = Some((count, start, key));
            }
        }
        best.map(|(count, start_ms, key)| PeakWindow {
            admitted: count.saturating_mul(cost),
            limit: self.limit,
            window_ms: self.window_ms,
            start_ms,
            key,
        })
    }
}

/// The most sorted `times` within any half-open `[t, t + window_ms)` starting at one of them
/// (a busiest window can always be slid right to start at an admission), and the earliest
/// such start.
fn busiest(times: &[u32], window_ms: u64) -> (u64, u64) {
    let mut best = (0u64, 0u64);
    let mut end = 0;
    for (i, &start) in times.iter().enumerate() {
        let until = u64::from(start).saturating_add(window_ms);
        while end < times.len() && u64::from(times[end]) < until {
            end += 1;
        }
        let count = (end - i) as u64;
        if count > best.0 {
            best = (count, u64::from(start));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_window_is_half_open_and_the_earliest_of_equals() {
        // 3 at 0..=2, then 3 at 1000..=1002: a 1000 ms window holds 3, never 4 or more, and
        // the first such window starts at 0.
        let times = [0, 1, 2, 1000, 1001, 1002];
        assert_eq!(busiest(&times, 1000), (3, 0));
        // A 1001 ms window from 1 reaches 1000 (not 1001): 1, 2 and 1000.
        assert_eq!(busiest(&times, 1001), (4, 0));
        assert_eq!(busiest(&[], 1000), (0, 0));
    }

    #[test]
    fn a_boundary_burst_across_keys_reports_its_key_start_and_cost() {
        let mut t = PeakTracker::new(2000, 40);
        // key a: 40 late in one window and 20 early in the next: 60 within 2 s from 1900.
        for i in 0..40 {
            t.admit("a", 1900 + i);
        }
        for i in 0..20 {
            t.admit("a", 2000 + i);
        }
        // key b: 10 spread out.
        for i in 0..10 {
            t.admit("b", i * 1000);
        }
        let peak = t.finish(1).expect("admissions");
        assert_eq!(
            (peak.admitted, peak.limit, peak.start_ms, peak.key.as_str()),
            (60, 40, 1900, "a")
        );
        assert!(peak.exceeds());
        assert_eq!(peak.describe(), "60 in 2 s, limit 40");
        let mut t = PeakTracker::new(2000, 40);
        t.admit("a", 5);
        assert_eq!(t.finish(3).map(|p| p.admitted), Some(3));
        assert_eq!(PeakTracker::new(1, 1).finish(1), None);
    }

    #[test]
    fn each_rule_names_its_window_and_limit() {
        let bucket = Algorithm::TokenBucket {
            capacity: 40,
            refill_per_sec: 20.0,
        };
        assert_eq!(rule_window(&bucket), (2000, 40));
        let fixed = Algorithm::FixedWindow {
            limit: 40,
            window_ms: 2000,
        };
        assert_eq!(rule_window(&fixed), (2000, 40));
        assert_eq!(fmt_span(1500), "1.5 s");
        assert_eq!(fmt_span(250), "250 ms");
    }
}
