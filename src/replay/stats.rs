//! One rule's figures, accumulated decision by decision in bounded memory, and turned into a
//! [`RuleReport`] at the end: totals, the series, keys denied at least once, the key table's
//! top keys, per-key peak percentiles and the suggestion.

use super::distinct::Distinct;
use super::keytable::KeyTable;
use super::report::pct;
use super::report::{PeakRates, RuleReport, Suggestion};
use super::series::SeriesBuilder;
use crate::decision::Decision;
use crate::rule::{Algorithm, Rule};

/// The window over which a key's peak is measured, and the refill rate its token-bucket
/// requirement uses: the rule's window; for a token bucket, one second and its rate.
fn requirement_basis(algorithm: &Algorithm) -> (u64, Option<f64>) {
    match *algorithm {
        Algorithm::TokenBucket { refill_per_sec, .. } => (1000, Some(refill_per_sec)),
        // GCRA is a token bucket of `burst` refilling `limit` per period.
        Algorithm::Gcra {
            limit, window_ms, ..
        } => (1000, Some(limit as f64 * 1000.0 / window_ms as f64)),
        Algorithm::SlidingWindowLog { window_ms, .. }
        | Algorithm::SlidingWindowCounter { window_ms, .. }
        | Algorithm::FixedWindow { window_ms, .. } => (window_ms, None),
    }
}

/// One rule's running tallies in a replay, turned into a [`RuleReport`] at the end.
#[derive(Debug)]
pub struct RuleTally {
    pub rule: Rule,
    pub requests: u64,
    pub allowed: u64,
    pub denied: u64,
    pub fail_open: u64,
    series: SeriesBuilder,
    denied_keys: Distinct,
    table: KeyTable,
}

impl RuleTally {
    /// `capacity`: the key table's size (0 keeps no per-key figures: sweep configurations).
    pub fn new(rule: Rule, capacity: usize) -> Self {
        let (window_ms, rate) = requirement_basis(rule.algorithm());
        RuleTally {
            rule,
            requests: 0,
            allowed: 0,
            denied: 0,
            fail_open: 0,
            series: SeriesBuilder::default(),
            denied_keys: Distinct::default(),
            table: KeyTable::new(capacity, window_ms, rate),
        }
    }

    pub fn add(&mut self, key: &str, key_hash: u64, ms: u64, cost: u64, d: &Decision) {
        self.requests += 1;
        if d.fail_open() {
            self.fail_open += 1;
        } else if d.allowed {
            self.allowed += 1;
        } else {
            self.denied += 1;
            self.denied_keys.insert(key_hash);
        }
        self.series.add(ms, d.allowed, d.fail_open());
        self.table.add(key, ms, cost, d.allowed, d.fail_open());
    }

    pub fn keys_denied(&self) -> u64 {
        self.denied_keys.count()
    }

    pub fn finish(self, keys: u64, top: usize, max_keys_denied_pct: f64) -> RuleReport {
        let keys_denied = self.keys_denied();
        let decided = self.allowed + self.denied;
        let peak_rates = self.peak_rates();
        let suggestion = self.suggestion(max_keys_denied_pct);
        RuleReport {
            rule: self.rule.name().to_string(),
            algorithm: self.rule.kind().as_str().to_string(),
            params: self.rule.clone(),
            requests: self.requests,
            allowed: self.allowed,
            denied: self.denied,
            fail_open: self.fail_open,
            allowed_pct: pct(self.allowed, decided),
            denied_pct: pct(self.denied, decided),
            keys,
            keys_denied,
            keys_denied_pct: pct(keys_denied, keys),
            top_keys: self.table.top(top),
            top_keys_exact: self.table.is_exact(),
            peak_rates,
            suggestion,
            series: self.series.finish(),
        }
    }

    fn peak_rates(&self) -> Option<PeakRates> {
        let mut peaks: Vec<u64> = self.table.entries().iter().map(|e| e.peak).collect();
        if peaks.is_empty() {
            return None;
        }
        peaks.sort_unstable();
        let at =
            |q: f64| peaks[((q * peaks.len() as f64).ceil() as usize).clamp(1, peaks.len()) - 1];
        Some(PeakRates {
            window_ms: self.table.window_ms(),
            keys: peaks.len() as u64,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: at(1.0),
        })
    }

    /// Exact where one pass can say it (see [`super::keytable`]): the token bucket's capacity
    /// at its rate (GCRA's burst likewise), the fixed window's limit at its window. Other algorithms get theirs from a
    /// sweep.
    fn suggestion(&self, max_keys_denied_pct: f64) -> Option<Suggestion> {
        let entries = self.table.entries();
        let (parameter, mut needs): (&str, Vec<u64>) = match self.rule.algorithm() {
            Algorithm::TokenBucket { .. } | Algorithm::Gcra { .. } => (
                if self.rule.kind() == crate::rule::AlgorithmKind::Gcra {
                    "burst"
                } else {
                    "capacity"
                },
                entries
                    .iter()
                    .map(|e| (e.level_peak - 1e-9).ceil().max(1.0) as u64)
                    .collect(),
            ),
            Algorithm::FixedWindow { .. } => ("limit", entries.iter().map(|e| e.peak).collect()),
            Algorithm::SlidingWindowLog { .. } | Algorithm::SlidingWindowCounter { .. } => {
                return None
            }
        };
        if needs.is_empty() {
            return None;
        }
        needs.sort_unstable_by(|a, b| b.cmp(a));
        let n = needs.len();
        let may_deny = ((max_keys_denied_pct / 100.0) * n as f64).floor() as usize;
        let value = needs.get(may_deny).copied().unwrap_or(1).max(1);
        let denied = needs.iter().filter(|&&v| v > value).count() as u64;
        Some(Suggestion::new(
            parameter,
            value,
            max_keys_denied_pct,
            pct(denied, n as u64),
            "exact",
        ))
    }
}
