//! The metrics endpoint, scraped over HTTP from a real server and parsed, after decisions made
//! against a real redis-server (and a dead port, for fail-open).

use ratelockr::metrics::{MetricsServer, CONTENT_TYPE};
use ratelockr::{
    AlgorithmKind, EmbeddedRedis, FailureKind, KeySpace, Limiter, LimiterOptions, Metrics,
    RedisTarget, Rule,
};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One sample: metric name and its labels, sorted.
type SeriesKey = (String, BTreeMap<String, String>);

/// A small parser for the Prometheus text format: enough to find series and their values, and
/// strict enough to fail on a malformed line.
fn parse(text: &str) -> BTreeMap<SeriesKey, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("`series value`");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series.to_string(), BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("labels end with }");
                let labels = body
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(|pair| {
                        let (k, v) = pair.split_once('=').expect("label=value");
                        let v = v
                            .strip_prefix('"')
                            .and_then(|v| v.strip_suffix('"'))
                            .expect("quoted label value");
                        (k.to_string(), v.to_string())
                    })
                    .collect();
                (name.to_string(), labels)
            }
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        samples.insert((name, labels), value);
    }
    samples
}

fn get(samples: &BTreeMap<SeriesKey, f64>, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples.get(&(name.to_string(), labels)).copied()
}

/// A plain HTTP/1.1 GET: status line, headers (lower-cased names) and body.
async fn http_get(addr: SocketAddr, path: &str) -> (u16, BTreeMap<String, String>, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let raw = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers end");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

fn dead_port() -> u16 {
    // Bound and released: nothing listens there now.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn options(prefix: &str) -> LimiterOptions {
    LimiterOptions {
        keys: KeySpace::new(prefix),
        deadline: Duration::from_secs(2),
        ..LimiterOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_metrics_count_every_decision() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let target = RedisTarget::parse(&redis.url()).expect("url");
    let metrics = Metrics::new();
    metrics.set_active_rules(3);
    let limiter =
        Limiter::new(&target, options("metrics-test")).with_observer(Arc::new(metrics.clone()));

    // Token bucket of 3: 5 requests give 3 allowed, 2 denied.
    let bucket = Rule::token_bucket("tb", 3, 0.001).expect("rule");
    for _ in 0..5 {
        limiter.check(&bucket, "alice").await.expect("decision");
    }
    // Sliding window of 2 per minute: 4 requests give 2 and 2.
    let log = Rule::sliding_window_log("swl", 2, Duration::from_secs(60)).expect("rule");
    for _ in 0..4 {
        limiter.check(&log, "bob").await.expect("decision");
    }
    // GCRA of 2 per minute, bursts of 2: 3 requests give 2 and 1.
    let gcra = Rule::gcra("gc", 2, Duration::from_secs(60), 2).expect("rule");
    for _ in 0..3 {
        limiter.check(&gcra, "dave").await.expect("decision");
    }
    // Sliding window counter of 1 per minute: 2 requests give 1 and 1.
    let counter = Rule::sliding_window_counter("sc", 1, Duration::from_secs(60)).expect("rule");
    for _ in 0..2 {
        limiter.check(&counter, "erin").await.expect("decision");
    }
    // Fixed window of 1 per minute: 3 requests give 1 and 2.
    let window = Rule::fixed_window("fw", 1, Duration::from_secs(60)).expect("rule");
    for _ in 0..3 {
        limiter.check(&window, "carol").await.expect("decision");
    }

    // A limiter on a dead port fails open, and the same metrics see it.
    let dead = RedisTarget::parse(&format!("redis://127.0.0.1:{}", dead_port())).expect("url");
    let dead_limiter = Limiter::new(
        &dead,
        LimiterOptions {
            deadline: Duration::from_millis(200),
            ..options("metrics-test")
        },
    )
    .with_observer(Arc::new(metrics.clone()));
    for _ in 0..2 {
        let d = dead_limiter
            .check(&window, "carol")
            .await
            .expect("decision");
        assert!(
            d.fail_open() && d.allowed && d.remaining_or_unknown() == -1,
            "{d:?}"
        );
    }

    let server = MetricsServer::bind(metrics.clone(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = server.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    let (status, headers, body) = http_get(addr, "/api/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        headers.get("content-type").map(String::as_str),
        Some(CONTENT_TYPE)
    );
    let samples = parse(&body);

    let expected = [
        ("token_bucket", [3.0, 2.0, 0.0]),
        ("gcra", [2.0, 1.0, 0.0]),
        ("sliding_window_log", [2.0, 2.0, 0.0]),
        ("sliding_window_counter", [1.0, 1.0, 0.0]),
        ("fixed_window", [1.0, 2.0, 2.0]),
    ];
    for (algorithm, counts) in expected {
        for (result, count) in ["allowed", "denied", "fail_open"].into_iter().zip(counts) {
            let value = get(
                &samples,
                "ratelockr_evaluations_total",
                &[("algorithm", algorithm), ("result", result)],
            );
            assert_eq!(value, Some(count), "{algorithm}/{result} in\n{body}");
        }
    }
    let series = samples
        .keys()
        .filter(|(name, _)| name == "ratelockr_evaluations_total")
        .count();
    assert_eq!(
        series,
        AlgorithmKind::ALL.len() * ratelockr::Outcome::ALL.len(),
        "exactly one series per algorithm x result (cache_denied included)"
    );

    // Every decision is in its algorithm's histogram.
    for (algorithm, n) in [
        ("token_bucket", 5.0),
        ("gcra", 3.0),
        ("sliding_window_log", 4.0),
        ("sliding_window_counter", 2.0),
        ("fixed_window", 5.0),
    ] {
        let count = get(
            &samples,
            "ratelockr_evaluation_duration_seconds_count",
            &[("algorithm", algorithm)],
        );
        assert_eq!(count, Some(n), "{algorithm} histogram count");
        let inf = get(
            &samples,
            "ratelockr_evaluation_duration_seconds_bucket",
            &[("algorithm", algorithm), ("le", "+Inf")],
        );
        assert_eq!(inf, Some(n));
        assert!(
            get(
                &samples,
                "ratelockr_evaluation_duration_seconds_bucket",
                &[("algorithm", algorithm), ("le", "0.0001")],
            )
            .is_some(),
            "a sub-millisecond bucket exists"
        );
    }

    // Two fail-opens, two Redis errors (of whatever kind the refusal was classified as), and
    // every kind present.
    let errors: f64 = FailureKind::ALL
        .into_iter()
        .map(|kind| {
            get(
                &samples,
                "ratelockr_redis_errors_total",
                &[("kind", kind.as_str())],
            )
            .unwrap_or_else(|| panic!("kind {kind} missing"))
        })
        .sum();
    assert_eq!(errors, 2.0);
    assert_eq!(get(&samples, "ratelockr_active_rules", &[]), Some(3.0));
    assert_eq!(metrics.evaluations_total(), 19);
    assert_eq!(
        metrics.evaluations(AlgorithmKind::FixedWindow, ratelockr::Outcome::FailOpen),
        2
    );

    let (status, _, _) = http_get(addr, "/metrics").await;
    assert_eq!(status, 404);
    let (status, _, _) = http_get(addr, "/").await;
    assert_eq!(status, 404);

    stop.send(()).expect("server running");
    running.await.expect("join").expect("clean shutdown");
}

#[tokio::test]
async fn fresh_metrics_expose_all_series_at_zero() {
    let server = MetricsServer::bind(Metrics::new(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = server.local_addr().expect("addr");
    let running = tokio::spawn(server.run(std::future::pending()));
    let (status, _, body) = http_get(addr, "/api/metrics").await;
    assert_eq!(status, 200);
    let samples = parse(&body);
    for algorithm in AlgorithmKind::ALL {
        for result in ["allowed", "denied", "fail_open"] {
            assert_eq!(
                get(
                    &samples,
                    "ratelockr_evaluations_total",
                    &[("algorithm", algorithm.as_str()), ("result", result)]
                ),
                Some(0.0)
            );
        }
    }
    running.abort();
}

#[tokio::test]
async fn a_taken_port_is_a_clear_error() {
    let first = MetricsServer::bind(Metrics::new(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = first.local_addr().expect("addr");
    let err = ratelockr::metrics::serve(Metrics::new(), addr, std::future::pending())
        .await
        .expect_err("the port is taken");
    assert!(
        matches!(err, ratelockr::metrics::ServeError::AddrInUse { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("already in use"), "{err}");
    assert!(err.to_string().contains("--addr"), "{err}");
}

#[tokio::test]
async fn leases_given_back_and_requests_settled_are_counted() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let target = RedisTarget::parse(&redis.url()).expect("url");
    let metrics = Metrics::new();
    let limiter =
        Limiter::new(&target, options("metrics-lease")).with_observer(Arc::new(metrics.clone()));
    let in_flight = Rule::concurrency("cc", 2, Duration::from_secs(60)).expect("rule");
    let d = limiter.check(&in_flight, "ann").await.expect("decision");
    let lease = d.lease.clone().expect("a lease");
    assert!(lease.renew().await.expect("renewed"));
    assert!(lease.release().await.expect("released"));
    let policy = ratelockr::Policy::from_rule(&in_flight);
    let again = limiter
        .lease_of(&policy, "ann", lease.id())
        .expect("a lease by id");
    assert!(!again.release().await.expect("answered"), "released before");

    let tokens = Rule::fixed_window("tokens", 100, Duration::from_secs(60)).expect("rule");
    let policy = ratelockr::Policy::from_rule(&tokens);
    for (charged, actual) in [(50, 10), (10, 50), (5, 5), (20, 3)] {
        let d = limiter
            .check_cost(&tokens, "bo", charged)
            .await
            .expect("decision");
        assert!(d.allowed, "{d:?}");
        limiter
            .settle(&policy, "bo", charged, actual)
            .await
            .expect("settled");
    }

    let server = MetricsServer::bind(metrics.clone(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = server.local_addr().expect("addr");
    let running = tokio::spawn(server.run(std::future::pending()));
    let (_, _, body) = http_get(addr, "/api/metrics").await;
    let samples = parse(&body);
    for (op, result, count) in [
        ("release", "live", 1.0),
        ("release", "gone", 1.0),
        ("renew", "live", 1.0),
        ("renew", "gone", 0.0),
    ] {
        let labels = [("op", op), ("result", result)];
        let value = get(&samples, "ratelockr_leases_total", &labels);
        assert_eq!(value, Some(count), "{op}/{result} in\n{body}");
    }
    for (result, count) in [("gave_back", 2.0), ("charged_more", 1.0), ("nothing", 1.0)] {
        let value = get(&samples, "ratelockr_settles_total", &[("result", result)]);
        assert_eq!(value, Some(count), "{result} in\n{body}");
    }
    running.abort();
}
