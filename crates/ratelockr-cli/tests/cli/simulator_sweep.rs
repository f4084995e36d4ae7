//! Simulation sweeps on a real redis-server: every configuration of a rule on the same
//! traffic in one run, rated per configuration, with the smallest one within the bound said as
//! a sentence; and `simulate --sweep` (table, JSON, heatmaps, refusals).

use crate::common;
use crate::helper_cli as cli;

use crate::common::{limiter, redis};
use ratelockr::Rule;
use ratelockr_lab::sim::{self, Length, NoObserver, Pattern, SimSpec, Workload};
use ratelockr_lab::sweep::{Bound, SweepAxis, SweepChoice};
use tokio_util::sync::CancellationToken;

fn axes(specs: &[&str]) -> Vec<SweepAxis> {
    specs.iter().map(|s| s.parse().expect(s)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_configuration_sees_the_same_traffic_and_a_bigger_bucket_denies_less() {
    let server = redis();
    let limiter = limiter(&server, "sim-sweep");
    // Bursts of 30 every second, refilled at 30 a second: a bucket of 10 passes a third of
    // each, one of 40 all of it.
    let workload = Workload {
        pattern: Pattern::Burst {
            size: 30,
            every_ms: 1000,
        },
        length: Length::Requests(90),
        servers: 2,
        ..Workload::default()
    };
    let base = Rule::token_bucket("api", 10, 30.0).expect("valid");
    let spec = SimSpec::sweep(&base, axes(&["capacity=10,40"]), workload).expect("a grid");
    assert_eq!(spec.targets.len(), 2);
    assert!(spec
        .describe()
        .contains("swept over capacity (2 configurations)"));
    let report = sim::run(&limiter, &spec, None, &NoObserver, CancellationToken::new())
        .await
        .expect("the run completes");
    assert_eq!(report.sweep.len(), 2);
    let (small, big) = (&report.sweep[0], &report.sweep[1]);
    assert_eq!(small.params["capacity"], 10.0);
    assert_eq!(big.params["capacity"], 40.0);
    assert_eq!((small.requests, big.requests), (90, 90), "the same traffic");
    assert_eq!(small.fail_open + big.fail_open, 0);
    assert!(small.denied_pct > 50.0, "{small:?}");
    assert_eq!(big.denied, 0, "a bucket of 40 passes bursts of 30: {big:?}");
    assert_eq!(report.targets[0].keys, 1);
    assert_eq!(report.targets[0].keys_denied, 1);
    assert!(report.targets[0].worst_wait_ms > 0);
    assert_eq!(report.targets[1].worst_wait_ms, 0);

    let choice =
        SweepChoice::choose(&report.sweep, &spec.sweep, Bound::Requests, 1.0).expect("a choice");
    assert!(choice.met);
    assert_eq!(
        choice.sentence,
        "capacity 40 is the smallest that denies at most 1 % of requests (0 %)"
    );
}

#[test]
fn a_sweep_from_the_command_line() {
    let dir = common::tempdir("sim-sweep-cli");
    let chart = dir.join("sweep.png");
    let chart_arg = chart.display().to_string();
    let base = [
        "--embedded",
        "simulate",
        "--algorithm",
        "token-bucket",
        "--capacity",
        "10",
        "--refill-per-sec",
        "30",
        "--pattern",
        "burst",
        "--burst-size",
        "30",
        "--burst-every-ms",
        "1000",
        "--requests",
        "60",
        "--sweep",
        "capacity=10,40",
        "--sweep",
        "refill_per_sec=30,60",
    ];
    let mut args = vec!["--json"];
    args.extend(base);
    args.extend(["--sweep-chart", &chart_arg]);
    let out = cli::ratelockr(&args);
    let json = cli::json(&out);
    let sweep = json["sweep"].as_array().expect("the sweep's points");
    assert_eq!(sweep.len(), 4);
    assert_eq!(
        sweep[1]["rule"],
        "token-bucket.capacity-10.refill_per_sec-60"
    );
    assert_eq!(sweep[1]["params"]["refill_per_sec"], 60.0);
    let suggestion = &json["suggestion"];
    assert_eq!(suggestion["met"], true, "{suggestion}");
    assert_eq!(suggestion["params"]["capacity"], 40.0, "{suggestion}");
    assert!(
        suggestion["sentence"]
            .as_str()
            .is_some_and(|s| s.starts_with("capacity 40, refill_per_sec 30 is the smallest")),
        "{suggestion}"
    );
    let png = std::fs::read(&chart).expect("the heatmaps are drawn");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");

    // The table marks the choice and says it in a sentence.
    let out = cli::ratelockr(&base);
    let text = cli::text(&out.stdout);
    assert!(
        text.contains(
            "Capacity 40, refill_per_sec 30 is the smallest that denies at most 1 % of requests"
        ),
        "{text}"
    );

    // Refusals name the flag.
    let mut bad = base.to_vec();
    bad.extend(["--sweep", "limit=5"]);
    let out = cli::ratelockr(&bad);
    assert!(!out.status.success());
    let err = cli::text(&out.stderr);
    assert!(err.contains("--sweep"), "{err}");
    let out = cli::ratelockr(&[
        "--embedded",
        "simulate",
        "--compare",
        "--sweep",
        "limit=5,10",
    ]);
    assert!(!out.status.success());
    assert!(
        cli::text(&out.stderr).contains("--sweep"),
        "{}",
        cli::text(&out.stderr)
    );
}
