//! `ratelockr simulate`: a workload against one rule, all five algorithms, or a sweep of one
//! rule's parameters ([`super::simulate_sweep`]), with CSV and chart export, a progress bar
//! and a summary table.

use crate::console::{self, print_json};
use crate::opts::{flag_error, AlgorithmArg, Global, RuleArgs};
use anyhow::{anyhow, Context};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use ratelockr::export::timeline::TimelineObserver;
use ratelockr::export::view::Shown;
use ratelockr::export::{self, TimelineBuilder};
use ratelockr::sim::workload_spec::{DEFAULT_COST, DEFAULT_KEYS, DEFAULT_SEED, DEFAULT_SERVERS};
use ratelockr::sim::{
    self, PatternKind, Progress, Report, SimClock, SimObserver, SimSpec, WorkloadSpec,
};
use ratelockr::sweep::{SweepAxis, SweepChoice};
use serde::Serialize;
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
                if let Some(warning) =
                    ratelockr::log_memory::log_memory_warning(target.name(), algorithm)
                {
                    eprintln!("ratelockr simulate: warning: {warning}");
                }
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

pub async fn run(global: &Global, args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    crate::opts::policy_needs_file(!args.policy.is_empty(), args.policies.as_deref())?;
    let spec = args.spec()?;
    if args.preview {
        print_preview(&spec, global.json)?;
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
    let cancel = crate::console::cancel_on_ctrl_c();
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
        // The run chart, as the app draws and exports it (src/export/style.rs).
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
        print_json(&JsonSummary {
            suggestion: choice,
            ..JsonSummary::from(&report)
        })?;
    } else {
        print_table(&report, args);
        super::simulate_sweep::print(&report, &spec.sweep, choice.as_ref());
    }
    if report.cancelled {
        eprintln!("ratelockr: cancelled; the summary and exports cover the requests sent so far");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// The workload's shape, without running it.
fn print_preview(spec: &SimSpec, json: bool) -> anyhow::Result<()> {
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
struct JsonSummary<'a> {
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
    sweep: &'a [ratelockr::sweep::SweepPoint],
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestion: Option<SweepChoice>,
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

fn print_table(report: &Report, args: &SimulateArgs) {
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
    if let Some(csv) = &args.csv {
        println!("\nCSV:   {}", csv.display());
    }
    if let Some(chart) = &args.chart {
        println!("chart: {}", chart.display());
    }
}
