//! Policies at the decision endpoint, over real HTTP against a real redis-server: a stacked
//! decision with every limit's headers, shadow mode answering 200, `GET /api/policies`, errors
//! naming the field, and the file reloaded live by `ratelockr serve --policies` (a broken file
//! keeps the policies in force and is counted).

use crate::common;

use crate::common::{http, limiter};
use ratelockr::api::DecisionApi;
use ratelockr::metrics::MetricsServer;
use ratelockr::policy::PolicyWatch;
use ratelockr::Metrics;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

const POLICIES: &str = r#"
[[policies]]
name = "api"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 3
  refill_per_sec = 0.001

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 2
  window_ms = 86400000

[[policies]]
name = "trial"
mode = "shadow"

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 1
  window_ms = 86400000
"#;

/// The same file with the daily limit of "api" raised and a policy added.
const RAISED: &str = r#"
[[policies]]
name = "api"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 3
  refill_per_sec = 0.001

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 50
  window_ms = 86400000

[[policies]]
name = "search"

  [[policies.limits]]
  name = "per-minute"
  algorithm = "sliding-window-log"
  limit = 60
  window_ms = 60000
"#;

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

async fn start(server: &ratelockr::EmbeddedRedis, watch: PolicyWatch) -> SocketAddr {
    let metrics = Metrics::new();
    let limiter =
        limiter(server, "api-policies").with_observer(std::sync::Arc::new(metrics.clone()));
    let bound = MetricsServer::bind(metrics, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = bound.local_addr().expect("addr");
    let api = DecisionApi::new(limiter, Vec::new()).with_policies(watch);
    tokio::spawn(bound.run_with(api.router(), std::future::pending()));
    addr
}

async fn check(
    addr: SocketAddr,
    body: &str,
) -> (u16, std::collections::BTreeMap<String, String>, Value) {
    let (status, headers, reply) = http(addr, "POST", "/api/check", body).await;
    (status, headers, json(&reply))
}

#[tokio::test]
async fn a_policy_decides_every_limit_at_once_and_shadow_answers_200() {
    let server = common::redis();
    let dir = common::tempdir("api-policies");
    let path = dir.join("policies.toml");
    common::replace_file(&path, POLICIES, 1_700_000_000);
    let addr = start(&server, PolicyWatch::load(&path).expect("loads")).await;

    let ask = r#"{"policy":"api","key":"bob"}"#;
    let (status, headers, reply) = check(addr, ask).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["allowed"], true);
    assert_eq!(reply["policy"], "api");
    assert_eq!(reply["shadow"], false);
    assert_eq!(reply["would_deny"], false);
    assert_eq!(
        reply["binding"], "daily",
        "1 left of the day against 2 tokens"
    );
    assert_eq!(reply["remaining"], 1);
    assert_eq!(reply["tier"], Value::Null);
    assert_eq!(reply["limits"].as_array().map(Vec::len), Some(2));
    assert_eq!(reply["status"], 200);
    assert_eq!(
        headers["ratelimit-policy"],
        "\"api.per-second\";q=3;w=3000, \"api.daily\";q=2;w=86400"
    );
    assert_eq!(headers["ratelimit"], reply["headers"]["RateLimit"]);

    check(addr, ask).await;
    let (status, headers, reply) = check(addr, ask).await;
    assert_eq!(status, 200, "a denial is a decision, not an error: {reply}");
    assert_eq!(
        (&reply["allowed"], &reply["status"]),
        (&false.into(), &429.into())
    );
    assert_eq!(reply["binding"], "daily");
    assert!(
        headers["ratelimit"].starts_with("\"api.daily\";r=0;"),
        "{headers:?}"
    );
    let retry: u64 = headers["retry-after"].parse().expect("whole seconds");
    assert!((1..=86_400).contains(&retry), "{retry}");

    // Shadow: the second request would be denied, is admitted, and answers as an admission.
    let trial = r#"{"policy":"trial","key":"eve"}"#;
    check(addr, trial).await;
    let (status, headers, reply) = check(addr, trial).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &reply["allowed"],
            &reply["shadow"],
            &reply["would_deny"],
            &reply["status"]
        ),
        (&true.into(), &true.into(), &true.into(), &200.into()),
        "{reply}"
    );
    assert!(!headers.contains_key("retry-after"), "{headers:?}");

    let (status, _, body) = http(addr, "GET", "/api/policies", "").await;
    assert_eq!(status, 200);
    let list = json(&body);
    assert_eq!(list["file"], path.display().to_string());
    assert_eq!(list["modified_ms"], 1_700_000_000_000u64);
    let names: Vec<&str> = list["policies"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["api", "trial"]);
    assert_eq!(list["policies"][1]["mode"], "shadow");
}

#[tokio::test]
async fn bad_policy_requests_name_the_field() {
    let server = common::redis();
    let dir = common::tempdir("api-policies-bad");
    let path = dir.join("policies.toml");
    common::replace_file(&path, POLICIES, 1_700_000_000);
    let addr = start(&server, PolicyWatch::load(&path).expect("loads")).await;
    let cases = [
        (r#"{"key":"k"}"#, 400, "missing_field", "rule"),
        (r#"{"policy":"api"}"#, 400, "missing_field", "key"),
        (
            r#"{"policy":"nope","key":"k"}"#,
            404,
            "unknown_policy",
            "policy",
        ),
        (r#"{"policy":7,"key":"k"}"#, 400, "invalid_policy", "policy"),
        (
            r#"{"policy":"api","rule":"login","key":"k"}"#,
            400,
            "invalid_policy",
            "policy",
        ),
        (r#"{"policy":"api","key":""}"#, 400, "invalid_key", "key"),
        (
            r#"{"policy":"api","key":"k","cost":3}"#,
            400,
            "invalid_cost",
            "cost",
        ),
    ];
    for (body, want_status, code, field) in cases {
        let (status, _, reply) = http(addr, "POST", "/api/check", body).await;
        assert_eq!(status, want_status, "{body}: {reply}");
        let error = &json(&reply)["error"];
        assert_eq!(
            (error["code"].as_str(), error["field"].as_str()),
            (Some(code), Some(field)),
            "{body}: {reply}"
        );
        assert!(!error["message"].as_str().unwrap_or("").is_empty());
    }
    // The cost too large for the daily limit of 2 names that limit.
    let (_, _, reply) = http(
        addr,
        "POST",
        "/api/check",
        r#"{"policy":"api","key":"k","cost":3}"#,
    )
    .await;
    assert!(reply.contains("daily"), "{reply}");
}

/// `ratelockr serve` with a policies file: its address, read from its stderr.
struct Serve {
    child: std::process::Child,
    addr: SocketAddr,
    /// Every line serve wrote to stderr, its start line first.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Serve {
    fn log(&self) -> String {
        self.log.lock().expect("log").join("\n")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(url: &str, policies: &Path) -> Serve {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--redis",
            url,
            "--policies",
        ])
        .arg(policies)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let addr = loop {
        let line = lines
            .next()
            .expect("serve names its address before it ends")
            .expect("stderr reads");
        log.lock().expect("log").push(line.clone());
        if let Some(rest) = line.split("decisions at POST http://").nth(1) {
            let addr = rest.split('/').next().expect("an address");
            break addr.parse().unwrap_or_else(|e| panic!("{e}: {line}"));
        }
    };
    // Keep reading so that serve never blocks on a full pipe.
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().expect("log").push(line);
        }
    });
    Serve { child, addr, log }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_reloads_the_file_and_keeps_the_policies_in_force_when_it_breaks() {
    let server = common::redis();
    let dir = common::tempdir("serve-policies");
    let path = dir.join("policies.toml");
    common::replace_file(&path, POLICIES, 1_700_000_000);
    let serve = serve(&server.url(), &path);
    let addr = serve.addr;
    let ask = r#"{"policy":"api","key":"carol"}"#;
    assert_eq!(
        check(addr, ask).await.2["remaining"],
        1,
        "the daily limit of 2"
    );

    common::replace_file(&path, RAISED, 1_700_000_100);
    let reloaded = common::eventually(Duration::from_secs(30), || async {
        let (_, _, body) = http(addr, "GET", "/api/policies", "").await;
        json(&body)["policies"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["name"] == "search"))
    })
    .await;
    assert!(reloaded, "serve picked up the changed file");
    // The log says which file, how many policies and what changed.
    let said = common::eventually(Duration::from_secs(10), || async {
        serve.log().contains(&format!(
            "reloaded {}: 2 policies (api: limit daily changed; search added; trial removed)",
            path.display()
        ))
    })
    .await;
    assert!(said, "{}", serve.log());
    let (_, _, reply) = check(addr, ask).await;
    assert_eq!(reply["allowed"], true);
    assert_eq!(
        reply["binding"], "per-second",
        "the day now allows 50: {reply}"
    );
    let (_, _, reply) = check(addr, r#"{"policy":"search","key":"carol"}"#).await;
    assert_eq!(reply["remaining"], 59, "{reply}");

    // A broken file: refused, counted, and the policies in force stay.
    common::replace_file(
        &path,
        &RAISED.replace("limit = 60", "limit = -1"),
        1_700_000_200,
    );
    let counted = common::eventually(Duration::from_secs(30), || async {
        let (_, _, body) = http(addr, "GET", "/api/metrics", "").await;
        body.contains("ratelockr_policy_reloads_total{result=\"error\"} 1")
    })
    .await;
    assert!(counted, "the refused reload is counted");
    let said = common::eventually(Duration::from_secs(10), || async {
        serve.log().contains("the policies in force stay")
    })
    .await;
    assert!(said, "the refusal is logged: {}", serve.log());
    let (_, _, body) = http(addr, "GET", "/api/metrics", "").await;
    assert!(
        body.contains("ratelockr_policy_reloads_total{result=\"ok\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("ratelockr_policy_decisions_total{policy=\"api\",result=\"allowed\"} 2"),
        "{body}"
    );
    let (_, _, reply) = check(addr, r#"{"policy":"search","key":"carol"}"#).await;
    assert_eq!(
        reply["remaining"], 58,
        "the last good file is in force: {reply}"
    );
}

#[test]
fn serve_refuses_a_broken_policies_file_at_the_start_naming_the_line() {
    let dir = common::tempdir("serve-policies-broken");
    let path = dir.join("policies.toml");
    std::fs::write(&path, POLICIES.replace("capacity = 3", "capacity = 0")).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["serve", "--addr", "127.0.0.1:0", "--policies"])
        .arg(&path)
        .output()
        .expect("run ratelockr");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--policies"), "{stderr}");
    assert!(stderr.contains("line 8"), "{stderr}");
    assert!(stderr.contains("capacity"), "{stderr}");
}
