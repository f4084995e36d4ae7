//! Requests in flight per key: each admitted request of a run with holds (`--hold-ms`) is in
//! flight from its answer until its hold ends ([`Record::in_flight_us`]), under a rate limit as
//! under a concurrency limit, so the two can be compared. Counted per key, since a limit is
//! per key: per time bin, the most one key had in flight at once; over the run, the peak.
//!
//! A concurrency limit's lease is taken before the answer comes back and given back after the
//! hold ends, so these spans lie inside the leases' lives: the count never exceeds the limit.

use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The most requests one key had in flight at once over a run, and where.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlightPeak {
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub count: u64,
    pub key: String,
    /// When it was first reached, ms from the run's start.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub at_ms: u64,
}

/// One target's requests in flight, a key's spans at a time. Memory: two numbers per
/// admitted request with a hold.
#[derive(Debug, Clone, Default)]
pub struct InFlightCounter {
    spans: HashMap<String, Vec<(u64, u64)>>,
}

impl InFlightCounter {
    /// Counts `record` if it was in flight (an admitted request of a run with holds).
    pub fn add(&mut self, record: &Record) {
        if let Some((from, to)) = record.in_flight_us() {
            self.add_span(&record.key, from, to);
        }
    }

    /// One request of `key` in flight from `from_us` to `to_us` (µs from the run's start);
    /// an empty span is none.
    pub fn add_span(&mut self, key: &str, from_us: u64, to_us: u64) {
        if to_us <= from_us {
            return;
        }
        match self.spans.get_mut(key) {
            Some(spans) => spans.push((from_us, to_us)),
            None => {
                self.spans.insert(key.to_string(), vec![(from_us, to_us)]);
            }
        }
    }

    /// True when nothing was in flight (a run without holds).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// When the last request in flight ended, ms from the run's start (rounded up).
    pub fn end_ms(&self) -> u64 {
        let end = self.spans.values().flatten().map(|s| s.1).max();
        end.unwrap_or(0).div_ceil(1000)
    }

    /// Each key's count changes in time order: (µs, +1 or -1), an end before a start at the
    /// same moment (one request leaving as the next comes is not two at once).
    fn changes(spans: &[(u64, u64)]) -> Vec<(u64, i8)> {
        let mut changes: Vec<(u64, i8)> = spans
            .iter()
            .flat_map(|&(from, to)| [(from, 1), (to, -1)])
            .collect();
        changes.sort_unstable();
        changes
    }

    /// Per bin of `bin_ms` (`bins` of them; later spans count in the last), the most any one
    /// key had in flight at once during it.
    pub fn per_bin(&self, bin_ms: u64, bins: usize) -> Vec<u64> {
        let mut most = vec![0u64; bins];
        if bins == 0 {
            return most;
        }
        let bin_us = bin_ms.max(1) * 1000;
        let bin_of = |us: u64| ((us / bin_us) as usize).min(bins - 1);
        for spans in self.spans.values() {
            let mut count = 0u64;
            let mut bin = 0usize;
            for (at, change) in Self::changes(spans) {
                let b = bin_of(at);
                // The count held since the last change fills the bins up to this moment's.
                if count > 0 {
                    let last = bin_of(at.saturating_sub(1)).max(bin);
                    for m in &mut most[bin..=last] {
                        *m = (*m).max(count);
                    }
                }
                bin = b;
                count = if change > 0 { count + 1 } else { count - 1 };
                most[b] = most[b].max(count);
            }
        }
        most
    }

    /// The most one key had in flight at once, the key and when; None when nothing was.
    pub fn peak(&self) -> Option<InFlightPeak> {
        let mut best: Option<InFlightPeak> = None;
        // Keys in name order, so a tie names the same key every time.
        let mut keys: Vec<&String> = self.spans.keys().collect();
        keys.sort_unstable();
        for key in keys {
            let mut count = 0u64;
            for (at, change) in Self::changes(&self.spans[key]) {
                count = if change > 0 { count + 1 } else { count - 1 };
                if best.as_ref().is_none_or(|b| count > b.count) {
                    best = Some(InFlightPeak {
                        count,
                        key: key.clone(),
                        at_ms: at / 1000,
                    });
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_spans_count_per_key_and_an_end_meeting_a_start_is_not_overlap() {
        let mut c = InFlightCounter::default();
        // Key a: 0..200 ms, 100..300 ms, then 300..400 ms starting as the second ends.
        c.add_span("a", 0, 200_000);
        c.add_span("a", 100_000, 300_000);
        c.add_span("a", 300_000, 400_000);
        // Key b: three at once at 50 ms, but on another key.
        for _ in 0..3 {
            c.add_span("b", 50_000, 60_000);
        }
        c.add_span("c", 10, 10);
        assert_eq!(c.per_bin(100, 5), vec![3, 2, 1, 1, 0]);
        assert_eq!(
            c.peak(),
            Some(InFlightPeak {
                count: 3,
                key: "b".into(),
                at_ms: 50
            })
        );
        assert_eq!(c.end_ms(), 400);
        // Spans after the last bin count in it.
        assert_eq!(c.per_bin(100, 2), vec![3, 2]);
        let mut one = InFlightCounter::default();
        one.add_span("a", 0, 1_000_000);
        assert_eq!(
            one.per_bin(100, 4),
            vec![1, 1, 1, 1],
            "a long hold fills its bins"
        );
        assert!(InFlightCounter::default().peak().is_none());
    }
}
