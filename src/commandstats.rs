//! Redis's own cost of the scripts: `INFO commandstats` for EVALSHA, read before and after a
//! run. The simulator's latency percentiles are what a client sees (queueing included); this
//! is the time Redis spent inside the calls, which is what a limiter costs the server.

use crate::conn::Conn;
use crate::error::{FailureKind, RedisFailure};
use serde::{Deserialize, Serialize};

/// EVALSHA's counters as `INFO commandstats` reports them, since the server started (or its
/// last `CONFIG RESETSTAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EvalshaStats {
    pub calls: u64,
    pub usec: u64,
}

/// What Redis spent on EVALSHA between two readings. Counts every client's calls on that
/// server, so on a shared Redis it includes others' traffic.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RedisCost {
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub calls: u64,
    /// Microseconds inside the calls, in total.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub usec: u64,
    /// `usec / calls`: Redis's time per script call (0 when there were no calls).
    pub usec_per_call: f64,
}

impl EvalshaStats {
    /// The cost from `self` (before) to `after`. A reset in between (fewer calls after than
    /// before) gives None rather than a nonsense difference.
    pub fn cost_until(&self, after: &EvalshaStats) -> Option<RedisCost> {
        let calls = after.calls.checked_sub(self.calls)?;
        let usec = after.usec.checked_sub(self.usec)?;
        Some(RedisCost {
            calls,
            usec,
            usec_per_call: if calls == 0 {
                0.0
            } else {
                usec as f64 / calls as f64
            },
        })
    }
}

/// Parses the `cmdstat_evalsha:calls=…,usec=…,…` line of `INFO commandstats`; no line means
/// no calls yet.
pub fn parse_evalsha(info: &str) -> Result<EvalshaStats, RedisFailure> {
    parse_command(info, "evalsha")
}

/// The counters of any command (`incr`, `evalsha`, lower case as Redis prints them), as
/// [`parse_evalsha`] reads EVALSHA's.
pub fn parse_command(info: &str, command: &str) -> Result<EvalshaStats, RedisFailure> {
    let prefix = format!("cmdstat_{command}:");
    let Some(line) = info
        .lines()
        .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
    else {
        return Ok(EvalshaStats::default());
    };
    let field = |name: &str| -> Result<u64, RedisFailure> {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| {
                RedisFailure::new(
                    FailureKind::Reply,
                    format!("INFO commandstats has no {name} for {command}: {line:?}"),
                )
            })
    };
    Ok(EvalshaStats {
        calls: field("calls")?,
        usec: field("usec")?,
    })
}

/// Reads EVALSHA's counters from the server behind `conn`: on a cluster, summed over its
/// masters (each node counts only its own calls).
pub async fn read_evalsha(conn: &mut Conn) -> Result<EvalshaStats, RedisFailure> {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("commandstats");
    let Some(masters) = conn.masters().await? else {
        let info: String = cmd.query_async(conn).await?;
        return parse_evalsha(&info);
    };
    let mut total = EvalshaStats::default();
    for node in &masters {
        let info: String = conn.on_node(&cmd, node).await?;
        let stats = parse_evalsha(&info)?;
        total.calls += stats.calls;
        total.usec += stats.usec;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_evalsha_line_and_takes_differences() {
        let info = "# Commandstats\r\ncmdstat_get:calls=5,usec=9,usec_per_call=1.80,rejected_calls=0,failed_calls=0\r\ncmdstat_evalsha:calls=120,usec=3000,usec_per_call=25.00,rejected_calls=0,failed_calls=1\r\n";
        let before = parse_evalsha(info).expect("parses");
        assert_eq!(
            before,
            EvalshaStats {
                calls: 120,
                usec: 3000
            }
        );
        let after = EvalshaStats {
            calls: 220,
            usec: 5500,
        };
        let cost = before.cost_until(&after).expect("forward");
        assert_eq!((cost.calls, cost.usec), (100, 2500));
        assert!((cost.usec_per_call - 25.0).abs() < 1e-9);
        assert_eq!(after.cost_until(&before), None, "a reset in between");
        assert_eq!(
            parse_evalsha("# Commandstats\r\n").expect("none yet"),
            EvalshaStats::default()
        );
        assert!(parse_evalsha("cmdstat_evalsha:calls=x").is_err());
    }
}
