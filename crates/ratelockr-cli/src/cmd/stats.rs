//! `ratelockr stats`: the last 30 seconds of a rule, or of a policy (with its shadow
//! denials, delayed admissions, leases given back and settlements).

use crate::console::print_json;
use crate::opts::Global;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The rule's name, as given to `check --rule` (default names: token-bucket, ...).
    #[arg(long, required_unless_present = "policy", conflicts_with = "policy")]
    pub rule: Option<String>,
    /// A policy's name: its allowed, denied and shadow-denied requests.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// The policies file that holds --policy (checked to hold it; optional).
    #[arg(long, value_name = "FILE", requires = "policy")]
    pub policies: Option<PathBuf>,
}

#[derive(Serialize)]
struct PolicyRow {
    second: u64,
    allowed: u64,
    denied: u64,
    shadow_denied: u64,
    /// Admitted with a delay (the policy's max_delay_ms), not counted in `allowed`.
    delayed: u64,
    /// Leases given back while live: requests in flight that ended.
    released: u64,
    /// Requests settled with their actual cost (some limit changed).
    settled: u64,
}

#[derive(Serialize)]
struct Row {
    second: u64,
    allowed: u64,
    denied: u64,
}

pub async fn run(global: &Global, args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let Some(rule) = &args.rule else {
        return run_policy(global, args).await;
    };
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let points = limiter
        .stats(rule)
        .await
        .with_context(|| format!("reading stats from Redis at {}", limiter.target()))?;
    if global.json {
        let rows: Vec<Row> = points
            .iter()
            .map(|p| Row {
                second: p.second,
                allowed: p.allowed,
                denied: p.denied,
            })
            .collect();
        print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let peak = points
        .iter()
        .map(|p| p.allowed + p.denied)
        .max()
        .unwrap_or(0)
        .max(1);
    println!("rule {}: the last 30 seconds (# allowed, . denied)", rule);
    println!("{:>12} {:>8} {:>8}", "second", "allowed", "denied");
    for p in &points {
        let width = 40;
        let a = (p.allowed * width / peak) as usize;
        let d = (p.denied * width / peak) as usize;
        println!(
            "{:>12} {:>8} {:>8}  {}{}",
            p.second,
            p.allowed,
            p.denied,
            "#".repeat(a),
            ".".repeat(d)
        );
    }
    let (allowed, denied): (u64, u64) = points
        .iter()
        .fold((0, 0), |(a, d), p| (a + p.allowed, d + p.denied));
    println!("{:>12} {:>8} {:>8}", "total", allowed, denied);
    Ok(ExitCode::SUCCESS)
}

async fn run_policy(global: &Global, args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let Some(name) = &args.policy else {
        anyhow::bail!("give --rule NAME or --policy NAME");
    };
    if let Some(path) = &args.policies {
        super::check_policy::load_policy(path, name)?;
    } else {
        ratelockr::Rule::fixed_window(name.as_str(), 1, std::time::Duration::from_secs(1))
            .map_err(|_| {
                anyhow::anyhow!(
                    "invalid --policy {name:?}: use 1 to 64 ASCII letters, digits, '_', '-' or '.'"
                )
            })?;
    }
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let series = limiter
        .policy_stats(&[name.as_str()])
        .await
        .with_context(|| format!("reading stats from Redis at {}", limiter.target()))?;
    let points = series.into_iter().next().unwrap_or_default();
    let rows: Vec<PolicyRow> = points
        .iter()
        .map(|p| PolicyRow {
            second: p.second,
            allowed: p.allowed,
            denied: p.denied,
            shadow_denied: p.shadow_denied,
            delayed: p.delayed,
            released: p.released,
            settled: p.settled,
        })
        .collect();
    if global.json {
        print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("policy {name}: the last 30 seconds");
    println!(
        "{:>12} {:>8} {:>8} {:>14} {:>8} {:>8} {:>8}",
        "second", "allowed", "denied", "shadow_denied", "delayed", "released", "settled"
    );
    for r in &rows {
        println!(
            "{:>12} {:>8} {:>8} {:>14} {:>8} {:>8} {:>8}",
            r.second, r.allowed, r.denied, r.shadow_denied, r.delayed, r.released, r.settled
        );
    }
    let total = rows.iter().fold([0; 6], |t, r| {
        [
            t[0] + r.allowed,
            t[1] + r.denied,
            t[2] + r.shadow_denied,
            t[3] + r.delayed,
            t[4] + r.released,
            t[5] + r.settled,
        ]
    });
    println!(
        "{:>12} {:>8} {:>8} {:>14} {:>8} {:>8} {:>8}",
        "total", total[0], total[1], total[2], total[3], total[4], total[5]
    );
    Ok(ExitCode::SUCCESS)
}
