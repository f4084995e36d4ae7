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
    /// The longest a decision may take before it fails open, in milliseconds.
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
        if self.deadline_ms == 0 {
            return Err(anyhow!("invalid --deadline-ms: must be at least 1"));
        }
        Ok(LimiterOptions {
            keys: KeySpace::checked(&self.prefix).map_err(|e| anyhow!("invalid --prefix: {e}"))?,
            deadline: Duration::from_millis(self.deadline_ms),
            ..LimiterOptions::default()
        })
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
}

impl From<AlgorithmArg> for AlgorithmKind {
    fn from(a: AlgorithmArg) -> Self {
        match a {
            AlgorithmArg::TokenBucket => AlgorithmKind::TokenBucket,
            AlgorithmArg::Gcra => AlgorithmKind::Gcra,
            AlgorithmArg::SlidingWindowLog => AlgorithmKind::SlidingWindowLog,
            AlgorithmArg::SlidingWindowCounter => AlgorithmKind::SlidingWindowCounter,
            AlgorithmArg::FixedWindow => AlgorithmKind::FixedWindow,
        }
    }
}

/// A rule's parameters, as flags.
#[derive(Debug, Clone, Args)]
pub struct RuleArgs {
    /// The rule's name; telemetry counts under it (default: the algorithm's name).
    #[arg(long)]
    pub rule: Option<String>,
    /// Token bucket: tokens held when full.
    #[arg(long, default_value_t = 10)]
    pub capacity: u64,
    /// Token bucket: tokens added per second.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub refill_per_sec: f64,
    /// Windows and GCRA: requests admitted per window (GCRA: per period).
    #[arg(long, default_value_t = 10)]
    pub limit: u64,
    /// Windows: the window's length in milliseconds (GCRA: its period).
    #[arg(long, default_value_t = 1000)]
    pub window_ms: u64,
    /// GCRA: how many may pass at once (default: --limit).
    #[arg(long)]
    pub burst: Option<u64>,
}

impl RuleArgs {
    /// The rule for `kind`, named `name` or by the default.
    pub fn rule(&self, kind: AlgorithmKind, name: Option<&str>) -> anyhow::Result<Rule> {
        let name = name
            .map(str::to_string)
            .or_else(|| self.rule.clone())
            .unwrap_or_else(|| kind.cli_name().to_string());
        let algorithm = match kind {
            AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
                capacity: self.capacity,
                refill_per_sec: self.refill_per_sec,
            },
            AlgorithmKind::Gcra => Algorithm::Gcra {
                limit: self.limit,
                window_ms: self.window_ms,
                burst: self.burst.unwrap_or(self.limit),
            },
            AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog {
                limit: self.limit,
                window_ms: self.window_ms,
            },
            AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter {
                limit: self.limit,
                window_ms: self.window_ms,
            },
            AlgorithmKind::FixedWindow => Algorithm::FixedWindow {
                limit: self.limit,
                window_ms: self.window_ms,
            },
        };
        Rule::new(name, algorithm).map_err(flag_error)
    }
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
