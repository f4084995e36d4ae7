//! THE BROKEN APPROACH, kept for the race demo: read the counter, decide in the application,
//! write it back. Two app instances that read the same count at the same moment both see room,
//! and both write count + 1. Never use this; it exists to show what the scripts prevent.

use ratelockr::keys::KeySpace;
use ratelockr::rule::{Algorithm, Rule};
use ratelockr::Conn;
use ratelockr::Decision;
use ratelockr::Outcome;
use std::time::Duration;

/// The fixed window the naive limiter enforces for a rule: its limit and window, or for a
/// token bucket its capacity per time-to-refill.
pub fn naive_window(algorithm: &Algorithm) -> (u64, u64) {
    match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => (
            capacity,
            ((capacity as f64 / refill_per_sec) * 1000.0)
                .ceil()
                .max(1.0) as u64,
        ),
        Algorithm::Gcra {
            window_ms, burst, ..
        } => (burst, window_ms),
        Algorithm::SlidingWindowLog { limit, window_ms }
        | Algorithm::SlidingWindowCounter { limit, window_ms }
        | Algorithm::FixedWindow { limit, window_ms } => (limit, window_ms),
        Algorithm::Concurrency { limit, lease_ms } => (limit, lease_ms),
        Algorithm::Calendar { limit, period, .. } => (limit, period.nominal_ms()),
    }
}

/// One naive decision: GET, compare, SET. Redis errors fail open like the real limiter.
pub async fn decide(
    conn: &mut Conn,
    keys: &KeySpace,
    rule: &Rule,
    client_key: &str,
    cost: u64,
    deadline: Duration,
) -> Decision {
    let (limit, window_ms) = naive_window(rule.algorithm());
    let key = keys.naive(rule.name(), client_key);
    let attempt = async {
        let count: Option<u64> = redis::cmd("GET").arg(&key).query_async(conn).await?;
        let count = count.unwrap_or(0);
        let allowed = count + cost <= limit;
        let second = ratelockr::telemetry::now_ms() / 1000;
        let outcome = if allowed {
            Outcome::Allowed
        } else {
            Outcome::Denied
        };
        let stats_key = keys.stats(rule.name(), second, outcome);
        let mut pipe = redis::pipe();
        if allowed {
            // The race: another instance may have written since our GET.
            if count == 0 {
                pipe.cmd("SET")
                    .arg(&key)
                    .arg(count + cost)
                    .arg("PX")
                    .arg(window_ms)
                    .ignore();
            } else {
                pipe.cmd("SET")
                    .arg(&key)
                    .arg(count + cost)
                    .arg("KEEPTTL")
                    .ignore();
            }
        }
        pipe.incr(&stats_key, 1).ignore();
        pipe.expire(&stats_key, ratelockr::telemetry::COUNTER_TTL_SECS as i64)
            .ignore();
        pipe.query_async::<()>(conn).await?;
        let remaining = limit.saturating_sub(count + if allowed { cost } else { 0 });
        Ok::<_, redis::RedisError>(Decision::by_redis(allowed, remaining, 0, 0))
    };
    match tokio::time::timeout(deadline, attempt).await {
        Ok(Ok(decision)) => decision,
        _ => Decision::FAIL_OPEN,
    }
}
