//! `ratelockr stats`: the last 30 seconds of a rule.

use crate::console::print_json;
use crate::opts::Global;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The rule's name, as given to `check --rule` (default names: token-bucket, ...).
    #[arg(long)]
    pub rule: String,
}

#[derive(Serialize)]
struct Row {
    second: u64,
    allowed: u64,
    denied: u64,
}

pub async fn run(global: &Global, args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let points = limiter
        .stats(&args.rule)
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
    println!(
        "rule {}: the last 30 seconds (# allowed, . denied)",
        args.rule
    );
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
