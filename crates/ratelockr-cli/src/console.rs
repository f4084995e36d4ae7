//! What the subcommands share at the terminal: JSON on stdout, progress bars, a warning when
//! Redis does not answer, and Ctrl-C.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use ratelockr_lab::export::{self, CsvSink, Replace};
use std::io::IsTerminal;
use tokio_util::sync::CancellationToken;

/// Warns on stderr, under `command`'s name, what a sliding window log of `name` costs in
/// Redis when its limit is past a listpack ([`ratelockr::log_memory`]); nothing otherwise.
pub fn warn_log_memory(command: &str, name: &str, algorithm: &ratelockr::Algorithm) {
    if let Some(warning) = ratelockr::log_memory::log_memory_warning(name, algorithm) {
        eprintln!("ratelockr {command}: warning: {warning}");
    }
}

/// Each round's ratio, as `0.93 1.02 0.88`.
pub fn rounds_text(ratios: &[f64]) -> String {
    ratios
        .iter()
        .map(|x| format!("{x:.2}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints `value` as one line of JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!(
        "{}",
        serde_json::to_string(value).context("serializing the output")?
    );
    Ok(())
}

/// The HTTP answer a decision implies (`--headers`): JSON, or the status line and headers as
/// a client would receive them.
pub fn print_answer(answer: &ratelockr::headers::HttpAnswer, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(answer);
    }
    println!("HTTP {}", answer.status);
    for (name, value) in &answer.headers {
        println!("{name}: {value}");
    }
    Ok(())
}

/// Warns on stderr when the limiter's Redis does not answer a PING, saying why as every front
/// does ([`ratelockr::Limiter::diagnose`]: a plain-TCP Redis behind `rediss://` is named), so
/// that the decisions to come are known to fail open.
pub async fn warn_unless_redis_answers(limiter: &ratelockr::Limiter, command: &str) {
    if let Err(failure) = limiter.ping().await {
        eprintln!(
            "ratelockr {command}: warning: Redis at {} does not answer ({failure}); decisions will fail open. Use --embedded for a private Redis.",
            limiter.target()
        );
    }
}

/// A progress bar of `len` drawn with `template` on a terminal, hidden otherwise (stderr piped).
pub fn progress_bar(len: u64, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// A token cancelled by Ctrl-C (SIGINT) or, on Unix, SIGTERM (what `kill`, `timeout` and
/// service managers send): the command then ends as on Ctrl-C, dropping what it owns, an
/// embedded Redis included, rather than dying with its servers left to the next start's
/// sweep; a long run stops and keeps what it has. The signals are listened for from this call
/// on. A second signal exits at once (status 130), whatever the command is doing: a stop that
/// cannot finish (a cluster still forming, a stuck write) never holds the terminal. Call it
/// inside the runtime.
pub fn stop_token() -> CancellationToken {
    let stop = CancellationToken::new();
    let on_signal = stop.clone();
    let mut signals = Signals::listen();
    tokio::spawn(async move {
        signals.next().await;
        on_signal.cancel();
        signals.next().await;
        eprintln!("ratelockr: a second signal: exiting at once");
        std::process::exit(130);
    });
    stop
}

/// SIGINT and SIGTERM, listened for from [`Signals::listen`] on; a signal that cannot be
/// listened for never arrives.
#[cfg(unix)]
struct Signals([Option<tokio::signal::unix::Signal>; 2]);

#[cfg(unix)]
impl Signals {
    fn listen() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        Signals([
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        ])
    }

    async fn next(&mut self) {
        async fn received(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let [interrupt, terminate] = &mut self.0;
        tokio::select! {
            () = received(interrupt) => {}
            () = received(terminate) => {}
        }
    }
}

/// Ctrl-C, where SIGTERM is not a thing.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn listen() -> Self {
        Signals
    }

    async fn next(&mut self) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Opens a run's CSV and checks its charts' paths before the run, so an unwritable or existing
/// file (without `--force`) fails now, not after it; nothing is created or replaced yet.
pub fn prepare_exports(
    csv: Option<&std::path::Path>,
    charts: &[Option<&std::path::Path>],
    force: bool,
) -> anyhow::Result<Option<CsvSink>> {
    let replace = if force {
        Replace::Allow
    } else {
        Replace::Never
    };
    let csv = csv
        .map(|path| CsvSink::create_with(path, replace))
        .transpose()?;
    for chart in charts.iter().flatten() {
        export::ChartFormat::from_path(chart)?;
        export::ensure_writable(chart, replace)?;
    }
    Ok(csv)
}
