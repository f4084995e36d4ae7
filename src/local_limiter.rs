//! The in-process limiter behind [`FailureMode::Degraded`](crate::FailureMode::Degraded): while
//! Redis cannot be asked, each instance admits its share of the rule instead of everything.
//!
//! The share is the rule's allowance divided by the expected number of instances: a token
//! bucket holding `max_cost / instances` (at least 1) and refilling `nominal_per_sec /
//! instances`, for every algorithm (it is built from [`Algorithm::max_cost`] and
//! [`Algorithm::nominal_per_sec`], so new algorithms need nothing here). Across `instances`
//! processes it therefore admits at most what a token bucket of the rule's size would: for a
//! bucket rule the rule itself, for a window rule at most `limit` at once plus `limit` per
//! window (the fixed window's own worst case at a window's edge).
//!
//! Bounded: at most `max_entries` keys are tracked. A key whose bucket has refilled to full is
//! the same as an untracked one and is swept when room is needed; a key that finds no room is
//! let through as a plain fail-open decision (counted as one).

use crate::rule::Algorithm;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys tracked at most by default.
pub(crate) const DEFAULT_MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    algorithm: Algorithm,
    tokens: f64,
    last: Instant,
}

/// What the local limiter decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LocalDecision {
    Admitted {
        remaining: i64,
        reset_after_ms: u64,
    },
    Denied {
        retry_after_ms: u64,
        reset_after_ms: u64,
    },
    /// No room to track the key: decide as plain fail-open.
    Untracked,
}

/// Token buckets per limiter key, scaled down by the instance count.
#[derive(Debug)]
pub(crate) struct LocalLimiter {
    instances: u32,
    max_entries: usize,
    buckets: Mutex<HashMap<Box<str>, Bucket>>,
}

impl LocalLimiter {
    pub(crate) fn new(instances: u32, max_entries: usize) -> Self {
        LocalLimiter {
            instances: instances.max(1),
            max_entries,
            buckets: Mutex::default(),
        }
    }

    /// This instance's share of `algorithm`: (capacity, tokens per second).
    pub(crate) fn share(&self, algorithm: &Algorithm) -> (f64, f64) {
        let n = f64::from(self.instances);
        let capacity = (algorithm.max_cost() as f64 / n).floor().max(1.0);
        (capacity, algorithm.nominal_per_sec() / n)
    }

    /// Decides a request of `cost` for `key` at `now`. A cost above this instance's share
    /// needs a full bucket and empties it.
    pub(crate) fn decide(
        &self,
        key: &str,
        algorithm: &Algorithm,
        cost: u64,
        now: Instant,
    ) -> LocalDecision {
        let (capacity, rate) = self.share(algorithm);
        let cost = (cost as f64).min(capacity);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.contains_key(key) && buckets.len() >= self.max_entries {
            // Full buckets carry no information: drop them to make room.
            buckets
                .retain(|_, b| refilled(b, now, self.share(&b.algorithm)) < capacity_of(self, b));
            if buckets.len() >= self.max_entries {
                return LocalDecision::Untracked;
            }
        }
        let bucket = buckets.entry(key.into()).or_insert(Bucket {
            algorithm: *algorithm,
            tokens: capacity,
            last: now,
        });
        if bucket.algorithm != *algorithm {
            // The rule was edited: start its new share full, as Redis starts a new key.
            *bucket = Bucket {
                algorithm: *algorithm,
                tokens: capacity,
                last: now,
            };
        }
        bucket.tokens = refilled(bucket, now, (capacity, rate));
        bucket.last = now.max(bucket.last);
        let reset = |tokens: f64| millis_up((capacity - tokens) / rate);
        if bucket.tokens >= cost {
            bucket.tokens -= cost;
            LocalDecision::Admitted {
                remaining: bucket.tokens.floor() as i64,
                reset_after_ms: reset(bucket.tokens),
            }
        } else {
            LocalDecision::Denied {
                retry_after_ms: millis_up((cost - bucket.tokens) / rate).max(1),
                reset_after_ms: reset(bucket.tokens),
            }
        }
    }

    /// Keys tracked now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

fn capacity_of(limiter: &LocalLimiter, bucket: &Bucket) -> f64 {
    limiter.share(&bucket.algorithm).0
}

fn refilled(bucket: &Bucket, now: Instant, (capacity, rate): (f64, f64)) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
    (bucket.tokens + elapsed * rate).min(capacity)
}

/// Seconds as whole milliseconds, rounded up.
fn millis_up(secs: f64) -> u64 {
    let ms = (secs * 1000.0).ceil();
    if ms.is_finite() && ms > 0.0 {
        Duration::from_secs_f64(ms / 1000.0).as_millis() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TB: Algorithm = Algorithm::TokenBucket {
        capacity: 100,
        refill_per_sec: 10.0,
    };

    #[test]
    fn admits_the_instance_share_then_refills_at_its_share() {
        let local = LocalLimiter::new(4, 10);
        assert_eq!(local.share(&TB), (25.0, 2.5));
        let t0 = Instant::now();
        let admitted = (0..100)
            .filter(|_| {
                matches!(
                    local.decide("k", &TB, 1, t0),
                    LocalDecision::Admitted { .. }
                )
            })
            .count();
        assert_eq!(admitted, 25);
        match local.decide("k", &TB, 1, t0) {
            LocalDecision::Denied { retry_after_ms, .. } => assert_eq!(retry_after_ms, 400),
            other => panic!("{other:?}"),
        }
        let later = t0 + Duration::from_millis(400);
        assert!(matches!(
            local.decide("k", &TB, 1, later),
            LocalDecision::Admitted { .. }
        ));
    }

    #[test]
    fn windows_get_limit_over_instances_at_once() {
        let local = LocalLimiter::new(3, 10);
        let fw = Algorithm::FixedWindow {
            limit: 10,
            window_ms: 1000,
        };
        assert_eq!(local.share(&fw).0, 3.0);
        let one = LocalLimiter::new(20, 10);
        assert_eq!(one.share(&fw).0, 1.0, "every instance may admit one");
    }

    #[test]
    fn bounded_and_full_buckets_make_room() {
        let local = LocalLimiter::new(1, 2);
        let t0 = Instant::now();
        local.decide("a", &TB, 1, t0);
        local.decide("b", &TB, 1, t0);
        assert_eq!(local.decide("c", &TB, 1, t0), LocalDecision::Untracked);
        let refilled = t0 + Duration::from_secs(1);
        assert!(matches!(
            local.decide("c", &TB, 1, refilled),
            LocalDecision::Admitted { .. }
        ));
        assert!(local.len() <= 2);
    }
}
