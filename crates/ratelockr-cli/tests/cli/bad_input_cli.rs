//! Bad input to `check`, `simulate`, `replay` and `serve`: one case (at least) per flag that
//! takes a value, each refused with a non-zero exit, nothing on stdout, and a message that names
//! what is wrong. The flags are read from each command's `--help`, so a new flag without a case
//! fails `every_value_flag_has_a_bad_input_case`.
//!
//! Every case runs against a port where nothing listens: a bad input must be refused before any
//! Redis is asked (a decision would fail open there and exit 0).

use crate::common;
use crate::helper_cli as cli;

use cli::{ratelockr, text};
use std::collections::BTreeSet;

/// A value for a flag that must be dropped from the base arguments.
const DROP: &str = "<drop>";

const POLICIES: &str = r#"
[[policies]]
name = "api"
mode = "enforce"

  [[policies.limits]]
  name = "per-second"
  algorithm = "fixed-window"
  limit = 5
  window_ms = 1000
"#;

/// One bad input: the flag it tests, the arguments that replace or extend the command's base,
/// and what the message must name.
struct Case {
    flag: &'static str,
    args: Vec<String>,
    names: String,
}

fn case(flag: &'static str, args: &[&str], names: &str) -> Case {
    Case {
        flag,
        args: args.iter().map(|s| s.to_string()).collect(),
        names: names.to_string(),
    }
}

/// `base` with `over` applied: a flag in both takes `over`'s value (or is dropped, for
/// [`DROP`]); a flag only in `over` is appended. A flag's value is the next word unless that
/// is another flag.
fn merged(base: &[String], over: &[String]) -> Vec<String> {
    fn pairs(words: &[String]) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let flag = words[i].clone();
            let value = words.get(i + 1).filter(|w| !w.starts_with("--")).cloned();
            i += 1 + usize::from(value.is_some());
            out.push((flag, value));
        }
        out
    }
    let over = pairs(over);
    let mut args = Vec::new();
    let mut push = |(flag, value): (String, Option<String>)| {
        if value.as_deref() == Some(DROP) {
            return;
        }
        args.push(flag);
        args.extend(value);
    };
    let (first, rest) = base.split_first().expect("a command");
    let mut out = vec![first.clone()];
    for (flag, value) in pairs(rest) {
        match over.iter().find(|(f, _)| *f == flag) {
            Some(replaced) => push(replaced.clone()),
            None => push((flag, value)),
        }
    }
    for pair in &over {
        if !pairs(rest).iter().any(|(f, _)| *f == pair.0) {
            push(pair.clone());
        }
    }
    out.append(&mut args);
    out
}

/// Why `case` was not refused as it should be, if it was not.
fn refused(base: &[String], case: &Case) -> Option<String> {
    let args = merged(base, &case.args);
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ratelockr(&words);
    let stderr = text(&out.stderr);
    if out.status.success() {
        return Some(format!("{words:?} was accepted (exit 0): {stderr}"));
    }
    if !out.stdout.is_empty() {
        return Some(format!(
            "{words:?} printed on stdout: {}",
            text(&out.stdout)
        ));
    }
    if !stderr.contains(&case.names) {
        return Some(format!(
            "{words:?}: {stderr:?} does not name {:?}",
            case.names
        ));
    }
    ["panicked", "unexpected argument", "fail-open", "fail_open"]
        .iter()
        .find(|wrong| stderr.contains(*wrong))
        .map(|wrong| format!("{words:?}: says {wrong:?}: {stderr}"))
}

fn words(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The value-taking flags `ratelockr <command> --help` lists.
fn value_flags(command: &str) -> BTreeSet<String> {
    let out = ratelockr(&[command, "--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("-h, ").unwrap_or(line);
            let rest = line.strip_prefix("--")?;
            let (name, after) = rest.split_once(' ')?;
            after.starts_with('<').then(|| name.to_string())
        })
        .collect()
}

struct Fixture {
    dir: common::TempDir,
    dead: String,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = common::tempdir("bad-input-cli");
        std::fs::write(dir.join("policies.toml"), POLICIES).expect("write policies");
        std::fs::write(
            dir.join("one.log"),
            "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.0\" 200 2326\n",
        )
        .expect("write log");
        Fixture {
            dir,
            dead: common::dead_url(),
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The TLS flags' cases: each names its flag (or the missing file) before connecting.
    fn tls(&self) -> Vec<Case> {
        let tls_url = self.dead.replace("redis://", "rediss://");
        let missing = "/nonexistent/ratelockr/x.pem";
        vec![
            case("redis", &["--redis", "http://127.0.0.1:1"], "http"),
            case("redis", &["--redis", ""], "URL"),
            case("tls-ca", &["--tls-ca", missing], "--tls-ca"),
            case(
                "tls-ca",
                &["--redis", &tls_url, "--tls-ca", missing],
                missing,
            ),
            case(
                "tls-cert",
                &[
                    "--redis",
                    &tls_url,
                    "--tls-cert",
                    missing,
                    "--tls-key",
                    missing,
                ],
                missing,
            ),
            case(
                "tls-cert",
                &["--redis", &tls_url, "--tls-cert", missing],
                "--tls-key",
            ),
            case(
                "tls-key",
                &["--redis", &tls_url, "--tls-key", missing],
                "--tls-cert",
            ),
            case("prefix", &["--prefix", ""], "--prefix"),
            case("prefix", &["--prefix", "a{b}"], "--prefix"),
            case("deadline-ms", &["--deadline-ms", "0"], "--deadline-ms"),
            case("deadline-ms", &["--deadline-ms", "600000"], "--deadline-ms"),
        ]
    }

    /// The rule's flags, for an algorithm given as `--algorithm`.
    fn rule(&self) -> Vec<Case> {
        let bucket = [
            "--algorithm",
            "token-bucket",
            "--limit",
            DROP,
            "--window-ms",
            DROP,
        ];
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            bucket.iter().chain(extra).copied().collect()
        };
        vec![
            case("algorithm", &["--algorithm", "bogus"], "--algorithm"),
            case("rule", &["--rule", "a b"], "--rule"),
            case("rule", &["--rule", ""], "--rule"),
            case("limit", &["--limit", "0"], "--limit"),
            case("limit", &["--limit", "-1"], "--limit"),
            case("limit", &["--limit", "1e3"], "--limit"),
            case("window-ms", &["--window-ms", "0"], "--window-ms"),
            case("capacity", &with(&["--capacity", "0"]), "--capacity"),
            case("capacity", &["--capacity", "5"], "--capacity"),
            case(
                "refill-per-sec",
                &with(&["--refill-per-sec", "NaN"]),
                "--refill-per-sec",
            ),
            case(
                "refill-per-sec",
                &with(&["--refill-per-sec", "inf"]),
                "--refill-per-sec",
            ),
            case(
                "refill-per-sec",
                &with(&["--refill-per-sec", "0"]),
                "--refill-per-sec",
            ),
            case(
                "refill-per-sec",
                &["--refill-per-sec", "5"],
                "--refill-per-sec",
            ),
            case("burst", &["--algorithm", "gcra", "--burst", "0"], "--burst"),
            case("burst", &["--burst", "3"], "--burst"),
            case(
                "lease-ms",
                &[
                    "--algorithm",
                    "concurrency",
                    "--window-ms",
                    DROP,
                    "--lease-ms",
                    "0",
                ],
                "--lease-ms",
            ),
            case("lease-ms", &["--lease-ms", "5"], "--lease-ms"),
            // A calendar's words: each bad one, and each beside another algorithm.
            case(
                "period",
                &[
                    "--algorithm",
                    "calendar",
                    "--window-ms",
                    DROP,
                    "--period",
                    "fortnight",
                ],
                "--period",
            ),
            case("period", &["--period", "day"], "--period"),
            case(
                "time-zone",
                &[
                    "--algorithm",
                    "calendar",
                    "--window-ms",
                    DROP,
                    "--time-zone",
                    "Mars/Base",
                ],
                "--time-zone",
            ),
            case("time-zone", &["--time-zone", "UTC"], "--time-zone"),
            case(
                "week-start",
                &[
                    "--algorithm",
                    "calendar",
                    "--window-ms",
                    DROP,
                    "--week-start",
                    "friday",
                ],
                "--week-start",
            ),
            case("week-start", &["--week-start", "sunday"], "--week-start"),
            case(
                "policies",
                &["--policies", "/nonexistent/p.toml"],
                "--policies",
            ),
        ]
    }

    /// What every command that decides policies refuses: an unknown policy, `--policy`
    /// without `--policies`, a rule flag beside them.
    fn policy_cases(&self) -> Vec<Case> {
        vec![
            self.policy_named("nosuch", "policy", &[], "nosuch"),
            case("policy", &["--policy", "api"], "--policies"),
            self.policies("limit", &["--limit", "3"], "--limit"),
        ]
    }

    /// `--policies` given, with a flag that does not go with it.
    fn policies(&self, flag: &'static str, extra: &[&str], names: &str) -> Case {
        self.policy_named("api", flag, extra, names)
    }

    fn policy_named(&self, policy: &str, flag: &'static str, extra: &[&str], names: &str) -> Case {
        let file = self.path("policies.toml");
        let given = [
            ("--algorithm", DROP),
            ("--limit", DROP),
            ("--window-ms", DROP),
            ("--policies", file.as_str()),
            ("--policy", policy),
        ];
        // A flag `extra` gives is given once, as `extra` says.
        let mut args: Vec<&str> = given
            .iter()
            .filter(|(f, _)| !extra.contains(f))
            .flat_map(|(f, v)| [*f, *v])
            .collect();
        args.extend(extra);
        case(flag, &args, names)
    }
}

fn run_all(command: &str, base: &[&str], cases: &[Case]) {
    let base = words(base);
    let failures: Vec<String> = cases.iter().filter_map(|c| refused(&base, c)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.flag).collect();
    let missing: Vec<String> = value_flags(command)
        .into_iter()
        .filter(|f| !covered.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "`ratelockr {command}` flags with no bad-input case: {missing:?}"
    );
}

#[test]
fn check_refuses_every_bad_flag_by_name() {
    let f = Fixture::new();
    let base = [
        "check",
        "--redis",
        &f.dead,
        "--key",
        "k",
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "1000",
        "--json",
    ];
    let mut cases = f.tls();
    cases.extend(f.rule());
    cases.extend([
        case("key", &["--key", ""], "--key"),
        case("cost", &["--cost", "0"], "--cost"),
        case("cost", &["--cost", "6"], "--cost"),
        case("cost", &["--cost", "1.5"], "--cost"),
        case("now-ms", &["--now-ms", "9007199254740993"], "--now-ms"),
        case("now-ms", &["--now-ms", "-5"], "--now-ms"),
        f.policies("rule", &["--rule", "x"], "--rule"),
        f.policies("cost", &["--cost", "0"], "cost"),
        f.policies("key", &["--key", ""], "--key"),
    ]);
    cases.extend(f.policy_cases());
    run_all("check", &base, &cases);
}

#[test]
fn simulate_refuses_every_bad_flag_by_name() {
    let f = Fixture::new();
    let base = [
        "simulate",
        "--redis",
        &f.dead,
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "1000",
        "--requests",
        "10",
        "--json",
    ];
    const BURST: &[&str] = &["--pattern", "burst"];
    let with = |pattern: &'static [&'static str], extra: &[&str]| -> Vec<String> {
        pattern.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let pat = |flag: &'static str, pattern: &'static [&'static str], extra: &[&str]| Case {
        flag,
        args: with(pattern, extra),
        names: format!("--{flag}"),
    };
    let csv_dir = f.path("no/such/dir/out.csv");
    let png_dir = f.path("no/such/dir/out.png");
    let mut cases = f.tls();
    cases.extend(f.rule());
    cases.extend([
        case("requests", &["--requests", "0"], "--requests"),
        case("requests", &["--requests", "1000000000000"], "--requests"),
        case(
            "duration-secs",
            &["--requests", DROP, "--duration-secs", "0"],
            "--duration-secs",
        ),
        case(
            "duration-secs",
            &["--requests", DROP, "--duration-secs", "100000000"],
            "--duration-secs",
        ),
        case("rps", &["--rps", "NaN"], "--rps"),
        case("rps", &["--rps", "-1"], "--rps"),
        case("rps", &["--rps", "1e12"], "--rps"),
        case("pattern", &["--pattern", "bogus"], "--pattern"),
        pat("burst-size", BURST, &["--burst-size", "0"]),
        case("burst-size", &["--burst-size", "5"], "--burst-size"),
        pat("burst-every-ms", BURST, &["--burst-every-ms", "0"]),
        pat("to-rps", &["--pattern", "ramp"], &["--to-rps", "NaN"]),
        pat(
            "spike-multiplier",
            &["--pattern", "spike"],
            &["--spike-multiplier", "0"],
        ),
        pat(
            "spike-start-ms",
            &["--pattern", "spike"],
            &["--spike-start-ms", "-1"],
        ),
        pat(
            "spike-length-ms",
            &["--pattern", "spike"],
            &["--spike-length-ms", "0"],
        ),
        case(
            "retry-attempts",
            &["--retry-attempts", "1000"],
            "--retry-attempts",
        ),
        case("hold-ms", &["--hold-ms", "uniform:200..20"], "--hold-ms"),
        case("hold-ms", &["--hold-ms", "80ms"], "--hold-ms"),
        case("servers", &["--servers", "0"], "--servers"),
        case("connections", &["--connections", "0"], "--connections"),
        case(
            "connections",
            &["--servers", "4", "--connections", "5"],
            "--connections",
        ),
        case("servers", &["--servers", "100000"], "--servers"),
        case("keys", &["--keys", "0"], "--keys"),
        case("keys", &["--keys", "100000000000"], "--keys"),
        case("zipf", &["--zipf", "-1"], "--zipf"),
        case("zipf", &["--zipf", "NaN"], "--zipf"),
        case("cost", &["--cost", "0"], "--cost"),
        case("cost", &["--cost", "6"], "--cost"),
        case("seed", &["--seed", "x"], "--seed"),
        case("sweep", &["--sweep", "bogus=1"], "--sweep"),
        case("sweep", &["--sweep", "limit="], "--sweep"),
        case(
            "suggest-max-denied-pct",
            &["--sweep", "limit=1,2", "--suggest-max-denied-pct", "150"],
            "--suggest-max-denied-pct",
        ),
        case(
            "suggest-max-denied-pct",
            &["--suggest-max-denied-pct", "5"],
            "--sweep",
        ),
        case("sweep-chart", &["--sweep-chart", "x.png"], "--sweep"),
        case(
            "sweep-chart",
            &["--sweep", "limit=1,2", "--sweep-chart", "x.bogus"],
            "x.bogus",
        ),
        case("csv", &["--csv", &csv_dir], &csv_dir),
        case("chart", &["--chart", &png_dir], &png_dir),
        case("chart", &["--chart", "x.bogus"], "x.bogus"),
        case(
            "chart-measure",
            &["--chart-measure", "bogus"],
            "--chart-measure",
        ),
        case("chart-key", &["--chart-key", "k"], "--chart"),
        case(
            "compare",
            &["--compare", "--algorithm", DROP, "--capacity", "5"],
            "--capacity",
        ),
    ]);
    cases.extend(f.policy_cases());
    run_all("simulate", &base, &cases);
}

#[test]
fn replay_refuses_every_bad_flag_by_name() {
    let f = Fixture::new();
    let log = f.path("one.log");
    let base = [
        "replay",
        "--redis",
        &f.dead,
        "--log",
        &log,
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "1000",
        "--json",
    ];
    let csv_dir = f.path("no/such/dir/out.csv");
    let png_dir = f.path("no/such/dir/out.png");
    let missing_log = f.path("missing.log");
    let mut cases = f.tls();
    cases.extend(f.rule());
    cases.extend([
        case("log", &["--log", &missing_log], &missing_log),
        case("log", &["--log", ""], "--log"),
        case(
            "duration-field",
            &["--duration-field", ""],
            "--duration-field",
        ),
        case(
            "duration-unit",
            &["--duration-unit", "hours"],
            "--duration-unit",
        ),
        case(
            "duration-unit",
            &["--duration-unit", "s"],
            "--duration-field",
        ),
        case("format", &["--format", "bogus"], "--format"),
        case("key", &["--key", ""], "--key"),
        case("key", &["--key", "bogus:x"], "--key"),
        case("key-field", &["--key-field", ""], "--key"),
        case("time-field", &["--time-field", ""], "--time-field"),
        case("cost-field", &["--cost-field", ""], "--cost-field"),
        case("extra-fields", &["--extra-fields", ""], "--extra-fields"),
        case("method", &["--method", ""], "--method"),
        case("path", &["--path", ""], "--path"),
        case("path", &["--path", "("], "--path"),
        case(
            "lookahead-secs",
            &["--lookahead-secs", "100000"],
            "--lookahead-secs",
        ),
        case(
            "rules",
            &[
                "--algorithm",
                DROP,
                "--limit",
                DROP,
                "--window-ms",
                DROP,
                "--rules",
                "/nonexistent/r.toml",
            ],
            "/nonexistent/r.toml",
        ),
        case(
            "rules",
            &[
                "--algorithm",
                DROP,
                "--window-ms",
                DROP,
                "--rules",
                &f.path("policies.toml"),
            ],
            "--limit",
        ),
        case("top", &["--top", "100000"], "--top"),
        case("sweep", &["--sweep", "bogus=1"], "--sweep"),
        case(
            "suggest-max-keys-pct",
            &["--suggest-max-keys-pct", "150"],
            "--suggest-max-keys-pct",
        ),
        case("key-capacity", &["--key-capacity", "0"], "--key-capacity"),
        case(
            "key-capacity",
            &["--key-capacity", "1000000000"],
            "--key-capacity",
        ),
        case("lanes", &["--lanes", "0"], "--lanes"),
        case("lanes", &["--lanes", "100000"], "--lanes"),
        case("csv", &["--csv", &csv_dir], &csv_dir),
        case("chart", &["--chart", &png_dir], &png_dir),
        case("sweep-chart", &["--sweep-chart", "x.png"], "--sweep"),
        case("preview", &["--preview", "0"], "--preview"),
        case("preview", &["--preview", "-1"], "--preview"),
    ]);
    cases.extend(f.policy_cases());
    run_all("replay", &base, &cases);
}

#[test]
fn serve_refuses_every_bad_flag_by_name() {
    let f = Fixture::new();
    let base = ["serve", "--redis", &f.dead, "--addr", "127.0.0.1:0"];
    let mut cases = f.tls();
    cases.extend([
        case("addr", &["--addr", "bogus"], "--addr"),
        case("addr", &["--addr", "127.0.0.1:99999"], "--addr"),
        case("demo-rps", &["--demo-rps", "-1"], "--demo-rps"),
        case("demo-rps", &["--demo-rps", "1000000000"], "--demo-rps"),
        case("algorithm", &["--algorithm", "bogus"], "--algorithm"),
        case("algorithm", &["--algorithm", "gcra"], "--demo-rps"),
        case(
            "rules",
            &["--rules", "/nonexistent/r.toml"],
            "/nonexistent/r.toml",
        ),
        case(
            "policies",
            &["--policies", "/nonexistent/p.toml"],
            "/nonexistent/p.toml",
        ),
        case(
            "failure-mode",
            &["--failure-mode", "bogus"],
            "--failure-mode",
        ),
        case(
            "instances",
            &["--instances", "5"],
            "--failure-mode degraded",
        ),
        case(
            "instances",
            &["--failure-mode", "degraded", "--instances", "0"],
            "--instances",
        ),
        case(
            "instances",
            &["--failure-mode", "degraded", "--instances", "1000000"],
            "--instances",
        ),
    ]);
    run_all("serve", &base, &cases);
}

#[test]
fn merged_replaces_drops_and_appends() {
    let base = words(&["check", "--a", "1", "--b", "2", "--json"]);
    let got = merged(
        &base,
        &words(&["--b", "3", "--a", DROP, "--c", "4", "--flag"]),
    );
    assert_eq!(
        got,
        words(&["check", "--b", "3", "--json", "--c", "4", "--flag"])
    );
}
