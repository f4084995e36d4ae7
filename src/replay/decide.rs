//! Deciding on a virtual clock, pipelined.
//!
//! Requests go out in lanes: a client key always takes the same lane (by a hash of the key),
//! each lane has its own connection and one pipeline in flight at a time, so every key's
//! decisions are made in log order while the lanes keep Redis busy together. Decisions of
//! different keys do not depend on each other (each script touches only its key, and replays
//! write no telemetry), so the outcome is the same however the lanes interleave.
//!
//! The scripts are loaded before the first pipeline. EVALSHA inside a pipeline cannot recover
//! from NOSCRIPT by itself (a flushed or restarted Redis), so the replies are read one by one:
//! the commands that met NOSCRIPT are sent again, in order, after loading the scripts again.
//! Any other failure fails those decisions open, counted and shown in the report.

use crate::conn::{Conn, ConnOptions};
use crate::decision::Decision;
use crate::error::{FailureKind, RedisFailure};
use crate::limiter::Limiter;
use crate::rule::AlgorithmKind;
use crate::scripts;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The longest one pipeline may take: thousands of script calls, on a loaded machine.
const PIPELINE_DEADLINE: Duration = Duration::from_secs(60);
/// The longest a lane may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times a NOSCRIPT is recovered from in one pipeline before the calls fail open.
const NOSCRIPT_RETRIES: usize = 3;

/// One decision's outcome: the decision, or the failure that made it fail open.
pub type Outcome = Result<Decision, RedisFailure>;

struct Job {
    commands: Vec<redis::Cmd>,
    reply: oneshot::Sender<Vec<Outcome>>,
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

/// A lane's answer to come: decisions in the order of the commands it was given.
pub type Pending = oneshot::Receiver<Vec<Outcome>>;

impl Lanes {
    /// `count` lanes, each on its own connection to the limiter's Redis, with `kinds`' scripts
    /// loaded.
    pub async fn start(
        limiter: &Limiter,
        kinds: &[AlgorithmKind],
        count: usize,
    ) -> Result<Lanes, RedisFailure> {
        let mut senders = Vec::new();
        for _ in 0..count.max(1) {
            // Its own connection, whose response timeout fits a pipeline of thousands of
            // scripts rather than the limiter's one-decision deadline.
            let options = ConnOptions {
                connect_timeout: limiter.options().deadline.max(CONNECT_TIMEOUT),
                response_timeout: PIPELINE_DEADLINE,
                retries: 2,
                max_delay: None,
            };
            let mut conn = Conn::connect(limiter.target(), options).await?;
            load(&mut conn, kinds).await?;
            let (tx, rx) = mpsc::channel::<Job>(4);
            tokio::spawn(lane(conn, kinds.to_vec(), rx));
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

    /// Queues `commands` on lane `lane`; their decisions come back in order.
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

async fn load(conn: &mut Conn, kinds: &[AlgorithmKind]) -> Result<(), RedisFailure> {
    for &kind in kinds {
        tokio::time::timeout(PIPELINE_DEADLINE, scripts::script(kind).load_async(conn))
            .await
            .map_err(|_| RedisFailure::new(FailureKind::Timeout, "SCRIPT LOAD timed out"))??;
    }
    Ok(())
}

async fn lane(mut conn: Conn, kinds: Vec<AlgorithmKind>, mut jobs: mpsc::Receiver<Job>) {
    while let Some(job) = jobs.recv().await {
        let outcomes = run_pipeline(&mut conn, &kinds, &job.commands).await;
        let _ = job.reply.send(outcomes);
    }
}

async fn run_pipeline(
    conn: &mut Conn,
    kinds: &[AlgorithmKind],
    commands: &[redis::Cmd],
) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = vec![None; commands.len()];
    let mut todo: Vec<usize> = (0..commands.len()).collect();
    for attempt in 0..=NOSCRIPT_RETRIES {
        if todo.is_empty() {
            break;
        }
        let mut pipe = redis::Pipeline::with_capacity(todo.len());
        pipe.ignore_errors();
        for &i in &todo {
            pipe.add_command(commands[i].clone());
        }
        let replies = match tokio::time::timeout(
            PIPELINE_DEADLINE,
            pipe.query_async::<Vec<redis::Value>>(conn),
        )
        .await
        {
            Ok(Ok(replies)) if replies.len() == todo.len() => replies,
            Ok(Ok(replies)) => {
                let failure = RedisFailure::new(
                    FailureKind::Reply,
                    format!("{} replies to {} commands", replies.len(), todo.len()),
                );
                return fill(outcomes, &todo, failure);
            }
            Ok(Err(err)) => return fill(outcomes, &todo, err.into()),
            Err(_) => {
                let failure = RedisFailure::new(
                    FailureKind::Timeout,
                    format!(
                        "a replay pipeline took over {} s",
                        PIPELINE_DEADLINE.as_secs()
                    ),
                );
                return fill(outcomes, &todo, failure);
            }
        };
        let mut again = Vec::new();
        for (&i, reply) in todo.iter().zip(&replies) {
            match reply {
                redis::Value::ServerError(e)
                    if e.kind() == Some(redis::ServerErrorKind::NoScript)
                        && attempt < NOSCRIPT_RETRIES =>
                {
                    again.push(i)
                }
                redis::Value::ServerError(e) => {
                    let err: redis::RedisError = e.clone().into();
                    outcomes[i] = Some(Err(err.into()));
                }
                other => outcomes[i] = Some(scripts::parse_value(other)),
            }
        }
        todo = again;
        if !todo.is_empty() {
            if let Err(failure) = load(conn, kinds).await {
                return fill(outcomes, &todo, failure);
            }
        }
    }
    outcomes
        .into_iter()
        .map(|o| {
            o.unwrap_or_else(|| {
                Err(RedisFailure::new(
                    FailureKind::NoScript,
                    "NOSCRIPT after reloading",
                ))
            })
        })
        .collect()
}

fn fill(mut outcomes: Vec<Option<Outcome>>, todo: &[usize], failure: RedisFailure) -> Vec<Outcome> {
    for &i in todo {
        outcomes[i] = Some(Err(failure.clone()));
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(failure.clone())))
        .collect()
}
