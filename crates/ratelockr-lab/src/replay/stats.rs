//! One rule's figures, accumulated decision by decision in bounded memory, and turned into a
//! [`RuleReport`] at the end: totals, the series, keys denied at least once, the key table's
//! top keys, per-key peak percentiles and the suggestion.

use super::distinct::Distinct;
use super::keytable::KeyTable;
use super::report::pct;
use super::report::{InFlight, PeakRates, PolicyFigures, RuleReport, Suggestion};
use super::series::SeriesBuilder;
use crate::subject::Subject;
use ratelockr::policy::{Limit, Policy};
use ratelockr::rule::{Algorithm, Rule};
use ratelockr::Decision;
use std::collections::BTreeMap;

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
        // Without durations a lease is held its whole life: the peak over one lease_ms.
        Algorithm::Concurrency { lease_ms, .. } => (lease_ms, None),
        Algorithm::Calendar { period, .. } => (period.nominal_ms(), None),
    }
}

/// The `q` quantile of `sorted` (not empty), as the report's percentiles take it.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
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
    policy: Option<PolicyTally>,
    /// The log gave durations: the key table counts requests in flight.
    durations: bool,
}

/// What a policy's run counts besides a rule's.
#[derive(Debug)]
struct PolicyTally {
    policy: Policy,
    /// Every limit name of the policy (its tiers' too), once, in order of appearance.
    names: Vec<String>,
    /// Per tier, each of its limits' index in `names`.
    name_of: Vec<Vec<usize>>,
    shadow_denied: u64,
    /// Denials (shadow ones too) per tier and binding limit, indexed as [`Policy::tier_limits`].
    denied_by: Vec<Vec<u64>>,
    /// Distinct keys per tier.
    tier_keys: Vec<Distinct>,
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
            policy: None,
            durations: false,
        }
    }

    /// A policy's tally: its peaks and top keys are measured on its first limit's window.
    pub fn for_policy(policy: Policy, capacity: usize) -> Self {
        let first = *policy.limits()[0].algorithm();
        let rule =
            Rule::new(policy.name(), first).expect("a policy's name and limits are a rule's");
        let tiers = policy.overrides().len() + 1;
        let denied_by = (0..tiers)
            .map(|t| vec![0; policy.tier_limits(t).len()])
            .collect();
        let mut names: Vec<String> = Vec::new();
        let name_of = (0..tiers)
            .map(|t| {
                policy
                    .tier_limits(t)
                    .iter()
                    .map(|l| match names.iter().position(|n| n == l.name()) {
                        Some(i) => i,
                        None => {
                            names.push(l.name().to_string());
                            names.len() - 1
                        }
                    })
                    .collect()
            })
            .collect();
        RuleTally {
            policy: Some(PolicyTally {
                policy,
                names,
                name_of,
                shadow_denied: 0,
                denied_by,
                tier_keys: (0..tiers).map(|_| Distinct::default()).collect(),
            }),
            ..RuleTally::new(rule, capacity)
        }
    }

    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref().map(|p| &p.policy)
    }

    /// What its records are of: the rule's script, or a policy.
    pub fn subject(&self) -> Subject {
        match self.policy {
            Some(_) => Subject::Policy,
            None => self.rule.kind().into(),
        }
    }

    /// One decision. `would_deny`: a policy's limits denied it (a shadow policy admitted it
    /// all the same; its key and the top keys count it as denied, its series as
    /// shadow-denied).
    pub fn add(
        &mut self,
        key: &str,
        key_hash: u64,
        ms: u64,
        cost: u64,
        d: &Decision,
        would_deny: bool,
    ) {
        self.requests += 1;
        if d.fail_open() {
            self.fail_open += 1;
        } else if d.allowed {
            self.allowed += 1;
            if would_deny {
                self.denied_keys.insert(key_hash);
            }
        } else {
            self.denied += 1;
            self.denied_keys.insert(key_hash);
        }
        // A delayed admission is served at its start time: the chart shows the smoothed line.
        self.series
            .add(ms + d.delay_ms, d.allowed, d.fail_open(), would_deny);
        self.table
            .add(key, ms, cost, d.allowed && !would_deny, d.fail_open());
    }

    /// The request just added ([`RuleTally::add`]) was in flight for `duration_ms`: under a
    /// concurrency rule, for at most its `lease_ms` (its lease expires then).
    pub fn add_in_flight(&mut self, key: &str, ms: u64, duration_ms: u64) {
        self.durations = true;
        let hold = match *self.rule.algorithm() {
            Algorithm::Concurrency { lease_ms, .. } => duration_ms.min(lease_ms),
            _ => duration_ms,
        };
        self.table.add_in_flight(key, ms, hold);
    }

    /// A policy's part of one decision (after [`RuleTally::add`]): its tier, the binding
    /// limit of a denial.
    pub fn add_policy(
        &mut self,
        key: &str,
        key_hash: u64,
        tier: usize,
        binding: Option<usize>,
        would_deny: bool,
    ) {
        let Some(p) = &mut self.policy else {
            return;
        };
        if let Some(keys) = p.tier_keys.get_mut(tier) {
            keys.insert(key_hash);
        }
        if !would_deny {
            return;
        }
        if p.policy.mode() == ratelockr::policy::Mode::Shadow {
            p.shadow_denied += 1;
        }
        if let Some(n) = binding.and_then(|b| p.denied_by.get_mut(tier)?.get_mut(b)) {
            *n += 1;
        }
        if let Some(&name) = binding.and_then(|b| p.name_of.get(tier)?.get(b)) {
            self.table.note_binding(key, name);
        }
    }

    /// The binding limit's and the tier's names, as a record carries them ("" for none).
    pub fn names(&self, tier: usize, binding: Option<usize>) -> (&str, &str) {
        let Some(p) = &self.policy else {
            return ("", "");
        };
        let limit = binding
            .and_then(|b| p.policy.tier_limits(tier).get(b))
            .map_or("", Limit::name);
        let tier = match tier {
            0 => "",
            i => p.policy.overrides()[i - 1].tier(),
        };
        (limit, tier)
    }

    pub fn table(&self) -> &KeyTable {
        &self.table
    }

    /// Requests denied, a shadow policy's would-be denials included.
    pub fn would_deny(&self) -> u64 {
        self.denied + self.policy.as_ref().map_or(0, |p| p.shadow_denied)
    }

    pub fn keys_denied(&self) -> u64 {
        self.denied_keys.count()
    }

    pub fn finish(self, keys: u64, top: usize, max_keys_denied_pct: f64) -> RuleReport {
        let keys_denied = self.keys_denied();
        let decided = self.allowed + self.denied;
        let peak_rates = self.peak_rates();
        let in_flight = self.in_flight(top);
        // A stack's allowance is not one parameter: no suggestion for a policy.
        let suggestion = match self.policy {
            None => self.suggestion(max_keys_denied_pct),
            Some(_) => None,
        };
        let subject = self.subject();
        let top_keys = self.top_keys(top);
        let policy = self.policy.map(PolicyTally::finish);
        RuleReport {
            policy,
            rule: self.rule.name().to_string(),
            algorithm: subject,
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
            top_keys,
            top_keys_exact: self.table.is_exact(),
            peak_rates,
            in_flight,
            suggestion,
            series: self.series.finish(),
        }
    }

    /// The most denied keys; a policy's with the limits that denied each.
    fn top_keys(&self, top: usize) -> Vec<super::report::TopKey> {
        let mut keys = self.table.top(top);
        if let Some(p) = &self.policy {
            for k in &mut keys {
                let Some(entry) = self.table.entry(&k.key) else {
                    continue;
                };
                k.denied_by = entry
                    .by_limit
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, &n)| (p.names[i].clone(), n))
                    .collect();
            }
        }
        keys
    }

    /// With durations: percentiles over keys of each key's peak in flight, and the keys with
    /// the highest.
    fn in_flight(&self, top: usize) -> Option<InFlight> {
        if !self.durations {
            return None;
        }
        let mut peaks: Vec<u64> = self
            .table
            .entries()
            .iter()
            .map(|e| e.peak_in_flight)
            .collect();
        if peaks.is_empty() {
            return None;
        }
        peaks.sort_unstable();
        let at = |q: f64| quantile(&peaks, q);
        Some(InFlight {
            capped_at_ms: match *self.rule.algorithm() {
                Algorithm::Concurrency { lease_ms, .. } => Some(lease_ms),
                _ => None,
            },
            keys: peaks.len() as u64,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: at(1.0),
            top_keys: self.table.top_in_flight(top),
        })
    }

    fn peak_rates(&self) -> Option<PeakRates> {
        let mut peaks: Vec<u64> = self.table.entries().iter().map(|e| e.peak).collect();
        if peaks.is_empty() {
            return None;
        }
        peaks.sort_unstable();
        let at = |q: f64| quantile(&peaks, q);
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
                if self.rule.kind() == ratelockr::rule::AlgorithmKind::Gcra {
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
            // In flight: exact from each key's peak, when the log gave durations.
            Algorithm::Concurrency { .. } if self.durations => {
                ("limit", entries.iter().map(|e| e.peak_in_flight).collect())
            }
            Algorithm::SlidingWindowLog { .. }
            | Algorithm::SlidingWindowCounter { .. }
            | Algorithm::Concurrency { .. }
            | Algorithm::Calendar { .. } => return None,
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

impl PolicyTally {
    fn finish(self) -> PolicyFigures {
        let mut denied_by: BTreeMap<String, u64> = BTreeMap::new();
        for (tier, counts) in self.denied_by.iter().enumerate() {
            for (limit, n) in self.policy.tier_limits(tier).iter().zip(counts) {
                if *n > 0 {
                    *denied_by.entry(limit.name().to_string()).or_insert(0) += n;
                }
            }
        }
        let mut tier_keys = BTreeMap::new();
        if !self.policy.overrides().is_empty() {
            for (tier, keys) in self.tier_keys.iter().enumerate() {
                let name = match tier {
                    0 => String::new(),
                    i => self.policy.overrides()[i - 1].tier().to_string(),
                };
                *tier_keys.entry(name).or_insert(0) += keys.count();
            }
        }
        PolicyFigures {
            policy: self.policy,
            shadow_denied: self.shadow_denied,
            denied_by,
            tier_keys,
        }
    }
}
