//! `ratelockr bench --memory`: what one client key of a sliding window log holds in Redis
//! (`MEMORY USAGE`), full at limits of 10, 100, 129 and 1,000, beside the estimate the CLI's and
//! the app's warning give (docs/benchmarks.md, "Sliding window log memory").

use crate::console::print_json;
use crate::opts::Global;
use ratelockr::log_memory::log_bytes_per_key;
use ratelockr::Rule;
use serde::Serialize;
use std::process::ExitCode;

const LIMITS: [u64; 4] = [10, 100, 129, 1000];

#[derive(Debug, Serialize)]
struct MemoryFigure {
    limit: u64,
    entries: u64,
    bytes_per_key: u64,
    bytes_per_entry: f64,
    estimate: u64,
}

pub async fn run(global: &Global) -> anyhow::Result<ExitCode> {
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let run = std::process::id();
    let mut figures = Vec::new();
    for limit in LIMITS {
        let rule = Rule::sliding_window_log(
            format!("bench-memory-{run}-{limit}"),
            limit,
            std::time::Duration::from_secs(600),
        )?;
        let key = "client-0";
        for _ in 0..limit {
            limiter.check(&rule, key).await?;
        }
        let redis_key = limiter.keys().limiter(&rule, key);
        // Counted, measured and deleted in one round trip.
        let mut conn = limiter.connection();
        let (entries, bytes): (u64, Option<u64>) = redis::pipe()
            .cmd("ZCARD")
            .arg(&redis_key)
            .cmd("MEMORY")
            .arg("USAGE")
            .arg(&redis_key)
            .arg("SAMPLES")
            .arg(0)
            .cmd("DEL")
            .arg(&redis_key)
            .ignore()
            .query_async(&mut conn)
            .await?;
        let bytes = bytes.ok_or_else(|| anyhow::anyhow!("{redis_key}: no such key to measure"))?;
        anyhow::ensure!(
            entries == limit,
            "{redis_key}: the log holds {entries} entries, not {limit} (did Redis fail?)"
        );
        figures.push(MemoryFigure {
            limit,
            entries,
            bytes_per_key: bytes,
            bytes_per_entry: bytes as f64 / entries as f64,
            estimate: log_bytes_per_key(limit),
        });
    }
    if global.json {
        print_json(&figures)?;
    } else {
        println!("sliding window log, one full client key (MEMORY USAGE ... SAMPLES 0)");
        println!(
            "{:>6}  {:>12}  {:>10}  {:>10}",
            "limit", "bytes/key", "B/entry", "estimate"
        );
        for f in &figures {
            println!(
                "{:>6}  {:>12}  {:>10.1}  {:>10}",
                f.limit, f.bytes_per_key, f.bytes_per_entry, f.estimate
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
