//! Replay in the app: one replay at a time through the engine's [`ratelockr_lab::replay::run`] on
//! the app's Redis (connected or embedded, in the engine's private `<prefix>:replay:<id>`
//! namespace), progress and cancel. Every replay is kept in the run history
//! (`runs/<id>/replay.json` and its decisions' `records.csv`, see [`crate::kept_replay`]):
//! listed, renamed, reopened after a restart, exported and deleted like a simulation's run.

use super::{lock, AppCore};
use crate::coalesce::{Coalesce, EVENT_GAP};
use crate::error::{AppError, ErrorCode};
use crate::export_path::{copy_export, file_name_for, Exported};
use crate::history::MAX_NAME_CHARS;
use crate::kept_replay::{LogIdentity, ReplayRunInfo, StoredReplay};
use crate::replay::{log_file, ReplayEvents, ReplayRequest, ReplayStatus};
use crate::summary::RunStatus;
use ratelockr::Rule;
use ratelockr_lab::export::{self, CsvSink};
use ratelockr_lab::replay::{
    self, LogSource, ReplayObserver, ReplayProgress, ReplayReport, ReplaySpec,
};
use ratelockr_lab::sim::RecordSink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How long one replay pipeline (thousands of script calls) may take before it fails open.
const REPLAY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// The engine's progress (about every 100 ms), kept in the slot each time and forwarded to
/// the window at most once per `EVENT_GAP`, as a run's is: each event costs the webview a
/// frame, and `replay-finished` carries the final progress anyway.
struct Relay {
    core: Arc<AppCore>,
    events: Arc<dyn ReplayEvents>,
    gate: std::sync::Mutex<Coalesce>,
}

impl ReplayObserver for Relay {
    fn on_progress(&self, progress: &ReplayProgress) {
        lock(&self.core.replay).status.progress = Some(*progress);
        if lock(&self.gate).event(std::time::Instant::now()) {
            self.events.progress(progress);
        }
    }
}

impl AppCore {
    /// The sample log the project ships, ready to replay: its path in the data dir.
    pub fn replay_sample(&self) -> Result<String, AppError> {
        crate::sample_log::sample_log(&self.data_dir).map(|p| p.display().to_string())
    }
}

impl AppCore {
    /// The policies a request names, from the policy book.
    fn replay_policies(&self, request: &ReplayRequest) -> Result<Vec<ratelockr::Policy>, AppError> {
        if !request.rules.is_empty() || request.inline.is_some() {
            return Err(AppError::new(
                ErrorCode::InvalidReplay,
                "replay rules or policies, not both: a rule is a policy of one limit",
            )
            .with_field("policies"));
        }
        request
            .policies
            .iter()
            .map(|name| {
                self.policy(name).ok_or_else(|| {
                    AppError::new(
                        ErrorCode::PolicyNotFound,
                        format!("no policy named {name:?}"),
                    )
                    .with_field("policies")
                })
            })
            .collect()
    }

    /// The rules a request names: the book's, then the inline one.
    fn replay_rules(&self, request: &ReplayRequest) -> Result<Vec<Rule>, AppError> {
        let mut rules = Vec::new();
        {
            let book = lock(&self.rules);
            for name in &request.rules {
                let rule = book.get(name).cloned().ok_or_else(|| {
                    AppError::new(ErrorCode::RuleNotFound, format!("no rule named {name:?}"))
                        .with_field("rules")
                })?;
                rules.push(rule);
            }
        }
        if let Some(draft) = &request.inline {
            rules.push(self.rule_validate(draft)?);
        }
        if rules.is_empty() {
            return Err(AppError::new(
                ErrorCode::InvalidReplay,
                "choose at least one rule to replay the log through",
            )
            .with_field("rules"));
        }
        Ok(rules)
    }

    /// Starts replaying; one replay at a time. The report arrives with `events.finished`.
    pub fn replay_start(
        self: &Arc<Self>,
        request: &ReplayRequest,
        events: Arc<dyn ReplayEvents>,
    ) -> Result<ReplayStatus, AppError> {
        let file = log_file(&request.path)?;
        let (rules, policies) = match request.policies.is_empty() {
            true => (self.replay_rules(request)?, Vec::new()),
            false => (Vec::new(), self.replay_policies(request)?),
        };
        let spec = ReplaySpec {
            parse: request.parse.clone(),
            rules,
            policies,
            sweep: request.sweep.clone(),
            top: request.top.unwrap_or(10).clamp(1, 1000),
            ..ReplaySpec::default()
        };
        // Checked now, so a bad key expression or regex is said at once, beside its field.
        spec.parse.compile()?;
        // Identified before it is read, so the history names the bytes that were decided.
        let log = LogIdentity::of(&file)?;
        let source = LogSource::File(file);
        let cancel = CancellationToken::new();
        let (id, name, csv_path);
        {
            let mut slot = lock(&self.replay);
            if slot.cancel.is_some() {
                return Err(AppError::new(
                    ErrorCode::ReplayRunning,
                    "a replay is already running; cancel it first",
                ));
            }
            let mut history = lock(&self.history);
            id = history.next_id();
            // Named for what it is: a sweep says so, and over what.
            let what = match spec.sweep.as_slice() {
                [] if !spec.policies.is_empty() => format!(
                    "{} replay",
                    spec.policies
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(" beside ")
                ),
                [] => "Replay".to_string(),
                axes => format!(
                    "Sweep of {} ({} configurations)",
                    axes.iter()
                        .map(|a| a.param.as_str())
                        .collect::<Vec<_>>()
                        .join(" × "),
                    axes.iter().map(|a| a.values.len()).product::<usize>()
                ),
            };
            name = format!("{what} of {}", log.name)
                .chars()
                .take(MAX_NAME_CHARS)
                .collect::<String>();
            history.begin_replay(StoredReplay {
                id: id.clone(),
                name: name.clone(),
                created_ms: id
                    .parse()
                    .unwrap_or_else(|_| ratelockr::telemetry::now_ms()),
                status: RunStatus::Running,
                log,
                request: request.clone(),
                rules: spec.rules.clone(),
                report: None,
                error: None,
            })?;
            csv_path = history.records_path(&id);
            slot.cancel = Some(cancel.clone());
            slot.status = ReplayStatus {
                id: Some(id.clone()),
                name: Some(name),
                running: true,
                path: Some(request.path.clone()),
                ..ReplayStatus::default()
            };
        }
        let core = self.clone();
        let conn = self.connection();
        tokio::spawn(async move {
            let relay = Relay {
                core: core.clone(),
                events: events.clone(),
                gate: std::sync::Mutex::new(Coalesce::new(EVENT_GAP)),
            };
            // Its own limiter: the 250 ms deadline that suits one interactive decision failed
            // whole pipelines of thousands of calls open; the engine bounds each pipeline itself.
            let limiter = ratelockr::Limiter::new(
                conn.limiter.target(),
                ratelockr::LimiterOptions {
                    deadline: REPLAY_DEADLINE,
                    ..conn.limiter.options().clone()
                },
            );
            let result = run(&limiter, &source, &spec, &csv_path, &relay, cancel.clone()).await;
            let status = {
                let mut slot = lock(&core.replay);
                slot.cancel = None;
                // Kept first, so that whatever the window hears is already in the history.
                let kept = lock(&core.history).finish_replay(&id, result.clone());
                let status = &mut slot.status;
                status.running = false;
                status.cancelled = cancel.is_cancelled();
                match result {
                    Ok(report) => status.report = Some(report),
                    Err(err) => status.error = Some(err),
                }
                match kept {
                    Ok(dropped) => status.notes = dropped,
                    Err(err) => status.notes = vec![err.message],
                }
                status.clone()
            };
            events.finished(&status);
        });
        Ok(self.replay_status())
    }

    pub fn replay_cancel(&self) -> ReplayStatus {
        if let Some(cancel) = &lock(&self.replay).cancel {
            cancel.cancel();
        }
        self.replay_status()
    }

    pub fn replay_status(&self) -> ReplayStatus {
        lock(&self.replay).status.clone()
    }

    /// A kept replay (`id` None: the newest that ended) and its decisions' CSV.
    fn kept_replay(&self, id: Option<&str>) -> Result<(StoredReplay, PathBuf), AppError> {
        let history = lock(&self.history);
        let replay = match id {
            Some(id) => history.get_replay(id)?.clone(),
            None => history
                .latest_replay()
                .cloned()
                .ok_or_else(|| AppError::new(ErrorCode::NoRun, "no replay has finished yet"))?,
        };
        if replay.status == RunStatus::Running {
            return Err(AppError::new(
                ErrorCode::ReplayRunning,
                "the replay is still running; export when it ends",
            ));
        }
        let csv = history.records_path(&replay.id);
        Ok((replay, csv))
    }

    /// A kept replay as the panel shows it (its report, cancelled or failed as it ended).
    pub fn replay_reopen(&self, id: &str) -> Result<ReplayStatus, AppError> {
        let (replay, _) = self.kept_replay(Some(id))?;
        Ok(ReplayStatus {
            id: Some(replay.id),
            name: Some(replay.name),
            running: false,
            path: Some(replay.log.path),
            progress: None,
            cancelled: replay.status == RunStatus::Cancelled,
            report: replay.report,
            error: replay.error,
            notes: Vec::new(),
        })
    }

    pub fn replay_rename(&self, id: &str, name: &str) -> Result<ReplayRunInfo, AppError> {
        let info = lock(&self.history).rename_replay(id, name)?;
        let mut slot = lock(&self.replay);
        if slot.status.id.as_deref() == Some(id) {
            slot.status.name = Some(info.name.clone());
        }
        Ok(info)
    }

    /// Copies a kept replay's decisions (one row per decision, the simulation CSV's columns
    /// with the log's time as `sent_at_ms`) to `dest`, whole or not at all; `id` None: the
    /// newest.
    /// The file name the save dialog offers for a kept replay's export: its own name.
    pub fn replay_export_name(&self, id: Option<&str>, suffix: &str, extension: &str) -> String {
        let name = self
            .kept_replay(id)
            .map(|(r, _)| r.name)
            .unwrap_or_default();
        file_name_for(&name, "ratelockr-replay", suffix, extension)
    }

    pub fn replay_export_csv(&self, dest: &Path, id: Option<&str>) -> Result<Exported, AppError> {
        let (_, csv) = self.kept_replay(id)?;
        copy_export(&csv, dest)
    }

    /// A kept replay's decisions over log time (`heatmap` false) or its sweep's heatmaps,
    /// PNG or SVG by `dest`'s extension (the engine's renderers); `id` None: the newest.
    pub fn replay_export_chart(
        &self,
        dest: &Path,
        heatmap: bool,
        id: Option<&str>,
    ) -> Result<Exported, AppError> {
        let (replay, _) = self.kept_replay(id)?;
        let report = replay.report.ok_or_else(|| {
            AppError::new(
                ErrorCode::NoRun,
                "this replay failed before it had a report; export its CSV instead",
            )
        })?;
        let drawn = if heatmap {
            if report.sweep.is_empty() {
                return Err(AppError::new(
                    ErrorCode::NoRun,
                    "this replay had no sweep; give it a grid first",
                )
                .with_field("sweep"));
            }
            export::heatmap::render(&report, dest)
        } else {
            export::replay_chart::render(&report, dest)
        };
        drawn.map_err(|e| AppError::new(ErrorCode::Export, e.to_string()))?;
        Ok(Exported {
            path: dest.display().to_string(),
        })
    }
}

/// One replay, its decisions written to `csv_path` as they are made.
async fn run(
    limiter: &ratelockr::Limiter,
    source: &LogSource,
    spec: &ReplaySpec,
    csv_path: &Path,
    observer: &dyn ReplayObserver,
    cancel: CancellationToken,
) -> Result<ReplayReport, AppError> {
    if let Some(dir) = csv_path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            AppError::new(
                ErrorCode::Export,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
    }
    let csv =
        CsvSink::create(csv_path).map_err(|e| AppError::new(ErrorCode::Export, e.to_string()))?;
    // A sweep's configurations are kept as its points (the heatmaps); their decisions, one
    // full copy of the log's each, are not: the rules' own are.
    let mut kept = RulesOnly {
        inner: csv,
        rules: spec
            .rules
            .iter()
            .map(|r| r.name().to_string())
            .chain(spec.policies.iter().map(|p| p.name().to_string()))
            .collect(),
    };
    let sink: &mut dyn RecordSink = &mut kept;
    Ok(replay::run(limiter, source, spec, Some(sink), observer, cancel).await?)
}

/// Passes on the records of `rules` only.
struct RulesOnly<S> {
    inner: S,
    rules: Vec<String>,
}

impl<S: RecordSink> RecordSink for RulesOnly<S> {
    fn write(
        &mut self,
        record: &ratelockr_lab::sim::Record,
    ) -> Result<(), ratelockr_lab::export::ExportError> {
        match self.rules.iter().any(|r| *r == *record.rule) {
            true => self.inner.write(record),
            false => Ok(()),
        }
    }

    fn flush(&mut self) -> Result<(), ratelockr_lab::export::ExportError> {
        self.inner.flush()
    }
}
