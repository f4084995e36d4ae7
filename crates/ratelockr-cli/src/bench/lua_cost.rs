//! What each script costs Redis (`bench --lua`, issue 24), beside references measured in the
//! same run: a plain `INCR` (the cheapest write, no script at all), `return 1` (the cheapest
//! script call), a call that only returns four integers with the token bucket's KEYS and ARGV
//! (what any script called like ours pays before its first line), and scripts doing the
//! Redis-side work of rate-limiter-flexible and go-redis/redis_rate.
//!
//! Every case runs under redis-benchmark (pipelined, the same client keys, the engine's KEYS
//! and ARGV), once per round, rounds interleaved so that a noisy neighbour weighs on all
//! alike. Two figures per call, both read around the measured run only:
//! - **Redis CPU** (`INFO cpu`): all of it, sockets and parsing included;
//! - **time in the command** (`INFO commandstats`, `usec_per_call`): the script alone, which is
//!   what a script change can move, and the figure issue 24's goals are stated in.
//!
//! Ratios are taken round by round ([`PairedRatio`]), so the machine's drift cancels.

use super::ceiling::RedisBenchmark;
use super::ceiling::{
    cache_script, engine_command, engine_command_in_full, median, script_label, CeilingReport,
};
use ratelockr::keys::KeySpace;
use ratelockr::rule::AlgorithmKind;
use ratelockr::Conn;
use serde::Serialize;
use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

/// A GCRA with the Redis-side work of go-redis/redis_rate's script (see the file's header).
pub(crate) const GCRA_REFERENCE_LUA: &str = include_str!("../../bench/gcra_reference.lua");

/// A fixed window with the Redis-side work of rate-limiter-flexible's script (see its header).
pub(crate) const RLFLX_REFERENCE_LUA: &str = include_str!("../../bench/rlflx_reference.lua");

/// lua/token_bucket.lua with design.md's first state, a hash whose TTL every call renews: the
/// "before" of the string state, for before/after.
pub(crate) const TOKEN_BUCKET_HASH_LUA: &str = include_str!("../../bench/token_bucket_hash.lua");

/// The token bucket's four commands without its logic (see the file's header).
pub(crate) const TOKEN_BUCKET_COMMANDS_LUA: &str =
    include_str!("../../bench/token_bucket_commands_only.lua");

/// The label of the plain-command reference in reports: every "× INCR" is against it.
pub(crate) const INCR_LABEL: &str = "INCR (a plain command, no script)";
/// The label of the script-call floor in reports.
pub(crate) const FLOOR_LABEL: &str = "return of 4 integers (token_bucket's KEYS, ARGV)";
/// The label of the GCRA reference in reports.
pub(crate) const GCRA_LABEL: &str = "GCRA (redis_rate's calls)";
/// The label of the rate-limiter-flexible reference in reports.
pub(crate) const RLFLX_LABEL: &str = "fixed window (rate-limiter-flexible's calls)";
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
    let mut ratios: Vec<PairedRatio> = pairs
        .iter()
        .filter_map(|(a, b)| PairedRatio::of(find(a)?, find(b)?))
        .collect();
    ratios.extend(stack_ratios(costs));
    ratios
}

/// Each stack against the sum of its limits' standalone scripts (with telemetry, as the
/// engine calls both), on Redis's CPU and on the time in the command, paired by round.
fn stack_ratios(costs: &[LuaCost]) -> Vec<PairedRatio> {
    use super::policy_cost::{stack_label, STACKS};
    let find = |label: &str| costs.iter().find(|c| c.script == label);
    STACKS
        .iter()
        .filter_map(|kinds| {
            let stack = find(&stack_label(kinds))?;
            let parts: Vec<&LuaCost> = kinds
                .iter()
                .map(|&k| find(&script_label(k, true)))
                .collect::<Option<_>>()?;
            Some([
                PairedRatio::of_sum(stack, &parts, false)?,
                PairedRatio::of_sum(stack, &parts, true)?,
            ])
        })
        .flatten()
        .collect()
}

/// Issue 24's ratios, on the time in the command (`usec_per_call`), paired round by round:
/// the fixed window against rate-limiter-flexible's calls (with and without telemetry), every
/// script against a plain `INCR`, each script with telemetry against itself without, and,
/// when earlier versions were measured, each script against its earlier self.
pub fn goal_ratios(costs: &[LuaCost]) -> Vec<PairedRatio> {
    let find = |label: &str| costs.iter().find(|c| c.script == label);
    let fw = AlgorithmKind::FixedWindow;
    let mut pairs = vec![
        (script_label(fw, true), RLFLX_LABEL.to_string()),
        (script_label(fw, false), RLFLX_LABEL.to_string()),
    ];
    for kind in AlgorithmKind::ALL {
        pairs.push((script_label(kind, true), INCR_LABEL.to_string()));
    }
    pairs.push((RLFLX_LABEL.to_string(), INCR_LABEL.to_string()));
    for kind in AlgorithmKind::ALL.into_iter().filter(|&k| bare_too(k)) {
        pairs.push((script_label(kind, true), script_label(kind, false)));
    }
    for kind in AlgorithmKind::ALL {
        pairs.push((script_label(kind, true), before_label(kind)));
    }
    for kind in AlgorithmKind::ALL {
        pairs.push((before_label(kind), INCR_LABEL.to_string()));
    }
    pairs.push((before_label(fw), RLFLX_LABEL.to_string()));
    for kind in [AlgorithmKind::TokenBucket, fw] {
        pairs.push((script_label(kind, true), spelled_label(kind)));
    }
    // Each pair on both measures: the time in the command moves with what the script does,
    // Redis's CPU is steadier when other processes take the CPU from Redis mid-command.
    pairs
        .iter()
        .filter_map(|(a, b)| {
            let (a, b) = (find(a)?, find(b)?);
            Some([PairedRatio::of_usec(a, b)?, PairedRatio::of(a, b)?])
        })
        .flatten()
        .collect()
}

/// The label of a script called with every ARGV spelled out, the defaults the engine leaves
/// out included (as the engine called it before issue 24).
pub(crate) fn spelled_label(kind: AlgorithmKind) -> String {
    format!("{} (every ARGV spelled out)", kind.as_str())
}

/// The label of an earlier version of a script (`bench --lua --lua-before DIR`).
pub(crate) fn before_label(kind: AlgorithmKind) -> String {
    format!("{} (before)", kind.as_str())
}

/// The scripts also measured without telemetry: the two GCRA-shaped ones, to compare with
/// the redis_rate-shaped reference, which has none, and the fixed window, to compare with
/// rate-limiter-flexible's, which has none either.
fn bare_too(kind: AlgorithmKind) -> bool {
    matches!(
        kind,
        AlgorithmKind::TokenBucket | AlgorithmKind::Gcra | AlgorithmKind::FixedWindow
    )
}

/// One script's (or command's) Redis-side cost.
#[derive(Debug, Clone, Serialize)]
pub struct LuaCost {
    pub script: String,
    /// The median of the rounds.
    pub calls_per_sec: f64,
    /// A plain `INCR`'s calls per second ÷ this case's: how many INCRs one call costs.
    pub relative_cost: f64,
    /// Redis's CPU per call (INFO cpu), the median of the rounds: steadier than throughput
    /// when other processes share the machine.
    pub redis_cpu_us_per_call: Option<f64>,
    /// This case's CPU per call ÷ a plain `INCR`'s.
    pub relative_cpu: Option<f64>,
    /// Redis's time inside the command per call (INFO commandstats), the median of the
    /// rounds: the script alone, without the socket work every call shares.
    pub usec_per_call: Option<f64>,
    /// This case's time in the command ÷ a plain `INCR`'s.
    pub relative_usec: Option<f64>,
    pub rounds: Vec<f64>,
    /// Redis's CPU per call in each round, in round order (pairs with other cases' rounds).
    pub cpu_rounds: Vec<f64>,
    /// The time in the command per call in each round, in round order.
    pub usec_rounds: Vec<f64>,
    pub command: String,
}

/// Two cases' cost per call, as a ratio taken round by round: each round ran both within
/// seconds of each other, so the machine's drift between rounds cancels.
#[derive(Debug, Clone, Serialize)]
pub struct PairedRatio {
    /// "a ÷ b".
    pub label: String,
    /// What is compared: `redis_cpu` (INFO cpu) or `usec_per_call` (INFO commandstats).
    pub measure: &'static str,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Rounds in which `a` cost Redis no more than `b`.
    pub rounds_at_most_one: usize,
    pub rounds: usize,
    /// The median of the rounds' differences `a − b`, µs per call.
    pub median_difference_us: f64,
}

impl PairedRatio {
    /// `a`'s CPU ÷ `b`'s, per round; `None` when either has no CPU figures.
    pub fn of(a: &LuaCost, b: &LuaCost) -> Option<Self> {
        Self::paired(a, b, "redis_cpu", &a.cpu_rounds, &b.cpu_rounds)
    }

    /// `a`'s cost ÷ the sum of `parts`' (each round's own figures), on Redis's CPU or (with
    /// `usec`) the time in the command: a stacked decision against its standalone scripts.
    pub fn of_sum(a: &LuaCost, parts: &[&LuaCost], usec: bool) -> Option<Self> {
        let rounds = |c: &LuaCost| match usec {
            true => c.usec_rounds.clone(),
            false => c.cpu_rounds.clone(),
        };
        let n = parts.iter().map(|p| rounds(p).len()).min()?;
        let sum: Vec<f64> = (0..n)
            .map(|i| parts.iter().map(|p| rounds(p)[i]).sum())
            .collect();
        let names: Vec<&str> = parts.iter().map(|p| p.script.as_str()).collect();
        let label = format!("{} ÷ ({})", a.script, names.join(" + "));
        let measure = if usec { "usec_per_call" } else { "redis_cpu" };
        let mut ratio = Self::paired(a, a, measure, &rounds(a), &sum)?;
        ratio.label = label;
        Some(ratio)
    }

    /// `a`'s time in the command ÷ `b`'s, per round.
    pub fn of_usec(a: &LuaCost, b: &LuaCost) -> Option<Self> {
        Self::paired(a, b, "usec_per_call", &a.usec_rounds, &b.usec_rounds)
    }

    fn paired(
        a: &LuaCost,
        b: &LuaCost,
        measure: &'static str,
        ra: &[f64],
        rb: &[f64],
    ) -> Option<Self> {
        let ratios: Vec<f64> = ra.iter().zip(rb).map(|(a, b)| a / b).collect();
        let differences: Vec<f64> = ra.iter().zip(rb).map(|(a, b)| a - b).collect();
        (!ratios.is_empty()).then(|| PairedRatio {
            label: format!("{} ÷ {}", a.script, b.script),
            measure,
            median: median(ratios.clone()),
            min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            rounds_at_most_one: ratios.iter().filter(|r| **r <= 1.0).count(),
            rounds: ratios.len(),
            median_difference_us: median(differences),
        })
    }
}

/// One case: a plain command, or a script called with EVALSHA.
struct Case {
    label: String,
    /// The Lua source; `None` for a plain command (`keys` is then the whole command).
    source: Option<Cow<'static, str>>,
    keys: Vec<String>,
    args: Vec<String>,
}

impl Case {
    fn script(
        label: impl Into<String>,
        source: impl Into<Cow<'static, str>>,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Self {
        Case {
            label: label.into(),
            source: Some(source.into()),
            keys,
            args,
        }
    }

    /// The command name as `INFO commandstats` spells it.
    fn stat_name(&self) -> String {
        match self.source {
            Some(_) => "evalsha".into(),
            None => self.keys[0].to_ascii_lowercase(),
        }
    }
}

/// Redis's CPU seconds and the command's counters, read together.
async fn reading(
    conn: &mut Conn,
    command: &str,
) -> (Option<f64>, Option<ratelockr::commandstats::EvalshaStats>) {
    let cpu = super::redis_cpu_secs(conn).await;
    let info: Option<String> = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .ok();
    let stats = info.and_then(|i| ratelockr::commandstats::parse_command(&i, command).ok());
    (cpu, stats)
}

/// Each case's cost under redis-benchmark, in interleaved rounds; medians and every round's
/// figures reported, the "× INCR" columns against the plain `INCR` of the same round. With
/// `before`, a directory holding earlier versions of the scripts (`token_bucket.lua`, ...),
/// each found there is measured too, as the engine calls it, on keys of its own.
pub async fn lua_costs(
    bench: &RedisBenchmark,
    conn: &mut Conn,
    keys: &KeySpace,
    keyspace: usize,
    per_run: Duration,
    rounds: usize,
    before: Option<&Path>,
) -> anyhow::Result<Vec<LuaCost>> {
    let tb_rule = super::bench_rule(AlgorithmKind::TokenBucket)?;
    let (tb_keys, tb_args) = engine_command(&tb_rule, keys, true);
    let own = |tag: &str| format!("{}:{tag}:{{bench}}:__rand_int__", keys.prefix());
    let mut cases = vec![
        Case {
            label: INCR_LABEL.into(),
            source: None,
            keys: vec!["INCR".into(), own("incr")],
            args: vec![],
        },
        Case::script("return 1", "return 1", vec![], vec![]),
        Case::script(
            FLOOR_LABEL,
            "return {1, 0, 0, 0}",
            tb_keys.clone(),
            tb_args.clone(),
        ),
        // Points 1 per call and a 1-second duration: the bench rule's window.
        Case::script(
            RLFLX_LABEL,
            RLFLX_REFERENCE_LUA,
            vec![own("rlflx")],
            vec!["1".into(), "1".into()],
        ),
    ];
    for kind in AlgorithmKind::ALL {
        let rule = super::bench_rule(kind)?;
        for telemetry in [true, false] {
            if !telemetry && !bare_too(kind) {
                continue;
            }
            let (k, a) = engine_command(&rule, keys, telemetry);
            cases.push(Case::script(
                script_label(kind, telemetry),
                ratelockr::scripts::source(kind),
                k,
                a,
            ));
        }
    }
    // What the ARGV the engine leaves out would cost: the token bucket and the fixed window
    // called with the scripts' defaults (server clock, cost 1, stats TTL 120) spelled out,
    // which is the same decision, on keys of their own.
    for kind in [AlgorithmKind::TokenBucket, AlgorithmKind::FixedWindow] {
        let (mut k, a) = engine_command_in_full(&super::bench_rule(kind)?, keys, true);
        k[0] = k[0].replacen(":{bench}:", ":{bench}:spelled:", 1);
        cases.push(Case::script(
            spelled_label(kind),
            ratelockr::scripts::source(kind),
            k,
            a,
        ));
    }
    // Earlier versions of the scripts, on keys of their own, for before/after in one run.
    if let Some(dir) = before {
        for kind in AlgorithmKind::ALL {
            let path = dir.join(format!("{}.lua", kind.as_str()));
            let Ok(source) = std::fs::read_to_string(&path) else {
                continue;
            };
            // As every earlier engine sent them.
            let (mut k, a) = engine_command_in_full(&super::bench_rule(kind)?, keys, true);
            k[0] = k[0].replacen(":{bench}:", ":{bench}:before:", 1);
            cases.push(Case::script(before_label(kind), source, k, a));
        }
    }
    // Its own keys: a hash where the string bucket lives would be a WRONGTYPE.
    let mut hash_keys = tb_keys.clone();
    hash_keys[0] = hash_keys[0].replacen(":tb:", ":tb-hash:", 1);
    cases.push(Case::script(
        HASH_LABEL,
        TOKEN_BUCKET_HASH_LUA,
        hash_keys,
        tb_args,
    ));
    // Its own keys too: what it writes is not a bucket.
    let commands_key = tb_keys[0].replacen(":tb:", ":tb-commands:", 1);
    cases.push(Case::script(
        "token_bucket's commands alone",
        TOKEN_BUCKET_COMMANDS_LUA,
        vec![commands_key],
        vec![],
    ));
    cases.push(Case::script(
        GCRA_LABEL,
        GCRA_REFERENCE_LUA,
        vec![own("gcra")],
        ["100", "100", "1", "1"].map(String::from).to_vec(),
    ));
    // Stacked decisions of one, two and three limits (issue 19), against the sum of their
    // standalone scripts above.
    for (label, k, a) in super::policy_cost::stack_commands(keys)? {
        cases.push(Case::script(label, ratelockr::scripts::POLICY_LUA, k, a));
    }
    // The whole command each case sends: EVALSHA <sha> <numkeys> KEYS ARGV, or the command.
    let mut commands = Vec::with_capacity(cases.len());
    for case in &cases {
        commands.push(match &case.source {
            Some(source) => {
                let sha = cache_script(conn, source, &case.keys, &case.args).await?;
                let mut command = vec!["EVALSHA".to_string(), sha, case.keys.len().to_string()];
                command.extend(case.keys.iter().cloned());
                command.extend(case.args.iter().cloned());
                command
            }
            None => case.keys.clone(),
        });
    }
    let mut results: Vec<Vec<CeilingReport>> = cases.iter().map(|_| Vec::new()).collect();
    let mut cpu: Vec<Vec<f64>> = cases.iter().map(|_| Vec::new()).collect();
    let mut usec: Vec<Vec<f64>> = cases.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds.max(1) {
        for (i, case) in cases.iter().enumerate() {
            let (label, command) = (&case.label, &commands[i]);
            let probe = bench.command(label, command, 20_000, keyspace).await?;
            let requests = (probe.calls_per_sec * per_run.as_secs_f64()).max(20_000.0) as u64;
            let stat = case.stat_name();
            let (cpu_before, stats_before) = reading(conn, &stat).await;
            results[i].push(bench.command(label, command, requests, keyspace).await?);
            let (cpu_after, stats_after) = reading(conn, &stat).await;
            if let (Some(b), Some(a)) = (cpu_before, cpu_after) {
                cpu[i].push((a - b) * 1e6 / requests as f64);
            }
            if let Some(cost) = stats_before
                .zip(stats_after)
                .and_then(|(b, a)| b.cost_until(&a))
            {
                usec[i].push(cost.usec_per_call);
            }
        }
    }
    let med = |v: &Vec<f64>| (!v.is_empty()).then(|| median(v.clone()));
    let incr_cpu = med(&cpu[0]);
    let incr_usec = med(&usec[0]);
    let incr_rate = median(results[0].iter().map(|r| r.calls_per_sec).collect());
    Ok(cases
        .into_iter()
        .enumerate()
        .map(|(i, case)| {
            let runs = &results[i];
            let calls_per_sec = median(runs.iter().map(|r| r.calls_per_sec).collect());
            let (c, u) = (med(&cpu[i]), med(&usec[i]));
            LuaCost {
                script: case.label,
                calls_per_sec,
                relative_cost: incr_rate / calls_per_sec,
                redis_cpu_us_per_call: c,
                relative_cpu: c.zip(incr_cpu).map(|(c, t)| c / t),
                usec_per_call: u,
                relative_usec: u.zip(incr_usec).map(|(u, t)| u / t),
                command: runs.last().map(|r| r.command.clone()).unwrap_or_default(),
                rounds: runs.iter().map(|r| r.calls_per_sec).collect(),
                cpu_rounds: cpu[i].clone(),
                usec_rounds: usec[i].clone(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(script: String, us: f64) -> LuaCost {
        LuaCost {
            script,
            calls_per_sec: 1.0,
            relative_cost: 1.0,
            redis_cpu_us_per_call: Some(us),
            relative_cpu: None,
            usec_per_call: Some(us),
            relative_usec: None,
            rounds: vec![1.0],
            cpu_rounds: vec![us],
            usec_rounds: vec![us],
            command: String::new(),
        }
    }

    #[test]
    fn spelled_out_arguments_are_every_script_argv_in_full() {
        let keys = ratelockr::keys::KeySpace::default();
        let full = |kind| {
            let rule = crate::bench::bench_rule(kind).expect("rule");
            engine_command_in_full(&rule, &keys, true).1
        };
        assert_eq!(
            full(AlgorithmKind::TokenBucket),
            ["100", "100.0", "", "1", "120"]
        );
        assert_eq!(
            full(AlgorithmKind::Gcra),
            ["100", "1000", "100", "", "1", "120"]
        );
        assert_eq!(
            full(AlgorithmKind::SlidingWindowLog),
            ["100", "1000", "", "req-__rand_int__", "1", "120"]
        );
        assert_eq!(
            full(AlgorithmKind::FixedWindow),
            ["100", "1000", "1", "120"]
        );
    }

    #[test]
    fn every_script_is_paired_with_the_token_bucket_and_gcra_with_the_reference() {
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
                "concurrency ÷ token_bucket",
                "calendar ÷ token_bucket",
            ]
        );
        assert_eq!(pairs[0].median, 0.5);
    }

    #[test]
    fn the_goals_compare_the_fixed_window_with_rlflx_and_every_script_with_incr() {
        let mut costs: Vec<LuaCost> = AlgorithmKind::ALL
            .into_iter()
            .map(|k| cost(script_label(k, true), 6.0))
            .collect();
        costs.push(cost(script_label(AlgorithmKind::FixedWindow, false), 5.0));
        costs.push(cost(RLFLX_LABEL.into(), 4.0));
        costs.push(cost(INCR_LABEL.into(), 0.5));
        let pairs = goal_ratios(&costs);
        assert_eq!(
            pairs[0].label,
            "fixed_window ÷ fixed window (rate-limiter-flexible's calls)"
        );
        assert_eq!((pairs[0].median, pairs[0].measure), (1.5, "usec_per_call"));
        assert_eq!((pairs[1].median, pairs[1].measure), (1.5, "redis_cpu"));
        assert_eq!(pairs[0].median_difference_us, 2.0);
        assert_eq!(pairs[2].median, 1.25);
        assert_eq!(pairs[4].median, 12.0, "{}", pairs[4].label);
        assert_eq!(
            pairs.last().map(|p| p.label.as_str()),
            Some("fixed_window ÷ fixed_window (no telemetry)")
        );
    }
}
