//! What the subcommands share at the terminal: JSON on stdout, progress bars, a warning when
//! Redis does not answer, and Ctrl-C.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use ratelockr::export::{self, CsvSink, Replace};
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

/// A token that `stop` ([`stop_signal`]) cancels: a long run stops and keeps what it has.
pub fn cancel_on(
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_stop = cancel.clone();
    tokio::spawn(async move {
        stop.await;
        on_stop.cancel();
    });
    cancel
}

/// Completes on Ctrl-C (SIGINT) or, on Unix, SIGTERM (what `kill`, `timeout` and service
/// managers send): the command then ends as on Ctrl-C, dropping what it owns, an embedded
/// Redis included, rather than dying with its servers left to the next start's sweep. The
/// signals are listened for from this call on, not from the first poll. A second signal exits
/// at once (status 130), whatever the command is doing: a stop that cannot finish (a cluster
/// still forming, a stuck write) never holds the terminal. A signal that cannot be listened
/// for never completes it. Call it inside the runtime.
pub fn stop_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        fn listen() -> [Option<Signal>; 2] {
            [
                signal(SignalKind::interrupt()).ok(),
                signal(SignalKind::terminate()).ok(),
            ]
        }
        async fn received(signal: &mut Option<Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        async fn either(signals: &mut [Option<Signal>; 2]) {
            let [interrupt, terminate] = signals;
            tokio::select! {
                () = received(interrupt) => {}
                () = received(terminate) => {}
            }
        }
        let mut first = listen();
        let mut watch = listen();
        tokio::spawn(async move {
            either(&mut watch).await;
            either(&mut watch).await;
            eprintln!("ratelockr: a second signal: exiting at once");
            std::process::exit(130);
        });
        async move { either(&mut first).await }
    }
    #[cfg(not(unix))]
    async {
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
