//! The TypeScript types of the IPC payloads, generated from the Rust types with ts-rs and
//! committed in `ui/src/bindings/`. `cargo test -p ratelockr-app` fails when they drift;
//! `UPDATE_BINDINGS=1 cargo test -p ratelockr-app bindings` rewrites them. The command names
//! in `ui/src/api.ts` are checked against the registered commands and the capability the
//! same way.

use crate::core::connection::{ConnectionStatus, ConnectionTest, LinkState};
use crate::core::error::{AppError, ErrorCode};
use crate::core::rules::RuleDraft;
use crate::core::settings::MetricsSettings;
use crate::core::sim::{
    RunSummary, SimFinished, SimPattern, SimProgress, SimRequest, SimStatus, SimTarget, SummaryRow,
};
use crate::core::{AppInfo, ChartFormat, Exported, MetricsStatus, RuleStats};
use ratelockr::{Algorithm, AlgorithmKind, BackendKind, Rule, StatsPoint};
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
    one::<LinkState>(&cfg, &mut out);
    one::<BackendKind>(&cfg, &mut out);
    one::<Rule>(&cfg, &mut out);
    one::<Algorithm>(&cfg, &mut out);
    one::<AlgorithmKind>(&cfg, &mut out);
    one::<RuleDraft>(&cfg, &mut out);
    one::<StatsPoint>(&cfg, &mut out);
    one::<RuleStats>(&cfg, &mut out);
    one::<SimRequest>(&cfg, &mut out);
    one::<SimTarget>(&cfg, &mut out);
    one::<SimPattern>(&cfg, &mut out);
    one::<SimProgress>(&cfg, &mut out);
    one::<SimStatus>(&cfg, &mut out);
    one::<SimFinished>(&cfg, &mut out);
    one::<RunSummary>(&cfg, &mut out);
    one::<SummaryRow>(&cfg, &mut out);
    one::<AppInfo>(&cfg, &mut out);
    one::<Exported>(&cfg, &mut out);
    one::<MetricsSettings>(&cfg, &mut out);
    one::<MetricsStatus>(&cfg, &mut out);
    one::<ChartFormat>(&cfg, &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    #[test]
    fn bindings_are_committed_and_current() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui/src/bindings");
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
            "ui/src/bindings is out of date for {stale:?}; run `UPDATE_BINDINGS=1 cargo test -p ratelockr-app bindings` and commit"
        );
    }

    /// The commands `generate_handler!` registers (`$crate::commands::<name>` in lib.rs).
    fn registered() -> BTreeSet<String> {
        include_str!("lib.rs")
            .split("$crate::commands::")
            .skip(1)
            .filter_map(|rest| rest.split([',', ' ', '\n', ']']).next())
            .map(str::to_string)
            .collect()
    }

    /// The commands ui/src/api.ts invokes: each `call<T>("<name>"`.
    fn called_by_the_ui() -> BTreeSet<String> {
        include_str!("../../ui/src/api.ts")
            .split("call<")
            .skip(1)
            .filter_map(|rest| {
                let head = rest.split(')').next()?;
                let name = head.split_once(">(\"")?.1;
                Some(name.split('"').next()?.to_string())
            })
            .collect()
    }

    /// The commands the window's capability allows (`allow-<name with dashes>`).
    fn allowed() -> BTreeSet<String> {
        let capability: serde_json::Value =
            serde_json::from_str(include_str!("../capabilities/main.json")).expect("valid JSON");
        capability["permissions"]
            .as_array()
            .expect("a permissions array")
            .iter()
            .filter_map(|p| p.as_str()?.strip_prefix("allow-"))
            .map(|name| name.replace('-', "_"))
            .collect()
    }

    #[test]
    fn the_ui_calls_exactly_the_registered_and_allowed_commands() {
        let registered = registered();
        assert!(registered.len() >= 16, "{registered:?}");
        assert_eq!(
            called_by_the_ui(),
            registered,
            "ui/src/api.ts and generate_handler! disagree"
        );
        assert_eq!(
            allowed(),
            registered,
            "capabilities/main.json and generate_handler! disagree"
        );
    }
}
