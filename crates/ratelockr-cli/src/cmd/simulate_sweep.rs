//! `simulate --sweep`: every configuration of a rule on the same traffic, one row each, the
//! heatmaps, and the smallest configuration within the bound, in words.

use ratelockr_lab::sim::Report;
use ratelockr_lab::sweep::{Bound, SweepAxis, SweepChoice};

/// The configuration to suggest: the smallest that denies at most `max_pct` of requests.
pub fn choice(report: &Report, axes: &[SweepAxis], max_pct: f64) -> Option<SweepChoice> {
    SweepChoice::choose(&report.sweep, axes, Bound::Requests, max_pct)
}

/// One row per configuration: its parameters, then what tuning is judged by.
pub fn print(report: &Report, axes: &[SweepAxis], choice: Option<&SweepChoice>) {
    if report.sweep.is_empty() {
        return;
    }
    println!("\nsweep:");
    let mut head: Vec<String> = axes.iter().map(|a| format!("{:>14}", a.param)).collect();
    for h in [
        "allowed",
        "denied",
        "keys denied",
        "fail-open",
        "peak/limit",
        "worst wait",
    ] {
        head.push(format!("{h:>12}"));
    }
    println!("  {}", head.join(" "));
    for (point, target) in report.sweep.iter().zip(&report.targets) {
        let mut row: Vec<String> = axes
            .iter()
            .map(|a| {
                format!(
                    "{:>14}",
                    point.params.get(&a.param).copied().unwrap_or(f64::NAN)
                )
            })
            .collect();
        let pct = |n: u64| {
            if target.requests == 0 {
                "-".to_string()
            } else {
                format!("{:.1} %", n as f64 * 100.0 / target.requests as f64)
            }
        };
        let peak = target
            .peak_window
            .as_ref()
            .map_or("-".to_string(), |p| format!("{}/{}", p.admitted, p.limit));
        let wait = match target.worst_wait_ms {
            0 => "-".to_string(),
            ms => format!("{ms} ms"),
        };
        for cell in [
            pct(target.allowed),
            pct(target.denied),
            format!("{} of {}", target.keys_denied, target.keys),
            target.fail_open.to_string(),
            peak,
            wait,
        ] {
            row.push(format!("{cell:>12}"));
        }
        let chosen = choice.is_some_and(|c| c.rule == point.rule);
        println!("{} {}", if chosen { "*" } else { " " }, row.join(" "));
    }
    if let Some(choice) = choice {
        println!("\n{}.", capitalized(&choice.sentence));
    }
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}
