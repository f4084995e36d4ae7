//! `ratelockr simulate`: a workload against one rule, all five algorithms, or a sweep of one
//! rule's parameters ([`super::simulate_sweep`]), with CSV and chart export, a progress bar
//! and a summary table.

use crate::console::{self, print_json};
use crate::opts::{flag_error, AlgorithmArg, Global, RuleArgs};
use anyhow::{anyhow, Context};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use ratelockr_lab::export::timeline::TimelineObserver;
use ratelockr_lab::export::view::Shown;
use ratelockr_lab::export::{self, TimelineBuilder};
use ratelockr_lab::sim::workload_spec::{
    DEFAULT_COST, DEFAULT_KEYS, DEFAULT_SEED, DEFAULT_SERVERS,
};
use ratelockr_lab::sim::{
    self, PatternKind, Progress, SimClock, SimObserver, SimSpec, WorkloadSpec,
};
use ratelockr_lab::sweep::SweepAxis;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PatternArg {
    Constant,
    Burst,
    Ramp,
    Spike,
    Poisson,
}

impl From<PatternArg> for PatternKind {
    fn from(arg: PatternArg) -> Self {
        match arg {
            PatternArg::Constant => PatternKind::Constant,
            PatternArg::Burst => PatternKind::Burst,
            PatternArg::Ramp => PatternKind::Ramp,
            PatternArg::Spike => PatternKind::Spike,
            PatternArg::Poisson => PatternKind::Poisson,
        }
    }
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The algorithm to simulate (or --compare for all five, or --policies).
    #[arg(
        long,
        value_enum,
        required_unless_present_any = ["compare", "policies"],
        conflicts_with_all = ["compare", "policies"]
    )]
    pub algorithm: Option<AlgorithmArg>,
    /// A policies file (TOML or JSON, or a rules file): simulate its policies instead, each
    /// decided all or nothing over its limits, keys matching an override under its tier.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["compare", "naive", "sweep"])]
    pub policies: Option<PathBuf>,
    /// The policy of --policies to simulate; repeat to run several side by side on the same
    /// traffic (default: every policy of the file).
    #[arg(long, value_name = "NAME", requires = "policies")]
    pub policy: Vec<String>,
    /// All five algorithms side by side on the same traffic, with equal nominal limits:
    /// --limit per --window-ms (the token bucket holds --limit and refills --limit per window;
    /// GCRA has burst --limit and period --window-ms).
    #[arg(long)]
    pub compare: bool,
    #[command(flatten)]
    pub rule: RuleArgs,
    /// Requests to send (default 1000 unless --duration-secs is given).
    #[arg(long, conflicts_with = "duration_secs")]
    pub requests: Option<u64>,
    /// Send for this long instead of a number of requests.
    #[arg(long, allow_negative_numbers = true)]
    pub duration_secs: Option<f64>,
    /// Offered requests per second, held open-loop (default 100); 0 = as fast as possible
    /// (constant only). The base rate of constant, poisson, ramp and spike; burst refuses it.
    #[arg(long, allow_negative_numbers = true)]
    pub rps: Option<f64>,
    /// How arrivals are spaced. constant and poisson use --rps; burst uses --burst-size and
    /// --burst-every-ms (not --rps); ramp goes from --rps to --to-rps; spike multiplies --rps
    /// by --spike-multiplier from --spike-start-ms for --spike-length-ms. A flag the pattern
    /// does not use is refused rather than ignored.
    #[arg(long, value_enum, default_value_t = PatternArg::Constant)]
    pub pattern: PatternArg,
    /// burst: requests per burst (default 50).
    #[arg(long)]
    pub burst_size: Option<u32>,
    /// burst: milliseconds between bursts (default 1000).
    #[arg(long)]
    pub burst_every_ms: Option<u64>,
    /// ramp: the rate at the end (default 1000; starts at --rps).
    #[arg(long, allow_negative_numbers = true)]
    pub to_rps: Option<f64>,
    /// spike: how many times --rps during the spike (default 10).
    #[arg(long, allow_negative_numbers = true)]
    pub spike_multiplier: Option<f64>,
    /// spike: when it starts, ms after the run starts (default 2000).
    #[arg(long)]
    pub spike_start_ms: Option<u64>,
    /// spike: how long it lasts, in ms (default 1000).
    #[arg(long)]
    pub spike_length_ms: Option<u64>,
    /// A retry storm: a denied client retries after the denial's retry_after_ms, up to this
    /// many times per request (1 to 10).
    #[arg(long)]
    pub retry_attempts: Option<u32>,
    /// How long each admitted request is in flight, in ms: `80`, `uniform:20..200` or
    /// `lognormal:median=80,p99=900`. Under a concurrency limit a request holds its lease that
    /// long (default: it gives it back as soon as it is decided).
    #[arg(long, value_name = "MS")]
    pub hold_ms: Option<String>,
    /// Decide on the rules' shared keys, continuing from the state earlier runs and `check`
    /// left (default: the run gets its own key namespace and every limiter starts full).
    #[arg(long)]
    pub continue_state: bool,
    /// Print the offered traffic per bin (from the schedule) and exit without running, as
    /// the app's workload preview shows it; with --json, `{"bin_ms", "offered", "duration_ms"}`.
    #[arg(long)]
    pub preview: bool,
    /// Simulated app instances, each with its own Redis connection, sending at once (at most
    /// 256; refused before any connects when they would come within 16 of the Redis's
    /// maxclients).
    #[arg(long, default_value_t = DEFAULT_SERVERS)]
    pub servers: u32,
    /// Redis connections the servers share instead of one each (1 to --servers): for a run
    /// about throughput rather than the race, the servers' calls pipeline on each. Leave it
    /// out for the race demo: separate app instances have separate connections.
    #[arg(long)]
    pub connections: Option<u32>,
    /// Distinct client keys.
    #[arg(long, default_value_t = DEFAULT_KEYS)]
    pub keys: u32,
    /// Skew keys with a Zipf distribution of this exponent (client-0 is the hot key).
    #[arg(long, allow_negative_numbers = true)]
    pub zipf: Option<f64>,
    /// What each request costs.
    #[arg(long, default_value_t = DEFAULT_COST)]
    pub cost: u64,
    /// Seeds Poisson gaps and key choices.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Also run the naive GET-then-SET limiter (the broken approach) on the same traffic.
    #[arg(long)]
    pub naive: bool,
    /// Every configuration of a grid around the rule on the same traffic and seed:
    /// PARAM=V1,V2,... (repeat for a second parameter; at most 100 configurations).
    #[arg(long, value_name = "PARAM=V1,V2,...", conflicts_with_all = ["compare", "naive"])]
    pub sweep: Vec<String>,
    /// The sweep's suggestion: the smallest configuration that denies at most this
    /// percentage of requests.
    #[arg(long, default_value_t = 1.0, requires = "sweep")]
    pub suggest_max_denied_pct: f64,
    /// Draw the sweep's heatmaps (% requests denied, % keys denied) to this PNG or SVG file.
    #[arg(long, requires = "sweep")]
    pub sweep_chart: Option<PathBuf>,
    /// Decide on the Redis server's clock instead of each request's send time.
    #[arg(long)]
    pub server_clock: bool,
    /// Write one row per request and algorithm to this CSV file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw the run chart to this PNG or SVG file: requests per bin (the bin fits the run)
    /// and admissions under each rule's envelope, as the app draws it.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Replace --csv, --chart and --sweep-chart files that exist already (without it an existing file is refused
    /// before the run, and kept). Every file is written whole or not at all either way.
    #[arg(long)]
    pub force: bool,
    /// What the chart shows: both panels, requests per bin, or admissions so far under the
    /// envelope (the app's Per bin / Cumulative).
    #[arg(long, value_enum, default_value_t = ChartMeasure::Both, requires = "chart")]
    pub chart_measure: ChartMeasure,
    /// Draw this client key's limiter state (remaining, or tokens, after each decision) under
    /// the chart, for the first rule (not the naive one): the app's key state.
    #[arg(long, requires = "chart")]
    pub chart_key: Option<String>,
}

/// `--chart-measure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChartMeasure {
    Both,
    PerBin,
    Cumulative,
}

impl SimulateArgs {
    /// Refuses a pattern flag that the chosen pattern would ignore, naming what it uses.
    fn check_pattern_flags(&self) -> anyhow::Result<()> {
        let given = [
            ("rps", self.rps.is_some(), "constant, poisson, ramp, spike"),
            ("burst-size", self.burst_size.is_some(), "burst"),
            ("burst-every-ms", self.burst_every_ms.is_some(), "burst"),
            ("to-rps", self.to_rps.is_some(), "ramp"),
            ("spike-multiplier", self.spike_multiplier.is_some(), "spike"),
            ("spike-start-ms", self.spike_start_ms.is_some(), "spike"),
            ("spike-length-ms", self.spike_length_ms.is_some(), "spike"),
        ];
        let pattern = self
            .pattern
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        for (flag, present, used_by) in given {
            if present && !used_by.split(", ").any(|p| p == pattern) {
                let uses = match self.pattern {
                    PatternArg::Constant | PatternArg::Poisson => "--rps",
                    PatternArg::Burst => "--burst-size and --burst-every-ms",
                    PatternArg::Ramp => "--rps and --to-rps",
                    PatternArg::Spike => {
                        "--rps, --spike-multiplier, --spike-start-ms and --spike-length-ms"
                    }
                };
                return Err(anyhow!(
                    "--{flag} does not apply to --pattern {pattern} (it uses {uses}); drop --{flag} or choose a pattern that uses it ({used_by})"
                ));
            }
        }
        Ok(())
    }

    /// The flags as the engine's workload description ([`WorkloadSpec`], which holds the
    /// defaults the help text names); refuses a pattern flag the pattern would ignore.
    fn workload_spec(&self) -> anyhow::Result<WorkloadSpec> {
        self.check_pattern_flags()?;
        let duration_ms = match self.duration_secs {
            Some(secs) if !(secs.is_finite() && secs > 0.0) => {
                return Err(anyhow!(
                    "invalid --duration-secs: must be more than 0, got {secs}"
                ))
            }
            Some(secs) => Some((secs * 1000.0).round().max(1.0) as u64),
            None => None,
        };
        Ok(WorkloadSpec {
            pattern: self.pattern.into(),
            rps: self.rps,
            burst_size: self.burst_size,
            burst_every_ms: self.burst_every_ms,
            to_rps: self.to_rps,
            spike_multiplier: self.spike_multiplier,
            spike_start_ms: self.spike_start_ms,
            spike_length_ms: self.spike_length_ms,
            requests: self.requests,
            duration_ms,
            servers: Some(self.servers),
            keys: Some(self.keys),
            zipf: self.zipf.is_some(),
            zipf_exponent: self.zipf,
            cost: Some(self.cost),
            seed: Some(self.seed),
            retry_attempts: self.retry_attempts,
            hold_ms: self.hold_ms.clone(),
        })
    }

    fn sweep_axes(&self) -> anyhow::Result<Vec<SweepAxis>> {
        self.sweep
            .iter()
            .map(|s| s.parse::<SweepAxis>().map_err(|e| anyhow!(e)))
            .collect()
    }

    fn spec(&self) -> anyhow::Result<SimSpec> {
        let described = self.workload_spec()?;
        if let Some(path) = &self.policies {
            self.rule.refuse_with("--policies")?;
            let policies = super::check_policy::load_policies(path, &self.policy)?;
            let workload = described.workload().map_err(sim_error)?;
            let spec = SimSpec::policies(policies, workload).map_err(sim_error)?;
            return self.finish_spec(spec);
        }
        // The rule's flags are checked before the workload's, under their own names.
        let rule = if self.compare {
            // The five share --limit and --window-ms (the token bucket and GCRA are derived
            // from them): their own flags would be ignored.
            self.rule
                .rule_for(ratelockr::AlgorithmKind::FixedWindow)
                .map_err(|_| {
                    anyhow!("--compare sets all five from --limit and --window-ms; drop --capacity, --refill-per-sec and --burst")
                })?;
            None
        } else {
            let kind = self
                .algorithm
                .ok_or_else(|| anyhow!("give --algorithm or --compare"))?
                .into();
            Some(self.rule.rule_for(kind)?)
        };
        let workload = described.workload().map_err(sim_error)?;
        let spec = match rule {
            None => {
                let prefix = self
                    .rule
                    .rule
                    .as_deref()
                    .map(|r| format!("{r}-"))
                    .unwrap_or_default();
                SimSpec::compare(
                    &prefix,
                    self.rule.limit.unwrap_or(10),
                    self.rule.window_ms.unwrap_or(1000),
                    workload,
                    self.naive,
                )
                .map_err(flag_error)?
            }
            Some(rule) if !self.sweep.is_empty() => {
                anyhow::ensure!(
                    (0.0..=100.0).contains(&self.suggest_max_denied_pct),
                    "invalid --suggest-max-denied-pct: must be from 0 to 100"
                );
                let axes = self.sweep_axes()?;
                SimSpec::sweep(&rule, axes, workload).map_err(sim_error)?
            }
            Some(rule) => SimSpec::single(rule, workload, self.naive).map_err(flag_error)?,
        };
        self.finish_spec(spec)
    }

    /// The clock and key namespace flags, then the spec checked whole.
    fn finish_spec(&self, mut spec: SimSpec) -> anyhow::Result<SimSpec> {
        spec.connections = self.connections;
        if self.server_clock {
            spec.clock = SimClock::Server;
        }
        if !self.continue_state {
            let id = format!("cli-{}", ratelockr::telemetry::now_ms());
            spec.scope = Some(SimSpec::fresh_scope(&id));
        }
        spec.validate().map_err(sim_error)?;
        for target in &spec.targets {
            let algorithms: Vec<_> = match &target.policy {
                Some(policy) => policy.all_limits().map(|l| *l.algorithm()).collect(),
                None => vec![*target.rule.algorithm()],
            };
            for algorithm in &algorithms {
                crate::console::warn_log_memory("simulate", target.name(), algorithm);
            }
        }
        Ok(spec)
    }
}

/// A simulator refusal, under the flag that caused it.
fn sim_error(err: sim::SimError) -> anyhow::Error {
    match err {
        sim::SimError::InvalidWorkload { parameter, reason } => {
            anyhow!("invalid --{}: {reason}", flag_name(parameter))
        }
        sim::SimError::Rule(err) => flag_error(err),
        other => anyhow!(other),
    }
}

/// The flag behind a workload parameter.
fn flag_name(parameter: &str) -> String {
    match parameter {
        "duration_ms" => "duration-secs".into(),
        "zipf_exponent" => "zipf".into(),
        "burst_size" | "burst_every_ms" | "to_rps" | "spike_multiplier" | "spike_length_ms"
        | "retry_attempts" => parameter.replace('_', "-"),
        other => other.replace('_', "-"),
    }
}

/// Drives the progress bar from the simulator's progress events, and bins the records for
/// the run chart when one is asked for.
struct Watch {
    bar: ProgressBar,
    timeline: Option<TimelineObserver>,
}

impl SimObserver for Watch {
    fn on_start(&self, started_at_ms: u64) {
        if let Some(t) = &self.timeline {
            t.on_start(started_at_ms);
        }
    }

    fn on_record(&self, record: &sim::Record) {
        if let Some(t) = &self.timeline {
            t.on_record(record);
        }
    }

    fn on_progress(&self, p: &Progress) {
        if let Some(planned) = p.planned {
            self.bar.set_length(planned);
        }
        self.bar.set_position(p.completed);
    }
}

pub async fn run(
    global: &Global,
    args: &SimulateArgs,
    cancel: tokio_util::sync::CancellationToken,
) -> anyhow::Result<ExitCode> {
    crate::opts::policy_needs_file(!args.policy.is_empty(), args.policies.as_deref())?;
    let spec = args.spec()?;
    if args.preview {
        super::simulate_print::print_preview(&spec, global.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Unwritable export paths fail now, not after the run.
    let mut csv = console::prepare_exports(
        args.csv.as_deref(),
        &[args.chart.as_deref(), args.sweep_chart.as_deref()],
        args.force,
    )?;
    let backend = global.backend()?;
    let limiter = global.deciding_limiter(&backend).await?;
    crate::console::warn_unless_redis_answers(&limiter, "simulate").await;

    let bar = crate::console::progress_bar(
        spec.workload.planned_requests().unwrap_or(0),
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} requests  {per_sec}",
    );
    let observer = Watch {
        bar: bar.clone(),
        timeline: args.chart.as_ref().map(|_| {
            let builder = TimelineBuilder::new(&spec, 0);
            match &args.chart_key {
                Some(key) => builder.with_key(key),
                None => builder,
            }
            .observer()
        }),
    };
    let report = sim::run(
        &limiter,
        &spec,
        csv.as_mut().map(|s| s as &mut dyn sim::RecordSink),
        &observer,
        cancel,
    )
    .await
    .map_err(sim_error)?;
    bar.finish_and_clear();

    if let (Some(path), Some(timeline)) = (&args.chart, observer.timeline) {
        // The run chart, as the app draws and exports it (crates/ratelockr-lab/src/export/style.rs).
        let timeline = timeline.finish(report.duration_ms);
        let shown = match args.chart_measure {
            ChartMeasure::Both => Shown::Both,
            ChartMeasure::PerBin => Shown::PerBin,
            ChartMeasure::Cumulative => Shown::Cumulative,
        };
        if let (Some(key), None) = (&args.chart_key, &timeline.key) {
            eprintln!("ratelockr: warning: --chart-key {key}: no real rule to trace it on");
        } else if let Some(trace) = timeline.key.as_ref().filter(|k| k.points.is_empty()) {
            eprintln!(
                "ratelockr: warning: --chart-key {}: that key sent nothing to {} (keys are client-0 … client-N)",
                trace.key, trace.rule
            );
        }
        let subtitle = format!("bins of {} ms", timeline.bin_ms);
        let view =
            export::ChartView::of_timeline_showing(&timeline, &report.workload, &subtitle, shown);
        export::render_view(&view, path).with_context(|| format!("drawing {}", path.display()))?;
    }
    let choice = super::simulate_sweep::choice(&report, &spec.sweep, args.suggest_max_denied_pct);
    if let Some(path) = &args.sweep_chart {
        let params: Vec<&str> = spec.sweep.iter().map(|a| a.param.as_str()).collect();
        let title = format!(
            "Simulated sweep of {} ({} configurations, {} requests each)",
            params.join(" × "),
            report.sweep.len(),
            report.requests_sent
        );
        export::heatmap::render_points(&report.sweep, &title, path)
            .with_context(|| format!("drawing {}", path.display()))?;
    }
    if global.json {
        print_json(&super::simulate_print::JsonSummary::of(&report, choice))?;
    } else {
        super::simulate_print::print_table(
            &report,
            &spec,
            args.csv.as_deref(),
            args.chart.as_deref(),
        );
        super::simulate_sweep::print(&report, &spec.sweep, choice.as_ref());
    }
    if report.cancelled {
        eprintln!("ratelockr: cancelled; the summary and exports cover the requests sent so far");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
