//! The five Lua scripts, hashed once, invoked through typed functions, and the one way a
//! call is sent: EVALSHA, then EVAL on NOSCRIPT ([`invoke`]).

use crate::acl;
use crate::conn::Conn;
use crate::decision::Decision;
use crate::error::{FailureKind, RedisFailure};
use crate::rule::{Algorithm, AlgorithmKind, RuleError};
use redis::Script;
use std::sync::LazyLock;

pub(crate) const TOKEN_BUCKET_LUA: &str = include_str!("../lua/token_bucket.lua");
pub(crate) const GCRA_LUA: &str = include_str!("../lua/gcra.lua");
pub(crate) const SLIDING_WINDOW_LOG_LUA: &str = include_str!("../lua/sliding_window_log.lua");
pub(crate) const SLIDING_WINDOW_COUNTER_LUA: &str =
    include_str!("../lua/sliding_window_counter.lua");
pub const FIXED_WINDOW_LUA: &str = include_str!("../lua/fixed_window.lua");
pub(crate) const CONCURRENCY_LUA: &str = include_str!("../lua/concurrency.lua");
pub(crate) const CALENDAR_LUA: &str = include_str!("../lua/calendar.lua");

static TOKEN_BUCKET: LazyLock<Script> = LazyLock::new(|| Script::new(TOKEN_BUCKET_LUA));
static GCRA: LazyLock<Script> = LazyLock::new(|| Script::new(GCRA_LUA));
static SLIDING_WINDOW_LOG: LazyLock<Script> = LazyLock::new(|| Script::new(SLIDING_WINDOW_LOG_LUA));
static SLIDING_WINDOW_COUNTER: LazyLock<Script> =
    LazyLock::new(|| Script::new(SLIDING_WINDOW_COUNTER_LUA));
static FIXED_WINDOW: LazyLock<Script> = LazyLock::new(|| Script::new(FIXED_WINDOW_LUA));
static CONCURRENCY: LazyLock<Script> = LazyLock::new(|| Script::new(CONCURRENCY_LUA));
static CALENDAR: LazyLock<Script> = LazyLock::new(|| Script::new(CALENDAR_LUA));

/// The stacked decision of a policy's limits (`src/policy/`), all or nothing in one call.
pub const POLICY_LUA: &str = include_str!("../lua/policy.lua");
static POLICY: LazyLock<Script> = LazyLock::new(|| Script::new(POLICY_LUA));

/// The stacked decision's script, hashed once per process.
pub fn policy_script() -> &'static Script {
    &POLICY
}

/// Releasing and renewing a lease in a rule's or a policy's concurrency limits
/// ([`crate::lease`]).
pub const LEASE_LUA: &str = include_str!("../lua/lease.lua");
static LEASE: LazyLock<Script> = LazyLock::new(|| Script::new(LEASE_LUA));

/// The lease script, hashed once per process.
pub fn lease_script() -> &'static Script {
    &LEASE
}

/// Settling a request's actual cost in every limit of its policy ([`crate::settle`]).
pub const SETTLE_LUA: &str = include_str!("../lua/settle.lua");
pub(crate) static SETTLE: LazyLock<Script> = LazyLock::new(|| Script::new(SETTLE_LUA));

/// The scripts besides the algorithms', by name: what a sha is looked up in.
fn other_scripts() -> [(&'static str, &'static Script, &'static str); 3] {
    [
        ("policy", &POLICY, POLICY_LUA),
        ("lease", &LEASE, LEASE_LUA),
        ("settle", &SETTLE, SETTLE_LUA),
    ]
}

/// The script behind an algorithm, hashed once per process.
pub fn script(kind: AlgorithmKind) -> &'static Script {
    match kind {
        AlgorithmKind::TokenBucket => &TOKEN_BUCKET,
        AlgorithmKind::Gcra => &GCRA,
        AlgorithmKind::SlidingWindowLog => &SLIDING_WINDOW_LOG,
        AlgorithmKind::SlidingWindowCounter => &SLIDING_WINDOW_COUNTER,
        AlgorithmKind::FixedWindow => &FIXED_WINDOW,
        AlgorithmKind::Concurrency => &CONCURRENCY,
        AlgorithmKind::Calendar => &CALENDAR,
    }
}

/// The Lua source of an algorithm's script.
pub fn source(kind: AlgorithmKind) -> &'static str {
    match kind {
        AlgorithmKind::TokenBucket => TOKEN_BUCKET_LUA,
        AlgorithmKind::Gcra => GCRA_LUA,
        AlgorithmKind::SlidingWindowLog => SLIDING_WINDOW_LOG_LUA,
        AlgorithmKind::SlidingWindowCounter => SLIDING_WINDOW_COUNTER_LUA,
        AlgorithmKind::FixedWindow => FIXED_WINDOW_LUA,
        AlgorithmKind::Concurrency => CONCURRENCY_LUA,
        AlgorithmKind::Calendar => CALENDAR_LUA,
    }
}

/// Which clock a decision uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum At {
    /// The Redis server's clock (`TIME`), shared by every app instance. The default.
    #[default]
    ServerClock,
    /// The caller's clock: milliseconds since the epoch (`check --now-ms`, a replay's log time,
    /// a test's fixed instant). Every limit decides at this time, the fixed window included
    /// (its explicit-clock mode, `lua/fixed_window.lua`'s ARGV[5]), so the same request at the
    /// same time gets the same answer whatever the wall clock does meanwhile, and a log is
    /// decided on its own timeline however fast it is fed. Key expiry still runs on the Redis
    /// clock: it only evicts idle state.
    Millis(u64),
}

/// The latest explicit time a script takes (2^53 ms): beyond it Lua's doubles no longer hold
/// every millisecond, and the scripts refuse it.
pub const MAX_NOW_MS: u64 = 1 << 53;

impl At {
    /// Refuses an explicit time the scripts would refuse, before Redis is asked: the caller's
    /// own bad input is an error naming `now_ms`, never a Redis failure turned into a fail-open
    /// admission.
    pub fn check(self) -> Result<Self, RuleError> {
        match self.millis() {
            Some(ms) if ms > MAX_NOW_MS => Err(RuleError::InvalidParameter {
                parameter: "now_ms",
                reason: format!(
                    "{ms} is past the latest time a script takes ({MAX_NOW_MS} ms since the epoch)"
                ),
            }),
            _ => Ok(self),
        }
    }

    /// The explicit time, if any.
    pub fn millis(self) -> Option<u64> {
        match self {
            At::ServerClock => None,
            At::Millis(ms) => Some(ms),
        }
    }

    /// A calendar quota's windows argument for a decision at this time (on the server's
    /// clock, around this machine's); `None` for the other algorithms.
    pub fn windows_arg(self, algorithm: &Algorithm) -> Option<std::sync::Arc<str>> {
        let calendar = algorithm.calendar()?;
        let at_ms = match self {
            At::ServerClock => crate::calendar::local_now_ms(),
            At::Millis(ms) => i64::try_from(ms).unwrap_or(i64::MAX),
        };
        Some(calendar.windows_arg(at_ms))
    }
}

/// The same call as EVAL with the script's source: how NOSCRIPT is recovered. Sent by key
/// like the EVALSHA, it reaches the very node that answered NOSCRIPT (on a cluster, the slot's
/// master, whoever that is now), and EVAL caches the script there, so the next EVALSHA on that
/// node finds it. Nothing depends on a SCRIPT LOAD reaching every node, and a Redis user that
/// may run scripts but not `SCRIPT LOAD` them is served the same way. `None` for anything but
/// an EVALSHA of an algorithm's script, the policy script or the lease script.
pub fn eval_of(evalsha: &redis::Cmd) -> Option<redis::Cmd> {
    let mut args = evalsha.args_iter();
    let (Some(redis::Arg::Simple(b"EVALSHA")), Some(redis::Arg::Simple(sha))) =
        (args.next(), args.next())
    else {
        return None;
    };
    let source = AlgorithmKind::ALL
        .into_iter()
        .find(|&kind| script(kind).get_hash().as_bytes() == sha)
        .map(source)
        .or_else(|| {
            other_scripts()
                .into_iter()
                .find(|(_, script, _)| script.get_hash().as_bytes() == sha)
                .map(|(_, _, source)| source)
        })?;
    let mut eval = redis::Cmd::with_capacity(evalsha.args_iter().len(), source.len() + 192);
    eval.arg("EVAL").arg(source);
    for arg in args {
        match arg {
            redis::Arg::Simple(bytes) => eval.arg(bytes),
            _ => return None,
        };
    }
    Some(eval)
}

/// Sends one script call: the EVALSHA, and on NOSCRIPT the same call as EVAL ([`eval_of`]),
/// routed by the same key. NOPERM is named: on the EVALSHA the user may not run scripts, on
/// the EVAL it may not put one in the cache. The one recovery of every front: decisions
/// ([`crate::Limiter`]) and replays' calls that met NOSCRIPT in a pipeline
/// (the lab's replay).
pub async fn invoke(conn: &mut Conn, evalsha: &redis::Cmd) -> Result<redis::Value, RedisFailure> {
    match evalsha.query_async::<redis::Value>(conn).await {
        Err(err) if acl::is_noscript(&err) => {
            let Some(eval) = eval_of(evalsha) else {
                return Err(err.into());
            };
            match eval.query_async(conn).await {
                Err(err) if acl::is_noperm(&err) => Err(acl::cannot_load(&err)),
                Err(err) if acl::is_refused_in_script(&err) => {
                    Err(refused_in_script(&err, evalsha))
                }
                other => other.map_err(RedisFailure::from),
            }
        }
        other => other.map_err(|err| failure_of(err, evalsha)),
    }
}

/// A script call's error as a failure, a refusal by the user's ACL named: the script's own
/// command refused inside it (the command named, from the script `evalsha` called), or the
/// call itself (the permission named).
pub fn failure_of(err: redis::RedisError, evalsha: &redis::Cmd) -> RedisFailure {
    if acl::is_refused_in_script(&err) {
        refused_in_script(&err, evalsha)
    } else if acl::is_noperm(&err) {
        acl::no_script_permission(&err)
    } else {
        err.into()
    }
}

/// A command refused inside one of the scripts, named from the script's own source. Redis puts
/// the script's sha in its message; Valkey does not, so the sha `evalsha` called is used.
fn refused_in_script(err: &redis::RedisError, evalsha: &redis::Cmd) -> RedisFailure {
    let called = match evalsha.args_iter().nth(1) {
        Some(redis::Arg::Simple(sha)) => String::from_utf8_lossy(sha).into_owned(),
        _ => String::new(),
    };
    let found = acl::refused_at(err).and_then(|(sha, line)| {
        let sha = if sha.is_empty() { called } else { sha };
        let (name, source) = named_source(&sha)?;
        Some((name, source.lines().nth(line.checked_sub(1)?)))
    });
    match found {
        Some((name, line)) => acl::refused_in_script(err, &format!("the {name} script"), line),
        None => acl::refused_in_script(err, "a script", None),
    }
}

/// The script whose SHA1 is `sha` (hex): its name and source.
fn named_source(sha: &str) -> Option<(&'static str, &'static str)> {
    AlgorithmKind::ALL
        .into_iter()
        .find(|&kind| script(kind).get_hash() == sha)
        .map(|kind| (kind.as_str(), source(kind)))
        .or_else(|| {
            other_scripts()
                .into_iter()
                .find(|(_, script, _)| script.get_hash() == sha)
                .map(|(name, _, source)| (name, source))
        })
}

/// The telemetry counters' TTL a script takes when its call leaves it out.
pub const SCRIPT_STATS_TTL_SECS: u64 = 120;

/// Everything one script call needs besides the connection.
#[derive(Debug)]
pub struct Call<'a> {
    pub algorithm: &'a Algorithm,
    pub limiter_key: &'a str,
    /// The allowed and denied counters of this second, when telemetry is on.
    pub stats_keys: Option<(&'a str, &'a str)>,
    pub stats_ttl_secs: u64,
    pub cost: u64,
    pub at: At,
    /// A concurrency limit's lease id (its ARGV[4]): the caller keeps it to release the lease.
    /// `None` for the other algorithms (a concurrency call without one takes a fresh id).
    pub lease_id: Option<&'a str>,
}

impl Call<'_> {
    /// The EVALSHA: KEYS and ARGV exactly as the script headers document them, written
    /// straight into one command buffer (no `ScriptInvocation` with a vector per argument and
    /// the copy `invoke_async` makes of them). Sent with [`invoke`], which recovers from
    /// NOSCRIPT.
    pub fn evalsha(&self) -> redis::Cmd {
        self.command(false)
    }

    /// The same EVALSHA with every ARGV written out, the scripts' defaults the engine leaves
    /// out included (as the engine called them before issue 24; `bench --lua` measures both).
    pub fn evalsha_in_full(&self) -> redis::Cmd {
        self.command(true)
    }

    fn command(&self, in_full: bool) -> redis::Cmd {
        let (verb, script, capacity) = ("EVALSHA", script(self.algorithm.kind()).get_hash(), 192);
        let keys = if self.stats_keys.is_some() { 3 } else { 1 };
        let mut cmd = redis::Cmd::with_capacity(3 + keys + 6, capacity + self.limiter_key.len());
        cmd.arg(verb).arg(script).arg(keys).arg(self.limiter_key);
        if let Some((allowed, denied)) = self.stats_keys {
            cmd.arg(allowed).arg(denied);
        }
        // Trailing ARGV equal to the scripts' defaults (the server's clock, cost 1, the stats
        // TTL of 120 s) are left out: the same decision, and every argument Redis does not
        // parse and hand to Lua is about a sixth of a microsecond of its CPU
        // (docs/benchmarks.md, issue 24).
        let ttl = in_full || self.stats_ttl_secs != SCRIPT_STATS_TTL_SECS;
        let cost = ttl || self.cost != 1;
        let now = |cmd: &mut redis::Cmd| match self.at.millis() {
            None => {
                cmd.arg("");
            }
            Some(ms) => {
                cmd.arg(ms);
            }
        };
        let tail = |cmd: &mut redis::Cmd, with_now: bool| {
            if with_now && (cost || self.at.millis().is_some()) {
                now(cmd);
            }
            if cost {
                cmd.arg(self.cost);
            }
            if ttl {
                cmd.arg(self.stats_ttl_secs);
            }
        };
        match *self.algorithm {
            Algorithm::Calendar { limit, .. } => {
                cmd.arg(limit)
                    .arg(self.at.windows_arg(self.algorithm).as_deref());
                tail(&mut cmd, true);
            }
            Algorithm::TokenBucket {
                capacity,
                refill_per_sec,
            } => {
                cmd.arg(capacity).arg(refill_per_sec);
                tail(&mut cmd, true);
            }
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            } => {
                cmd.arg(limit).arg(window_ms).arg(burst);
                tail(&mut cmd, true);
            }
            Algorithm::SlidingWindowCounter { limit, window_ms } => {
                cmd.arg(limit).arg(window_ms);
                tail(&mut cmd, true);
            }
            Algorithm::SlidingWindowLog { limit, window_ms } => {
                cmd.arg(limit).arg(window_ms);
                now(&mut cmd);
                cmd.arg(&log_member()[..]);
                tail(&mut cmd, false);
            }
            Algorithm::Concurrency { limit, lease_ms } => {
                cmd.arg(limit).arg(lease_ms);
                now(&mut cmd);
                match self.lease_id {
                    Some(id) => cmd.arg(id),
                    None => cmd.arg(&log_member()[..]),
                };
                tail(&mut cmd, false);
            }
            Algorithm::FixedWindow { limit, window_ms } => {
                cmd.arg(limit).arg(window_ms);
                // The clock mode's now_ms comes after the cost and the stats TTL.
                if let At::Millis(ms) = self.at {
                    cmd.arg(self.cost).arg(self.stats_ttl_secs).arg(ms);
                } else {
                    tail(&mut cmd, false);
                }
            }
        }
        cmd
    }
}

/// The script's reply as a decision, read straight from the reply value (no intermediate
/// vector); anything but four integers is refused, as [`parse_reply`] refuses it.
pub fn parse_value(reply: &redis::Value) -> Result<Decision, RedisFailure> {
    let mut ints = [0i64; 4];
    let well_formed = match reply {
        redis::Value::Array(items) if items.len() == 4 => {
            items.iter().zip(&mut ints).all(|(item, slot)| match item {
                redis::Value::Int(n) => {
                    *slot = *n;
                    true
                }
                _ => false,
            })
        }
        _ => false,
    };
    if !well_formed {
        return Err(RedisFailure::new(
            FailureKind::Reply,
            format!(
                "expected {{allowed, remaining, retry_after_ms, reset_after_ms}}, got {reply:?}"
            ),
        ));
    }
    parse_reply(&ints)
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
    Ok(Decision::by_redis(
        allowed == 1,
        remaining as u64,
        retry_after as u64,
        reset_after as u64,
    ))
}

/// The length of a sliding window log's member: 16 bytes, where a hyphenated UUID took 36.
pub const LOG_MEMBER_LEN: usize = 16;

/// A fresh member for the sliding window log: 16 characters drawn from a 64-letter URL-safe
/// alphabet, 96 random bits. A member only has to be unique among one key's entries within one
/// window, so 96 bits leave collisions out of reach, and printable text keeps the log readable
/// with `redis-cli ZRANGE`. Logs written with the old 36-character UUID members stay valid: the
/// scripts treat a member as an opaque string, and count and expire entries by score alone.
pub fn log_member() -> [u8; LOG_MEMBER_LEN] {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits: u128 = rand::random();
    let mut member = [0u8; LOG_MEMBER_LEN];
    for byte in &mut member {
        *byte = ALPHABET[(bits & 63) as usize];
        bits >>= 6;
    }
    member
}

#[cfg(test)]
#[path = "scripts_tests.rs"]
mod tests;
