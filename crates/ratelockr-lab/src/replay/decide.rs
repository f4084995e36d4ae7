//! Deciding on a virtual clock, pipelined.
//!
//! Requests go out in lanes: a client key always takes the same lane (by a hash of the key),
//! each lane has its own connection and one job in flight at a time, so every key's decisions
//! are made in log order while the lanes keep Redis busy together. Decisions of different keys
//! do not depend on each other (each script touches only its key, and replays write no
//! telemetry), so the outcome is the same however the lanes interleave.
//!
//! On a single Redis a job is one pipeline. On a Redis Cluster a pipeline must stay within one
//! slot (redis-rs refuses one whose keys cross slots), so a job is split by slot and the parts
//! go out at once, each to its slot's master. Every key of a rule carries the rule's hash tag,
//! so in effect a part is a rule's share of the job, and a key's decisions stay in log order
//! inside it.
//!
//! Nothing is loaded beforehand: `SCRIPT LOAD` would have to reach every node, and a failover,
//! a restart or `SCRIPT FLUSH` empties one node's cache mid-replay anyway. The first call of
//! each script a lane sends to a slot goes as EVAL instead of EVALSHA ([`scripts::eval_of`]):
//! the node runs it and caches it, and the EVALSHAs behind it in the same pipeline, which the
//! node runs in order, find it. A call that still meets NOSCRIPT (the node lost its cache), a
//! redirection (MOVED or ASK while a slot moves) or TRYAGAIN is sent again alone, in order,
//! through the engine's own recovery ([`scripts::invoke`]: EVALSHA, then EVAL to the node that
//! answered), and the cluster connection follows the redirection. Any other failure fails that
//! decision open, counted and shown in the report.
//!
//! One edge, only when a node loses its scripts mid-replay: a call that met NOSCRIPT is
//! decided after the rest of its pipeline, so if another lane put the script back in between,
//! a later call of the same key may have been decided before it.

use ratelockr::limiter::Limiter;
use ratelockr::scripts;
use ratelockr::{Conn, ConnOptions};
use ratelockr::{FailureKind, RedisFailure};
use redis::cluster_routing::Slot;
use redis::{ServerErrorKind, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The longest one pipeline may take: thousands of script calls, on a loaded machine. Calls
/// sent again alone share one more such deadline.
const PIPELINE_DEADLINE: Duration = Duration::from_secs(60);
/// The longest a lane may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One call's result: the script's reply (a rule's four integers, a policy's 6 + 4n), or the
/// failure that made it fail open. The caller, which knows which script each call ran, reads
/// the reply.
pub type ReplyResult = Result<Value, RedisFailure>;

struct Job {
    commands: Vec<redis::Cmd>,
    reply: oneshot::Sender<Vec<ReplyResult>>,
}

/// The lanes.
pub struct Lanes {
    senders: Vec<mpsc::Sender<Job>>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("lanes", &self.senders.len())
            .finish()
    }
}

/// A lane's answer to come: replies in the order of the commands it was given.
pub type Pending = oneshot::Receiver<Vec<ReplyResult>>;

impl Lanes {
    /// `count` lanes, each on its own connection to the limiter's Redis (a single node or a
    /// cluster).
    pub async fn start(limiter: &Limiter, count: usize) -> Result<Lanes, RedisFailure> {
        let mut senders = Vec::new();
        for _ in 0..count.max(1) {
            // Its own connection, whose response timeout fits a pipeline of thousands of
            // scripts rather than the limiter's one-decision deadline.
            let options = ConnOptions {
                connect_timeout: limiter.options().deadline.max(CONNECT_TIMEOUT),
                response_timeout: PIPELINE_DEADLINE,
                retries: 2,
                max_delay: None,
                min_delay: None,
            };
            let conn = Conn::connect(limiter.target(), options).await?;
            let (tx, rx) = mpsc::channel::<Job>(4);
            tokio::spawn(lane(conn, rx));
            senders.push(tx);
        }
        Ok(Lanes { senders })
    }

    pub fn count(&self) -> usize {
        self.senders.len()
    }

    /// The lane of a client key, by its hash ([`super::distinct::hash_key`]).
    pub fn lane_of(&self, key_hash: u64) -> usize {
        (key_hash % self.senders.len() as u64) as usize
    }

    /// Queues `commands` (EVALSHAs of the five scripts or the policy script) on lane `lane`;
    /// their replies come back in order.
    pub async fn submit(&self, lane: usize, commands: Vec<redis::Cmd>) -> Pending {
        let (reply, pending) = oneshot::channel();
        let n = commands.len();
        if let Err(mpsc::error::SendError(job)) =
            self.senders[lane].send(Job { commands, reply }).await
        {
            let failure = RedisFailure::new(FailureKind::Other, "the replay lane stopped");
            let _ = job.reply.send(vec![Err(failure); n]);
        }
        pending
    }
}

/// The scripts (by SHA1) a lane has sent as EVAL to a slot (slot 0 on a single Redis), so
/// believes cached on the node serving it, until that node answers NOSCRIPT.
type Warm = HashSet<(Slot, [u8; 40])>;

async fn lane(conn: Conn, mut jobs: mpsc::Receiver<Job>) {
    let mut warm = Warm::new();
    while let Some(job) = jobs.recv().await {
        let outcomes = run_job(&conn, &mut warm, &job.commands).await;
        let _ = job.reply.send(outcomes);
    }
}

/// One pipeline's share of a job: its slot and the indexes of its commands, in order.
struct Part {
    slot: Slot,
    indexes: Vec<usize>,
    /// Positions in `indexes` sent as EVAL.
    evals: Vec<usize>,
}

async fn run_job(conn: &Conn, warm: &mut Warm, commands: &[redis::Cmd]) -> Vec<ReplyResult> {
    let mut parts: Vec<Part> = if conn.is_cluster() {
        let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (i, cmd) in commands.iter().enumerate() {
            let key = arg(cmd, 3).unwrap_or_default();
            by_slot.entry(Slot::for_key(key)).or_default().push(i);
        }
        by_slot
            .into_iter()
            .map(|(slot, indexes)| Part {
                slot,
                indexes,
                evals: Vec::new(),
            })
            .collect()
    } else {
        vec![Part {
            slot: Slot::new(0).expect("slot 0 exists"),
            indexes: (0..commands.len()).collect(),
            evals: Vec::new(),
        }]
    };
    let pipelines: Vec<redis::Pipeline> = parts
        .iter_mut()
        .map(|part| pipeline(commands, part, warm))
        .collect();
    let replies = match pipelines.as_slice() {
        // The single Redis's path: no future to join.
        [pipe] => vec![send(conn.clone(), pipe, parts[0].indexes.len()).await],
        _ => {
            futures::future::join_all(
                pipelines
                    .iter()
                    .zip(&parts)
                    .map(|(pipe, part)| send(conn.clone(), pipe, part.indexes.len())),
            )
            .await
        }
    };
    let mut outcomes: Vec<Option<ReplyResult>> = vec![None; commands.len()];
    let mut again = Vec::new();
    for (part, replies) in parts.iter().zip(replies) {
        settle(commands, part, replies, warm, &mut outcomes, &mut again);
    }
    if !again.is_empty() {
        one_by_one(conn, commands, &again, &mut outcomes).await;
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(RedisFailure::new(FailureKind::Other, "no reply"))))
        .collect()
}

/// A part's pipeline: its commands in order, the first call of each script not yet warm on
/// the slot sent as EVAL.
fn pipeline(commands: &[redis::Cmd], part: &mut Part, warm: &mut Warm) -> redis::Pipeline {
    let mut pipe = redis::Pipeline::with_capacity(part.indexes.len());
    pipe.ignore_errors();
    let mut last: Option<[u8; 40]> = None;
    for (k, &i) in part.indexes.iter().enumerate() {
        let cmd = &commands[i];
        let sha = sha_of(cmd);
        // Consecutive calls mostly share a script: look it up only when it changes.
        if sha.is_some() && sha != last {
            last = sha;
            let fresh = sha.is_some_and(|sha| warm.insert((part.slot, sha)));
            if let Some(eval) = scripts::eval_of(cmd).filter(|_| fresh) {
                pipe.add_command(eval);
                part.evals.push(k);
                continue;
            }
        }
        pipe.add_command(cmd.clone());
    }
    pipe
}

async fn send(
    mut conn: Conn,
    pipe: &redis::Pipeline,
    n: usize,
) -> Result<Vec<Value>, RedisFailure> {
    match tokio::time::timeout(PIPELINE_DEADLINE, pipe.query_async::<Vec<Value>>(&mut conn)).await {
        Ok(Ok(replies)) if replies.len() == n => Ok(replies),
        Ok(Ok(replies)) => Err(RedisFailure::new(
            FailureKind::Reply,
            format!("{} replies to {n} commands", replies.len()),
        )),
        Ok(Err(err)) => Err(err.into()),
        Err(_) => Err(RedisFailure::new(
            FailureKind::Timeout,
            format!(
                "a replay pipeline took over {} s",
                PIPELINE_DEADLINE.as_secs()
            ),
        )),
    }
}

/// Reads a part's replies into `outcomes`; the calls to send again alone go to `again`, in
/// order.
fn settle(
    commands: &[redis::Cmd],
    part: &Part,
    replies: Result<Vec<Value>, RedisFailure>,
    warm: &mut Warm,
    outcomes: &mut [Option<ReplyResult>],
    again: &mut Vec<usize>,
) {
    let replies = match replies {
        Ok(replies) => replies,
        Err(failure) => {
            for &i in &part.indexes {
                outcomes[i] = Some(Err(failure.clone()));
            }
            return;
        }
    };
    for (k, (&i, reply)) in part.indexes.iter().zip(replies).enumerate() {
        let Value::ServerError(error) = reply else {
            outcomes[i] = Some(Ok(reply));
            continue;
        };
        let kind = error.kind();
        if kind == Some(ServerErrorKind::NoScript) {
            if let Some(sha) = sha_of(&commands[i]) {
                warm.remove(&(part.slot, sha));
            }
        }
        let alone = match kind {
            Some(
                ServerErrorKind::NoScript
                | ServerErrorKind::Moved
                | ServerErrorKind::Ask
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ReadOnly,
            ) => true,
            // A user that may not EVAL may still EVALSHA a script loaded by someone else.
            Some(ServerErrorKind::NoPerm) => part.evals.contains(&k),
            _ => false,
        };
        if alone {
            again.push(i);
            continue;
        }
        let err = redis::RedisError::from(error);
        outcomes[i] = Some(Err(scripts::failure_of(err, &commands[i])));
    }
}

/// Sends `todo`'s calls one at a time, in order, through the engine's recovery.
async fn one_by_one(
    conn: &Conn,
    commands: &[redis::Cmd],
    todo: &[usize],
    outcomes: &mut [Option<ReplyResult>],
) {
    let mut conn = conn.clone();
    let deadline = tokio::time::Instant::now() + PIPELINE_DEADLINE;
    for &i in todo {
        let sent = tokio::time::timeout_at(deadline, scripts::invoke(&mut conn, &commands[i]));
        outcomes[i] = Some(match sent.await {
            Ok(reply) => reply,
            Err(_) => Err(RedisFailure::new(
                FailureKind::Timeout,
                format!(
                    "calls sent again after a pipeline took over {} s",
                    PIPELINE_DEADLINE.as_secs()
                ),
            )),
        });
    }
}

/// The `n`th argument of a command.
fn arg(cmd: &redis::Cmd, n: usize) -> Option<&[u8]> {
    match cmd.args_iter().nth(n)? {
        redis::Arg::Simple(bytes) => Some(bytes),
        _ => None,
    }
}

/// An EVALSHA's script hash (40 hex digits).
fn sha_of(cmd: &redis::Cmd) -> Option<[u8; 40]> {
    arg(cmd, 1)?.try_into().ok()
}
