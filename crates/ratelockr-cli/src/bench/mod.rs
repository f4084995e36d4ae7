//! Load tests of the engine, measured against what Redis itself can do in the same run.
//!
//! - [`api`]      decisions per second over HTTP keep-alive through `POST /api/check`
//! - [`http_load`] the keep-alive HTTP load generator `bench --api` runs in a process of its own
//! - [`engine`]   decisions per second and latency percentiles through [`Limiter`](ratelockr::Limiter)
//! - [`ceiling`]  redis-benchmark running the very same script with EVALSHA, pipelined: the
//!   physical limit the engine is measured against
//! - [`lua_cost`] each script's Redis cost per call beside a plain `INCR` and peers' scripts
//! - [`lua_profile`] what each piece of a script (a command, a check) costs inside Redis
//! - [`pin`]      Redis and redis-benchmark on a core each while `--lua` measures
//! - [`stats`]    the cost of reading 30 seconds of stats, with and without a million keys
//! - [`replay`]   log parsing, a generated log replayed end to end beside the ceiling, a sweep
//! - [`cluster`]  a failover and a resharding mid-run on a private Redis Cluster
//! - `load`       what the engine and HTTP load generators share: phase, tallies, runtime
//!
//! Every measurement is bounded in time and meant for a Redis on this machine.

pub mod api;
pub mod ceiling;
pub mod cluster;
pub mod engine;
pub mod http_load;
mod load;
pub mod lua_cost;
pub mod lua_profile;
pub mod pin;
pub mod policy_cost;
pub mod replay;
pub mod stats;

use ratelockr::rule::{AlgorithmKind, Rule, RuleError};
use serde::Serialize;

/// The rule every benchmark uses for `kind`: generous enough that most decisions are
/// admissions at the rates this machine reaches across the default 10,000 keys (about 10 per
/// key and second), so the measured path is the common one.
pub fn bench_rule(kind: AlgorithmKind) -> Result<Rule, RuleError> {
    let name = "bench";
    match kind {
        AlgorithmKind::TokenBucket => Rule::token_bucket(name, 100, 100.0),
        AlgorithmKind::Gcra => Rule::gcra(name, 100, std::time::Duration::from_secs(1), 100),
        AlgorithmKind::SlidingWindowLog => {
            Rule::sliding_window_log(name, 100, std::time::Duration::from_secs(1))
        }
        AlgorithmKind::SlidingWindowCounter => {
            Rule::sliding_window_counter(name, 100, std::time::Duration::from_secs(1))
        }
        AlgorithmKind::FixedWindow => {
            Rule::fixed_window(name, 100, std::time::Duration::from_secs(1))
        }
        // Leases of a second: a slot of each of 10,000 keys' 100 turns over ten times a
        // second at most, so, as for the rates, most decisions are admissions.
        AlgorithmKind::Concurrency => {
            Rule::concurrency(name, 100, std::time::Duration::from_secs(1))
        }
        // A million a day: at about 10 decisions a second per key, admissions all day.
        AlgorithmKind::Calendar => Rule::calendar(name, 1_000_000, ratelockr::Period::Day, "UTC"),
    }
}

/// The rule of `bench --attack`: a per-client API limit (100 at once, then about 1 per
/// second), so attacking keys are far over it and stay denied for a while, while each
/// ordinary key, visited a few times a second at most, stays under it.
pub fn attack_rule(kind: AlgorithmKind) -> Result<Rule, RuleError> {
    let name = "bench-attack";
    match kind {
        AlgorithmKind::TokenBucket => Rule::token_bucket(name, 100, 1.0),
        AlgorithmKind::Gcra => Rule::gcra(name, 1, std::time::Duration::from_secs(1), 100),
        AlgorithmKind::SlidingWindowLog => {
            Rule::sliding_window_log(name, 100, std::time::Duration::from_secs(60))
        }
        AlgorithmKind::SlidingWindowCounter => {
            Rule::sliding_window_counter(name, 100, std::time::Duration::from_secs(60))
        }
        AlgorithmKind::FixedWindow => {
            Rule::fixed_window(name, 100, std::time::Duration::from_secs(60))
        }
        AlgorithmKind::Concurrency => {
            Rule::concurrency(name, 100, std::time::Duration::from_secs(60))
        }
        AlgorithmKind::Calendar => Rule::calendar(name, 100, ratelockr::Period::Hour, "UTC"),
    }
}

/// Client keys as redis-benchmark's `__rand_int__` spells them (12 digits), so the engine and
/// the ceiling touch the same keys.
pub fn client_key(i: usize) -> String {
    format!("{i:012}")
}

/// Where a figure was measured: printed beside every figure.
#[derive(Debug, Clone, Serialize)]
pub struct Conditions {
    pub cpu: String,
    pub cores: usize,
    pub redis_version: String,
    /// UTC, `YYYY-MM-DD HH:MM:SS`.
    pub date: String,
    /// The 1-minute load average when the run started: on a shared machine, what else ran.
    pub load_average: Option<f64>,
}

impl Conditions {
    /// This machine, and the version the Redis at the other end reports.
    /// On a cluster, its first master's version.
    pub async fn probe(conn: &mut ratelockr::Conn) -> Self {
        let cmd = redis::cmd("INFO").arg("server").clone();
        let info: String = match conn.masters().await {
            Ok(Some(masters)) if !masters.is_empty() => {
                conn.on_node(&cmd, &masters[0]).await.unwrap_or_default()
            }
            _ => cmd.query_async(conn).await.unwrap_or_default(),
        };
        let redis_version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("unknown")
            .trim()
            .to_string();
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Conditions {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            redis_version,
            date: utc_now(),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok()),
        }
    }
}

/// CPU seconds this process has used (user + system, all threads), from /proc/self/stat
/// at the usual 100 ticks per second; `None` off Linux.
pub(crate) fn process_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// CPU seconds the Redis server has used (`INFO cpu`: used_cpu_user + used_cpu_sys); on a
/// cluster, summed over its masters (each asked by address).
pub async fn redis_cpu_secs(conn: &mut ratelockr::Conn) -> Option<f64> {
    let info = redis::cmd("INFO").arg("cpu").clone();
    let Some(masters) = conn.masters().await.ok()? else {
        let text: String = info.query_async(conn).await.ok()?;
        return cpu_of(&text);
    };
    let mut total = 0.0;
    for master in &masters {
        total += cpu_of(&conn.on_node::<String>(&info, master).await.ok()?)?;
    }
    Some(total)
}

fn cpu_of(info: &str) -> Option<f64> {
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?
            .trim()
            .parse()
            .ok()
    };
    Some(field("used_cpu_user")? + field("used_cpu_sys")?)
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS`, without a date crate.
fn utc_now() -> String {
    let secs = ratelockr::telemetry::now_ms() / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_redis_benchmark_spelling() {
        assert_eq!(client_key(42), "000000000042");
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_secs().is_some());
        }
    }

    #[test]
    fn utc_now_is_well_formed() {
        let now = utc_now();
        assert_eq!(now.len(), 19, "{now}");
        assert!(now.starts_with("20"), "{now}");
    }

    #[test]
    fn every_bench_rule_is_valid() {
        for kind in AlgorithmKind::ALL {
            assert_eq!(bench_rule(kind).expect("valid").kind(), kind);
        }
    }
}
