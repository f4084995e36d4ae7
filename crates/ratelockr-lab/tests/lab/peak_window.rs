//! The busiest window of each algorithm, on a real redis-server: a boundary burst puts more
//! than the limit into one window of the fixed window's length, and the sliding log never
//! does, on the same traffic.

use crate::common::{limiter, redis};
use ratelockr_lab::sim::{self, Length, NoObserver, Pattern, SimSpec, Workload};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread")]
async fn a_boundary_burst_shows_in_the_fixed_windows_peak_and_never_in_the_logs() {
    let server = redis();
    let limiter = limiter(&server, "sim-peak");
    // One key, 5 rps, then 100 rps from 700 ms: the fixed window opened at 0 fills up at the
    // spike and expires at about 1000 ms, and the next one admits its 10 at once: about 16
    // within one second, where the limit is 10.
    let workload = Workload {
        pattern: Pattern::Spike {
            multiplier: 20.0,
            start_ms: 700,
            length_ms: 1000,
        },
        rps: 5.0,
        length: Length::DurationMs(1800),
        servers: 2,
        ..Workload::default()
    };
    let spec = SimSpec::compare("", 10, 1000, workload, false).expect("valid");
    let report = sim::run(&limiter, &spec, None, &NoObserver, CancellationToken::new())
        .await
        .expect("the run completes");
    let peak = |algorithm: &str| {
        let t = report
            .targets
            .iter()
            .find(|t| t.algorithm == algorithm)
            .unwrap_or_else(|| panic!("{algorithm} in {:?}", report.targets));
        assert_eq!(t.fail_open, 0, "{algorithm} decided every request");
        t.peak_window
            .clone()
            .unwrap_or_else(|| panic!("{algorithm} admitted something"))
    };
    let log = peak("sliding_window_log");
    let fixed = peak("fixed_window");
    assert_eq!((log.limit, log.window_ms), (10, 1000));
    assert_eq!((fixed.limit, fixed.window_ms), (10, 1000));
    assert!(
        log.admitted <= 10,
        "the log never passes its limit: {log:?}"
    );
    assert_eq!(
        log.admitted, 10,
        "the spike fills the log's window: {log:?}"
    );
    assert!(
        fixed.admitted > 10,
        "the fixed window's boundary burst passes the limit: {fixed:?}"
    );
    assert!(fixed.exceeds() && !log.exceeds());
    // The window straddles the fixed window's boundary: it cannot start with the run's first
    // window, which alone holds no more than the limit.
    assert!(
        (1..1700).contains(&fixed.start_ms),
        "the burst is at the spike: {fixed:?}"
    );
    assert_eq!(fixed.key, "client-0");
    // The bucket (capacity 10, refilling 10 per second) reports against its capacity.
    let bucket = peak("token_bucket");
    assert_eq!((bucket.limit, bucket.window_ms), (10, 1000));
}
