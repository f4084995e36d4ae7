//! `ratelockr check --algorithm calendar`: a quota per calendar period in a time zone from the
//! command line, counted to its limit; a zone, period or week start that is not one is named
//! by its flag.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};

#[test]
fn check_counts_a_calendar_quota_and_names_a_bad_word_by_its_flag() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("calcli");
    let global = ["--redis", url.as_str(), "--prefix", prefix.as_str()];
    let quota = [
        "--algorithm",
        "calendar",
        "--limit",
        "2",
        "--period",
        "day",
        "--time-zone",
        "Europe/Berlin",
    ];
    let check = |extra: &[&str]| {
        let mut args: Vec<&str> = global.to_vec();
        args.push("check");
        args.extend(quota);
        args.extend(["--key", "alice", "--json"]);
        args.extend(extra);
        ratelockr(&args)
    };
    // 2026-03-29 10:00 UTC, the day Berlin's clocks go forward: a 23-hour day that ends at
    // 22:00 UTC, 12 hours on.
    let at = "1774778400000";
    let first = check(&["--now-ms", at]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let first = json(&first);
    assert_eq!(
        (&first["allowed"], &first["remaining"]),
        (&true.into(), &1.into())
    );
    assert_eq!(first["reset_after_ms"], 12 * 3_600_000);
    assert!(json(&check(&["--now-ms", at]))["allowed"] == true);
    let third = json(&check(&["--now-ms", at]));
    assert_eq!(third["allowed"], false, "{third}");
    assert_eq!(third["retry_after_ms"], 12 * 3_600_000, "{third}");
    // The next local day starts afresh.
    let next_day = json(&check(&["--now-ms", "1774821600000"]));
    assert_eq!(next_day["allowed"], true, "{next_day}");

    for (flag, bad, shown) in [
        ("--time-zone", "Europe/Berln", "Europe/Berln"),
        ("--period", "fortnight", "fortnight"),
        ("--week-start", "friday", "friday"),
    ] {
        let mut args: Vec<&str> = global.to_vec();
        args.extend(["check", "--algorithm", "calendar", "--key", "a", flag, bad]);
        let out = ratelockr(&args);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{flag} {bad}: {err}");
        assert!(err.contains(flag) && err.contains(shown), "{flag}: {err}");
    }
    // A calendar word beside another algorithm is refused by name.
    let mut args: Vec<&str> = global.to_vec();
    args.extend([
        "check",
        "--algorithm",
        "gcra",
        "--key",
        "a",
        "--period",
        "day",
    ]);
    let err = text(&ratelockr(&args).stderr);
    assert!(err.contains("--period does not apply"), "{err}");
}
