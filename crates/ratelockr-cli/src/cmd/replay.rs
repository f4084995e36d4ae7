//! `ratelockr replay`: a log decided on its own clock through one rule, several (`--rules`) or
//! a sweep's grid, with CSV, chart and heatmap exports and a per-key report.

use crate::console::{self, print_json};
use crate::opts::{AlgorithmArg, Global, RuleArgs};
use anyhow::{anyhow, Context};
use clap::{Args, ValueEnum};
use indicatif::ProgressBar;
use ratelockr::Rule;
use ratelockr_lab::export;
use ratelockr_lab::replay::{
    self, DurationUnit, FieldNames, LogFormat, LogSource, ParseSpec, ReplayObserver,
    ReplayProgress, ReplayReport, ReplaySpec, SweepAxis,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Combined,
    Common,
    Jsonl,
    Csv,
}

impl From<FormatArg> for LogFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Combined => LogFormat::Combined,
            FormatArg::Common => LogFormat::Common,
            FormatArg::Jsonl => LogFormat::Jsonl,
            FormatArg::Csv => LogFormat::Csv,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurationUnitArg {
    Ms,
    S,
}

impl From<DurationUnitArg> for DurationUnit {
    fn from(u: DurationUnitArg) -> Self {
        match u {
            DurationUnitArg::Ms => DurationUnit::Ms,
            DurationUnitArg::S => DurationUnit::S,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The log: a file (gzip is recognised by its content) or - for stdin.
    #[arg(long)]
    pub log: String,
    /// The log's format (default: detected from its first line).
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// The client key: ip, method, path, path[N], field:NAME, header:NAME, joined by +
    /// (ip+path[1]: the address and the first path segment). Default: ip, or with --policies
    /// the policies' own `key`.
    #[arg(long)]
    pub key: Option<String>,
    /// JSON lines / CSV: the key's field (the same as --key field:NAME).
    #[arg(long, conflicts_with = "key")]
    pub key_field: Option<String>,
    /// JSON lines / CSV: the timestamp's field (RFC 3339, epoch s or ms).
    #[arg(long)]
    pub time_field: Option<String>,
    /// JSON lines / CSV: the cost's field (default: every request costs 1).
    #[arg(long)]
    pub cost_field: Option<String>,
    /// The request's duration field: an admitted request holds a concurrency limit's lease
    /// that long, and the report says how many requests each key had in flight. JSON lines /
    /// CSV: a field (ms; 250ms or 1.5s say their unit); combined: a named --extra-fields
    /// field, or else the first field after them (nginx's $request_time, in seconds).
    #[arg(long, value_name = "NAME")]
    pub duration_field: Option<String>,
    /// The unit of the duration field's bare numbers (default: s for nginx's $request_time,
    /// a combined or common line or a field named request_time; else ms).
    #[arg(long, value_enum, requires = "duration_field")]
    pub duration_unit: Option<DurationUnitArg>,
    /// Combined format: names of the fields after the user agent, in order (the headers the
    /// log captures, e.g. x-api-key), for header:NAME and field:NAME.
    #[arg(long, value_delimiter = ',')]
    pub extra_fields: Vec<String>,
    /// Only requests with this method (repeatable, or comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub method: Vec<String>,
    /// Only requests whose target (path and query, as logged) matches this regex.
    #[arg(long)]
    pub path: Option<String>,
    /// How far out of order (in seconds, at most 3600) requests may be and still be sorted.
    #[arg(long, default_value_t = 10)]
    pub lookahead_secs: u64,
    /// The algorithm of the one rule to replay (or --rules).
    #[arg(
        long,
        value_enum,
        required_unless_present_any = ["rules", "preview", "policies"],
        conflicts_with_all = ["rules", "policies"]
    )]
    pub algorithm: Option<AlgorithmArg>,
    /// A policies file (TOML or JSON, or a rules file): replay its policies side by side
    /// instead, each decided all or nothing over its limits, keys under their tier's.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rules", "sweep"])]
    pub policies: Option<PathBuf>,
    /// The policy of --policies to replay; repeat for several (default: every policy of the
    /// file). They must key requests alike (their `key`), or give --key.
    #[arg(long, value_name = "NAME", requires = "policies")]
    pub policy: Vec<String>,
    #[command(flatten)]
    pub rule: RuleArgs,
    /// Several rules side by side: a JSON list of rules (or {"rules": [...]}) or a TOML file
    /// of [[rules]], in the rules' usual form ({"name", "algorithm", parameters}).
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Top client keys by denials, per rule (at most 10,000).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// A grid around the (first) rule: PARAM=V1,V2,... (repeat for a second parameter).
    #[arg(long)]
    pub sweep: Vec<String>,
    /// The suggestion's target: the smallest allowance under which at most this percentage
    /// of keys are ever denied.
    #[arg(long, default_value_t = 1.0)]
    pub suggest_max_keys_pct: f64,
    /// Keys held per rule for per-key figures (exact up to this many distinct keys; 1 to
    /// 16,777,216, about 100 bytes each).
    #[arg(long, default_value_t = replay::keytable::DEFAULT_CAPACITY)]
    pub key_capacity: usize,
    /// Connections deciding at once (each key always on the same one; at most 64). Refused
    /// before any opens when they would come within 16 of the Redis's maxclients.
    #[arg(long, default_value_t = 4)]
    pub lanes: usize,
    /// Write one row per decision to this CSV file (the simulation CSV's columns).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw decisions over log time to this PNG or SVG file.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Draw the sweep's heatmaps (% requests denied, % keys denied) to this PNG or SVG file.
    #[arg(long, requires = "sweep")]
    pub sweep_chart: Option<PathBuf>,
    /// Replace --csv, --chart and --sweep-chart files that exist already (without it an existing file is refused
    /// before the run, and kept). Every file is written whole or not at all either way.
    #[arg(long)]
    pub force: bool,
    /// Show the first N lines (1 to 10,000) and the key each yields, and stop (no Redis
    /// needed).
    #[arg(long)]
    pub preview: Option<usize>,
}

impl ReplayArgs {
    fn parse_spec(&self) -> ParseSpec {
        self.parse_spec_keyed(None)
    }

    /// The log's reading; `policies_key`: the key the policies name, when --key and
    /// --key-field do not.
    fn parse_spec_keyed(&self, policies_key: Option<&str>) -> ParseSpec {
        let key = match (&self.key_field, &self.key, policies_key) {
            (Some(field), _, _) => format!("field:{field}"),
            (None, Some(key), _) => key.clone(),
            (None, None, Some(key)) => key.to_string(),
            (None, None, None) => ParseSpec::default().key,
        };
        ParseSpec {
            format: self.format.map(Into::into),
            fields: FieldNames {
                time: self.time_field.clone(),
                cost: self.cost_field.clone(),
                extra: self.extra_fields.clone(),
                duration: self.duration_field.clone(),
                duration_unit: self.duration_unit.map(Into::into),
            },
            key,
            methods: self.method.clone(),
            path: self.path.clone(),
            lookahead_ms: self.lookahead_secs.saturating_mul(1000),
        }
    }

    fn rules(&self) -> anyhow::Result<Vec<Rule>> {
        if let Some(path) = &self.rules {
            self.rule.refuse_with("--rules")?;
            return Ok(ratelockr::rules_file::load_rules_file(path)?);
        }
        let kind = self
            .algorithm
            .ok_or_else(|| anyhow!("give --algorithm or --rules"))?
            .into();
        Ok(vec![self.rule.rule_for(kind)?])
    }

    /// The replay's specification, checked whole before the log is opened or Redis asked.
    fn spec(&self) -> anyhow::Result<ReplaySpec> {
        let spec = self.unchecked_spec()?;
        spec.check_sizes().map_err(spec_error)?;
        spec.parse.compile().map_err(spec_error)?;
        Ok(spec)
    }

    fn unchecked_spec(&self) -> anyhow::Result<ReplaySpec> {
        let sweep = self
            .sweep
            .iter()
            .map(|s| s.parse::<SweepAxis>().map_err(|e| anyhow!(e)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(path) = &self.policies {
            self.rule.refuse_with("--policies")?;
            let policies = super::check_policy::load_policies(path, &self.policy)?;
            let key = match (&self.key, &self.key_field) {
                (None, None) => policies_key(&policies)?,
                _ => None,
            };
            return Ok(ReplaySpec {
                parse: self.parse_spec_keyed(key.as_deref()),
                policies,
                top: self.top,
                key_capacity: self.key_capacity,
                lanes: self.lanes,
                ..ReplaySpec::default()
            });
        }
        Ok(ReplaySpec {
            parse: self.parse_spec(),
            rules: warn_log_memory(self.rules()?),
            sweep,
            top: self.top,
            suggest_max_keys_pct: self.suggest_max_keys_pct,
            key_capacity: self.key_capacity,
            lanes: self.lanes,
            ..ReplaySpec::default()
        })
    }
}

/// The one key expression the policies name (None when none names one). A replay reads one
/// key per request: policies that key differently are refused, naming both.
fn policies_key(policies: &[ratelockr::Policy]) -> anyhow::Result<Option<String>> {
    let mut named = policies.iter().filter_map(|p| Some((p.name(), p.key()?)));
    let Some((first, key)) = named.next() else {
        return Ok(None);
    };
    if let Some((other, other_key)) = named.find(|(_, k)| *k != key) {
        return Err(anyhow!(
            "policies {first:?} and {other:?} key requests differently ({key} and {other_key}): replay one at a time with --policy, or give --key for both"
        ));
    }
    Ok(Some(key.to_string()))
}

/// The progress bar, by bytes of the source when its size is known.
struct Bar(ProgressBar);

impl ReplayObserver for Bar {
    fn on_progress(&self, p: &ReplayProgress) {
        if let Some(total) = p.bytes_total {
            self.0.set_length(total);
            self.0.set_position(p.bytes_read);
        }
        self.0.set_message(format!("{} requests", p.requests));
    }
}

pub async fn run(
    global: &Global,
    args: &ReplayArgs,
    cancel: tokio_util::sync::CancellationToken,
) -> anyhow::Result<ExitCode> {
    crate::opts::policy_needs_file(!args.policy.is_empty(), args.policies.as_deref())?;
    anyhow::ensure!(
        !args.log.trim().is_empty(),
        "invalid --log: give the log's file, or - for stdin"
    );
    let source = LogSource::from_arg(&args.log);
    if let Some(n) = args.preview {
        let preview = replay::preview(&source, &args.parse_spec(), n).map_err(spec_error)?;
        if global.json {
            print_json(&preview)?;
        } else {
            println!(
                "format: {}{}",
                preview.format.map_or("not detected", |f| f.as_str()),
                if preview.gzip { " (gzip)" } else { "" }
            );
            for line in &preview.lines {
                match (&line.key, &line.issue) {
                    (Some(key), _) => println!(
                        "line {:>6}  {}  key {key}",
                        line.line,
                        line.time_ms.map(|t| t.to_string()).unwrap_or_default()
                    ),
                    (None, Some(issue)) => println!("line {:>6}  skipped: {issue}", line.line),
                    (None, None) => {}
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let spec = args.spec()?;
    source.check_readable().map_err(|e| {
        anyhow!(replay::ReplayError::Open {
            log: source.describe(),
            message: e.to_string(),
        })
    })?;
    let mut csv = console::prepare_exports(
        args.csv.as_deref(),
        &[args.chart.as_deref(), args.sweep_chart.as_deref()],
        args.force,
    )?;
    let backend = global.backend()?;
    let limiter = global.deciding_limiter(&backend).await?;
    let bar = crate::console::progress_bar(
        0,
        "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes}  {msg}",
    );
    let observer = Bar(bar.clone());
    let report = replay::run(
        &limiter,
        &source,
        &spec,
        csv.as_mut()
            .map(|s| s as &mut dyn ratelockr_lab::sim::RecordSink),
        &observer,
        cancel,
    )
    .await
    .map_err(spec_error)?;
    bar.finish_and_clear();

    if let Some(path) = &args.chart {
        export::replay_chart::render(&report, path)
            .with_context(|| format!("drawing {}", path.display()))?;
    }
    if let Some(path) = &args.sweep_chart {
        export::heatmap::render(&report, path)
            .with_context(|| format!("drawing {}", path.display()))?;
    }
    if global.json {
        print_json(&report)?;
    } else {
        print_report(&report, args);
    }
    for warning in &report.warnings {
        eprintln!("ratelockr: warning: {warning}");
    }
    if let Some(err) = &report.input_error {
        eprintln!("ratelockr: warning: {err}; the report covers the lines before it");
    }
    let fail_open: u64 = report.rules.iter().map(|r| r.fail_open).sum();
    if fail_open > 0 {
        eprintln!(
            "ratelockr: warning: {fail_open} decisions failed open (Redis at {} could not decide them); they are counted apart, not as allowed",
            limiter.target()
        );
    }
    if report.cancelled {
        eprintln!("ratelockr: cancelled; the report covers the requests decided so far");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// Names the flag behind a spec error.
fn spec_error(err: replay::ReplayError) -> anyhow::Error {
    match err {
        replay::ReplayError::InvalidSpec { parameter, reason } => {
            let flag = match parameter {
                "lookahead" => "lookahead-secs",
                other => other,
            };
            anyhow!("invalid --{flag}: {reason}")
        }
        other => anyhow!(other),
    }
}

/// A log time as people read it (UTC).
fn log_time(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_else(|| ms.to_string())
}

fn print_report(r: &ReplayReport, args: &ReplayArgs) {
    let span = match (r.first_ms, r.last_ms) {
        (Some(a), Some(b)) => format!(
            "{} to {} UTC ({:.1} h)",
            log_time(a),
            log_time(b),
            (b - a) as f64 / 3_600_000.0
        ),
        _ => String::new(),
    };
    println!(
        "{} ({}{}): {} lines, {} requests decided by key {}, {} keys{}; {span}",
        r.source,
        r.format.as_str(),
        if r.gzip { ", gzip" } else { "" },
        r.lines,
        r.requests,
        r.key,
        r.keys,
        if r.keys_exact { "" } else { " (estimated)" },
    );
    println!(
        "skipped: {} malformed, {} filtered out, {} without a key, {} out of order beyond {} s ({} sorted); {} decisions/s",
        r.malformed,
        r.filtered,
        r.no_key,
        r.out_of_order,
        r.lookahead_ms / 1000,
        r.reordered,
        r.decisions_per_sec
    );
    for issue in &r.issues {
        println!("  line {}: {}", issue.line, issue.reason);
    }
    for rule in &r.rules {
        println!(
            "\n{} ({}): {} requests, {} allowed ({}%), {} denied ({}%), {} failed open; {} of {} keys denied at least once ({}%)",
            rule.rule,
            rule.algorithm,
            rule.requests,
            rule.allowed,
            rule.allowed_pct,
            rule.denied,
            rule.denied_pct,
            rule.fail_open,
            rule.keys_denied,
            rule.keys,
            rule.keys_denied_pct
        );
        if !rule.top_keys.is_empty() {
            println!(
                "  {:<40} {:>9} {:>9} {:>9} {:>23} {:>7}",
                "top keys by denials",
                "requests",
                "denied",
                "% denied",
                "first denied (UTC)",
                "streak"
            );
            for k in &rule.top_keys {
                println!(
                    "  {:<40} {:>9} {:>9} {:>9} {:>23} {:>7}",
                    k.key,
                    k.requests,
                    k.denied,
                    k.denied_pct,
                    k.first_denied_ms.map(log_time).unwrap_or_default(),
                    k.longest_denied_streak
                );
            }
            if !rule.top_keys_exact {
                println!("  (more keys than the table holds: denial counts are space-saving estimates, see denied_error in --json)");
            }
        }
        if let Some(p) = &rule.peak_rates {
            println!(
                "  per-key peak per {} ms over {} keys: p50 {}, p90 {}, p99 {}, max {}",
                p.window_ms, p.keys, p.p50, p.p90, p.p99, p.max
            );
        }
        if let Some(f) = &rule.in_flight {
            print_in_flight(f);
        }
        if let Some(s) = &rule.suggestion {
            println!("  suggestion: {} ({})", s.sentence, s.method);
        }
        if let Some(p) = &rule.policy {
            super::policy_lines::PolicyLines {
                name: &rule.rule,
                denied_by: &p.denied_by,
                shadow_denied: p.shadow_denied,
                keys_denied: rule.keys_denied,
                tier_keys: &p.tier_keys,
            }
            .print("  ");
        }
    }
    super::replay_changes::print(&r.changes);
    if !r.sweep.is_empty() {
        println!("\nsweep:");
        println!(
            "  {:<48} {:>10} {:>10} {:>12}",
            "configuration", "denied", "% denied", "% keys denied"
        );
        for p in &r.sweep {
            let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!(
                "  {:<48} {:>10} {:>10} {:>12}",
                params.join(" "),
                p.denied,
                p.denied_pct,
                p.keys_denied_pct
            );
        }
    }
    if let Some(csv) = &args.csv {
        println!("\nCSV:   {}", csv.display());
    }
    if let Some(chart) = &args.chart {
        println!("chart: {}", chart.display());
    }
    if let Some(chart) = &args.sweep_chart {
        println!("heatmap: {}", chart.display());
    }
}

/// The rules, after a warning for each sliding window log whose memory grows past a listpack.
fn warn_log_memory(rules: Vec<Rule>) -> Vec<Rule> {
    for rule in &rules {
        crate::console::warn_log_memory("replay", rule.name(), rule.algorithm());
    }
    rules
}

/// Requests in flight per key, from the log's durations.
fn print_in_flight(f: &replay::InFlight) {
    let capped = f
        .capped_at_ms
        .map(|ms| format!(" (each for at most its lease, {ms} ms)"))
        .unwrap_or_default();
    println!(
        "  per-key peak in flight over {} keys{capped}: p50 {}, p90 {}, p99 {}, max {}",
        f.keys, f.p50, f.p90, f.p99, f.max
    );
    if f.top_keys.is_empty() {
        return;
    }
    println!(
        "  {:<40} {:>9} {:>9} {:>9}",
        "top keys in flight", "peak", "requests", "denied"
    );
    for k in &f.top_keys {
        println!(
            "  {:<40} {:>9} {:>9} {:>9}",
            k.key, k.peak, k.requests, k.denied
        );
    }
}
