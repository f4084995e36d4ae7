//! The three Lua scripts, hashed once, invoked through typed functions.

use crate::decision::Decision;
use crate::error::{FailureKind, RedisFailure};
use crate::rule::{Algorithm, AlgorithmKind};
use redis::Script;
use std::sync::LazyLock;

pub const TOKEN_BUCKET_LUA: &str = include_str!("../lua/token_bucket.lua");
pub const SLIDING_WINDOW_LOG_LUA: &str = include_str!("../lua/sliding_window_log.lua");
pub const FIXED_WINDOW_LUA: &str = include_str!("../lua/fixed_window.lua");

static TOKEN_BUCKET: LazyLock<Script> = LazyLock::new(|| Script::new(TOKEN_BUCKET_LUA));
static SLIDING_WINDOW_LOG: LazyLock<Script> = LazyLock::new(|| Script::new(SLIDING_WINDOW_LOG_LUA));
static FIXED_WINDOW: LazyLock<Script> = LazyLock::new(|| Script::new(FIXED_WINDOW_LUA));

/// The script behind an algorithm, hashed once per process.
pub fn script(kind: AlgorithmKind) -> &'static Script {
    match kind {
        AlgorithmKind::TokenBucket => &TOKEN_BUCKET,
        AlgorithmKind::SlidingWindowLog => &SLIDING_WINDOW_LOG,
        AlgorithmKind::FixedWindow => &FIXED_WINDOW,
    }
}

/// The Lua source of an algorithm's script.
pub fn source(kind: AlgorithmKind) -> &'static str {
    match kind {
        AlgorithmKind::TokenBucket => TOKEN_BUCKET_LUA,
        AlgorithmKind::SlidingWindowLog => SLIDING_WINDOW_LOG_LUA,
        AlgorithmKind::FixedWindow => FIXED_WINDOW_LUA,
    }
}

/// Which clock a decision uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum At {
    /// The Redis server's clock (`TIME`), shared by every app instance. The default.
    #[default]
    ServerClock,
    /// An explicit time in milliseconds since the epoch, for tests and replays.
    Millis(u64),
}

/// Everything one script call needs besides the connection.
pub(crate) struct Call<'a> {
    pub algorithm: &'a Algorithm,
    pub limiter_key: &'a str,
    /// The allowed and denied counters of this second, when telemetry is on.
    pub stats_keys: Option<(&'a str, &'a str)>,
    pub stats_ttl_secs: u64,
    pub cost: u64,
    pub at: At,
}

impl Call<'_> {
    /// The script invocation: KEYS and ARGV exactly as the script headers document them.
    pub(crate) fn invocation(&self) -> redis::ScriptInvocation<'static> {
        let kind = self.algorithm.kind();
        let mut inv = script(kind).key(self.limiter_key);
        if let Some((allowed, denied)) = self.stats_keys {
            inv.key(allowed).key(denied);
        }
        let now = match self.at {
            At::ServerClock => String::new(),
            At::Millis(ms) => ms.to_string(),
        };
        match *self.algorithm {
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            } => {
                inv.arg(capacity)
                    .arg(refill_per_sec)
                    .arg(now)
                    .arg(self.cost)
                    .arg(self.stats_ttl_secs);
            }
            Algorithm::SlidingWindowLog { limit, window_ms } => {
                let member = uuid::Uuid::new_v4();
                inv.arg(limit)
                    .arg(window_ms)
                    .arg(now)
                    .arg(member.as_hyphenated().to_string())
                    .arg(self.cost)
                    .arg(self.stats_ttl_secs);
            }
            Algorithm::FixedWindow { limit, window_ms } => {
                inv.arg(limit)
                    .arg(window_ms)
                    .arg(self.cost)
                    .arg(self.stats_ttl_secs);
            }
        }
        inv
    }
}

/// Turns the script's four integers into a decision, refusing anything else.
pub(crate) fn parse_reply(reply: &[i64]) -> Result<Decision, RedisFailure> {
    let bad = || {
        RedisFailure::new(
            FailureKind::Reply,
            format!(
                "expected {{allowed, remaining, retry_after_ms, reset_after_ms}}, got {reply:?}"
            ),
        )
    };
    let [allowed, remaining, retry_after, reset_after] = *reply else {
        return Err(bad());
    };
    if !(allowed == 0 || allowed == 1) || remaining < 0 || retry_after < 0 || reset_after < 0 {
        return Err(bad());
    }
    Ok(Decision {
        allowed: allowed == 1,
        remaining,
        retry_after_ms: retry_after as u64,
        reset_after_ms: reset_after as u64,
        fail_open: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_well_formed_replies() {
        let d = parse_reply(&[1, 4, 0, 200]).expect("valid");
        assert!(d.allowed && !d.fail_open);
        assert_eq!(
            (d.remaining, d.retry_after_ms, d.reset_after_ms),
            (4, 0, 200)
        );
        for bad in [
            &[1, 2, 3][..],
            &[2, 0, 0, 0],
            &[1, -1, 0, 0],
            &[0, 0, -5, 0],
            &[],
        ] {
            assert_eq!(parse_reply(bad).expect_err("bad").kind, FailureKind::Reply);
        }
    }

    #[test]
    fn every_script_documents_keys_argv_reply_and_an_example() {
        for kind in AlgorithmKind::ALL {
            let header = source(kind).split("]]").next().expect("a header comment");
            for part in ["KEYS", "ARGV", "REPLY", "EXAMPLE", "redis-cli EVAL"] {
                assert!(header.contains(part), "{kind} header lacks {part}");
            }
        }
    }
}
