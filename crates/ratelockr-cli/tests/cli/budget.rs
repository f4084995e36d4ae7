//! A front that would crowd a shared Redis out of connections refuses before opening any,
//! naming its flag: a simulation's servers and a replay's lanes against a real redis-server
//! with a small `maxclients`.

use crate::common;
use crate::helper_cli as cli;

use ratelockr::EmbeddedRedis;

#[test]
fn servers_and_lanes_beyond_maxclients_are_refused_by_name() {
    let server = EmbeddedRedis::start_with(&["--maxclients", "30"]).expect("redis-server");
    let url = server.url();
    let out = cli::ratelockr(&[
        "--redis",
        &url,
        "simulate",
        "--compare",
        "--requests",
        "10",
        "--servers",
        "40",
    ]);
    assert!(!out.status.success());
    let err = cli::text(&out.stderr);
    assert!(
        err.contains("--servers") && err.contains("maxclients 30"),
        "{err}"
    );

    let dir = common::tempdir("budget");
    let log = dir.join("a.log");
    std::fs::write(
        &log,
        "10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"curl\"\n",
    )
    .expect("write");
    let log = log.display().to_string();
    let replay = |lanes: &str| {
        cli::ratelockr(&[
            "--redis",
            &url,
            "replay",
            "--log",
            &log,
            "--algorithm",
            "fixed-window",
            "--lanes",
            lanes,
        ])
    };
    let out = replay("20");
    assert!(!out.status.success());
    let err = cli::text(&out.stderr);
    assert!(
        err.contains("--lanes") && err.contains("maxclients 30"),
        "{err}"
    );
    let out = replay("65");
    assert!(cli::text(&out.stderr).contains("must be from 1 to 64"));
    // Within the budget, both run.
    let out = replay("4");
    assert!(out.status.success(), "{}", cli::text(&out.stderr));
    let out = cli::ratelockr(&[
        "--redis",
        &url,
        "simulate",
        "--compare",
        "--requests",
        "10",
        "--servers",
        "4",
    ]);
    assert!(out.status.success(), "{}", cli::text(&out.stderr));
}
