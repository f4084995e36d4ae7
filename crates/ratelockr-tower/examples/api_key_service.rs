//! A service rate-limited by API key with RateLockr's Redis scripts.
//!
//! ```text
//! cargo run -p ratelockr-tower --example api_key_service -- --redis redis://127.0.0.1:6379
//! curl -i -H 'x-api-key: alice' http://127.0.0.1:3000/hello     # 200, then 429s
//! curl http://127.0.0.1:3000/api/metrics | grep cache_denied      # the deny cache's hits
//! ```
//!
//! ```text
//! cargo run -p ratelockr-tower --example api_key_service -- --policies policies.toml --policy api
//! ```
//!
//! With `--policies`, each request is held to that policy of the file (the file `ratelockr serve
//! --policies` and the desktop app use): its stacked limits in one script call, its tiers, its
//! mode; the file is reloaded when it changes (shadow to enforce without a restart). Requests
//! are keyed by the policy's own `key` expression, as replay keys a log's lines (`ip` is the
//! client address, `header:x-api-key` the header, `ip+path[1]` both; the `x-api-key` header
//! when the policy names none), read once at the start.
//! Without it, each API key gets a token bucket (`--capacity`, `--refill-per-sec`). Denials carry
//! `Retry-After` and the RateLimit fields; admissions carry them too. The deny cache is on, so
//! a key hammering past its limit costs Redis one call per retry period, and its hits show in
//! `GET /api/metrics` (the engine's exporter, not rate-limited) as `result="cache_denied"`.
//! Stop Redis and the service goes on in the `--failure-mode` chosen (open: requests pass,
//! marked `ratelimit-fail-open: 1`; closed: 429; degraded: this instance's share of the
//! bucket); start it again and Redis decides again, with no restart of the service.
//!
//! `GET /download` is a slow endpoint: it streams its answer over about a second. Under a
//! policy with a concurrency limit (`algorithm = "concurrency"`), each download holds a slot
//! until its last byte is out, or until its client goes away mid-way:
//!
//! ```text
//! curl -H 'x-api-key: alice' http://127.0.0.1:3000/download   # 429 once the slots are taken
//! ```

use axum::body::Body;
use axum::routing::get;
use axum::{Extension, Router};
use clap::{Parser, ValueEnum};
use ratelockr::metrics::MetricsServer;
use ratelockr::{DenyCacheOptions, FailureMode, Metrics, RedisTarget, Rule};
use ratelockr_tower::{KeyExtractor, RateLimitInfo, RateLimitLayer};
use std::net::SocketAddr;

#[derive(Debug, Parser)]
struct Args {
    /// The Redis to decide on.
    #[arg(long, env = "REDIS_URL", default_value = ratelockr::DEFAULT_REDIS_URL)]
    redis: String,
    /// Where to listen (loopback by default).
    #[arg(long, default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// What a decision is while Redis is down.
    #[arg(long, value_enum, default_value_t = Mode::Open)]
    failure_mode: Mode,
    /// Degraded mode: how many instances of this service share the limit.
    #[arg(long, default_value_t = 1)]
    instances: u32,
    /// Requests a key may burst.
    #[arg(long, default_value_t = 10)]
    capacity: u64,
    /// Requests a key regains per second.
    #[arg(long, default_value_t = 1.0)]
    refill_per_sec: f64,
    /// A policies file (TOML or JSON): hold each key to --policy of it instead of the token
    /// bucket, reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    policies: Option<std::path::PathBuf>,
    /// The policy of --policies.
    #[arg(long, default_value = "api", requires = "policies")]
    policy: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Open,
    Closed,
    Degraded,
}

/// The service's routes behind the layer, and the metrics the layer counts into.
fn app(args: &Args) -> anyhow::Result<(Router, Metrics)> {
    let failure_mode = match args.failure_mode {
        Mode::Open => FailureMode::Open,
        Mode::Closed => FailureMode::Closed,
        Mode::Degraded => FailureMode::Degraded {
            instances: args.instances,
        },
    };
    let metrics = Metrics::new();
    let builder = RateLimitLayer::builder(key_of(args)?).redis(RedisTarget::parse(&args.redis)?);
    let builder = match &args.policies {
        Some(path) => builder.from_file(path, &args.policy),
        None => builder.rule(Rule::token_bucket(
            "api",
            args.capacity,
            args.refill_per_sec,
        )?),
    };
    let limit = builder
        .failure_mode(failure_mode)
        .deny_cache(DenyCacheOptions::default())
        .metrics(metrics.clone())
        .headers_on_admitted(true)
        .fail_open_header(true)
        .missing_key_status(axum::http::StatusCode::UNAUTHORIZED)
        .build()?;
    let routes = Router::new()
        .route("/hello", get(hello))
        .route("/download", get(download))
        .layer(limit);
    Ok((routes, metrics))
}

/// What requests are keyed by: the policy's `key` expression with --policies, else (and for a
/// policy that names none) the `x-api-key` header.
fn key_of(args: &Args) -> anyhow::Result<KeyExtractor> {
    match &args.policies {
        Some(path) => policy_key(path, &args.policy),
        None => Ok(KeyExtractor::header("x-api-key".parse()?)),
    }
}

fn policy_key(path: &std::path::Path, name: &str) -> anyhow::Result<KeyExtractor> {
    let policies = ratelockr::policy::load_policies_file(path)?;
    let policy = policies
        .iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| anyhow::anyhow!("{}: no policy named {name:?}", path.display()))?;
    let expr = policy.key().unwrap_or("header:x-api-key");
    KeyExtractor::expression(expr)
        .map_err(|e| anyhow::anyhow!("{}: policy {name:?}: {e}", path.display()))
}

async fn hello(Extension(info): Extension<RateLimitInfo>) -> String {
    if info.fail_open() {
        format!("hello {} (Redis is down: not metered)\n", info.key)
    } else {
        format!("hello {}\n", info.key)
    }
}

/// How many pieces `/download` sends, and the pause before each.
const DOWNLOAD_PIECES: u32 = 20;
const DOWNLOAD_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// A slow answer, streamed piece by piece over about a second: a request in flight for that
/// long (the layer holds its lease until the last piece is out, or the client leaves).
async fn download(Extension(info): Extension<RateLimitInfo>) -> Body {
    let key = info.key;
    let pieces = futures::stream::unfold(0, move |i| {
        let key = key.clone();
        async move {
            if i == DOWNLOAD_PIECES {
                return None;
            }
            tokio::time::sleep(DOWNLOAD_PAUSE).await;
            let piece = format!("piece {} of {DOWNLOAD_PIECES} for {key}\n", i + 1);
            Some((Ok::<_, std::convert::Infallible>(piece), i + 1))
        }
    });
    Body::from_stream(pieces)
}

/// Binds `addr` and serves the routes beside `GET /api/metrics` until `shutdown`.
async fn run(
    routes: Router,
    metrics: Metrics,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<anyhow::Result<()>>)> {
    let server = MetricsServer::bind(metrics, addr).await?;
    let bound = server.local_addr()?;
    let task = tokio::spawn(async move { Ok(server.run_with(routes, shutdown).await?) });
    Ok((bound, task))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let key = key_of(&args)?.what().to_string();
    let (routes, metrics) = app(&args)?;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let (addr, task) = run(routes, metrics, args.addr, shutdown).await?;
    eprintln!("listening on http://{addr}/hello (keyed by {key}), metrics at /api/metrics");
    task.await?
}

#[cfg(test)]
#[path = "../../../tests/common/mod.rs"]
mod common;

/// The example itself over real HTTP against a real redis-server that is killed and
/// started again on the same port.
#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};
    use std::time::Duration;

    fn args(redis: String, failure_mode: Mode) -> Args {
        Args {
            redis,
            addr: "127.0.0.1:0".parse().expect("addr"),
            failure_mode,
            instances: 1,
            capacity: 3,
            refill_per_sec: 0.01,
            policies: None,
            policy: "api".into(),
        }
    }

    /// The example's app on a free loopback port, served until the test ends.
    async fn serve(args: &Args) -> SocketAddr {
        let (routes, metrics) = app(args).expect("app");
        let pending = async { std::future::pending::<()>().await };
        let addr = "127.0.0.1:0".parse().expect("addr");
        run(routes, metrics, addr, pending).await.expect("serve").0
    }

    async fn hello(addr: SocketAddr, key: &str) -> (u16, String) {
        let (status, headers, _) =
            common::http_with(addr, "GET", "/hello", &[("x-api-key", key)], "").await;
        let marks = ["retry-after", "ratelimit", "ratelimit-fail-open"]
            .iter()
            .filter_map(|name| headers.get(*name).map(|v| format!("{name}={v}")))
            .collect::<Vec<_>>()
            .join(" ");
        (status, marks)
    }

    /// A redis-server on a given port (the one a killed server had), killed on drop.
    struct Restarted(Child);

    impl Drop for Restarted {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[tokio::test]
    async fn limits_by_key_counts_cache_hits_and_survives_a_redis_restart() {
        let server = common::redis();
        let port = server.port();
        let addr = serve(&args(server.url(), Mode::Open)).await;

        for _ in 0..3 {
            assert_eq!(hello(addr, "alice").await.0, 200);
        }
        for _ in 0..5 {
            let (status, marks) = hello(addr, "alice").await;
            assert_eq!(status, 429);
            assert!(marks.contains("retry-after="), "{marks}");
            assert!(marks.contains("ratelimit=\"api\";r=0"), "{marks}");
        }
        let (_, _, body) = common::http(addr, "GET", "/api/metrics", "").await;
        let cache_hits = body
            .lines()
            .find(|l| l.contains("token_bucket") && l.contains("result=\"cache_denied\""))
            .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .expect("a cache_denied series");
        assert_eq!(
            cache_hits, 4,
            "the first denial asked Redis, the rest hit the cache"
        );

        // Redis goes away: the service fails open, visibly.
        drop(server);
        let (status, marks) = hello(addr, "bob").await;
        assert_eq!((status, marks.as_str()), (200, "ratelimit-fail-open=1"));

        // Redis comes back on the same port, empty: Redis decides again.
        let restarted = Restarted(
            Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server"),
        );
        let back = common::eventually(Duration::from_secs(15), || async {
            let (status, marks) = hello(addr, "carol").await;
            status == 200 && marks.contains("ratelimit=\"api\"")
        })
        .await;
        assert!(back, "Redis decides again after its restart");
        drop(restarted);
    }

    /// The README's walk: the service on a policies file in shadow mode admits what the policy
    /// would deny; the file changed to enforce, the service denies, without a restart.
    #[tokio::test]
    async fn a_policies_file_goes_from_shadow_to_enforce_without_a_restart() {
        let server = common::redis();
        let dir = common::tempdir("example-policies");
        let file = dir.join("policies.toml");
        let policies = |mode: &str| {
            format!(
                "[[policies]]\nname = \"api\"\nmode = \"{mode}\"\n[[policies.limits]]\nname = \"daily\"\nalgorithm = \"fixed-window\"\nlimit = 2\nwindow_ms = 86400000\n"
            )
        };
        common::replace_file(&file, &policies("shadow"), 1_000_000);
        let args = Args {
            policies: Some(file.clone()),
            ..args(server.url(), Mode::Open)
        };
        let addr = serve(&args).await;
        for _ in 0..5 {
            assert_eq!(hello(addr, "dave").await.0, 200, "shadow mode admits");
        }
        common::replace_file(&file, &policies("enforce"), 1_000_100);
        let enforced = common::eventually(Duration::from_secs(15), || async {
            hello(addr, "dave").await.0 == 429
        })
        .await;
        assert!(enforced, "the service picks up enforce from the file");
        let (status, marks) = hello(addr, "dave").await;
        assert_eq!(status, 429);
        assert!(marks.contains("ratelimit=\"api.daily\";r=0"), "{marks}");
    }

    /// A policy keyed by `ip` holds the client address, whatever API key it sends: the
    /// policies file means the same here as in replay and serve.
    #[tokio::test]
    async fn requests_are_keyed_by_the_policys_own_key_expression() {
        let server = common::redis();
        let dir = common::tempdir("example-key");
        let file = dir.join("policies.toml");
        let text = "[[policies]]\nname = \"api\"\nkey = \"ip\"\n[[policies.limits]]\nname = \"daily\"\nalgorithm = \"fixed-window\"\nlimit = 2\nwindow_ms = 86400000\n";
        std::fs::write(&file, text).expect("policies");
        let args = Args {
            policies: Some(file.clone()),
            ..args(server.url(), Mode::Open)
        };
        let addr = serve(&args).await;
        let statuses = [
            hello(addr, "alice").await.0,
            hello(addr, "bob").await.0,
            hello(addr, "carol").await.0,
        ];
        assert_eq!(statuses, [200, 200, 429], "one address, one key");
        // No API key at all is no missing key (401) either: the address is the key.
        let (status, _, _) = common::http_with(addr, "GET", "/hello", &[], "").await;
        assert_eq!(status, 429);

        // A key expression a live request cannot have is refused at the start, by name.
        std::fs::write(&file, text.replace("key = \"ip\"", "key = \"field:user\""))
            .expect("policies");
        let err = app(&args).expect_err("field: is a log's");
        assert!(err.to_string().contains("field:user"), "{err}");
    }

    /// The live leases of the policy's in-flight limit for `key` (expiry > now, Redis clock).
    async fn in_flight(server: &ratelockr::EmbeddedRedis, key: &str) -> u64 {
        let set = ratelockr::KeySpace::default().policy_limit(
            ratelockr::AlgorithmKind::Concurrency,
            "api",
            "in-flight",
            key,
        );
        let client = redis::Client::open(server.url()).expect("url");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("connect");
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut conn)
            .await
            .expect("TIME");
        let now = secs * 1000 + micros / 1000;
        redis::cmd("ZCOUNT")
            .arg(&set)
            .arg(format!("({now}"))
            .arg("+inf")
            .query_async(&mut conn)
            .await
            .expect("ZCOUNT")
    }

    /// A slow endpoint under "4 in flight": a bounded load of curl processes, most of which
    /// hang up mid-download, leaves no lease live once it is over (each lease is given back
    /// when its body ends or is dropped, not after its 10-minute life), and the full four
    /// downloads pass again.
    #[tokio::test]
    async fn downloads_cut_short_by_their_clients_give_their_slots_back() {
        let server = common::redis();
        let dir = common::tempdir("example-in-flight");
        let file = dir.join("policies.toml");
        let text = "[[policies]]\nname = \"api\"\n[[policies.limits]]\nname = \"in-flight\"\nalgorithm = \"concurrency\"\nlimit = 4\nlease_ms = 600000\n[[policies.limits]]\nname = \"per-minute\"\nalgorithm = \"fixed-window\"\nlimit = 1000\nwindow_ms = 60000\n";
        std::fs::write(&file, text).expect("policies");
        let args = Args {
            policies: Some(file),
            ..args(server.url(), Mode::Open)
        };
        let addr = serve(&args).await;
        let url = format!("http://{addr}/download");
        // 24 downloads in waves of 8: six of each wave hang up after 0.2 s (a second's
        // download), two read to the end. Some find the four slots taken: 429.
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let wave: Vec<_> = (0..8)
                .map(|i| {
                    let mut curl = tokio::process::Command::new("curl");
                    curl.args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
                        .args(["-H", "x-api-key: erin"]);
                    if i < 6 {
                        curl.args(["--max-time", "0.2"]);
                    }
                    curl.arg(&url)
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .expect("curl (apt: curl)")
                })
                .collect();
            for child in wave {
                let out = child.wait_with_output().await.expect("curl ends");
                statuses.push(String::from_utf8_lossy(&out.stdout).into_owned());
            }
        }
        assert!(statuses.iter().any(|s| s == "200"), "{statuses:?}");
        assert!(
            statuses.iter().any(|s| s == "429"),
            "the slots were taken: {statuses:?}"
        );
        // Every client is gone: no slot stays taken (a background release is a moment).
        let freed = common::eventually(Duration::from_secs(10), || async {
            in_flight(&server, "erin").await == 0
        })
        .await;
        assert!(
            freed,
            "{} leases still live",
            in_flight(&server, "erin").await
        );
        // The four slots are there again: four downloads at once pass, a fifth does not.
        let held: Vec<_> = (0..4)
            .map(|_| {
                tokio::process::Command::new("curl")
                    .args(["-s", "-o", "/dev/null", "-H", "x-api-key: erin", &url])
                    .spawn()
                    .expect("curl")
            })
            .collect();
        let taken = common::eventually(Duration::from_secs(10), || async {
            in_flight(&server, "erin").await == 4
        })
        .await;
        assert!(taken, "four downloads hold the four slots");
        let (status, _) = hello(addr, "erin").await;
        assert_eq!(status, 429, "a fifth request waits for a slot");
        for mut child in held {
            child.wait().await.expect("curl ends");
        }
    }
}
