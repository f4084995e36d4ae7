//! Leases through the library and the decision endpoint, against a real redis-server: a
//! concurrency rule or policy admits up to its limit, each admission holding a lease that
//! `release` frees (once), `renew` extends, and dropping frees in the background; a denial, a
//! peek and a shadow denial take none; a denial is never repeated by the deny cache (a release
//! frees a slot before its wait); and serve's `/api/release` and `/api/renew` give back by id.

use crate::common::{eventually, http, limiter, limiter_with, options, query, redis};
use crate::served::{assert_refusals, json};
use ratelockr::policy::Mode;
use ratelockr::{DenyCacheOptions, LeaseError, Limit, LimiterOptions, Policy, Rule};
use std::net::SocketAddr;
use std::time::Duration;

fn in_flight(limit: u64) -> Rule {
    Rule::concurrency("uploads", limit, Duration::from_secs(60)).expect("valid")
}

/// The live leases of a sorted set (score = expiry > now, on the Redis clock).
async fn live(limiter: &ratelockr::Limiter, key: &str) -> u64 {
    let time: (u64, u64) = query(limiter, &redis::cmd("TIME")).await;
    let now = time.0 * 1000 + time.1 / 1000;
    query(
        limiter,
        redis::cmd("ZCOUNT")
            .arg(key)
            .arg(format!("({now}"))
            .arg("+inf"),
    )
    .await
}

/// Gives back a decision's lease: true when it freed a live slot.
async fn release(decision: &ratelockr::Decision) -> bool {
    let lease = decision.lease.as_ref().expect("a lease");
    lease.release().await.expect("Redis")
}

#[tokio::test]
async fn a_concurrency_rule_admits_its_limit_and_a_release_frees_one_slot_once() {
    let server = redis();
    let limiter = limiter(&server, "lease-rule");
    let rule = in_flight(2);
    let key = limiter.keys().limiter(&rule, "alice");
    let first = limiter.check(&rule, "alice").await.expect("valid");
    let second = limiter.check(&rule, "alice").await.expect("valid");
    assert!(first.allowed && second.allowed);
    assert_eq!((first.remaining, second.remaining), (1, 0));
    let (a, b) = (
        first.lease.clone().expect("a lease"),
        second.lease.clone().expect("a lease"),
    );
    assert_ne!(a.id(), b.id());
    assert_eq!(a.keys().collect::<Vec<_>>(), [key.as_str()]);
    assert_eq!(live(&limiter, &key).await, 2);

    let third = limiter.check(&rule, "alice").await.expect("valid");
    assert!(!third.allowed && third.lease.is_none(), "{third:?}");
    assert!(
        third.retry_after_ms > 0 && third.retry_after_ms <= 60_000,
        "{third:?}"
    );
    // A peek takes nothing, and says there is no room.
    let peek = limiter.peek(&rule, "alice").await.expect("valid");
    assert!(peek.lease.is_none() && peek.remaining == 0, "{peek:?}");

    assert!(a.release().await.expect("Redis"), "a live lease is freed");
    assert!(
        !a.release().await.expect("Redis"),
        "a lease is given back once"
    );
    assert_eq!(live(&limiter, &key).await, 1);
    let fourth = limiter.check(&rule, "alice").await.expect("valid");
    assert!(fourth.allowed && fourth.lease.is_some(), "{fourth:?}");
    // The JSON carries the lease's id; a decision without one leaves the field out.
    let json = serde_json::to_value(&fourth).expect("serializes");
    assert_eq!(json["lease"], fourth.lease.as_ref().expect("lease").id());
    assert!(serde_json::to_value(&third)
        .expect("serializes")
        .get("lease")
        .is_none());
    for lease in [b, fourth.lease.clone().expect("lease")] {
        assert!(lease.release().await.expect("Redis"));
    }
    assert_eq!(live(&limiter, &key).await, 0);
}

#[tokio::test]
async fn a_dropped_lease_is_released_in_the_background_and_a_kept_one_is_not() {
    let server = redis();
    let limiter = limiter(&server, "lease-drop");
    let rule = in_flight(3);
    let key = limiter.keys().limiter(&rule, "bob");
    {
        let decision = limiter.check(&rule, "bob").await.expect("valid");
        assert!(decision.lease.is_some());
        // Clones share the lease: dropping one of two releases nothing.
        let clone = decision.clone();
        drop(decision);
        tokio::task::yield_now().await;
        assert_eq!(live(&limiter, &key).await, 1);
        drop(clone);
    }
    assert!(
        eventually(Duration::from_secs(5), || async {
            live(&limiter, &key).await == 0
        })
        .await,
        "the last clone dropped gives the lease back"
    );
    // A kept lease (handed to a caller elsewhere by its id) outlives its value.
    let kept = limiter.check(&rule, "bob").await.expect("valid");
    let id = kept.lease.as_ref().expect("lease").id().to_string();
    kept.lease.as_ref().expect("lease").keep();
    drop(kept);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(live(&limiter, &key).await, 1);
    // ... and is given back by id, as serve and the CLI do.
    let policy = Policy::from_rule(&rule);
    let named = limiter.lease_of(&policy, "bob", &id).expect("a lease");
    assert!(named.release().await.expect("Redis"));
    assert_eq!(live(&limiter, &key).await, 0);
}

#[tokio::test]
async fn a_renewal_moves_the_expiry_and_an_expired_lease_renews_nothing() {
    let server = redis();
    let limiter = limiter(&server, "lease-renew");
    let rule = Rule::concurrency("jobs", 2, Duration::from_millis(400)).expect("valid");
    let key = limiter.keys().limiter(&rule, "carol");
    let decision = limiter.check(&rule, "carol").await.expect("valid");
    let lease = decision.lease.clone().expect("a lease");
    let score = |limiter: &ratelockr::Limiter| {
        let (limiter, key, id) = (limiter.clone(), key.clone(), lease.id().to_string());
        async move { query::<Option<u64>>(&limiter, redis::cmd("ZSCORE").arg(&key).arg(&id)).await }
    };
    let before = score(&limiter).await.expect("held");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(lease.renew().await.expect("Redis"));
    let after = score(&limiter).await.expect("held");
    assert!(after > before, "renewed: {before} -> {after}");
    // Past its life, a lease is not taken again by a renewal.
    assert!(
        eventually(Duration::from_secs(5), || async {
            live(&limiter, &key).await == 0
        })
        .await
    );
    assert!(
        !lease.renew().await.expect("Redis"),
        "an expired lease renews nothing"
    );
    assert!(!lease.release().await.expect("Redis"), "nor frees anything");
}

#[tokio::test]
async fn a_stack_takes_one_lease_in_each_concurrency_limit_and_none_when_denied() {
    let server = redis();
    let limiter = limiter(&server, "lease-stack");
    let policy = Policy::new(
        "upload",
        vec![
            Limit::concurrency("in-flight", 2, Duration::from_secs(60)).expect("valid"),
            Limit::fixed_window("per-minute", 3, Duration::from_secs(60)).expect("valid"),
            Limit::concurrency("heavy", 5, Duration::from_secs(30)).expect("valid"),
        ],
    )
    .expect("valid");
    let keys = limiter.keys();
    let cc: Vec<String> = ["in-flight", "heavy"]
        .map(|l| keys.policy_limit(ratelockr::AlgorithmKind::Concurrency, "upload", l, "dave"))
        .to_vec();
    let one = limiter.check_policy(&policy, "dave").await.expect("valid");
    let lease = one.lease.clone().expect("a lease");
    assert_eq!(
        lease.keys().collect::<Vec<_>>(),
        cc,
        "the stack's concurrency limits only"
    );
    let two = limiter.check_policy(&policy, "dave").await.expect("valid");
    assert!(two.allowed && two.lease.is_some());
    // The in-flight limit denies: no lease anywhere, the window charged nothing.
    let three = limiter.check_policy(&policy, "dave").await.expect("valid");
    assert!(!three.allowed && three.lease.is_none(), "{three:?}");
    assert_eq!(three.binding(), Some("in-flight"));
    for key in &cc {
        assert_eq!(live(&limiter, key).await, 2, "{key}");
    }
    assert!(lease.release().await.expect("Redis"));
    for key in &cc {
        assert_eq!(
            live(&limiter, key).await,
            1,
            "{key}: freed in every limit at once"
        );
    }
    // The window admitted two: one more passes, then it denies, taking no lease (with a
    // slot free in flight, so the window alone denies).
    let four = limiter.check_policy(&policy, "dave").await.expect("valid");
    assert!(four.allowed && four.lease.is_some());
    assert!(release(&two).await);
    let five = limiter.check_policy(&policy, "dave").await.expect("valid");
    assert!(!five.allowed && five.lease.is_none());
    assert_eq!(five.binding(), Some("per-minute"));
    // A shadow policy's denial admits, but takes no lease; its admissions take one.
    let shadow = policy.clone().with_mode(Mode::Shadow);
    let denied = limiter.check_policy(&shadow, "dave").await.expect("valid");
    assert!(
        denied.allowed && denied.would_deny() && denied.lease.is_none(),
        "{denied:?}"
    );
    let fresh = limiter.check_policy(&shadow, "erin").await.expect("valid");
    assert!(fresh.allowed && !fresh.would_deny() && fresh.lease.is_some());
}

#[tokio::test]
async fn a_concurrency_denial_is_never_repeated_by_the_deny_cache() {
    let server = redis();
    let limiter = limiter_with(
        &server.url(),
        LimiterOptions {
            deny_cache: Some(DenyCacheOptions::default()),
            ..options("lease-cache")
        },
    );
    let rule = in_flight(1);
    let held = limiter.check(&rule, "frank").await.expect("valid");
    let denied = limiter.check(&rule, "frank").await.expect("valid");
    assert!(!denied.allowed && !denied.cached());
    assert!(release(&held).await);
    // The denial's wait (a minute) is only an upper bound: the slot is free now.
    let next = limiter.check(&rule, "frank").await.expect("valid");
    assert!(next.allowed && next.lease.is_some(), "{next:?}");
}

#[tokio::test]
async fn a_lease_is_named_only_where_a_concurrency_limit_holds_it() {
    let server = redis();
    let limiter = limiter(&server, "lease-named");
    let rate = Policy::from_rule(&Rule::token_bucket("api", 5, 1.0).expect("valid"));
    assert!(matches!(
        limiter.lease_of(&rate, "k", "abc"),
        Err(LeaseError::NoConcurrencyLimit { .. })
    ));
    let cc = Policy::from_rule(&in_flight(1));
    for bad in ["", "a b", &"x".repeat(65), "{tag}"] {
        assert!(
            matches!(
                limiter.lease_of(&cc, "k", bad),
                Err(LeaseError::InvalidId(_))
            ),
            "{bad:?}"
        );
    }
    assert!(matches!(
        limiter.lease_of(&cc, "", "abc"),
        Err(LeaseError::Key(_))
    ));
    // An id no decision gave frees nothing, and says so.
    let unknown = limiter
        .lease_of(&cc, "k", "never-given")
        .expect("well-formed");
    assert!(!unknown.release().await.expect("Redis"));
}

async fn serve(limiter: ratelockr::Limiter, policies: &str) -> (SocketAddr, tempfile::TempDir) {
    crate::served::serve_policies(limiter, vec![in_flight(1)], policies).await
}

#[tokio::test]
async fn serve_hands_out_leases_and_takes_them_back_by_id() {
    let server = redis();
    let limiter = limiter(&server, "lease-api");
    let policies = r#"
[[policies]]
name = "upload"
  [[policies.limits]]
  name = "in-flight"
  algorithm = "concurrency"
  limit = 1
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 100
  refill_per_sec = 100

[[policies]]
name = "plain"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 100
  refill_per_sec = 100
"#;
    let (addr, _dir) = serve(limiter.clone(), policies).await;
    let check = r#"{"policy": "upload", "key": "gina"}"#;
    let (status, headers, body) = http(addr, "POST", "/api/check", check).await;
    assert_eq!(status, 200, "{body}");
    let first = json(&body);
    let id = first["lease"].as_str().expect("a lease id").to_string();
    assert!(
        headers["ratelimit-policy"].contains("\"upload.in-flight\";q=1;qu=\"concurrent-requests\""),
        "{headers:?}"
    );
    // The reply is gone, the lease is held: the next request is denied.
    let (_, _, body) = http(addr, "POST", "/api/check", check).await;
    let denied = json(&body);
    assert_eq!(
        (denied["allowed"].as_bool(), denied.get("lease")),
        (Some(false), None)
    );
    assert_eq!(denied["status"], 429);

    let release = format!(r#"{{"policy": "upload", "key": "gina", "lease": "{id}"}}"#);
    let renew = release.clone();
    let (status, _, body) = http(addr, "POST", "/api/renew", &renew).await;
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"renewed": true}))
    );
    let (status, _, body) = http(addr, "POST", "/api/release", &release).await;
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"released": true}))
    );
    let (status, _, body) = http(addr, "POST", "/api/release", &release).await;
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"released": false}))
    );
    let (_, _, body) = http(addr, "POST", "/api/check", check).await;
    assert_eq!(json(&body)["allowed"], true, "the slot is free again");

    // A loaded rule's lease, by the rule's name.
    let (_, _, body) = http(
        addr,
        "POST",
        "/api/check",
        r#"{"rule": "uploads", "key": "h"}"#,
    )
    .await;
    let id = json(&body)["lease"].as_str().expect("a lease").to_string();
    let by_rule = format!(r#"{{"rule": "uploads", "key": "h", "lease": "{id}"}}"#);
    let (_, _, body) = http(addr, "POST", "/api/release", &by_rule).await;
    assert_eq!(json(&body), serde_json::json!({"released": true}));

    // Refusals name their field.
    assert_refusals(
        addr,
        "/api/release",
        &[
            (
                r#"{"policy": "plain", "key": "k", "lease": "abc"}"#,
                400,
                "no_concurrency_limit",
                "policy",
            ),
            (
                r#"{"policy": "upload", "key": "k", "lease": "a b"}"#,
                400,
                "invalid_lease",
                "lease",
            ),
            (
                r#"{"policy": "nope", "key": "k", "lease": "abc"}"#,
                404,
                "unknown_policy",
                "policy",
            ),
            (
                r#"{"rule": "nope", "key": "k", "lease": "abc"}"#,
                404,
                "unknown_rule",
                "rule",
            ),
        ],
    )
    .await;
    let (got, _, reply) = http(
        addr,
        "POST",
        "/api/release",
        r#"{"policy": "upload", "key": "k", "lease": "x", "cost": 1}"#,
    )
    .await;
    assert_eq!(got, 400, "{reply}");
    assert!(
        reply.contains("cost"),
        "the unknown field is named: {reply}"
    );
    let (got, _, _) = http(addr, "GET", "/api/release", "").await;
    assert_eq!(got, 405);
}

#[tokio::test]
async fn releases_and_settlements_count_in_the_policys_telemetry_beside_its_decisions() {
    let server = redis();
    let limiter = limiter(&server, "lease-telemetry");
    let policy = Policy::new(
        "llm",
        vec![
            Limit::concurrency("in-flight", 2, Duration::from_secs(60)).expect("valid"),
            Limit::fixed_window("tokens", 1000, Duration::from_secs(60)).expect("valid"),
        ],
    )
    .expect("valid");
    let one = limiter
        .check_policy_cost(&policy, "eve", 100)
        .await
        .expect("valid");
    let two = limiter
        .check_policy_cost(&policy, "eve", 100)
        .await
        .expect("valid");
    assert!(release(&one).await);
    // Released twice: it freed nothing the second time, and is not counted again.
    let again = limiter
        .lease_of(&policy, "eve", one.lease.as_ref().expect("a lease").id())
        .expect("named");
    assert!(!again.release().await.expect("Redis"));
    assert!(release(&two).await);
    // One settlement changes the limits; one of the same cost changes nothing.
    assert!(limiter
        .settle(&policy, "eve", 100, 40)
        .await
        .expect("Redis"));
    assert!(!limiter
        .settle(&policy, "eve", 100, 100)
        .await
        .expect("Redis"));
    // A rule's lease is counted under the rule's name.
    let rule = in_flight(1);
    let d = limiter.check(&rule, "eve").await.expect("valid");
    assert!(release(&d).await);

    let stats = limiter
        .policy_stats(&["llm", "uploads"])
        .await
        .expect("stats");
    let sum = |series: &[ratelockr::policy::PolicyStatsPoint]| {
        series.iter().fold((0, 0, 0), |(a, r, s), p| {
            (a + p.allowed, r + p.released, s + p.settled)
        })
    };
    assert_eq!(sum(&stats[0]), (2, 2, 1), "{:?}", stats[0]);
    assert_eq!(sum(&stats[1]).1, 1, "{:?}", stats[1]);

    // Without telemetry nothing is counted, and the calls still work.
    let quiet = limiter_with(
        &server.url(),
        LimiterOptions {
            telemetry: false,
            ..options("lease-telemetry-off")
        },
    );
    let d = quiet
        .check_policy_cost(&policy, "eve", 100)
        .await
        .expect("valid");
    assert!(release(&d).await);
    assert!(quiet.settle(&policy, "eve", 100, 1).await.expect("Redis"));
    let stats = quiet.policy_stats(&["llm"]).await.expect("stats");
    assert_eq!(sum(&stats[0]), (0, 0, 0), "{:?}", stats[0]);
}
