//! The profile of issue 24: what each piece a script is made of costs Redis, measured inside
//! Redis. `bench/profile_loop.lua` runs one piece (a command issued with `redis.call`, a
//! `tonumber`, the token bucket's argument checks, ...) in a loop; its time in the command
//! (INFO commandstats), less the empty loop's, per iteration, is the piece's cost. Rounds are
//! interleaved, medians reported. In a loop everything is hot in the CPU's caches, so these
//! are floors: a piece costs at least this inside a real call.

use super::ceiling::median;
use ratelockr::keys::KeySpace;
use ratelockr::Conn;
use serde::Serialize;

/// The loop (see its header).
pub(crate) const PROFILE_LOOP_LUA: &str = include_str!("../../bench/profile_loop.lua");

/// The pieces, as `bench/profile_loop.lua` names them; the empty loop first.
pub const PIECES: &[&str] = &[
    "empty",
    "TIME",
    "GET",
    "SET EX",
    "SET PX",
    "SET KEEPTTL",
    "INCR",
    "INCRBY",
    "INCRBY, a number argument",
    "DECRBY",
    "PTTL",
    "PEXPIRE",
    "EXPIRE",
    "HMGET 4 fields",
    "HSET 4 fields",
    "ZRANGE newest",
    "ZCOUNT",
    "ZADD",
    "ZREMRANGEBYSCORE",
    "tonumber",
    "string.format('%d')",
    "string.format('%.17g')",
    "math.floor",
    "a closure",
    "a reply table of 4",
    "struct.pack",
    "struct.unpack",
    "validation, helpers per call (before)",
    "validation, plain comparisons (after)",
];

/// One piece's cost.
#[derive(Debug, Clone, Serialize)]
pub struct PieceCost {
    pub piece: String,
    /// µs per iteration, the empty loop's subtracted; the median of the rounds.
    pub us: f64,
    /// Every round's figure, in round order.
    pub rounds: Vec<f64>,
}

/// Each piece's cost, `iterations` per run, `rounds` interleaved rounds. The scratch keys live
/// under the prefix and are deleted afterwards.
pub async fn lua_profile(
    conn: &mut Conn,
    keys: &KeySpace,
    iterations: u32,
    rounds: usize,
) -> anyhow::Result<Vec<PieceCost>> {
    let scratch: Vec<String> = ["s", "c", "h", "z"]
        .iter()
        .map(|k| format!("{}:profile:{{bench}}:{k}", keys.prefix()))
        .collect();
    let script = redis::Script::new(PROFILE_LOOP_LUA);
    let mut per_round: Vec<Vec<f64>> = PIECES.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds.max(1) {
        for (i, piece) in PIECES.iter().enumerate() {
            // A first short call loads and warms it, so the timed one is a plain EVALSHA.
            run(conn, &script, &scratch, piece, 10).await?;
            let before = ratelockr::commandstats::read_evalsha(conn).await?;
            run(conn, &script, &scratch, piece, iterations).await?;
            let after = ratelockr::commandstats::read_evalsha(conn).await?;
            let cost = before
                .cost_until(&after)
                .ok_or_else(|| anyhow::anyhow!("INFO commandstats went backwards"))?;
            per_round[i].push(cost.usec as f64 / f64::from(iterations));
        }
    }
    let mut del = redis::cmd("DEL");
    for key in &scratch {
        del.arg(key);
    }
    let _: i64 = del.query_async(conn).await?;
    let empty = per_round[0].clone();
    Ok(PIECES
        .iter()
        .zip(per_round)
        .map(|(piece, rounds)| {
            let net: Vec<f64> = match *piece {
                "empty" => rounds,
                _ => rounds.iter().zip(&empty).map(|(r, e)| r - e).collect(),
            };
            PieceCost {
                piece: piece.to_string(),
                us: median(net.clone()),
                rounds: net,
            }
        })
        .collect())
}

/// One EVALSHA of the loop (EVAL on NOSCRIPT): `iterations` of `piece`.
async fn run(
    conn: &mut Conn,
    script: &redis::Script,
    scratch: &[String],
    piece: &str,
    iterations: u32,
) -> anyhow::Result<()> {
    let mut call = script.prepare_invoke();
    for key in scratch {
        call.key(key);
    }
    call.arg(piece).arg(iterations);
    // The token bucket's capacity, rate, cost and stats TTL, as the engine sends them.
    for arg in ["100", "100", "1", "120"] {
        call.arg(arg);
    }
    let _: u64 = call.invoke_async(conn).await?;
    Ok(())
}
