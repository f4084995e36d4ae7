//! The physical limit: Redis running the very same script, driven by `redis-benchmark` (C,
//! pipelined, many connections), so the only thing between the two figures is the engine.
//!
//! The command is the engine's own: `EVALSHA <sha> 3 <limiter key> <allowed counter> <denied
//! counter> <ARGV as the engine sends it>`, over the same 12-digit client keys
//! (`__rand_int__` with `-r <keys>`). One difference, in Redis's favour: redis-benchmark cannot
//! move the telemetry keys to the current second, so it increments one fixed pair of counters.
//!
//! On a Redis Cluster redis-benchmark runs with `--cluster`: its connections are spread over
//! the masters, and it writes into each key's `{tag}` a hash tag of a slot the connection's
//! master serves, so a call's keys share a slot as the engine's do. The rule is then named
//! `tag` (keys `…:{tag}:…`), and the engine's side decides for rules spread over every master
//! ([`cluster_rules`]).
//!
//! Scripts are put in Redis's cache the engine's way, by EVAL of the very command, on each
//! master it will reach ([`cache_script`]): never `SCRIPT LOAD`.

use crate::cluster::ClusterNode;
use crate::conn::Conn;
use crate::keys::KeySpace;
use crate::rule::{Algorithm, AlgorithmKind, Rule};
use crate::target::RedisTarget;
use crate::telemetry::COUNTER_TTL_SECS;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// redis-benchmark's connections: enough to keep Redis busy while some wait on the wire.
pub const CLIENTS: usize = 50;
/// Requests each connection pipelines.
pub(crate) const PIPELINE: usize = 16;

/// A redis-benchmark aimed at one Redis.
#[derive(Debug, Clone)]
pub struct RedisBenchmark {
    program: PathBuf,
    /// `-h H -p P` or `-s SOCKET`, then `--dbnum N`.
    endpoint: Vec<String>,
}

/// One redis-benchmark figure.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingReport {
    /// What ran, in words (`token_bucket`, `return 1`, ...).
    pub script: String,
    pub requests: u64,
    pub clients: usize,
    pub pipeline: usize,
    pub calls_per_sec: f64,
    /// The command line, password-free, to reproduce the figure by hand.
    pub command: String,
}

impl RedisBenchmark {
    /// redis-benchmark from PATH aimed at `target` (with `--cluster` for a Redis Cluster, at
    /// its first seed), or why it cannot be used.
    pub fn locate(target: &RedisTarget) -> Result<Self, String> {
        let program = crate::embedded::find_on_path("redis-benchmark").ok_or_else(|| {
            "redis-benchmark is not on PATH (Debian/Ubuntu: apt-get install redis-tools)"
                .to_string()
        })?;
        if target.has_password() {
            // redis-benchmark would need it on its command line, visible to every local user.
            return Err("the Redis URL carries a password; redis-benchmark would have to show it on its command line".into());
        }
        if target.is_cluster() {
            if target.is_tls() {
                return Err("the ceiling is measured over plain TCP only (redis-benchmark is not given the TLS settings)".into());
            }
            let seed = url::Url::parse(&target.cluster_seeds()[0])
                .map_err(|_| "an unusable cluster seed".to_string())?;
            let host = seed
                .host_str()
                .unwrap_or("127.0.0.1")
                .trim_matches(['[', ']']);
            let port = seed.port().unwrap_or(6379);
            let endpoint = vec![
                "-h".into(),
                host.to_string(),
                "-p".into(),
                port.to_string(),
                "--cluster".into(),
            ];
            return Ok(RedisBenchmark { program, endpoint });
        }
        let client = target.client();
        let info = client.get_connection_info();
        let settings = info.redis_settings();
        let mut endpoint = match info.addr() {
            redis::ConnectionAddr::Tcp(host, port) => {
                vec!["-h".into(), host.clone(), "-p".into(), port.to_string()]
            }
            redis::ConnectionAddr::Unix(path) => vec!["-s".into(), path.display().to_string()],
            // Its Debug form would hold the TLS parameters.
            redis::ConnectionAddr::TcpTls { .. } => {
                return Err("the ceiling is measured over plain TCP only (redis-benchmark is not given the TLS settings)".into())
            }
            other => {
                return Err(format!(
                    "unsupported connection for redis-benchmark: {other:?}"
                ))
            }
        };
        endpoint.extend(["--dbnum".into(), settings.db().to_string()]);
        Ok(RedisBenchmark { program, endpoint })
    }

    /// Whether it runs against a cluster (`--cluster`).
    pub fn is_cluster(&self) -> bool {
        self.endpoint.iter().any(|a| a == "--cluster")
    }

    /// Runs `EVALSHA <sha> <keys...> <args...>` `requests` times and returns calls per second.
    /// `__rand_int__` in a key or argument becomes a 12-digit number below `keyspace`.
    pub async fn evalsha(
        &self,
        label: &str,
        sha: &str,
        keys: &[String],
        args: &[String],
        requests: u64,
        keyspace: usize,
    ) -> anyhow::Result<CeilingReport> {
        let mut argv: Vec<String> = self.endpoint.clone();
        argv.extend([
            "-c".into(),
            CLIENTS.to_string(),
            "-P".into(),
            PIPELINE.to_string(),
            "-n".into(),
            requests.to_string(),
            "-r".into(),
            keyspace.to_string(),
            "--csv".into(),
            "EVALSHA".into(),
            sha.into(),
            keys.len().to_string(),
        ]);
        argv.extend(keys.iter().cloned());
        argv.extend(args.iter().cloned());
        let output = tokio::process::Command::new(&self.program)
            .args(&argv)
            .kill_on_drop(true)
            .output()
            .await?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        anyhow::ensure!(
            output.status.success(),
            "redis-benchmark failed ({}): {}{}",
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
        let calls_per_sec = parse_csv_rps(&stdout)
            .ok_or_else(|| anyhow::anyhow!("no figure in redis-benchmark's output: {stdout}"))?;
        let shown: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
        Ok(CeilingReport {
            script: label.into(),
            requests,
            clients: CLIENTS,
            pipeline: PIPELINE,
            calls_per_sec,
            command: format!("redis-benchmark {}", shown.join(" ")),
        })
    }

    /// As [`RedisBenchmark::evalsha`], for about `duration`: a short first run warms Redis up
    /// and sizes the measured one.
    pub async fn evalsha_for(
        &self,
        label: &str,
        sha: &str,
        keys: &[String],
        args: &[String],
        duration: Duration,
        keyspace: usize,
    ) -> anyhow::Result<CeilingReport> {
        let probe = self
            .evalsha(label, sha, keys, args, 20_000, keyspace)
            .await?;
        let requests = (probe.calls_per_sec * duration.as_secs_f64()).max(20_000.0) as u64;
        self.evalsha(label, sha, keys, args, requests, keyspace)
            .await
    }
}

/// The engine's EVALSHA for `rule`, as redis-benchmark should send it: KEYS then ARGV exactly
/// as `scripts::Call::evalsha` builds them (server clock, cost 1), with the client key
/// replaced by `__rand_int__`. `telemetry: false` sends the limiter key alone.
pub fn engine_command(rule: &Rule, keys: &KeySpace, telemetry: bool) -> (Vec<String>, Vec<String>) {
    let limiter_key = keys.limiter(rule, "__rand_int__");
    let mut script_keys = vec![limiter_key];
    if telemetry {
        // A fixed second: redis-benchmark cannot follow the clock.
        for outcome in [crate::Outcome::Allowed, crate::Outcome::Denied] {
            script_keys.push(keys.stats(rule.name(), 0, outcome));
        }
    }
    let ttl = COUNTER_TTL_SECS.to_string();
    let args = match *rule.algorithm() {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => vec![
            capacity.to_string(),
            refill_per_sec.to_string(),
            String::new(),
            "1".into(),
            ttl,
        ],
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => vec![
            limit.to_string(),
            window_ms.to_string(),
            burst.to_string(),
            String::new(),
            "1".into(),
            ttl,
        ],
        Algorithm::SlidingWindowCounter { limit, window_ms } => vec![
            limit.to_string(),
            window_ms.to_string(),
            String::new(),
            "1".into(),
            ttl,
        ],
        Algorithm::SlidingWindowLog { limit, window_ms } => vec![
            limit.to_string(),
            window_ms.to_string(),
            String::new(),
            // A random member per call; the engine sends a UUID. Collisions only re-score.
            "req-__rand_int__".into(),
            "1".into(),
            ttl,
        ],
        Algorithm::FixedWindow { limit, window_ms } => {
            vec![limit.to_string(), window_ms.to_string(), "1".into(), ttl]
        }
    };
    (script_keys, args)
}

/// A GCRA with the Redis-side work of go-redis/redis_rate's script (see the file's header).
pub(crate) const GCRA_REFERENCE_LUA: &str = include_str!("../../bench/gcra_reference.lua");

/// lua/token_bucket.lua with design.md's first state, a hash whose TTL every call renews: the
/// "before" of the string state, for before/after.
pub(crate) const TOKEN_BUCKET_HASH_LUA: &str = include_str!("../../bench/token_bucket_hash.lua");

/// The token bucket's four commands without its logic (see the file's header).
pub(crate) const TOKEN_BUCKET_COMMANDS_LUA: &str =
    include_str!("../../bench/token_bucket_commands_only.lua");

/// The label of the GCRA reference in reports.
pub(crate) const GCRA_LABEL: &str = "GCRA (redis_rate's calls)";
/// The label of the hash-state token bucket (the "before") in reports.
pub(crate) const HASH_LABEL: &str = "token_bucket, state in a hash (before)";

/// The comparisons, each paired round by round: the token bucket and lua/gcra.lua against the
/// redis_rate-shaped GCRA (all without telemetry, as redis_rate has none), the token bucket
/// against its own hash-state version (both with telemetry, as the engine calls it), and the
/// five scripts against the token bucket, as the engine calls them.
pub fn lua_comparisons(costs: &[LuaCost]) -> Vec<PairedRatio> {
    let find = |label: &str| costs.iter().find(|c| c.script == label);
    let tb = script_label(AlgorithmKind::TokenBucket, true);
    let tb_bare = script_label(AlgorithmKind::TokenBucket, false);
    let gcra_bare = script_label(AlgorithmKind::Gcra, false);
    let mut pairs = vec![
        (tb_bare.clone(), GCRA_LABEL.to_string()),
        (gcra_bare, GCRA_LABEL.to_string()),
        (tb.clone(), HASH_LABEL.to_string()),
    ];
    for kind in AlgorithmKind::ALL {
        if kind != AlgorithmKind::TokenBucket {
            pairs.push((script_label(kind, true), tb.clone()));
        }
    }
    pairs
        .iter()
        .filter_map(|(a, b)| PairedRatio::of(find(a)?, find(b)?))
        .collect()
}

/// The scripts also measured without telemetry: the two GCRA-shaped ones, to compare with
/// the redis_rate-shaped reference, which has none.
fn bare_too(kind: AlgorithmKind) -> bool {
    matches!(kind, AlgorithmKind::TokenBucket | AlgorithmKind::Gcra)
}

/// One script's Redis-side cost.
#[derive(Debug, Clone, Serialize)]
pub struct LuaCost {
    pub script: String,
    /// The median of the rounds.
    pub calls_per_sec: f64,
    /// `return 1`'s calls per second ÷ this script's: how many trivial EVALSHAs one call costs.
    pub relative_cost: f64,
    /// Redis's CPU per call (INFO cpu), the median of the rounds: steadier than throughput
    /// when other processes share the machine.
    pub redis_cpu_us_per_call: Option<f64>,
    /// This script's CPU per call ÷ `return 1`'s.
    pub relative_cpu: Option<f64>,
    pub rounds: Vec<f64>,
    /// Redis's CPU per call in each round, in round order (pairs with other scripts' rounds).
    pub cpu_rounds: Vec<f64>,
    pub command: String,
}

/// Two scripts' Redis CPU per call, as a ratio taken round by round: each round ran both
/// within seconds of each other, so the machine's drift between rounds cancels.
#[derive(Debug, Clone, Serialize)]
pub struct PairedRatio {
    /// "a ÷ b".
    pub label: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Rounds in which `a` cost Redis no more than `b`.
    pub rounds_at_most_one: usize,
    pub rounds: usize,
}

impl PairedRatio {
    /// `a`'s CPU ÷ `b`'s, per round; `None` when either has no CPU figures.
    pub fn of(a: &LuaCost, b: &LuaCost) -> Option<Self> {
        let ratios: Vec<f64> = a
            .cpu_rounds
            .iter()
            .zip(&b.cpu_rounds)
            .map(|(a, b)| a / b)
            .collect();
        (!ratios.is_empty()).then(|| PairedRatio {
            label: format!("{} ÷ {}", a.script, b.script),
            median: median(ratios.clone()),
            min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            rounds_at_most_one: ratios.iter().filter(|r| **r <= 1.0).count(),
            rounds: ratios.len(),
        })
    }
}

/// Each script's throughput under redis-benchmark against a trivial `EVALSHA` (`return 1`),
/// run in interleaved rounds so that a noisy neighbour hurts all alike; medians reported.
pub async fn lua_costs(
    bench: &RedisBenchmark,
    conn: &mut Conn,
    keys: &KeySpace,
    keyspace: usize,
    per_run: Duration,
    rounds: usize,
) -> anyhow::Result<Vec<LuaCost>> {
    struct Case {
        label: String,
        source: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
    }
    let mut cases = vec![Case {
        label: "return 1".into(),
        source: "return 1",
        keys: vec![],
        args: vec![],
    }];
    for kind in AlgorithmKind::ALL {
        let rule = super::bench_rule(kind)?;
        for telemetry in [true, false] {
            if !telemetry && !bare_too(kind) {
                continue;
            }
            let (k, a) = engine_command(&rule, keys, telemetry);
            cases.push(Case {
                label: script_label(kind, telemetry),
                source: crate::scripts::source(kind),
                keys: k,
                args: a,
            });
        }
    }
    // Its own keys: a hash where the string bucket lives would be a WRONGTYPE.
    let mut hash_keys = cases[1].keys.clone();
    hash_keys[0] = hash_keys[0].replacen(":tb:", ":tb-hash:", 1);
    cases.push(Case {
        label: HASH_LABEL.into(),
        source: TOKEN_BUCKET_HASH_LUA,
        keys: hash_keys,
        args: cases[1].args.clone(),
    });
    cases.push(Case {
        label: "token_bucket's commands alone".into(),
        source: TOKEN_BUCKET_COMMANDS_LUA,
        // Its own keys too: what it writes is not a bucket.
        keys: vec![keys
            .limiter(
                &super::bench_rule(AlgorithmKind::TokenBucket)?,
                "__rand_int__",
            )
            .replacen(":tb:", ":tb-commands:", 1)],
        args: vec![],
    });
    cases.push(Case {
        label: GCRA_LABEL.into(),
        source: GCRA_REFERENCE_LUA,
        keys: vec![format!("{}:gcra:{{bench}}:__rand_int__", keys.prefix())],
        args: ["100", "100", "1", "1"].map(String::from).to_vec(),
    });
    let mut shas = Vec::with_capacity(cases.len());
    for case in &cases {
        shas.push(cache_script(conn, case.source, &case.keys, &case.args).await?);
    }
    let mut results: Vec<Vec<CeilingReport>> = cases.iter().map(|_| Vec::new()).collect();
    let mut cpu: Vec<Vec<f64>> = cases.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds.max(1) {
        for (((case, sha), runs), cpu) in cases.iter().zip(&shas).zip(&mut results).zip(&mut cpu) {
            let (label, k, a) = (&case.label, &case.keys, &case.args);
            let probe = bench.evalsha(label, sha, k, a, 20_000, keyspace).await?;
            let requests = (probe.calls_per_sec * per_run.as_secs_f64()).max(20_000.0) as u64;
            let before = super::redis_cpu_secs(conn).await;
            runs.push(bench.evalsha(label, sha, k, a, requests, keyspace).await?);
            if let (Some(b), Some(a)) = (before, super::redis_cpu_secs(conn).await) {
                cpu.push((a - b) * 1e6 / requests as f64);
            }
        }
    }
    let cpu_rounds = cpu.clone();
    let cpu: Vec<Option<f64>> = cpu
        .into_iter()
        .map(|c| (!c.is_empty()).then(|| median(c)))
        .collect();
    let trivial_cpu = cpu[0];
    let medians: Vec<f64> = results
        .iter()
        .map(|runs| median(runs.iter().map(|r| r.calls_per_sec).collect()))
        .collect();
    let trivial = medians[0];
    Ok(cases
        .into_iter()
        .zip(results)
        .zip(medians)
        .zip(cpu)
        .zip(cpu_rounds)
        .map(
            |((((case, runs), calls_per_sec), cpu), cpu_rounds)| LuaCost {
                script: case.label,
                calls_per_sec,
                relative_cost: trivial / calls_per_sec,
                redis_cpu_us_per_call: cpu,
                relative_cpu: cpu.zip(trivial_cpu).map(|(c, t)| c / t),
                command: runs.last().map(|r| r.command.clone()).unwrap_or_default(),
                rounds: runs.iter().map(|r| r.calls_per_sec).collect(),
                cpu_rounds,
            },
        )
        .collect())
}

/// The median of a few figures (the mean of the middle two for an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The rule name whose hash tag redis-benchmark `--cluster` rewrites per call (`{tag}`).
pub const CLUSTER_TAG_RULE: &str = "tag";

/// `count` copies of `rule` named `<name>.<i>`: on a cluster their hash tags spread the
/// engine's decisions over every master, as redis-benchmark `--cluster` spreads its calls.
pub fn cluster_rules(rule: &Rule, count: usize) -> Result<Vec<Rule>, crate::RuleError> {
    (0..count)
        .map(|i| Rule::new(format!("{}.{i}", rule.name()), *rule.algorithm()))
        .collect()
}

/// Puts `source` in the script cache of every node redis-benchmark will send its `keys` to,
/// the way the engine does after NOSCRIPT: EVAL of the very command, which runs it once (on
/// client key `000000000000` for `__rand_int__`) and caches it. On a cluster once per master,
/// `{tag}` made a tag of a slot that master serves. No `SCRIPT LOAD`. Returns the SHA1.
pub async fn cache_script(
    conn: &mut Conn,
    source: &str,
    keys: &[String],
    args: &[String],
) -> anyhow::Result<String> {
    let fill = |s: &String, tag: &str| {
        s.replace("__rand_int__", &super::client_key(0))
            .replace("{tag}", &format!("{{{tag}}}"))
    };
    let tags = match conn.masters().await? {
        None => vec![CLUSTER_TAG_RULE.to_string()],
        Some(masters) => {
            anyhow::ensure!(
                !keys.is_empty(),
                "a script without keys has no node to go to on a cluster"
            );
            let mut tags = Vec::new();
            for master in masters {
                tags.push(tag_served_by(conn, &master).await?);
            }
            tags
        }
    };
    for tag in &tags {
        let mut eval = redis::cmd("EVAL");
        eval.arg(source).arg(keys.len());
        for key in keys {
            eval.arg(fill(key, tag));
        }
        for arg in args {
            eval.arg(fill(arg, tag));
        }
        eval.query_async::<redis::Value>(conn).await?;
    }
    Ok(redis::Script::new(source).get_hash().to_string())
}

/// A hash tag (`0`, `1`, …) whose slot `master` serves, as `CLUSTER KEYSLOT` tells.
async fn tag_served_by(conn: &mut Conn, master: &ClusterNode) -> anyhow::Result<String> {
    for i in 0..10_000u32 {
        let tag = i.to_string();
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&tag)
            .query_async(conn)
            .await?;
        if master.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)) {
            return Ok(tag);
        }
    }
    anyhow::bail!("no hash tag found for the master at {}", master.address())
}

/// The label of an algorithm's script in reports.
pub(crate) fn script_label(kind: AlgorithmKind, telemetry: bool) -> String {
    if telemetry {
        kind.as_str().to_string()
    } else {
        format!("{} (no telemetry)", kind.as_str())
    }
}

/// The rps column of redis-benchmark's `--csv` output. The first column (the command) may
/// hold commas, so fields are counted from the right: rps is the 7th of 8.
fn parse_csv_rps(csv: &str) -> Option<f64> {
    csv.lines()
        .rev()
        .filter(|l| !l.starts_with("\"test\""))
        .find_map(|line| {
            let fields: Vec<&str> = line.rsplitn(8, ',').collect();
            (fields.len() == 8).then_some(())?;
            fields[6].trim_matches('"').parse().ok()
        })
}

fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/=".contains(&b))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_rps_of_redis_benchmark_csv() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"EVALSHA abc 3 k a,b  1 120\",\"36509.68\",\"21.592\",\"1.376\",\"19.999\",\"36.831\",\"43.615\",\"52.095\"\n";
        assert_eq!(parse_csv_rps(csv), Some(36509.68));
        assert_eq!(parse_csv_rps("garbage"), None);
    }

    #[test]
    fn every_script_is_paired_with_the_token_bucket_and_gcra_with_the_reference() {
        let cost = |script: String, cpu: f64| LuaCost {
            script,
            calls_per_sec: 1.0,
            relative_cost: 1.0,
            redis_cpu_us_per_call: Some(cpu),
            relative_cpu: None,
            rounds: vec![1.0],
            cpu_rounds: vec![cpu],
            command: String::new(),
        };
        let mut costs: Vec<LuaCost> = AlgorithmKind::ALL
            .into_iter()
            .map(|k| cost(script_label(k, true), 20.0))
            .collect();
        costs.push(cost(script_label(AlgorithmKind::Gcra, false), 15.0));
        costs.push(cost(GCRA_LABEL.into(), 30.0));
        let pairs = lua_comparisons(&costs);
        let labels: Vec<&str> = pairs.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "gcra (no telemetry) ÷ GCRA (redis_rate's calls)",
                "gcra ÷ token_bucket",
                "sliding_window_log ÷ token_bucket",
                "sliding_window_counter ÷ token_bucket",
                "fixed_window ÷ token_bucket",
            ]
        );
        assert_eq!(pairs[0].median, 0.5);
    }

    #[test]
    fn the_ceiling_sends_the_engines_arguments() {
        let rule = super::super::bench_rule(AlgorithmKind::TokenBucket).expect("rule");
        let (keys, args) = engine_command(&rule, &KeySpace::default(), true);
        assert_eq!(
            keys,
            [
                "ratelockr:tb:{bench}:__rand_int__",
                "ratelockr:stats:{bench}:0:allowed",
                "ratelockr:stats:{bench}:0:denied"
            ]
        );
        assert_eq!(args, ["100", "100", "", "1", "120"]);
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a{b}"), "'a{b}'");
    }
}
