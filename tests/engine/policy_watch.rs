//! A policies file in force, reloaded live ([`ratelockr::policy::PolicyWatch`]): a changed
//! file swaps in whole, a broken one keeps the policies in force, names the line and is
//! counted as a reload error, and an unchanged file is not read again.

use crate::common;

use ratelockr::policy::{PolicyWatch, Reload};
use ratelockr::Metrics;
use std::time::Duration;

const ONE: &str = r#"
[[policies]]
name = "api"
  [[policies.limits]]
  name = "per-second"
  algorithm = "fixed-window"
  limit = 10
  window_ms = 1000
"#;

const TWO: &str = r#"
[[policies]]
name = "api"
  [[policies.limits]]
  name = "per-second"
  algorithm = "fixed-window"
  limit = 20
  window_ms = 1000

[[policies]]
name = "search"
  [[policies.limits]]
  name = "per-minute"
  algorithm = "sliding-window-log"
  limit = 60
  window_ms = 60000
"#;

fn limit_of(watch: &PolicyWatch, policy: &str) -> Option<String> {
    watch
        .policy(policy)
        .map(|p| format!("{:?}", p.limits()[0].algorithm()))
}

#[test]
fn a_changed_file_swaps_in_and_a_broken_one_keeps_the_policies_in_force() {
    let dir = common::tempdir("pwatch");
    let path = dir.join("policies.toml");
    common::replace_file(&path, ONE, 1_700_000_000);
    let metrics = Metrics::new();
    let watch = PolicyWatch::load_with(&path, Some(metrics.clone()), None).expect("loads");
    assert!(limit_of(&watch, "api").expect("api").contains("limit: 10"));
    assert!(watch.policy("search").is_none());

    assert!(matches!(watch.poll(), Reload::Unchanged));
    assert_eq!(
        metrics.policy_reloads(true),
        0,
        "an unchanged file is not read"
    );

    let before = watch.current();
    common::replace_file(&path, TWO, 1_700_000_100);
    assert!(matches!(watch.poll(), Reload::Reloaded));
    assert!(limit_of(&watch, "api").expect("api").contains("limit: 20"));
    assert!(
        watch.policy("search").is_some(),
        "the new policy is in force"
    );
    assert!(
        before.get("search").is_none(),
        "a decision holding the old set keeps it whole"
    );
    assert_eq!(metrics.policy_reloads(true), 1);

    // A broken limit: refused whole, named by line and field, and the set in force stays.
    let broken = TWO.replace("limit = 60", "limit = 0");
    common::replace_file(&path, &broken, 1_700_000_200);
    match watch.poll() {
        Reload::Refused(err) => {
            let text = err.to_string();
            assert!(text.contains("policies.toml"), "names the file: {text}");
            assert!(text.contains("line 15"), "names the line: {text}");
            assert!(text.contains("limit"), "names the field: {text}");
        }
        other => panic!("a broken file is refused, not {other:?}"),
    }
    assert!(limit_of(&watch, "api").expect("api").contains("limit: 20"));
    assert!(watch.policy("search").is_some());
    assert_eq!(metrics.policy_reloads(false), 1);
    // Refused once: not retried (nor counted again) until it changes.
    assert!(matches!(watch.poll(), Reload::Unchanged));
    assert_eq!(metrics.policy_reloads(false), 1);

    // A file that is gone is a change too, and is refused.
    std::fs::remove_file(&path).expect("remove");
    assert!(matches!(watch.poll(), Reload::Refused(_)));
    assert!(watch.policy("api").is_some());
    assert_eq!(metrics.policy_reloads(false), 2);

    common::replace_file(&path, ONE, 1_700_000_300);
    assert!(matches!(watch.poll(), Reload::Reloaded));
    assert!(
        watch.policy("search").is_none(),
        "the file's set is the whole set"
    );
}

#[test]
fn a_file_that_does_not_load_at_the_start_is_an_error() {
    let dir = common::tempdir("pwatch-start");
    let path = dir.join("policies.json");
    std::fs::write(&path, "{\"policies\": [").expect("write");
    let err = PolicyWatch::load(&path).expect_err("nothing to keep in force");
    assert!(err.to_string().contains("policies.json"), "{err}");
    let missing = PolicyWatch::load(dir.join("absent.toml")).expect_err("no file");
    assert!(missing.to_string().contains("absent.toml"), "{missing}");
}

#[tokio::test]
async fn the_spawned_watch_reloads_on_its_own_and_stops_when_dropped() {
    let dir = common::tempdir("pwatch-spawn");
    let path = dir.join("policies.toml");
    common::replace_file(&path, ONE, 1_700_000_000);
    let watch = PolicyWatch::load(&path).expect("loads");
    let task = watch.spawn(Duration::from_millis(20));
    common::replace_file(&path, TWO, 1_700_000_100);
    let mut polls = 0;
    while watch.policy("search").is_none() {
        polls += 1;
        assert!(polls < 500, "the watch reloaded the changed file");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(watch);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the task ends once every clone is dropped")
        .expect("the task did not panic");
}
