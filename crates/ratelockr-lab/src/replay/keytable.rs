//! Per-key statistics of one rule in bounded memory: a table of at most `capacity` keys
//! (default 65,536), managed as a space-saving summary over denials.
//!
//! While a rule sees no more distinct keys than the table holds, every figure is exact. Past
//! that, a new key takes the place of the held key with the fewest denials (the oldest among
//! equals) and inherits its denial count as its error, as in Metwally et al.'s space-saving:
//! with D denials in all and m entries, every key with more than D / m denials is held, and a
//! held key's true denials lie in `[denied - denied_error, denied]`. Its other counts (requests,
//! allowed, first denial, streak, peaks) then cover the time since it was last taken in.
//!
//! Each entry also tracks what the key *required*, exactly and in O(1) space:
//! - its peak: the most cost units it sent in one window opening at its first request (as the
//!   fixed window opens one), with the rule's window (1 s for a token bucket): a fixed window
//!   of limit L denies a key at least once exactly when its peak exceeds L;
//! - for a token bucket of refill rate r, the Lindley recursion `level = max(level - r·dt, 0) +
//!   cost`: a bucket of capacity C at rate r denies the key at least once exactly when the
//!   level ever exceeds C;
//! - with durations in the log, its peak in flight: the most of its requests under way at once
//!   (each from its time for its duration, capped at `lease_ms` under a concurrency rule): a
//!   concurrency limit of L denies the key at least once exactly when that peak exceeds L.

use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

pub const DEFAULT_CAPACITY: usize = 65_536;

/// One client key among the most denied.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopKey {
    pub key: String,
    /// Requests counted for this key (all of them unless `denied_error` > 0, see
    /// `RuleReport::top_keys_exact` in the report).
    pub requests: u64,
    pub allowed: u64,
    pub denied: u64,
    pub denied_pct: f64,
    /// Log time of the key's first denial.
    pub first_denied_ms: Option<u64>,
    /// The most denials in a row for this key.
    pub longest_denied_streak: u64,
    /// The space-saving error bound of `denied`: the true count is in `[denied - error,
    /// denied]`. Zero unless the rule saw more distinct keys than the table holds.
    pub denied_error: u64,
    /// A policy's key: its denials (a shadow policy's would-be denials) by the limit that
    /// decided them.
    #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, number>"))]
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub denied_by: BTreeMap<String, u64>,
}

/// One client key among those with the most requests in flight at once.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInFlight {
    pub key: String,
    /// The most of its requests in flight at once, as the log's durations say.
    pub peak: u64,
    pub requests: u64,
    pub denied: u64,
}

/// A percentage, rounded to 1/1000 so that reports print the same everywhere.
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 100_000.0 / whole as f64).round() / 1000.0
    }
}

/// What one key did.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub requests: u64,
    pub allowed: u64,
    pub denied: u64,
    pub denied_error: u64,
    pub first_denied_ms: Option<u64>,
    streak: u64,
    pub longest_streak: u64,
    /// When its denial count last changed (or it was taken in): the tie-break for eviction.
    tick: u64,
    window_start: u64,
    window_count: u64,
    pub peak: u64,
    level: f64,
    level_ms: u64,
    pub level_peak: f64,
    /// A policy's run: the key's denials by the limit that decided them, by the limit's
    /// index in the policy's names (see [`KeyTable::note_binding`]).
    pub by_limit: Vec<u64>,
    /// With durations: when its requests in flight end, soonest first.
    ends: BinaryHeap<Reverse<u64>>,
    /// With durations: the most of its requests in flight at once.
    pub peak_in_flight: u64,
}

/// The table.
#[derive(Debug, Clone)]
pub struct KeyTable {
    capacity: usize,
    window_ms: u64,
    /// Tokens per ms, for a token bucket.
    rate_per_ms: Option<f64>,
    index: HashMap<String, usize>,
    entries: Vec<Entry>,
    /// (denied, tick, entry): the eviction order.
    order: BTreeSet<(u64, u64, usize)>,
    ticks: u64,
    pub evictions: u64,
}

impl KeyTable {
    pub fn new(capacity: usize, window_ms: u64, rate_per_sec: Option<f64>) -> Self {
        KeyTable {
            capacity,
            window_ms: window_ms.max(1),
            rate_per_ms: rate_per_sec.map(|r| r / 1000.0),
            index: HashMap::new(),
            entries: Vec::new(),
            order: BTreeSet::new(),
            ticks: 0,
            evictions: 0,
        }
    }

    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }

    pub fn is_exact(&self) -> bool {
        self.evictions == 0
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Counts one decision (fail-open decisions count as requests, not as allowed or denied).
    pub fn add(&mut self, key: &str, ms: u64, cost: u64, allowed: bool, fail_open: bool) {
        if self.capacity == 0 {
            return;
        }
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => self.take_in(key, ms),
        };
        let e = &mut self.entries[i];
        e.requests += 1;
        // Requirements count every request, admitted or not: they say what the key sent.
        if ms.saturating_sub(e.window_start) > self.window_ms {
            e.window_start = ms;
            e.window_count = 0;
        }
        e.window_count += cost;
        e.peak = e.peak.max(e.window_count);
        if let Some(rate) = self.rate_per_ms {
            let dt = ms.saturating_sub(e.level_ms) as f64;
            e.level = (e.level - dt * rate).max(0.0) + cost as f64;
            e.level_ms = e.level_ms.max(ms);
            e.level_peak = e.level_peak.max(e.level);
        }
        if fail_open {
            return;
        }
        if allowed {
            e.allowed += 1;
            e.streak = 0;
            return;
        }
        e.streak += 1;
        e.longest_streak = e.longest_streak.max(e.streak);
        e.first_denied_ms.get_or_insert(ms);
        self.order.remove(&(e.denied, e.tick, i));
        e.denied += 1;
        self.ticks += 1;
        e.tick = self.ticks;
        self.order.insert((e.denied, e.tick, i));
    }

    /// A new key: a new entry, or the place of the held key with the fewest denials.
    fn take_in(&mut self, key: &str, ms: u64) -> usize {
        self.ticks += 1;
        let fresh = |denied: u64, tick: u64| Entry {
            key: key.to_string(),
            requests: 0,
            allowed: 0,
            denied,
            denied_error: denied,
            first_denied_ms: None,
            streak: 0,
            longest_streak: 0,
            tick,
            window_start: ms,
            window_count: 0,
            peak: 0,
            level: 0.0,
            level_ms: ms,
            level_peak: 0.0,
            by_limit: Vec::new(),
            ends: BinaryHeap::new(),
            peak_in_flight: 0,
        };
        let i = if self.entries.len() < self.capacity {
            self.entries.push(fresh(0, self.ticks));
            self.entries.len() - 1
        } else {
            let Some((min_denied, tick, i)) = self.order.pop_first() else {
                unreachable!("a full table has entries")
            };
            let _ = tick;
            self.evictions += 1;
            self.index.remove(&self.entries[i].key);
            self.entries[i] = fresh(min_denied, self.ticks);
            i
        };
        self.order.insert((self.entries[i].denied, self.ticks, i));
        self.index.insert(key.to_string(), i);
        i
    }

    /// The request of `key` just added ([`KeyTable::add`]), at `ms`, is in flight for
    /// `hold_ms`. Every request counts, admitted or not: the peak says what the key sent.
    pub fn add_in_flight(&mut self, key: &str, ms: u64, hold_ms: u64) {
        let Some(&i) = self.index.get(key) else {
            return;
        };
        let e = &mut self.entries[i];
        while e.ends.peek().is_some_and(|&Reverse(end)| end <= ms) {
            e.ends.pop();
        }
        e.ends.push(Reverse(ms.saturating_add(hold_ms)));
        e.peak_in_flight = e.peak_in_flight.max(e.ends.len() as u64);
    }

    /// The `n` keys with the most requests in flight at once (then the most requests, then by
    /// name).
    pub fn top_in_flight(&self, n: usize) -> Vec<KeyInFlight> {
        let mut held: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| e.peak_in_flight > 0)
            .collect();
        held.sort_by(|a, b| {
            (b.peak_in_flight, b.requests)
                .cmp(&(a.peak_in_flight, a.requests))
                .then_with(|| a.key.cmp(&b.key))
        });
        held.into_iter()
            .take(n)
            .map(|e| KeyInFlight {
                key: e.key.clone(),
                peak: e.peak_in_flight,
                requests: e.requests,
                denied: e.denied,
            })
            .collect()
    }

    /// A policy's denial of `key` (just added) was decided by limit `index` of its names.
    pub fn note_binding(&mut self, key: &str, index: usize) {
        let Some(&i) = self.index.get(key) else {
            return;
        };
        let counts = &mut self.entries[i].by_limit;
        if counts.len() <= index {
            counts.resize(index + 1, 0);
        }
        counts[index] += 1;
    }

    /// What the table holds of `key`.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.index.get(key).map(|&i| &self.entries[i])
    }

    /// The `n` keys with the most denials (then the most requests, then by name), denied ones
    /// only.
    pub fn top(&self, n: usize) -> Vec<TopKey> {
        let mut held: Vec<&Entry> = self.entries.iter().filter(|e| e.denied > 0).collect();
        held.sort_by(|a, b| {
            (b.denied, b.requests)
                .cmp(&(a.denied, a.requests))
                .then_with(|| a.key.cmp(&b.key))
        });
        held.into_iter()
            .take(n)
            .map(|e| TopKey {
                key: e.key.clone(),
                requests: e.requests,
                allowed: e.allowed,
                denied: e.denied,
                denied_pct: pct(e.denied, e.requests.max(e.denied)),
                first_denied_ms: e.first_denied_ms,
                longest_denied_streak: e.longest_streak,
                denied_error: e.denied_error,
                denied_by: std::collections::BTreeMap::new(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_streaks_peaks_and_requirements_exactly() {
        let mut t = KeyTable::new(8, 1000, Some(1.0));
        // a: allowed, denied, denied, allowed, denied at 0, 100, 200, 2500, 2600 ms.
        for (ms, allowed) in [
            (0, true),
            (100, false),
            (200, false),
            (2500, true),
            (2600, false),
        ] {
            t.add("a", ms, 1, allowed, false);
        }
        t.add("b", 50, 2, true, false);
        let top = t.top(10);
        assert_eq!(top.len(), 1, "only denied keys are listed");
        let a = &top[0];
        assert_eq!((a.requests, a.allowed, a.denied), (5, 2, 3));
        assert_eq!((a.first_denied_ms, a.longest_denied_streak), (Some(100), 2));
        assert_eq!(a.denied_error, 0);
        let a = &t.entries()[0];
        assert_eq!(a.peak, 3, "three requests in the window opened at 0");
        // Lindley at 1 token/s: 1, 1.9, 2.8, then 2.5 s later max(2.8-2.5,0)+1 = 1.3, 2.2.
        assert!((a.level_peak - 2.8).abs() < 1e-9, "{}", a.level_peak);
        assert!(t.is_exact());
    }

    #[test]
    fn the_peak_in_flight_counts_requests_under_way_at_once() {
        let mut t = KeyTable::new(8, 1000, None);
        // a: [0, 500), [100, 200), [150, 400), [200, 300): three at 150 and again at 200 (the
        // one that ended at 200 is no longer in flight), then one at a time.
        for (ms, hold) in [(0, 500), (100, 100), (150, 250), (200, 100), (600, 10)] {
            t.add("a", ms, 1, true, false);
            t.add_in_flight("a", ms, hold);
        }
        t.add("b", 0, 1, true, false);
        t.add_in_flight("b", 0, 0);
        t.add("c", 0, 1, false, false);
        let top = t.top_in_flight(10);
        let peaks: Vec<(&str, u64)> = top.iter().map(|k| (k.key.as_str(), k.peak)).collect();
        assert_eq!(peaks, [("a", 3), ("b", 1)]);
        assert_eq!((top[0].requests, top[0].denied), (5, 0));
    }

    #[test]
    fn keeps_heavy_hitters_when_full() {
        let mut t = KeyTable::new(4, 1000, None);
        for round in 0..50u64 {
            t.add("abuser", round, 1, false, false);
            t.add(
                &format!("passer-by-{round}"),
                round,
                1,
                round % 7 == 0,
                false,
            );
        }
        assert!(!t.is_exact());
        let top = t.top(1);
        assert_eq!(top[0].key, "abuser");
        assert_eq!(top[0].denied, 50);
        assert_eq!(top[0].denied_error, 0, "it was never evicted");
    }
}
