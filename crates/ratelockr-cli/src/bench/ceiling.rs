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
//! `tag` (keys `…:{tag}:…`), and the engine's side decides for a copy of the rule on each
//! master ([`cluster_rules`]): the same number of keys on the same masters.
//!
//! Scripts are put in Redis's cache the engine's way, by EVAL of the very command, on each
//! master it will reach ([`cache_script`]): never `SCRIPT LOAD`.

use ratelockr::cluster::ClusterNode;
use ratelockr::keys::KeySpace;
use ratelockr::rule::{Algorithm, AlgorithmKind, Rule};
use ratelockr::telemetry::COUNTER_TTL_SECS;
use ratelockr::Conn;
use ratelockr::RedisTarget;
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
    /// `taskset` and the core to run on, when pinned ([`super::pin`]).
    pinned: Option<(PathBuf, usize)>,
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

/// Why no ceiling is measured: the reason the report's note and the console give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCeiling {
    /// `--no-ceiling` was given.
    Disabled,
    NotOnPath,
    /// redis-benchmark would need the password on its command line, visible to every local user.
    Password,
    Tls,
    ClusterSeed,
    /// A connection redis-benchmark cannot be aimed at (its Debug form).
    Unsupported(String),
}

impl std::fmt::Display for NoCeiling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCeiling::Disabled => f.write_str("--no-ceiling"),
            NoCeiling::NotOnPath => f.write_str(
                "redis-benchmark is not on PATH (Debian/Ubuntu: apt-get install redis-tools)",
            ),
            NoCeiling::Password => f.write_str("the Redis URL carries a password; redis-benchmark would have to show it on its command line"),
            NoCeiling::Tls => f.write_str("the ceiling is measured over plain TCP only (redis-benchmark is not given the TLS settings)"),
            NoCeiling::ClusterSeed => f.write_str("an unusable cluster seed"),
            NoCeiling::Unsupported(addr) => {
                write!(f, "unsupported connection for redis-benchmark: {addr}")
            }
        }
    }
}

impl std::error::Error for NoCeiling {}

impl RedisBenchmark {
    /// redis-benchmark from PATH aimed at `target` (with `--cluster` for a Redis Cluster, at
    /// its first seed), or why it cannot be used.
    pub fn locate(target: &RedisTarget) -> Result<Self, NoCeiling> {
        let program =
            ratelockr::embedded::find_on_path("redis-benchmark").ok_or(NoCeiling::NotOnPath)?;
        if target.has_password() {
            // redis-benchmark would need it on its command line, visible to every local user.
            return Err(NoCeiling::Password);
        }
        if target.is_cluster() {
            if target.is_tls() {
                return Err(NoCeiling::Tls);
            }
            let seed =
                url::Url::parse(&target.cluster_seeds()[0]).map_err(|_| NoCeiling::ClusterSeed)?;
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
            return Ok(RedisBenchmark {
                program,
                endpoint,
                pinned: None,
            });
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
            redis::ConnectionAddr::TcpTls { .. } => return Err(NoCeiling::Tls),
            other => return Err(NoCeiling::Unsupported(format!("{other:?}"))),
        };
        endpoint.extend(["--dbnum".into(), settings.db().to_string()]);
        Ok(RedisBenchmark {
            program,
            endpoint,
            pinned: None,
        })
    }

    /// The same, run on the core `pinning` keeps for it.
    pub fn pinned(&self, pinning: &super::pin::Pinning) -> Self {
        RedisBenchmark {
            pinned: Some((pinning.taskset().to_path_buf(), pinning.benchmark_cpu())),
            ..self.clone()
        }
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
        let mut command: Vec<String> = vec!["EVALSHA".into(), sha.into(), keys.len().to_string()];
        command.extend(keys.iter().cloned());
        command.extend(args.iter().cloned());
        self.command(label, &command, requests, keyspace).await
    }

    /// Runs any command (`INCR key`, `EVALSHA ...`) `requests` times, pipelined as the
    /// ceiling is, and returns calls per second; `__rand_int__` as for [`Self::evalsha`].
    pub async fn command(
        &self,
        label: &str,
        command: &[String],
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
        ]);
        argv.extend(command.iter().cloned());
        let shown: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
        let mut shown = format!("redis-benchmark {}", shown.join(" "));
        let mut program = self.program.as_path();
        if let Some((taskset, cpu)) = &self.pinned {
            let to = [
                "-c".into(),
                cpu.to_string(),
                self.program.display().to_string(),
            ];
            argv.splice(0..0, to);
            program = taskset;
            shown = format!("taskset -c {cpu} {shown}");
        }
        let output = tokio::process::Command::new(program)
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
        Ok(CeilingReport {
            script: label.into(),
            requests,
            clients: CLIENTS,
            pipeline: PIPELINE,
            calls_per_sec,
            command: shown,
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
/// as `scripts::Call::evalsha` builds them (server clock, cost 1, so the trailing defaults left
/// out), with the client key replaced by `__rand_int__` and the log's member (a lease's id) by
/// `req-__rand_int__` (redis-benchmark sends one command line; collisions only re-score).
/// `telemetry: false` sends the limiter key alone.
pub fn engine_command(rule: &Rule, keys: &KeySpace, telemetry: bool) -> (Vec<String>, Vec<String>) {
    command_words(rule, keys, telemetry, false)
}

/// [`engine_command`] with every ARGV written out, the defaults the engine leaves out
/// included (`scripts::Call::evalsha_in_full`).
pub(crate) fn engine_command_in_full(
    rule: &Rule,
    keys: &KeySpace,
    telemetry: bool,
) -> (Vec<String>, Vec<String>) {
    command_words(rule, keys, telemetry, true)
}

fn command_words(
    rule: &Rule,
    keys: &KeySpace,
    telemetry: bool,
    in_full: bool,
) -> (Vec<String>, Vec<String>) {
    let limiter_key = keys.limiter(rule, "__rand_int__");
    // A fixed second: redis-benchmark cannot follow the clock.
    let stats = [ratelockr::Outcome::Allowed, ratelockr::Outcome::Denied]
        .map(|o| keys.stats(rule.name(), 0, o));
    let call = ratelockr::scripts::Call {
        algorithm: rule.algorithm(),
        limiter_key: &limiter_key,
        stats_keys: telemetry.then(|| (stats[0].as_str(), stats[1].as_str())),
        stats_ttl_secs: COUNTER_TTL_SECS,
        cost: 1,
        at: ratelockr::scripts::At::ServerClock,
        lease_id: None,
    };
    let cmd = match in_full {
        true => call.evalsha_in_full(),
        false => call.evalsha(),
    };
    // EVALSHA, the SHA, the number of keys, then KEYS and ARGV.
    let mut words = cmd.args_iter().skip(3).map(|arg| match arg {
        redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        _ => String::new(),
    });
    let script_keys: Vec<String> = words.by_ref().take(if telemetry { 3 } else { 1 }).collect();
    let mut args: Vec<String> = words.collect();
    // The log's member and a lease's id, both ARGV[4].
    if let Algorithm::SlidingWindowLog { .. } | Algorithm::Concurrency { .. } = rule.algorithm() {
        args[3] = "req-__rand_int__".into();
    }
    (script_keys, args)
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

/// Copies of `rule` for the engine's side of a cluster bench, one per master: each named
/// `<name>.<i>` for the first `i` whose hash tag that master serves. The engine then decides
/// over as many (rule, client key) pairs as redis-benchmark `--cluster` calls with (one tag per
/// master, the same client keys), spread evenly over the masters as its connections are.
/// (Copies by the dozen would make the engine's keyspace that many times the ceiling's: each
/// key revisited after its TTL, so each decision a new key to create and expire.) On a single
/// Redis: `rule` itself.
pub async fn cluster_rules(conn: &mut Conn, rule: &Rule) -> anyhow::Result<Vec<Rule>> {
    let Some(masters) = conn.masters().await? else {
        return Ok(vec![rule.clone()]);
    };
    let mut rules = Vec::new();
    for master in &masters {
        let tag = tag_served_by(master, |i| format!("{}.{i}", rule.name()))?;
        rules.push(Rule::new(tag, *rule.algorithm())?);
    }
    Ok(rules)
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
                tags.push(tag_served_by(&master, |i| i.to_string())?);
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

/// The first hash tag `name(0)`, `name(1)`, … whose slot `master` serves (the slot computed
/// here, as the engine routes by it: no round trip per candidate).
fn tag_served_by(master: &ClusterNode, name: impl Fn(u32) -> String) -> anyhow::Result<String> {
    (0..10_000u32)
        .map(name)
        .find(|tag| {
            let slot = ratelockr::slot_route::slot_of(tag.as_bytes());
            master.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
        })
        .ok_or_else(|| anyhow::anyhow!("no hash tag found for the master at {}", master.address()))
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
        // The server's clock, cost 1 and the stats TTL are the scripts' defaults: left out.
        // The very bytes the engine sends: the rate is a float.
        assert_eq!(args, ["100", "100.0"]);
        let log = super::super::bench_rule(AlgorithmKind::SlidingWindowLog).expect("rule");
        let (_, args) = engine_command(&log, &KeySpace::default(), false);
        assert_eq!(args, ["100", "1000", "", "req-__rand_int__"]);
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a{b}"), "'a{b}'");
    }
}
