//! The TypeScript types of the IPC payloads, generated from the Rust types with ts-rs and
//! committed in `ui/src/bindings/`. `cargo test -p ratelockr-app-core` (and so `make test`'s
//! engine step) fails when they drift; `UPDATE_BINDINGS=1 cargo test -p ratelockr-app-core
//! bindings` rewrites them. The command names in `ui/src/api.ts` are checked against the
//! registered commands and the capability by the Tauri crate, which registers them.

use crate::app::inspect::{ResetResult, WorkloadPreview};
use crate::app::metrics::MetricsStatus;
use crate::app::peek::KeyPeek;
use crate::app::stats::RuleStats;
use crate::app::watch::{WatchStatus, WatchedPolicy};
use crate::app::AppInfo;
use crate::connection::{ConnectionStatus, ConnectionTest, LinkState};
use crate::copy_commands::CopyCommands;
use crate::error::{AppError, ErrorCode};
use crate::export_path::{ChartFormat, Exported};
use crate::history::{HistorySettings, RunHistory};
use crate::kept_replay::{LogIdentity, ReplayRunInfo};
use crate::kept_run::{RunInfo, RunTarget};
use crate::records::RunRecords;
use crate::replay::{ReplayRequest, ReplayStatus};
use crate::rules::RuleDraft;
use crate::settings::{MetricsDraft, MetricsSettings};
use crate::sim::{SimFinished, SimProgress, SimRequest, SimStatus, SimTarget};
use crate::summary::{RunStatus, RunSummary, SummaryRow};
use crate::transport::Transport;
use ratelockr::cluster::NodeRole;
use ratelockr::commandstats::RedisCost;
use ratelockr::headers::HttpAnswer;
use ratelockr::policy::{Limit, LimitResult, Mode, Override, PolicyDecisionJson, PolicyStatsPoint};
use ratelockr::topology::{Topology, TopologyNode};
use ratelockr::{
    Algorithm, AlgorithmKind, BackendKind, Decision, Rule, Scripting, ServerInfo, ServerKind,
    StatsPoint, TlsOptions,
};
use ratelockr_lab::export::style::{BinStep, LineStyle};
use ratelockr_lab::export::view::{ChartView, KeyStateView, Look, ViewLine, ViewPanel};
use ratelockr_lab::replay::{
    DurationUnit, FieldNames, InFlight, KeyChange, KeyInFlight, LineIssue, LogFormat, ParseSpec,
    PeakRates, PolicyFigures, Preview, PreviewLine, ReplayPoint, ReplayProgress, ReplayReport,
    ReplaySeries, RuleChange, RuleReport, Suggestion, SweepAxis, SweepPoint, TopKey,
};
use ratelockr_lab::sim::{Pattern, PeakWindow, Retry};
use ratelockr_lab::sweep::{Bound, SweepChoice};
use ts_rs::{Config, TS};

/// Every exported type as `(file name, contents)`, sorted by file name.
pub fn render() -> Vec<(String, String)> {
    // Counters and milliseconds stay far below 2^53, so plain numbers are exact.
    let cfg = Config::new().with_large_int("number");
    fn one<T: TS + 'static>(cfg: &Config, out: &mut Vec<(String, String)>) {
        let name = format!("{}.ts", T::ident(cfg));
        let body = T::export_to_string(cfg).unwrap_or_else(|e| panic!("exporting {name}: {e}"));
        out.push((name, body));
    }
    let mut out = Vec::new();
    one::<AppError>(&cfg, &mut out);
    one::<ErrorCode>(&cfg, &mut out);
    one::<ConnectionStatus>(&cfg, &mut out);
    one::<ConnectionTest>(&cfg, &mut out);
    one::<CopyCommands>(&cfg, &mut out);
    one::<LinkState>(&cfg, &mut out);
    one::<BackendKind>(&cfg, &mut out);
    one::<Transport>(&cfg, &mut out);
    one::<TlsOptions>(&cfg, &mut out);
    one::<Topology>(&cfg, &mut out);
    one::<TopologyNode>(&cfg, &mut out);
    one::<ServerInfo>(&cfg, &mut out);
    one::<ServerKind>(&cfg, &mut out);
    one::<Scripting>(&cfg, &mut out);
    one::<NodeRole>(&cfg, &mut out);
    one::<Rule>(&cfg, &mut out);
    one::<Algorithm>(&cfg, &mut out);
    one::<AlgorithmKind>(&cfg, &mut out);
    one::<ratelockr::Period>(&cfg, &mut out);
    one::<ratelockr::WeekStart>(&cfg, &mut out);
    one::<RuleDraft>(&cfg, &mut out);
    one::<StatsPoint>(&cfg, &mut out);
    one::<RuleStats>(&cfg, &mut out);
    one::<SimRequest>(&cfg, &mut out);
    one::<SimTarget>(&cfg, &mut out);
    one::<Pattern>(&cfg, &mut out);
    one::<SimProgress>(&cfg, &mut out);
    one::<SimStatus>(&cfg, &mut out);
    one::<SimFinished>(&cfg, &mut out);
    one::<RunSummary>(&cfg, &mut out);
    one::<SummaryRow>(&cfg, &mut out);
    one::<AppInfo>(&cfg, &mut out);
    one::<Exported>(&cfg, &mut out);
    one::<MetricsSettings>(&cfg, &mut out);
    one::<MetricsDraft>(&cfg, &mut out);
    one::<MetricsStatus>(&cfg, &mut out);
    one::<ChartFormat>(&cfg, &mut out);
    one::<Retry>(&cfg, &mut out);
    one::<RunStatus>(&cfg, &mut out);
    one::<RedisCost>(&cfg, &mut out);
    one::<PeakWindow>(&cfg, &mut out);
    one::<SweepChoice>(&cfg, &mut out);
    one::<Bound>(&cfg, &mut out);
    one::<HistorySettings>(&cfg, &mut out);
    one::<RunHistory>(&cfg, &mut out);
    one::<RunInfo>(&cfg, &mut out);
    one::<RunTarget>(&cfg, &mut out);
    one::<RunRecords>(&cfg, &mut out);
    one::<ResetResult>(&cfg, &mut out);
    one::<KeyPeek>(&cfg, &mut out);
    one::<WorkloadPreview>(&cfg, &mut out);
    one::<HttpAnswer>(&cfg, &mut out);
    one::<Decision>(&cfg, &mut out);
    one::<BinStep>(&cfg, &mut out);
    one::<ChartView>(&cfg, &mut out);
    one::<ViewPanel>(&cfg, &mut out);
    one::<ViewLine>(&cfg, &mut out);
    one::<Look>(&cfg, &mut out);
    one::<KeyStateView>(&cfg, &mut out);
    one::<LineStyle>(&cfg, &mut out);
    one::<ReplayRequest>(&cfg, &mut out);
    one::<ReplayStatus>(&cfg, &mut out);
    one::<ReplayRunInfo>(&cfg, &mut out);
    one::<LogIdentity>(&cfg, &mut out);
    one::<ParseSpec>(&cfg, &mut out);
    one::<FieldNames>(&cfg, &mut out);
    one::<LogFormat>(&cfg, &mut out);
    one::<SweepAxis>(&cfg, &mut out);
    one::<Preview>(&cfg, &mut out);
    one::<PreviewLine>(&cfg, &mut out);
    one::<ReplayProgress>(&cfg, &mut out);
    one::<ReplayReport>(&cfg, &mut out);
    one::<RuleReport>(&cfg, &mut out);
    one::<ReplaySeries>(&cfg, &mut out);
    one::<ReplayPoint>(&cfg, &mut out);
    one::<TopKey>(&cfg, &mut out);
    one::<PeakRates>(&cfg, &mut out);
    one::<InFlight>(&cfg, &mut out);
    one::<KeyInFlight>(&cfg, &mut out);
    one::<DurationUnit>(&cfg, &mut out);
    one::<Suggestion>(&cfg, &mut out);
    one::<SweepPoint>(&cfg, &mut out);
    one::<LineIssue>(&cfg, &mut out);
    one::<PolicyFigures>(&cfg, &mut out);
    one::<crate::policy_file::FileVersion>(&cfg, &mut out);
    one::<crate::policy_file::PolicyFileStatus>(&cfg, &mut out);
    one::<RuleChange>(&cfg, &mut out);
    one::<KeyChange>(&cfg, &mut out);
    one::<ratelockr::Policy>(&cfg, &mut out);
    one::<Limit>(&cfg, &mut out);
    one::<Override>(&cfg, &mut out);
    one::<Mode>(&cfg, &mut out);
    one::<PolicyDecisionJson>(&cfg, &mut out);
    one::<LimitResult>(&cfg, &mut out);
    one::<WatchStatus>(&cfg, &mut out);
    one::<WatchedPolicy>(&cfg, &mut out);
    one::<PolicyStatsPoint>(&cfg, &mut out);
    out.push(("chartStyle.ts".to_string(), chart_style_ts()));
    out.push(("ruleRanges.ts".to_string(), rule_ranges_ts()));
    out.push(("logMemory.ts".to_string(), log_memory_ts()));
    out.sort();
    out
}

/// Every rule parameter's range as a TypeScript constant, from the table the engine checks
/// rules against, so the form's messages name the engine's bounds.
fn rule_ranges_ts() -> String {
    let ranges: serde_json::Map<String, serde_json::Value> = ratelockr::rule::PARAMETER_RANGES
        .iter()
        .map(|(name, min, max)| {
            (
                name.to_string(),
                serde_json::json!({ "min": min, "max": max }),
            )
        })
        .collect();
    let ranges = serde_json::to_string_pretty(&ranges).expect("the ranges serialize");
    format!(
        "// Generated from src/rule.rs by crates/ratelockr-app-core/src/bindings.rs. Do not edit this file.\n\n\
         /** Every rule parameter's accepted range, as the engine checks it. */\n\
         export const PARAMETER_RANGES: Record<string, {{ min: number; max: number }}> = {ranges};\n"
    )
}

/// A sliding window log's fitted size per client key as a TypeScript constant, from the
/// figures the CLI's warning uses, so the rule editor's warning says the same.
fn log_memory_ts() -> String {
    let figures = serde_json::to_string_pretty(&ratelockr::log_memory::LOG_MEMORY)
        .expect("the figures serialize");
    format!(
        "// Generated from src/log_memory.rs by crates/ratelockr-app-core/src/bindings.rs. Do not edit this file.\n\n\
         /** A full sliding window log's bytes per client key: base + per_entry × limit, listpack up to listpack_max_entries. */\n\
         export const LOG_MEMORY: {{\n  listpack_max_entries: number;\n  listpack_base: number;\n  listpack_per_entry: number;\n  skiplist_base: number;\n  skiplist_per_entry: number;\n}} = {figures};\n"
    )
}

/// The run chart's bins, colours, dashes and markers as a TypeScript constant, from the same
/// table the engine's exported charts use, so the screen and the file agree.
fn chart_style_ts() -> String {
    let style = serde_json::to_string_pretty(&ratelockr_lab::export::style::chart_style())
        .expect("the chart style serializes");
    format!(
        "// Generated from crates/ratelockr-lab/src/export/style.rs by crates/ratelockr-app-core/src/bindings.rs. Do not edit this file.\n\
         import type {{ BinStep }} from \"./BinStep\";\n\
         import type {{ LineStyle }} from \"./LineStyle\";\n\n\
         /** The run chart's look, shared with the engine's PNG/SVG export. */\n\
         export const CHART_STYLE: {{\n  bins: BinStep[];\n  algorithms: Record<string, LineStyle>;\n  outcomes: Record<string, LineStyle>;\n  key_state: Record<string, LineStyle>;\n  runs: string[];\n  overlay_dash: number[];\n}} = {style};\n\n\
         /** The bin width (ms) for a run of `durationMs`: the first step that covers it. */\n\
         export function binMs(durationMs: number): number {{\n  \
         const step = CHART_STYLE.bins.find((s) => s.up_to_ms === null || durationMs <= s.up_to_ms);\n  \
         return (step ?? CHART_STYLE.bins[CHART_STYLE.bins.length - 1]).bin_ms;\n}}\n\n\
         /** An algorithm's line (by its record label), the fallback for labels not in the table. */\n\
         export function algorithmStyle(label: string): LineStyle {{\n  \
         return CHART_STYLE.algorithms[label] ?? CHART_STYLE.algorithms[\"other\"];\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    #[test]
    fn bindings_are_committed_and_current() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/bindings");
        let update = std::env::var_os("UPDATE_BINDINGS").is_some();
        if update {
            std::fs::create_dir_all(&dir).expect("create ui/src/bindings");
        }
        let mut stale = Vec::new();
        for (name, body) in super::render() {
            let path = dir.join(&name);
            if update {
                std::fs::write(&path, &body).expect("write binding");
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(body.as_str()) {
                stale.push(name);
            }
        }
        assert!(
            stale.is_empty(),
            "ui/src/bindings is out of date for {stale:?}; run `UPDATE_BINDINGS=1 cargo test -p ratelockr-app-core bindings` and commit"
        );
    }
}
