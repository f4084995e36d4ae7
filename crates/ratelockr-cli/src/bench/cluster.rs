//! Failover and resharding, measured on a private cluster ([`EmbeddedCluster`]: 3 masters, a
//! replica each, node timeout 1 s).
//!
//! `tasks` tasks, each with its own cluster connection, decide without pause for `keys`
//! clients of `rules` fixed-window rules (limit `limit` per hour, so every admission beyond
//! `limit` for a client is over-admission). Mid-run one master is killed with SIGKILL
//! (failover) or a range of slots is moved with `redis-cli --cluster reshard` (resharding).
//! Reported: how long decisions of the affected rules failed open, whether they came back
//! without help, how many decisions failed (overall and by the master that served each rule
//! when the run started, so a failover shows whose slots failed open), and how many requests
//! were admitted beyond the limit by Redis itself (writes lost with the killed master),
//! against the limit.

use ratelockr::embedded_cluster::{ClusterError, EmbeddedCluster};
use ratelockr::{KeySpace, Limiter, LimiterOptions, RedisTarget, Rule};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What is done to the cluster mid-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disruption {
    /// SIGKILL the master that serves the first rule.
    Failover,
    /// Move `slots` slots from that master to another with `redis-cli --cluster reshard`.
    Reshard { slots: u16 },
}

/// The run's shape.
#[derive(Debug, Clone)]
pub struct ClusterBench {
    pub disruption: Disruption,
    pub tasks: usize,
    pub rules: usize,
    pub keys: usize,
    pub limit: u64,
    /// Deciding before the disruption.
    pub before: Duration,
    /// Deciding after it.
    pub after: Duration,
    pub deadline: Duration,
}

/// What was measured.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterReport {
    pub disruption: Disruption,
    pub tasks: usize,
    pub rules: usize,
    pub keys_per_rule: usize,
    pub limit: u64,
    pub deadline_ms: u64,
    pub decisions: u64,
    /// Decisions that failed open, by failure kind.
    pub fail_open: u64,
    /// Decisions and fail-opens by the master that served each rule's slot when the run
    /// started: a failover should fail open only the killed master's.
    pub by_master: Vec<MasterShare>,
    pub failures_by_kind: Vec<(String, u64)>,
    /// Rules served by the disrupted master (failover) or in the moved slots (resharding).
    pub affected_rules: usize,
    /// From the disruption to the first and last fail-open decision, in ms.
    pub first_fail_open_ms: Option<u64>,
    pub last_fail_open_ms: Option<u64>,
    /// Decisions of the affected rules made by Redis (not failed open) in the run's last
    /// second: they recovered without a manual step.
    pub affected_decided_last_second: u64,
    /// Clients that Redis admitted `limit` times or more: reaching the limit is what makes
    /// a lost write visible as over-admission.
    pub saturated_clients: u64,
    pub clients: u64,
    /// Clients admitted more than `limit` times by Redis (fail-open admissions excluded).
    pub over_admitted_clients: u64,
    /// Admissions beyond `limit`, summed over clients, and the allowance they exceed.
    pub over_admitted_requests: u64,
    pub allowance: u64,
    /// The master disrupted (`host:port`) and, for a failover, the replica that took over.
    pub disrupted: String,
    /// The master serving the disrupted master's first affected slot at the end, as a surviving
    /// node tells it (the promoted replica, after a failover).
    pub now_serving: Option<String>,
}

/// One master's share of a run.
#[derive(Debug, Clone, Serialize)]
pub struct MasterShare {
    /// `host:port` when the run started.
    pub master: String,
    /// The master killed (failover) or whose slots moved (resharding).
    pub disrupted: bool,
    pub rules: usize,
    pub decisions: u64,
    pub fail_open: u64,
}

struct Sample {
    rule: usize,
    client: usize,
    allowed: bool,
    fail_open: bool,
    at: Instant,
}

impl ClusterBench {
    pub async fn run(&self) -> Result<ClusterReport, ClusterError> {
        let mut cluster = tokio::task::block_in_place(|| EmbeddedCluster::start(3, 1))?;
        let target = RedisTarget::parse(&cluster.url()).map_err(|e| form(e.to_string()))?;
        let options = LimiterOptions {
            keys: KeySpace::new(format!("clusterbench{}", std::process::id())),
            deadline: self.deadline,
            ..LimiterOptions::default()
        };
        let limiter = Limiter::new(&target, options);
        let rules: Vec<Rule> = (0..self.rules)
            .map(|i| Rule::fixed_window(format!("cb{i}"), self.limit, Duration::from_secs(3600)))
            .collect::<Result<_, _>>()
            .map_err(|e| form(e.to_string()))?;
        let mut conn = limiter.connection();
        let topology = conn
            .topology()
            .await
            .map_err(|e| form(e.to_string()))?
            .unwrap_or_default();
        let mut slot_of = Vec::new();
        for rule in &rules {
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(format!("{{{}}}", rule.name()))
                .query_async(&mut conn)
                .await
                .map_err(|e| form(e.to_string()))?;
            slot_of.push(slot);
        }
        let owner = |slot: u16| {
            topology.iter().find(|n| {
                n.role == ratelockr::cluster::NodeRole::Master
                    && n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
            })
        };
        let victim = owner(slot_of[0]).ok_or_else(|| form("no master serves slot".into()))?;
        let victim = victim.clone();
        let owner_of: Vec<String> = slot_of
            .iter()
            .map(|&slot| owner(slot).map_or_else(|| "none".into(), |n| n.address()))
            .collect();

        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for t in 0..self.tasks {
            let limiter = limiter.with_own_connection();
            let rules = rules.clone();
            let stop = stop.clone();
            let keys = self.keys;
            handles.push(tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    let (rule, client) = (i % rules.len(), (i / rules.len()) % keys);
                    i = i.wrapping_add(7919);
                    let d = limiter
                        .check(&rules[rule], &format!("c{client}"))
                        .await
                        .expect("a valid rule and key");
                    samples.push(Sample {
                        rule,
                        client,
                        allowed: d.allowed,
                        fail_open: d.fail_open(),
                        at: Instant::now(),
                    });
                }
                samples
            }));
        }
        tokio::time::sleep(self.before).await;
        let disrupted_at = Instant::now();
        let affected: Vec<bool> = match self.disruption {
            Disruption::Failover => {
                cluster.kill(victim.port);
                slot_of
                    .iter()
                    .map(|&s| victim.slots.iter().any(|&(a, b)| (a..=b).contains(&s)))
                    .collect()
            }
            Disruption::Reshard { slots } => {
                let to = topology
                    .iter()
                    .find(|n| n.role == ratelockr::cluster::NodeRole::Master && n.id != victim.id)
                    .ok_or_else(|| form("no second master".into()))?
                    .clone();
                let moved = reshard(&victim, &to, slots).await?;
                slot_of
                    .iter()
                    .map(|&s| moved.iter().any(|&(a, b)| (a..=b).contains(&s)))
                    .collect()
            }
        };
        tokio::time::sleep(self.after).await;
        stop.store(true, Ordering::Relaxed);
        let ended = Instant::now();
        let mut samples = Vec::new();
        for h in handles {
            samples.extend(h.await.map_err(|e| form(e.to_string()))?);
        }

        let mut admitted: HashMap<(usize, usize), u64> = HashMap::new();
        let (mut fail_open, mut first, mut last, mut recovered) = (0, None, None, 0);
        for s in &samples {
            if s.fail_open {
                fail_open += 1;
                let ms = s.at.saturating_duration_since(disrupted_at).as_millis() as u64;
                first = Some(first.map_or(ms, |f: u64| f.min(ms)));
                last = Some(last.map_or(ms, |l: u64| l.max(ms)));
            } else if s.allowed {
                *admitted.entry((s.rule, s.client)).or_default() += 1;
            }
            if affected[s.rule]
                && !s.fail_open
                && ended.duration_since(s.at) < Duration::from_secs(1)
            {
                recovered += 1;
            }
        }
        let mut by_master: Vec<MasterShare> = Vec::new();
        for master in &owner_of {
            let index = match by_master.iter().position(|m| &m.master == master) {
                Some(index) => index,
                None => {
                    by_master.push(MasterShare {
                        master: master.clone(),
                        disrupted: *master == victim.address(),
                        rules: 0,
                        decisions: 0,
                        fail_open: 0,
                    });
                    by_master.len() - 1
                }
            };
            by_master[index].rules += 1;
        }
        for s in &samples {
            if let Some(share) = by_master.iter_mut().find(|m| m.master == owner_of[s.rule]) {
                share.decisions += 1;
                share.fail_open += u64::from(s.fail_open);
            }
        }
        by_master.sort_by(|a, b| b.disrupted.cmp(&a.disrupted).then(a.master.cmp(&b.master)));
        let over: Vec<u64> = admitted
            .values()
            .filter(|&&n| n > self.limit)
            .map(|&n| n - self.limit)
            .collect();
        // Who serves the victim's first slot now, as a surviving node tells it.
        let now_serving = cluster
            .addresses()
            .first()
            .and_then(|a| a.rsplit_once(':')?.1.parse().ok())
            .and_then(|port| {
                ratelockr::embedded_cluster::query_node(port, &["CLUSTER", "NODES"]).ok()
            })
            .and_then(|text| {
                ratelockr::cluster::parse_nodes(&text)
                    .into_iter()
                    .find(|n| {
                        n.role == ratelockr::cluster::NodeRole::Master
                            && !n.failing
                            && n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot_of[0]))
                    })
                    .map(|n| n.address())
            });
        let ledger = limiter.ledger();
        Ok(ClusterReport {
            disruption: self.disruption,
            tasks: self.tasks,
            rules: self.rules,
            keys_per_rule: self.keys,
            limit: self.limit,
            deadline_ms: self.deadline.as_millis() as u64,
            decisions: samples.len() as u64,
            fail_open,
            by_master,
            failures_by_kind: ledger
                .failures()
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            affected_rules: affected.iter().filter(|&&a| a).count(),
            first_fail_open_ms: first,
            last_fail_open_ms: last,
            affected_decided_last_second: recovered,
            saturated_clients: admitted.values().filter(|&&n| n >= self.limit).count() as u64,
            clients: (self.rules * self.keys) as u64,
            over_admitted_clients: over.len() as u64,
            over_admitted_requests: over.iter().sum(),
            allowance: self.limit * (self.rules * self.keys) as u64,
            disrupted: victim.address(),
            now_serving,
        })
    }
}

/// Moves `slots` slots from `from` to `to` with redis-cli; returns the ranges that moved.
async fn reshard(
    from: &ratelockr::cluster::ClusterNode,
    to: &ratelockr::cluster::ClusterNode,
    slots: u16,
) -> Result<Vec<(u16, u16)>, ClusterError> {
    let cli = ratelockr::embedded::find_on_path("redis-cli").ok_or(ClusterError::NoRedisCli)?;
    let out = tokio::process::Command::new(cli)
        .args(["--cluster", "reshard", &from.address()])
        .args(["--cluster-from", &from.id, "--cluster-to", &to.id])
        .args(["--cluster-slots", &slots.to_string(), "--cluster-yes"])
        .output()
        .await
        .map_err(|e| form(format!("redis-cli: {e}")))?;
    if !out.status.success() {
        return Err(form(format!(
            "redis-cli --cluster reshard failed: {}",
            String::from_utf8_lossy(&out.stdout)
        )));
    }
    // redis-cli moves the source's lowest slots first.
    let mut left = slots;
    let mut moved = Vec::new();
    for &(a, b) in &from.slots {
        if left == 0 {
            break;
        }
        let n = (b - a + 1).min(left);
        moved.push((a, a + n - 1));
        left -= n;
    }
    Ok(moved)
}

fn form(message: String) -> ClusterError {
    ClusterError::Form(message)
}
