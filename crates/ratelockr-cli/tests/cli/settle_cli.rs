//! `ratelockr settle` charges a request decided with an estimate what it really cost, in every
//! limit of its policy: the unused part given back, a larger cost charged past the limit; for a
//! rule given as flags and for a policy from a file; mistakes name their flag.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};

#[test]
fn settle_gives_back_the_unused_part_and_charges_the_rest_past_the_limit() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("scli");
    let rule = [
        "--algorithm",
        "fixed-window",
        "--limit",
        "10",
        "--window-ms",
        "60000",
        "--rule",
        "tokens",
        "--key",
        "alice",
    ];
    let run = |command: &str, extra: &[&str]| {
        let mut args = vec![
            "--redis",
            url.as_str(),
            "--prefix",
            prefix.as_str(),
            command,
        ];
        args.extend(rule);
        args.extend(extra);
        ratelockr(&args)
    };
    let remaining = || json(&run("check", &["--peek", "--json"]))["remaining"].clone();
    let out = run("check", &["--cost", "8", "--json"]);
    assert_eq!(json(&out)["allowed"], true);
    assert_eq!(remaining(), 2);
    // Charged 8, took 3: 5 come back.
    let out = run("settle", &["--charged", "8", "--actual", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stdout);
    assert!(
        line.starts_with("settled") && line.contains("gave back 5"),
        "{line}"
    );
    assert_eq!(remaining(), 7);
    // Charged 3, took 12: 9 more, past the limit of 10.
    let settled = json(&run(
        "settle",
        &["--charged", "3", "--actual", "12", "--json"],
    ));
    assert_eq!(settled["settled"], true, "{settled}");
    assert_eq!(
        (settled["charged"].clone(), settled["actual"].clone()),
        (3.into(), 12.into())
    );
    assert_eq!(remaining(), 0);
    assert_eq!(json(&run("check", &["--json"]))["allowed"], false);
    // The same cost settles nothing, and says so.
    let out = run("settle", &["--charged", "4", "--actual", "4"]);
    assert!(
        text(&out.stdout).starts_with("nothing"),
        "{}",
        text(&out.stdout)
    );
    // A charge no decision of the rule could have made is refused by its flag.
    let out = run("settle", &["--charged", "11", "--actual", "1"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("invalid --charged 11"),
        "{}",
        text(&out.stderr)
    );
}

const POLICIES: &str = r#"
[[policies]]
name = "llm"
  [[policies.limits]]
  name = "in-flight"
  algorithm = "concurrency"
  limit = 4
  [[policies.limits]]
  name = "tokens-per-minute"
  algorithm = "fixed-window"
  limit = 1000
  window_ms = 60000
  [[policies.limits]]
  name = "tokens-per-day"
  algorithm = "fixed-window"
  limit = 5000
  window_ms = 86400000
"#;

#[test]
fn a_policys_request_is_settled_in_every_limit_by_the_policy_and_key() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("scli-p");
    let dir = common::tempdir("scli-p");
    let file = dir.join("policies.toml");
    std::fs::write(&file, POLICIES).expect("write");
    let file = file.display().to_string();
    let run = |command: &str, extra: &[&str]| {
        let mut args = vec![
            "--redis",
            url.as_str(),
            "--prefix",
            prefix.as_str(),
            command,
        ];
        args.extend([
            "--policies",
            file.as_str(),
            "--policy",
            "llm",
            "--key",
            "bo",
        ]);
        args.extend(extra);
        ratelockr(&args)
    };
    let out = run("check", &["--cost", "1000", "--json"]);
    let first = json(&out);
    assert_eq!(first["allowed"], true);
    let out = run(
        "settle",
        &["--charged", "1000", "--actual", "640", "--json"],
    );
    assert_eq!(json(&out)["settled"], true);
    // Every limit as a charge of 640 leaves it: 360 left this minute, so 360 passes and 361
    // would not.
    let peek = json(&run("check", &["--cost", "360", "--json"]));
    assert_eq!(peek["allowed"], true, "{peek}");
    let out = run("check", &["--cost", "1", "--json"]);
    assert_eq!(json(&out)["allowed"], false);
    // The policy's last 30 seconds count the settlement, and the lease given back.
    let lease = first["lease"].as_str().expect("a lease");
    let out = run("release", &["--lease", lease]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut args = vec!["--redis", url.as_str(), "--prefix", prefix.as_str()];
    args.extend(["stats", "--policies", file.as_str(), "--policy", "llm"]);
    let rows = json(&ratelockr(&[args.as_slice(), &["--json"]].concat()));
    let total = |field: &str| -> u64 {
        let rows = rows.as_array().expect("rows");
        rows.iter().map(|r| r[field].as_u64().expect(field)).sum()
    };
    assert_eq!((total("settled"), total("released")), (1, 1), "{rows}");
    let shown = text(&ratelockr(&args).stdout);
    assert!(
        shown.contains("released") && shown.contains("settled"),
        "{shown}"
    );
    // A bad key is refused by its flag.
    let mut args = vec![
        "--redis",
        url.as_str(),
        "--prefix",
        prefix.as_str(),
        "settle",
    ];
    args.extend(["--policies", file.as_str(), "--policy", "llm", "--key", ""]);
    args.extend(["--charged", "2", "--actual", "1"]);
    let out = ratelockr(&args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("invalid --key"),
        "{}",
        text(&out.stderr)
    );
}
