//! `lua/policy.lua`: the stacked decision, hashed once; its EVALSHA built in one buffer, its
//! reply parsed into a policy's [`Decision`]. Sent like the five scripts' calls, through
//! [`crate::scripts`]'s one path (EVALSHA, then EVAL on NOSCRIPT).

use super::{Limit, Mode};
use crate::decision::Decision;
use crate::decision::{LimitResult, PolicyVerdict};
use crate::error::{FailureKind, RedisFailure};
use crate::rule::Algorithm;
pub use crate::scripts::POLICY_LUA;
use crate::scripts::{policy_script as script, At};

/// Everything one stacked call needs besides the connection.
#[derive(Debug)]
pub struct PolicyCall<'a> {
    pub limits: &'a [Limit],
    /// One state key per limit, in order.
    pub keys: &'a [String],
    /// This second's allowed, denied and shadow_denied counters, when telemetry is on.
    pub stats_keys: Option<[&'a str; 3]>,
    pub stats_ttl_secs: u64,
    pub cost: u64,
    pub mode: Mode,
    pub at: At,
    /// The request's member (ARGV[6]): the lease id in every concurrency limit, which the
    /// caller keeps to release it. `None`: a fresh one when a limit needs a member.
    pub member: Option<&'a str>,
}

impl PolicyCall<'_> {
    /// The EVALSHA: KEYS and ARGV exactly as the script's header documents them.
    pub fn evalsha(&self) -> redis::Cmd {
        self.evalsha_delaying(0, None)
    }

    /// [`PolicyCall::evalsha`] for a policy with a `max_delay_ms` (delay instead of deny; 0:
    /// none, the call [`PolicyCall::evalsha`] sends): sent after the limits' ARGV, and then the
    /// reply carries `delay_ms`. `delayed`: this second's counter of delayed admissions, sent
    /// after the three stats keys (when they are sent).
    pub fn evalsha_delaying(&self, max_delay_ms: u64, delayed: Option<&str>) -> redis::Cmd {
        let n = self.limits.len();
        let delayed = delayed.filter(|_| self.stats_keys.is_some());
        let keys =
            n + if self.stats_keys.is_some() { 3 } else { 0 } + usize::from(delayed.is_some());
        let key_bytes: usize = self.keys.iter().map(String::len).sum();
        let mut cmd = redis::Cmd::with_capacity(3 + keys + 7 + 4 * n, 160 + key_bytes + 24 * n);
        cmd.arg("EVALSHA").arg(script().get_hash()).arg(keys);
        for key in self.keys {
            cmd.arg(key.as_str());
        }
        if let Some(stats) = self.stats_keys {
            for key in stats {
                cmd.arg(key);
            }
        }
        if let Some(key) = delayed {
            cmd.arg(key);
        }
        cmd.arg(n);
        match self.at.millis() {
            None => cmd.arg(""),
            Some(ms) => cmd.arg(ms),
        };
        cmd.arg(self.cost)
            .arg(self.mode.as_str())
            .arg(self.stats_ttl_secs);
        let needs_member = self.limits.iter().any(|l| {
            matches!(
                l.algorithm(),
                Algorithm::SlidingWindowLog { .. } | Algorithm::Concurrency { .. }
            )
        });
        match (needs_member, self.member) {
            (false, _) => cmd.arg(""),
            (true, Some(member)) => cmd.arg(member),
            (true, None) => cmd.arg(&crate::scripts::log_member()[..]),
        };
        // The fixed window's clock mode on a virtual clock, as the standalone call has it.
        cmd.arg(if matches!(self.at, At::Millis(_)) {
            "1"
        } else {
            ""
        });
        for limit in self.limits {
            limit_argv(&mut cmd, limit, self.at);
        }
        if max_delay_ms > 0 {
            cmd.arg(max_delay_ms);
        }
        cmd
    }
}

/// A limit's four ARGV as policy.lua (and settle.lua) take them: its kind, then three
/// parameters (a calendar quota's windows are those around the decision's time `at`).
pub(crate) fn limit_argv(cmd: &mut redis::Cmd, limit: &Limit, at: At) {
    let kind = limit.kind().key_tag();
    match *limit.algorithm() {
        Algorithm::Calendar { limit: most, .. } => cmd
            .arg(kind)
            .arg(most)
            .arg(at.windows_arg(limit.algorithm()).as_deref())
            .arg(""),
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => cmd.arg(kind).arg(capacity).arg(refill_per_sec).arg(""),
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => cmd.arg(kind).arg(limit).arg(window_ms).arg(burst),
        Algorithm::SlidingWindowLog { limit, window_ms }
        | Algorithm::SlidingWindowCounter { limit, window_ms }
        | Algorithm::FixedWindow { limit, window_ms } => {
            cmd.arg(kind).arg(limit).arg(window_ms).arg("")
        }
        Algorithm::Concurrency { limit, lease_ms } => {
            cmd.arg(kind).arg(limit).arg(lease_ms).arg("")
        }
    };
}

/// The head of the script's reply, read without allocating: what the replay needs per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHead {
    pub allowed: bool,
    pub remaining: i64,
    pub retry_after_ms: u64,
    pub reset_after_ms: u64,
    pub would_deny: bool,
    /// The binding limit's index in the limits decided (0-based).
    pub binding: usize,
    /// The wait before the admitted request may start (0 unless the call sent a
    /// `max_delay_ms`).
    pub delay_ms: u64,
}

/// The reply's integers when it is 6 + 4n of them (7 + 4n when the call sent a
/// `max_delay_ms`: then `delay_ms` last), none negative, every flag 0 or 1 and the binding
/// one of the `n` limits.
fn checked(reply: &redis::Value, n: usize) -> Result<&[redis::Value], RedisFailure> {
    let bad = || {
        RedisFailure::new(
            FailureKind::Reply,
            format!(
                "expected {} integers from the policy script, got {reply:?}",
                6 + 4 * n
            ),
        )
    };
    let redis::Value::Array(items) = reply else {
        return Err(bad());
    };
    let ok = (items.len() == 6 + 4 * n || items.len() == 7 + 4 * n)
        && items
            .iter()
            .all(|item| matches!(item, redis::Value::Int(v) if *v >= 0))
        && [0, 4]
            .into_iter()
            .chain((0..n).map(|i| 6 + 4 * i))
            .all(|i| int(items, i) <= 1)
        && (1..=n as i64).contains(&int(items, 5));
    if ok {
        Ok(items)
    } else {
        Err(bad())
    }
}

/// The `i`th integer of a checked reply.
fn int(items: &[redis::Value], i: usize) -> i64 {
    match items[i] {
        redis::Value::Int(v) => v,
        _ => 0,
    }
}

/// Checks the script's reply for `n` limits and reads its head, without allocating: what the
/// replay needs of each call.
pub fn parse_head(reply: &redis::Value, n: usize) -> Result<ReplyHead, RedisFailure> {
    checked(reply, n).map(head)
}

fn head(items: &[redis::Value]) -> ReplyHead {
    ReplyHead {
        allowed: int(items, 0) == 1,
        remaining: int(items, 1),
        retry_after_ms: int(items, 2) as u64,
        reset_after_ms: int(items, 3) as u64,
        would_deny: int(items, 4) == 1,
        binding: int(items, 5) as usize - 1,
        // 7 + 4n integers: delay_ms is the last.
        delay_ms: if items.len() % 4 == 3 {
            int(items, items.len() - 1) as u64
        } else {
            0
        },
    }
}

/// The script's reply as a decision of `policy` (its limits in `limits`), refusing anything
/// but 6 + 4n well-formed integers.
pub(crate) fn parse_reply(
    reply: &redis::Value,
    policy: &str,
    mode: Mode,
    tier: Option<&str>,
    limits: &[Limit],
) -> Result<Decision, RedisFailure> {
    let items = checked(reply, limits.len())?;
    let head = head(items);
    let binding = &limits[head.binding];
    let results = limits
        .iter()
        .enumerate()
        .map(|(i, limit)| LimitResult {
            name: limit.name().to_string(),
            algorithm: limit.kind(),
            allowed: int(items, 6 + 4 * i) == 1,
            remaining: int(items, 7 + 4 * i),
            retry_after_ms: int(items, 8 + 4 * i) as u64,
            reset_after_ms: int(items, 9 + 4 * i) as u64,
        })
        .collect();
    Ok(Decision::of_policy(
        Decision {
            delay_ms: head.delay_ms,
            ..Decision::by_redis(
                head.allowed,
                u64::try_from(head.remaining).unwrap_or(0),
                head.retry_after_ms,
                head.reset_after_ms,
            )
        },
        PolicyVerdict {
            name: policy.to_string(),
            shadow: mode == Mode::Shadow,
            would_deny: head.would_deny,
            binding: Some(binding.name().to_string()),
            tier: tier.map(str::to_string),
            limits: results,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn limits() -> Vec<Limit> {
        vec![
            Limit::new(
                "per-second",
                Algorithm::TokenBucket {
                    capacity: 10,
                    refill_per_sec: 2.5,
                },
            )
            .expect("valid"),
            Limit::new(
                "daily",
                Algorithm::Gcra {
                    limit: 20,
                    window_ms: 1000,
                    burst: 4,
                },
            )
            .expect("valid"),
        ]
    }

    fn args(cmd: &redis::Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn evalsha_sends_keys_and_argv_as_documented() {
        let limits = limits();
        let keys = vec!["k1".to_string(), "k2".to_string()];
        let call = PolicyCall {
            limits: &limits,
            keys: &keys,
            stats_keys: Some(["a", "d", "s"]),
            stats_ttl_secs: 120,
            cost: 3,
            mode: Mode::Shadow,
            at: At::Millis(1_700_000_000_000),
            member: None,
        };
        let hash = script().get_hash().to_string();
        assert_eq!(
            args(&call.evalsha()),
            [
                "EVALSHA",
                &hash,
                "5",
                "k1",
                "k2",
                "a",
                "d",
                "s",
                "2",
                "1700000000000",
                "3",
                "shadow",
                "120",
                "",
                "1",
                "tb",
                "10",
                "2.5",
                "",
                "gc",
                "20",
                "1000",
                "4"
            ]
        );
        let call = PolicyCall {
            stats_keys: None,
            mode: Mode::Enforce,
            at: At::ServerClock,
            ..call
        };
        assert_eq!(
            args(&call.evalsha())[2..10],
            ["2", "k1", "k2", "2", "", "3", "enforce", "120"]
        );
        assert_eq!(args(&call.evalsha())[11], "", "the fixed window on its TTL");
    }

    #[test]
    fn the_log_gets_a_fresh_member() {
        let limits = vec![Limit::new(
            "l",
            Algorithm::SlidingWindowLog {
                limit: 5,
                window_ms: 1000,
            },
        )
        .expect("valid")];
        let keys = vec!["k".to_string()];
        let call = PolicyCall {
            limits: &limits,
            keys: &keys,
            stats_keys: None,
            stats_ttl_secs: 120,
            cost: 1,
            mode: Mode::Enforce,
            at: At::Millis(5),
            member: None,
        };
        let member = args(&call.evalsha())[9].clone();
        assert_eq!(member.len(), crate::scripts::LOG_MEMBER_LEN, "{member}");
        assert_ne!(member, args(&call.evalsha())[9]);
    }

    #[test]
    fn parses_only_well_formed_replies() {
        let limits = limits();
        let ints = |v: &[i64]| Value::Array(v.iter().map(|&n| Value::Int(n)).collect());
        let reply = ints(&[0, 1, 350, 900, 1, 2, 1, 5, 0, 800, 0, 1, 350, 900]);
        let d = parse_reply(&reply, "api", Mode::Enforce, Some("free"), &limits).expect("valid");
        assert!(!d.allowed && d.would_deny() && !d.shadow() && !d.fail_open());
        assert_eq!(
            (d.remaining, d.retry_after_ms, d.reset_after_ms),
            (1, 350, 900)
        );
        assert_eq!(d.binding(), Some("daily"));
        assert_eq!(d.tier(), Some("free"));
        assert_eq!(d.limits()[0].name, "per-second");
        assert!(d.limits()[0].allowed && !d.limits()[1].allowed);
        for bad in [
            ints(&[1, 1, 0, 0, 0, 1]),
            ints(&[2, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0]),
            ints(&[1, 1, 0, 0, 0, 3, 1, 1, 0, 0, 1, 1, 0, 0]),
            ints(&[1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0]),
            ints(&[1, -1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0]),
            Value::Nil,
        ] {
            let parsed = parse_reply(&bad, "api", Mode::Enforce, None, &limits);
            assert_eq!(parsed.expect_err("bad").kind, FailureKind::Reply, "{bad:?}");
        }
    }

    #[test]
    fn the_script_documents_keys_argv_reply_and_an_example() {
        let header = POLICY_LUA.split("]]").next().expect("a header comment");
        for part in ["KEYS", "ARGV", "REPLY", "EXAMPLE", "redis-cli EVAL"] {
            assert!(header.contains(part), "the header lacks {part}");
        }
    }
}
