//! `ratelockr check` and `simulate` against a TLS-only redis-server: `--tls-ca`, `--tls-cert`,
//! `--tls-key`, `--tls-insecure` (and their environment variables), and the errors users see.

use crate::common;
use crate::helper_cli as cli;
use crate::helper_tls as tls;

use cli::{json, ratelockr_env as ratelockr, text};
use tls::{arg, Pki, TlsRedis, TlsServer};

/// A deadline far above a cold TLS handshake on a loaded machine (tests/common).
const CHECK: [&str; 10] = [
    "check",
    "--deadline-ms",
    "20000",
    "--json",
    "--algorithm",
    "fixed-window",
    "--limit",
    "1",
    "--window-ms",
    "600000",
];

#[test]
fn check_over_mutual_tls_with_flags_and_environment() {
    let pki = Pki::new("cli-tls-mutual");
    let server = TlsRedis::start(
        &pki,
        TlsServer {
            mutual: true,
            ..TlsServer::default()
        },
    );
    let url = server.url();
    let prefix = common::unique("cli-tls");
    let mut args = CHECK.to_vec();
    args.extend(["--redis", &url, "--prefix", &prefix, "--key", "k"]);
    args.extend([
        "--tls-ca",
        arg(&pki.ca),
        "--tls-cert",
        arg(&pki.client_cert),
    ]);
    args.extend(["--tls-key", arg(&pki.client_key)]);
    let first = json(&ratelockr(&args, &[]));
    assert_eq!(first["allowed"], true, "{first}");
    assert_eq!(first["fail_open"], false, "{first}");
    // The same settings from the environment: the limit of 1 is now spent.
    let mut args = CHECK.to_vec();
    args.extend(["--prefix", &prefix, "--key", "k"]);
    let env = [
        ("REDIS_URL", url.as_str()),
        ("REDIS_TLS_CA", arg(&pki.ca)),
        ("REDIS_TLS_CERT", arg(&pki.client_cert)),
        ("REDIS_TLS_KEY", arg(&pki.client_key)),
    ];
    let second = json(&ratelockr(&args, &env));
    assert_eq!(second["allowed"], false, "{second}");
    assert_eq!(second["fail_open"], false, "{second}");
}

#[test]
fn simulate_over_tls_decides_every_request() {
    let pki = Pki::new("cli-tls-sim");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let url = server.url();
    let prefix = common::unique("cli-tls-sim");
    let out = ratelockr(
        &[
            "simulate",
            "--json",
            "--redis",
            &url,
            "--tls-ca",
            arg(&pki.ca),
            "--prefix",
            &prefix,
            "--deadline-ms",
            "20000",
            "--algorithm",
            "fixed-window",
            "--limit",
            "50",
            "--window-ms",
            "600000",
            "--requests",
            "200",
            "--rps",
            "0",
            "--servers",
            "4",
            "--keys",
            "1",
        ],
        &[],
    );
    let summary = json(&out);
    let row = &summary["algorithms"][0];
    assert_eq!(row["fail_open"], 0, "{summary}");
    assert_eq!(row["allowed"], 50, "{summary}");
    assert_eq!(row["denied"], 150, "{summary}");
}

#[test]
fn insecure_is_marked_on_every_command() {
    let pki = Pki::new("cli-tls-insecure");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let url = server.url();
    let prefix = common::unique("cli-tls-insecure");
    let mut args = CHECK.to_vec();
    args.extend([
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--key",
        "k",
        "--tls-insecure",
    ]);
    let out = ratelockr(&args, &[]);
    assert_eq!(json(&out)["fail_open"], false, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("#insecure") && stderr.contains("INSECURE"),
        "{stderr}"
    );
    assert!(
        stderr.contains("WITHOUT CERTIFICATE VERIFICATION"),
        "{stderr}"
    );
}

#[test]
fn tls_errors_name_what_failed() {
    let pki = Pki::new("cli-tls-errors");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let url = server.url();
    // A deadline a refused TLS handshake (an unknown CA) surely ends within, so that its own
    // error is seen, not a timeout.
    let mut base: Vec<&str> = [&CHECK[..1], &["--deadline-ms", "2000"], &CHECK[3..]].concat();
    base.extend(["--key", "k"]);
    // A short one where nothing answers within any deadline (a plain Redis behind rediss://
    // never answers the handshake): check, simulate and serve each wait it out, some more than
    // once, before the port is asked in plain TCP (a probe with its own time limit).
    const NEVER_ANSWERS_MS: &str = "250";
    let mut plain_base: Vec<&str> = [
        &CHECK[..1],
        &["--deadline-ms", NEVER_ANSWERS_MS],
        &CHECK[3..],
    ]
    .concat();
    plain_base.extend(["--key", "k"]);

    // Unknown CA: a fail-open decision (exit 0) that says why on stderr.
    let mut args = base.clone();
    args.extend(["--redis", &url, "--tls-ca", arg(&pki.other_ca)]);
    let out = ratelockr(&args, &[]);
    assert_eq!(json(&out)["fail_open"], true);
    assert!(
        text(&out.stderr).contains("unknown CA"),
        "{}",
        text(&out.stderr)
    );

    // A plain-TCP Redis behind rediss://.
    let plain = common::redis();
    let plain_url = format!("rediss://127.0.0.1:{}", plain.port());
    let mut args = plain_base.clone();
    args.extend(["--redis", &plain_url]);
    let out = ratelockr(&args, &[]);
    assert_eq!(json(&out)["fail_open"], true);
    assert!(
        text(&out.stderr).contains("use redis:// for it"),
        "{}",
        text(&out.stderr)
    );

    // simulate and serve say the same, at start-up, as every front diagnoses one way.
    let simulate = ratelockr(
        &[
            "simulate",
            "--json",
            "--redis",
            &plain_url,
            "--deadline-ms",
            NEVER_ANSWERS_MS,
            "--algorithm",
            "fixed-window",
            "--limit",
            "5",
            "--window-ms",
            "600000",
            "--requests",
            "2",
            "--rps",
            "0",
            "--servers",
            "1",
        ],
        &[],
    );
    assert!(
        text(&simulate.stderr).contains("use redis:// for it"),
        "{}",
        text(&simulate.stderr)
    );
    let serve_warning = serve_stderr_until(&plain_url, NEVER_ANSWERS_MS, "does not answer");
    assert!(
        serve_warning.contains("use redis:// for it"),
        "{serve_warning}"
    );

    // Bad options exit non-zero naming the flag, before any connection.
    let missing = pki.dir.join("missing.pem");
    let plain_redis = plain.url();
    for (extra, flag) in [
        (
            vec!["--redis", url.as_str(), "--tls-ca", arg(&missing)],
            "--tls-ca",
        ),
        (
            vec!["--redis", url.as_str(), "--tls-cert", arg(&pki.client_cert)],
            "--tls-key",
        ),
        (
            vec!["--redis", plain_redis.as_str(), "--tls-insecure"],
            "--tls-insecure",
        ),
        (vec!["--embedded", "--tls-ca", arg(&pki.ca)], "--tls-"),
    ] {
        let mut args = base.clone();
        args.extend(extra);
        let out = ratelockr(&args, &[]);
        assert!(!out.status.success(), "{flag}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains(flag),
            "{flag}: {}",
            text(&out.stderr)
        );
    }
}

/// `ratelockr serve` on a loopback port against `url` with a deadline of `deadline_ms`: its
/// stderr up to the first line holding `needle` (or everything it wrote before exiting), then
/// it is stopped.
fn serve_stderr_until(url: &str, deadline_ms: &str, needle: &str) -> String {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--deadline-ms",
            deadline_ms,
        ])
        .args(["--redis", url])
        .env_remove("RUST_LOG")
        .env_remove("REDIS_URL")
        .env_remove("REDIS_TLS_CA")
        .env_remove("REDIS_TLS_INSECURE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut seen = String::new();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(needle) {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}
