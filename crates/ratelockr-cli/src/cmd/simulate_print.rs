//! What `ratelockr simulate` prints: the preview of the offered traffic, the JSON summary,
//! the table per target and the peak windows.

use crate::console::print_json;
use anyhow::anyhow;
use ratelockr_lab::sim::{self, Report, SimSpec};
use ratelockr_lab::sweep::SweepChoice;
use serde::Serialize;
use std::path::Path;

/// The workload's shape, without running it.
pub(super) fn print_preview(spec: &SimSpec, json: bool) -> anyhow::Result<()> {
    let Some(preview) = sim::Preview::of(&spec.workload) else {
        return Err(anyhow!(
            "--preview needs a schedule: with --rps 0 the servers pace themselves on Redis's replies"
        ));
    };
    if json {
        return print_json(&preview);
    }
    println!("{}", spec.workload.describe());
    println!("offered requests per {} ms:", preview.bin_ms);
    let peak = preview.offered.iter().copied().max().unwrap_or(0).max(1);
    for (i, n) in preview.offered.iter().enumerate() {
        let bar = "#".repeat((u64::from(*n) * 50).div_ceil(u64::from(peak)) as usize);
        println!("{:>9} ms {n:>7} {bar}", i as u64 * preview.bin_ms);
    }
    Ok(())
}

#[derive(Serialize)]
pub(super) struct JsonSummary<'a> {
    workload: &'a str,
    requested_rps: f64,
    achieved_rps: f64,
    requests_sent: u64,
    duration_ms: u64,
    cancelled: bool,
    algorithms: &'a [sim::TargetSummary],
    /// Redis's own time in EVALSHA over the run (INFO commandstats), beside the client-side
    /// latency percentiles in `algorithms`.
    redis_cost: Option<ratelockr::commandstats::RedisCost>,
    /// A sweep's configurations, and the smallest within --suggest-max-denied-pct.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    sweep: &'a [ratelockr_lab::sweep::SweepPoint],
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestion: Option<SweepChoice>,
}

impl<'a> JsonSummary<'a> {
    /// The report's summary, with a sweep's suggestion.
    pub(super) fn of(report: &'a Report, suggestion: Option<SweepChoice>) -> Self {
        JsonSummary {
            suggestion,
            ..JsonSummary::from(report)
        }
    }
}

impl<'a> From<&'a Report> for JsonSummary<'a> {
    fn from(r: &'a Report) -> Self {
        JsonSummary {
            workload: &r.workload,
            requested_rps: r.requested_rps,
            achieved_rps: r.achieved_rps,
            requests_sent: r.requests_sent,
            duration_ms: r.duration_ms,
            cancelled: r.cancelled,
            algorithms: &r.targets,
            redis_cost: r.redis_cost,
            sweep: &r.sweep,
            suggestion: None,
        }
    }
}

/// Each target's busiest window, in words: the boundary burst as a number.
fn print_peaks(report: &Report) {
    let peaks: Vec<_> = report
        .targets
        .iter()
        .filter_map(|t| t.peak_window.as_ref().map(|p| (t, p)))
        .collect();
    if peaks.is_empty() {
        return;
    }
    println!("\nthe most admitted for one key in any window of the rule's length:");
    for (t, p) in peaks {
        println!(
            "  {:<28} {}, from {:.3} s (key {}){}",
            t.rule,
            p.describe(),
            p.start_ms as f64 / 1000.0,
            p.key,
            if p.exceeds() { ": over the limit" } else { "" }
        );
    }
}

/// A run with holds: each target's most requests in flight at once for one key, beside a
/// concurrency limit's own limit.
fn print_in_flight(report: &Report, spec: &SimSpec) {
    let peaks: Vec<_> = report
        .targets
        .iter()
        .filter_map(|t| t.peak_in_flight.as_ref().map(|p| (t, p)))
        .collect();
    if peaks.is_empty() {
        return;
    }
    println!(
        "
the most requests in flight at once for one key (from the answer to the hold's end):"
    );
    for (t, p) in peaks {
        let limit = spec
            .targets
            .iter()
            .find(|target| target.name() == t.rule)
            .and_then(|target| match target.rule.algorithm() {
                ratelockr::rule::Algorithm::Concurrency { limit, .. } if !target.naive => {
                    Some(*limit)
                }
                _ => None,
            });
        println!(
            "  {:<28} {}{}, at {:.3} s (key {})",
            t.rule,
            p.count,
            limit.map_or(String::new(), |l| format!(" (limit {l})")),
            p.at_ms as f64 / 1000.0,
            p.key
        );
    }
}

pub(super) fn print_table(
    report: &Report,
    spec: &SimSpec,
    csv: Option<&Path>,
    chart: Option<&Path>,
) {
    println!("{}", report.workload);
    let requested = if report.requested_rps == 0.0 {
        "as fast as possible".to_string()
    } else {
        format!("{:.0} rps offered on average", report.requested_rps)
    };
    println!(
        "{} requests in {:.2} s: {:.0} rps achieved ({requested})\n",
        report.requests_sent,
        report.duration_ms as f64 / 1000.0,
        report.achieved_rps
    );
    println!(
        "{:<28} {:<20} {:>8} {:>8} {:>9} {:>13} {:>12} {:>8} {:>8} {:>8}",
        "rule",
        "algorithm",
        "allowed",
        "denied",
        "fail-open",
        "over-admitted",
        "peak/limit",
        "p50 ms",
        "p95 ms",
        "p99 ms"
    );
    for t in &report.targets {
        let ms = |us: u64| format!("{:.2}", us as f64 / 1000.0);
        let peak = t
            .peak_window
            .as_ref()
            .map_or("-".to_string(), |p| format!("{}/{}", p.admitted, p.limit));
        println!(
            "{:<28} {:<20} {:>8} {:>8} {:>9} {:>13} {:>12} {:>8} {:>8} {:>8}",
            t.rule,
            t.algorithm,
            t.allowed,
            t.denied,
            t.fail_open,
            t.over_admitted,
            peak,
            ms(t.latency_p50_us),
            ms(t.latency_p95_us),
            ms(t.latency_p99_us)
        );
    }
    print_peaks(report);
    print_in_flight(report, spec);
    super::policy_lines::print_sim(report);
    for t in &report.targets {
        if let (Some(allowed), Some(denied)) =
            (t.exact_log_wrongly_allowed, t.exact_log_wrongly_denied)
        {
            let share = |n: u64| {
                if t.requests == 0 {
                    0.0
                } else {
                    n as f64 * 100.0 / t.requests as f64
                }
            };
            println!(
                "\n{} against the exact log on its own traffic: {allowed} admitted beyond the limit in the sliding window ({:.3} %), {denied} denied that the log would admit ({:.3} %), of {} requests",
                t.rule,
                share(allowed),
                share(denied),
                t.requests
            );
        }
    }
    println!("\np50/p95/p99: a decision's round trip as the client sees it, queueing included.");
    match &report.redis_cost {
        Some(cost) if cost.calls > 0 => println!(
            "Redis-side: {} script calls (EVALSHA), {:.1} µs per call inside Redis (INFO commandstats; counts every client of this Redis).",
            cost.calls, cost.usec_per_call
        ),
        _ => {}
    }
    if report
        .targets
        .iter()
        .any(|t| t.naive && t.over_admitted > 0)
    {
        println!("\nThe naive GET/SET limiter admitted more than its rule allows: two instances read the same count at once. The scripts cannot.");
    }
    if let Some(csv) = csv {
        println!("\nCSV:   {}", csv.display());
    }
    if let Some(chart) = chart {
        println!("chart: {}", chart.display());
    }
}
