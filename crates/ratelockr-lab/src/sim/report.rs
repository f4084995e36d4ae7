//! What a run found: a summary per target and a per-second series for charts.

use super::exact::ExactLogJudge;
use super::in_flight::{InFlightCounter, InFlightPeak};
use super::peak::{rule_window, PeakTracker, PeakWindow};
use super::spec::Target;
use crate::record::Record;
use crate::subject::Subject;
use crate::sweep::SweepPoint;
use hdrhistogram::Histogram;
use ratelockr::policy::Policy;
use ratelockr::rule::Algorithm;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The summary of one target (an algorithm, or the naive limiter) over a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSummary {
    pub rule: String,
    pub algorithm: Subject,
    pub naive: bool,
    pub requests: u64,
    pub allowed: u64,
    pub denied: u64,
    pub fail_open: u64,
    /// Of `requests`, how many were retries of a denied request (a retry storm's extra load).
    #[serde(default)]
    pub retries: u64,
    /// Admissions beyond the most the rule could ever admit for a key over the span of that
    /// key's requests (token bucket: capacity + rate x span; windows: limit x (floor(span /
    /// window) + 1)), summed over keys. Zero for a correct limiter; the naive one shows its race.
    pub over_admitted: u64,
    /// Client keys that sent to this target.
    #[serde(default)]
    pub keys: u64,
    /// Client keys denied at least once.
    #[serde(default)]
    pub keys_denied: u64,
    /// A policy in shadow mode: requests admitted that its limits denied (counted in
    /// `allowed` too, since they passed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shadow_denied: u64,
    /// A policy: its denials (shadow ones included) by the limit that decided them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub denied_by: BTreeMap<String, u64>,
    /// A policy with overrides: client keys per tier that applied (`""` for the policy's own
    /// limits).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tier_keys: BTreeMap<String, u64>,
    /// The longest wait a denial carried (`retry_after_ms`); 0 when nothing was denied.
    #[serde(default)]
    pub worst_wait_ms: u64,
    /// The sliding window counter only: admissions that put more than `limit` in the sliding
    /// window ending at them, counting the counter's own earlier admissions (what the exact
    /// log would have denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_log_wrongly_allowed: Option<u64>,
    /// The sliding window counter only: denials the exact log would have admitted, on the
    /// counter's own admitted traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_log_wrongly_denied: Option<u64>,
    /// The most admitted for one client key in any window of the rule's length, and where:
    /// the boundary burst as a number. None when nothing was admitted (or in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_window: Option<PeakWindow>,
    /// A run with holds: the most requests one client key had in flight at once, and where
    /// ([`super::in_flight`]). None without holds (or in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_in_flight: Option<InFlightPeak>,
    /// Latency percentiles of the client-observed round trip of one decision: from sending to
    /// the reply, including waiting in the client's queue and on the connection (and, for the
    /// first decisions, connecting and loading the script). Redis's own time per script call
    /// is [`Report::redis_cost`].
    pub latency_p50_us: u64,
    pub latency_p95_us: u64,
    pub latency_p99_us: u64,
    pub latency_max_us: u64,
}

/// One second of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SeriesPoint {
    /// Seconds since the run started.
    pub second: u64,
    pub allowed: u64,
    pub denied: u64,
    pub fail_open: u64,
    /// Of `allowed`, a shadow policy's admissions its limits denied.
    #[serde(default)]
    pub shadow_denied: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A target's decisions per second over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub rule: String,
    pub algorithm: Subject,
    pub points: Vec<SeriesPoint>,
}

/// Everything a run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub workload: String,
    pub started_at_ms: u64,
    pub duration_ms: u64,
    pub cancelled: bool,
    /// Requests the workload planned (None for an as-fast-as-possible run bounded by time).
    pub planned_requests: Option<u64>,
    pub requests_sent: u64,
    /// The average rate the workload offers (0 = as fast as possible); for patterns other than
    /// constant it differs from the base `rps`.
    pub requested_rps: f64,
    /// The rate actually sent, over the sending (not the holds that outlast it).
    pub achieved_rps: f64,
    pub targets: Vec<TargetSummary>,
    pub series: Vec<Series>,
    /// Redis's own time in EVALSHA over the run (`INFO commandstats`, before and after); None
    /// when Redis could not be read. Includes other clients of the same server.
    #[serde(default)]
    pub redis_cost: Option<ratelockr::commandstats::RedisCost>,
    /// A sweep's configurations (the targets, in grid order) with what each denied; empty
    /// outside a sweep. [`crate::sweep::SweepChoice::choose`] picks from them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepPoint>,
}

/// Each configuration of a sweep rated: `targets` and `summaries` in the same order.
pub(crate) fn sweep_points(targets: &[Target], summaries: &[TargetSummary]) -> Vec<SweepPoint> {
    let pct = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    targets
        .iter()
        .zip(summaries)
        .map(|(t, s)| SweepPoint {
            params: t.params.clone(),
            rule: s.rule.clone(),
            requests: s.requests,
            denied: s.denied,
            denied_pct: pct(s.denied, s.requests),
            keys_denied: s.keys_denied,
            keys_denied_pct: pct(s.keys_denied, s.keys),
            fail_open: s.fail_open,
        })
        .collect()
}

/// Per-key bookkeeping for the over-admission bound.
#[derive(Debug, Default, Clone)]
struct KeySpan {
    first_ms: u64,
    last_ms: u64,
    admitted: u64,
    denied: bool,
    /// The key's tier (a policy's override that applied), when it had one.
    tier: Option<String>,
}

/// Accumulates one target's records. Memory: one entry per client key and per second.
pub(crate) struct TargetAccumulator {
    rule: String,
    subject: Subject,
    algorithm: Algorithm,
    naive: bool,
    requests: u64,
    allowed: u64,
    denied: u64,
    fail_open: u64,
    retries: u64,
    latency: Histogram<u64>,
    keys: HashMap<String, KeySpan>,
    points: Vec<SeriesPoint>,
    /// The exact log's verdict on each decision of a sliding window counter.
    judge: Option<ExactLogJudge>,
    /// Every admission per key, for the busiest window.
    peak: PeakTracker,
    /// The cost of each request (one per workload), as the peak counts it.
    cost: u64,
    worst_wait_ms: u64,
    /// A policy target's policy: its bound is the tightest of each key's tier's limits.
    policy: Option<Policy>,
    shadow_denied: u64,
    denied_by: BTreeMap<String, u64>,
    /// Admitted requests' time in flight, per key (runs with holds).
    in_flight: InFlightCounter,
}

impl TargetAccumulator {
    /// A policy's accumulator: tiers, shadow denials and the binding limits counted.
    pub(crate) fn with_policy(mut self, policy: Option<Policy>) -> Self {
        self.policy = policy;
        self
    }

    pub(crate) fn new(rule: String, subject: Subject, algorithm: Algorithm, naive: bool) -> Self {
        let (window_ms, limit) = if naive {
            let (limit, window_ms) = super::naive::naive_window(&algorithm);
            (window_ms, limit)
        } else {
            rule_window(&algorithm)
        };
        TargetAccumulator {
            peak: PeakTracker::new(window_ms, limit),
            cost: 1,
            worst_wait_ms: 0,
            policy: None,
            shadow_denied: 0,
            denied_by: BTreeMap::new(),
            in_flight: InFlightCounter::default(),
            rule,
            subject,
            algorithm,
            naive,
            requests: 0,
            allowed: 0,
            denied: 0,
            fail_open: 0,
            retries: 0,
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds are valid"),
            keys: HashMap::new(),
            points: Vec::new(),
            judge: match algorithm {
                Algorithm::SlidingWindowCounter { limit, window_ms } if !naive => {
                    Some(ExactLogJudge::new(limit, window_ms))
                }
                _ => None,
            },
        }
    }

    pub(crate) fn add(&mut self, record: &Record, started_at_ms: u64, cost: u64) {
        self.requests += 1;
        if record.attempt > 0 {
            self.retries += 1;
        }
        let second = (record.sent_at_ms.saturating_sub(started_at_ms) / 1000) as usize;
        if self.points.len() <= second {
            let start = self.points.len() as u64;
            self.points
                .extend((start..=second as u64).map(|s| SeriesPoint {
                    second: s,
                    ..Default::default()
                }));
        }
        let point = &mut self.points[second];
        if record.fail_open {
            self.fail_open += 1;
            point.fail_open += 1;
        } else if record.allowed {
            self.allowed += 1;
            point.allowed += 1;
            if record.would_deny {
                self.shadow_denied += 1;
                point.shadow_denied += 1;
            }
        } else {
            self.denied += 1;
            point.denied += 1;
            self.worst_wait_ms = self.worst_wait_ms.max(record.retry_after_ms);
        }
        if record.would_deny && !record.binding.is_empty() {
            match self.denied_by.get_mut(&*record.binding) {
                Some(n) => *n += 1,
                None => {
                    self.denied_by.insert(record.binding.to_string(), 1);
                }
            }
        }
        let _ = self.latency.record(record.latency_us.max(1));
        self.in_flight.add(record);
        if let (Some(judge), false) = (&mut self.judge, record.fail_open) {
            judge.judge(&record.key, record.sent_at_ms, cost, record.allowed);
        }
        // Look up before inserting: cloning the key on every record would allocate on the hot
        // path for keys seen many times.
        if !self.keys.contains_key(&*record.key) {
            let first = KeySpan {
                first_ms: record.sent_at_ms,
                last_ms: record.sent_at_ms,
                admitted: 0,
                denied: false,
                tier: (!record.tier.is_empty()).then(|| record.tier.to_string()),
            };
            self.keys.insert(record.key.to_string(), first);
        }
        let Some(span) = self.keys.get_mut(&*record.key) else {
            return;
        };
        span.first_ms = span.first_ms.min(record.sent_at_ms);
        span.last_ms = span.last_ms.max(record.sent_at_ms);
        // A shadow policy admits what it would deny: its keys count as denied here.
        span.denied |= !record.allowed || record.would_deny;
        // A shadow policy's admission that its limits denied is not one the policy made.
        if record.allowed && !record.fail_open && !record.would_deny {
            span.admitted += cost;
            self.cost = cost;
            // A policy's busiest window is measured against its first limit: on the keys
            // that limit holds (a tier's keys answer to the tier's limits).
            if record.tier.is_empty() {
                self.peak
                    .admit(&record.key, record.sent_at_ms.saturating_sub(started_at_ms));
            }
        }
    }

    /// The most the rule could admit for one key over `span_ms`; a policy's, the least of its
    /// tier's limits' most.
    fn bound(&self, key: &str, span_ms: u64) -> u64 {
        if let Some(policy) = &self.policy {
            let (_, limits) = policy.limits_for(key);
            return limits
                .iter()
                .map(|l| l.algorithm().max_admitted(span_ms))
                .min()
                .unwrap_or(0);
        }
        if self.naive {
            let (limit, window_ms) = super::naive::naive_window(&self.algorithm);
            return limit * (span_ms / window_ms + 1);
        }
        self.algorithm.max_admitted(span_ms)
    }

    pub(crate) fn finish(self) -> (TargetSummary, Series) {
        let over_admitted = self
            .keys
            .iter()
            .map(|(key, k)| {
                k.admitted
                    .saturating_sub(self.bound(key, k.last_ms - k.first_ms))
            })
            .sum();
        let mut tier_keys = BTreeMap::new();
        if self
            .policy
            .as_ref()
            .is_some_and(|p| !p.overrides().is_empty())
        {
            for span in self.keys.values() {
                *tier_keys
                    .entry(span.tier.clone().unwrap_or_default())
                    .or_insert(0) += 1;
            }
        }
        let q = |p: f64| {
            if self.latency.is_empty() {
                0
            } else {
                self.latency.value_at_quantile(p)
            }
        };
        let summary = TargetSummary {
            rule: self.rule.clone(),
            algorithm: self.subject,
            naive: self.naive,
            requests: self.requests,
            allowed: self.allowed,
            denied: self.denied,
            fail_open: self.fail_open,
            retries: self.retries,
            over_admitted,
            keys: self.keys.len() as u64,
            keys_denied: self.keys.values().filter(|k| k.denied).count() as u64,
            shadow_denied: self.shadow_denied,
            denied_by: self.denied_by,
            tier_keys,
            worst_wait_ms: self.worst_wait_ms,
            exact_log_wrongly_allowed: self.judge.as_ref().map(|j| j.wrongly_allowed),
            exact_log_wrongly_denied: self.judge.as_ref().map(|j| j.wrongly_denied),
            // A limit on requests in flight has no window: its busiest one would be a number
            // against a lease's life, not a limit it promised (its peak is `peak_in_flight`).
            peak_window: match self.algorithm {
                Algorithm::Concurrency { .. } => None,
                _ => self.peak.finish(self.cost),
            },
            peak_in_flight: self.in_flight.peak(),
            latency_p50_us: q(0.5),
            latency_p95_us: q(0.95),
            latency_p99_us: q(0.99),
            latency_max_us: self.latency.max(),
        };
        let series = Series {
            rule: self.rule,
            algorithm: self.subject,
            points: self.points,
        };
        (summary, series)
    }
}
