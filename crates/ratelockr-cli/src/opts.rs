//! Command-line options shared by the subcommands: the global flags (`--redis`, `--tls-*`,
//! `--embedded`, `--json`...), the algorithm and a rule's parameters as flags, and rule errors
//! named by their flag. Each subcommand's own arguments live in its `cmd/<name>.rs`.

use anyhow::anyhow;
use clap::{Args, ValueEnum};
use ratelockr::{
    Algorithm, AlgorithmKind, Backend, KeySpace, Limiter, LimiterOptions, Rule, RuleError,
    TlsOptions,
};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct Global {
    /// Redis to use. The password in it is never printed.
    #[arg(long, global = true, env = "REDIS_URL", hide_env_values = true,
          default_value = ratelockr::DEFAULT_REDIS_URL)]
    pub redis: String,
    /// TLS (rediss://): trust the CA(s) in this PEM file instead of the system's.
    #[arg(long, global = true, env = "REDIS_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// TLS: this client certificate (PEM), for a Redis that requires mutual TLS.
    #[arg(long, global = true, env = "REDIS_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, env = "REDIS_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// TLS without verifying the server's certificate (as `#insecure` in the URL). Anyone on
    /// the path can then pose as the Redis; every command says so.
    #[arg(long, global = true, env = "REDIS_TLS_INSECURE")]
    pub tls_insecure: bool,
    /// Start a private redis-server on a free loopback port instead (stopped on exit).
    #[arg(long, global = true)]
    pub embedded: bool,
    /// Start a private Redis Cluster instead: 3 masters with a replica each on free loopback
    /// ports (stopped on exit).
    #[arg(long, global = true, conflicts_with = "embedded")]
    pub embedded_cluster: bool,
    /// Prefix of every key RateLockr writes.
    #[arg(long, global = true, default_value = ratelockr::keys::DEFAULT_PREFIX)]
    pub prefix: String,
    /// The longest a decision may take before it fails open, in milliseconds (1 to 60,000).
    #[arg(long, global = true, default_value_t = 250)]
    pub deadline_ms: u64,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

impl Global {
    /// The Redis to use: `--embedded` or `--embedded-cluster` starts one, otherwise `--redis`.
    pub fn backend(&self) -> anyhow::Result<Backend> {
        let tls = self.tls_options();
        if self.embedded {
            anyhow::ensure!(
                tls.is_empty(),
                "--tls-* options are for a rediss:// --redis; the --embedded Redis is plain TCP on loopback"
            );
            return Ok(Backend::embedded()?);
        }
        if self.embedded_cluster {
            anyhow::ensure!(
                tls.is_empty(),
                "--tls-* options are for a rediss:// --redis; the --embedded-cluster is plain TCP on loopback"
            );
            return Ok(Backend::embedded_cluster()?);
        }
        let target = ratelockr::RedisTarget::parse(&self.redis)?.with_tls(tls)?;
        if target.is_insecure() {
            eprintln!("ratelockr: warning: {target}: {}", target.transport());
        }
        Ok(Backend::external(target))
    }

    /// The `--tls-*` flags (or their environment variables).
    pub fn tls_options(&self) -> TlsOptions {
        TlsOptions {
            ca: self.tls_ca.clone(),
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
            insecure: self.tls_insecure,
        }
    }

    pub fn limiter_options(&self) -> anyhow::Result<LimiterOptions> {
        let options = LimiterOptions {
            keys: KeySpace::checked(&self.prefix).map_err(|e| anyhow!("invalid --prefix: {e}"))?,
            deadline: Duration::from_millis(self.deadline_ms),
            ..LimiterOptions::default()
        };
        check_options(&options)?;
        Ok(options)
    }

    pub fn limiter(&self, backend: &Backend) -> anyhow::Result<Limiter> {
        Ok(Limiter::new(backend.target(), self.limiter_options()?))
    }

    /// [`Global::limiter`] for the commands that decide: a server that answers but cannot run
    /// scripts is refused here, at once, with a message that says so (every decision would
    /// otherwise fail open). A server that does not answer is left to the decisions, which
    /// fail open as designed.
    pub async fn deciding_limiter(&self, backend: &Backend) -> anyhow::Result<Limiter> {
        let limiter = self.limiter(backend)?;
        refuse_without_scripting(&limiter).await?;
        Ok(limiter)
    }
}

/// `--policy` names a policy of a `--policies` file: without the file it would be ignored.
pub fn policy_needs_file(
    policy_given: bool,
    policies: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !policy_given || policies.is_some(),
        "--policy names a policy of a --policies FILE: give --policies as well"
    );
    Ok(())
}

/// [`LimiterOptions::check`], naming the flag behind the option.
pub fn check_options(options: &LimiterOptions) -> anyhow::Result<()> {
    options.check().map_err(|err| {
        let flag = match err.option {
            "deadline" => "--deadline-ms",
            "failure_mode.instances" => "--instances",
            "deny_cache.max_entries" | "deny_cache.max_bytes" => "--deny-cache",
            other => other,
        };
        anyhow!("invalid {flag}: {}", err.reason)
    })
}

/// An error when the limiter's server answers and cannot run scripts; Ok when it can, or when
/// it does not answer (the decisions then fail open as designed).
pub async fn refuse_without_scripting(limiter: &Limiter) -> anyhow::Result<()> {
    if let Ok(server) = limiter.server().await {
        server
            .require_scripting()
            .map_err(|failure| anyhow!("Redis at {}: {failure}", limiter.target()))?;
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AlgorithmArg {
    TokenBucket,
    Gcra,
    SlidingWindowLog,
    SlidingWindowCounter,
    FixedWindow,
    /// Requests in flight at once (--limit), each holding a lease (--lease-ms) until released.
    Concurrency,
    /// Requests per calendar --period (hour, day, week, month) in --time-zone (--limit).
    Calendar,
}

impl From<AlgorithmArg> for AlgorithmKind {
    fn from(a: AlgorithmArg) -> Self {
        match a {
            AlgorithmArg::TokenBucket => AlgorithmKind::TokenBucket,
            AlgorithmArg::Gcra => AlgorithmKind::Gcra,
            AlgorithmArg::SlidingWindowLog => AlgorithmKind::SlidingWindowLog,
            AlgorithmArg::SlidingWindowCounter => AlgorithmKind::SlidingWindowCounter,
            AlgorithmArg::FixedWindow => AlgorithmKind::FixedWindow,
            AlgorithmArg::Concurrency => AlgorithmKind::Concurrency,
            AlgorithmArg::Calendar => AlgorithmKind::Calendar,
        }
    }
}

/// A rule's parameters, as flags. Each is optional so that a flag the chosen algorithm does
/// not use is refused by name ([`RuleArgs::rule_for`]) rather than silently ignored.
#[derive(Debug, Clone, Args)]
pub struct RuleArgs {
    /// The rule's name; telemetry counts under it (default: the algorithm's name).
    #[arg(long)]
    pub rule: Option<String>,
    /// Token bucket: tokens held when full [default: 10].
    #[arg(long)]
    pub capacity: Option<u64>,
    /// Token bucket: tokens added per second [default: 10].
    #[arg(long, allow_negative_numbers = true)]
    pub refill_per_sec: Option<f64>,
    /// Windows and GCRA: requests admitted per window (GCRA: per period); concurrency:
    /// requests in flight at once [default: 10].
    #[arg(long)]
    pub limit: Option<u64>,
    /// Windows: the window's length in milliseconds (GCRA: its period) [default: 1000].
    #[arg(long)]
    pub window_ms: Option<u64>,
    /// GCRA: how many may pass at once (default: --limit).
    #[arg(long)]
    pub burst: Option<u64>,
    /// Concurrency: how long a lease lives unless released or renewed, in milliseconds
    /// [default: 60000].
    #[arg(long)]
    pub lease_ms: Option<u64>,
    /// Calendar: the period counted in: hour, day, week or month [default: day].
    #[arg(long)]
    pub period: Option<String>,
    /// Calendar: the IANA time zone whose calendar counts (Europe/Berlin) [default: UTC].
    #[arg(long)]
    pub time_zone: Option<String>,
    /// Calendar: the day weeks begin on, monday or sunday [default: monday].
    #[arg(long)]
    pub week_start: Option<String>,
}

impl RuleArgs {
    /// The flags given, by name, each with whether `kind` uses it.
    fn given(&self, kind: AlgorithmKind) -> [(&'static str, bool, bool); 9] {
        let bucket = kind == AlgorithmKind::TokenBucket;
        let in_flight = kind.is_concurrency();
        let calendar = kind == AlgorithmKind::Calendar;
        [
            ("capacity", self.capacity.is_some(), bucket),
            ("refill-per-sec", self.refill_per_sec.is_some(), bucket),
            ("limit", self.limit.is_some(), !bucket),
            (
                "window-ms",
                self.window_ms.is_some(),
                !bucket && !in_flight && !calendar,
            ),
            ("burst", self.burst.is_some(), kind == AlgorithmKind::Gcra),
            ("lease-ms", self.lease_ms.is_some(), in_flight),
            ("period", self.period.is_some(), calendar),
            ("time-zone", self.time_zone.is_some(), calendar),
            ("week-start", self.week_start.is_some(), calendar),
        ]
    }

    /// [`RuleArgs::rule`] for one algorithm the user chose: a parameter flag it does not use
    /// is an error naming the flag and what the algorithm uses instead.
    pub fn rule_for(&self, kind: AlgorithmKind) -> anyhow::Result<Rule> {
        if let Some((flag, _, _)) = self
            .given(kind)
            .iter()
            .find(|(_, given, used)| *given && !used)
        {
            let uses: Vec<String> = self
                .given(kind)
                .iter()
                .filter(|(_, _, used)| *used)
                .map(|(f, _, _)| format!("--{f}"))
                .collect();
            anyhow::bail!(
                "--{flag} does not apply to --algorithm {}: it uses {}",
                kind.cli_name(),
                uses.join(", ")
            );
        }
        self.rule(kind, None)
    }

    /// An error naming the first rule flag given, for a run whose limits come from elsewhere
    /// (`--policies`, `--rules`): the flag would otherwise be silently ignored.
    pub fn refuse_with(&self, source: &str) -> anyhow::Result<()> {
        let first = (self.rule.is_some().then_some("rule"))
            .into_iter()
            .chain(
                self.given(AlgorithmKind::TokenBucket)
                    .into_iter()
                    .filter(|(_, given, _)| *given)
                    .map(|(f, _, _)| f),
            )
            .next();
        match first {
            Some(flag) => {
                anyhow::bail!("--{flag} does not apply with {source}: the file sets the limits")
            }
            None => Ok(()),
        }
    }

    /// The rule for `kind`, named `name` or by the default.
    pub fn rule(&self, kind: AlgorithmKind, name: Option<&str>) -> anyhow::Result<Rule> {
        let name = name
            .map(str::to_string)
            .or_else(|| self.rule.clone())
            .unwrap_or_else(|| kind.cli_name().to_string());
        let limit = self.limit.unwrap_or(10);
        let window_ms = self.window_ms.unwrap_or(1000);
        let algorithm = match kind {
            AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
                capacity: self.capacity.unwrap_or(10),
                refill_per_sec: self.refill_per_sec.unwrap_or(10.0),
            },
            AlgorithmKind::Gcra => Algorithm::Gcra {
                limit,
                window_ms,
                burst: self.burst.unwrap_or(limit),
            },
            AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog { limit, window_ms },
            AlgorithmKind::SlidingWindowCounter => {
                Algorithm::SlidingWindowCounter { limit, window_ms }
            }
            AlgorithmKind::FixedWindow => Algorithm::FixedWindow { limit, window_ms },
            AlgorithmKind::Concurrency => Algorithm::Concurrency {
                limit,
                lease_ms: self.lease_ms.unwrap_or(ratelockr::rule::DEFAULT_LEASE_MS),
            },
            AlgorithmKind::Calendar => Algorithm::Calendar {
                limit,
                period: self
                    .period
                    .as_deref()
                    .unwrap_or("day")
                    .parse()
                    .map_err(calendar_flag)?,
                time_zone: ratelockr::TimeZoneName::new(self.time_zone.as_deref().unwrap_or("UTC"))
                    .map_err(calendar_flag)?,
                week_start: self
                    .week_start
                    .as_deref()
                    .unwrap_or("monday")
                    .parse()
                    .map_err(calendar_flag)?,
            },
        };
        Rule::new(name, algorithm).map_err(flag_error)
    }
}

/// Names the command-line flag in a calendar word's error (`--time-zone`).
fn calendar_flag(err: ratelockr::calendar::CalendarError) -> anyhow::Error {
    flag_error(err.into())
}

/// Names the command-line flag in a rule error (`--refill-per-sec`, not `refill_per_sec`).
pub fn flag_error(err: RuleError) -> anyhow::Error {
    match err {
        RuleError::InvalidParameter { parameter, reason } => {
            anyhow!("invalid --{}: {reason}", parameter.replace('_', "-"))
        }
        RuleError::InvalidName(name) => anyhow!(
            "invalid --rule {name:?}: use 1 to 64 ASCII letters, digits, '_', '-' or '.'"
        ),
        RuleError::InvalidCost { cost, max, what } => anyhow!(
            "invalid --cost {cost}: must be from 1 to {max} (the rule's {what}); a larger request could never pass"
        ),
        RuleError::InvalidKey(why) => anyhow!("invalid --key: {why}"),
        other => anyhow!(other),
    }
}
