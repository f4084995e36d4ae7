//! Requests in flight in the simulator's output, against a real redis-server: slow requests
//! (every admitted one holds 200 ms) under a concurrency limit of 2 never have more than 2 in
//! flight for a key, counted from the records; the same traffic under a rate limit that admits
//! it all piles up far past that. The records carry each admitted request's hold and answer
//! time, the CSV too, and the chart's timeline counts the same.

use crate::common::{limiter, redis};
use ratelockr_lab::export::{self, CsvSink, TimelineBuilder};
use ratelockr_lab::sim::hold::Hold;
use ratelockr_lab::sim::{self, InFlightCounter, Length, Record, RecordSink, SimSpec, Workload};
use tokio_util::sync::CancellationToken;

/// Keeps every record, and writes them to a CSV beside.
struct Kept {
    records: Vec<Record>,
    csv: CsvSink,
}

impl RecordSink for Kept {
    fn write(&mut self, record: &Record) -> Result<(), export::ExportError> {
        self.records.push(record.clone());
        self.csv.write(record)
    }
    fn flush(&mut self) -> Result<(), export::ExportError> {
        self.csv.flush()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_of_two_never_has_more_than_two_in_flight_and_a_rate_limit_does() {
    let server = redis();
    let limiter = limiter(&server, "sim-in-flight");
    // 60 requests at 50 per second on one key, each admitted one in flight for 200 ms: about
    // 10 at once when nothing stops them.
    let workload = Workload {
        rps: 50.0,
        length: Length::Requests(60),
        servers: 2,
        hold: Some(Hold::Fixed(200)),
        ..Workload::default()
    };
    // A token bucket of 1,000 per second admits it all; the concurrency limit holds 2.
    let mut spec = SimSpec::in_flight_beside_rate("t-", 2, 1_000, 1_000, workload).expect("valid");
    spec.scope = Some(SimSpec::fresh_scope("in-flight"));
    let dir = tempfile::tempdir().expect("temp dir");
    let csv_path = dir.path().join("records.csv");
    let mut kept = Kept {
        records: Vec::new(),
        csv: CsvSink::create(&csv_path).expect("csv"),
    };
    let timeline = TimelineBuilder::new(&spec, 0).observer();
    let report = sim::run(
        &limiter,
        &spec,
        Some(&mut kept),
        &timeline,
        CancellationToken::new(),
    )
    .await
    .expect("the run completes");
    let (rate, slots) = (&report.targets[0], &report.targets[1]);
    assert_eq!(
        (rate.rule.as_str(), slots.rule.as_str()),
        ("t-token-bucket", "t-concurrency")
    );
    assert_eq!(rate.denied, 0, "the rate limit admits everything");
    assert!(
        slots.denied > 0,
        "the concurrency limit turned some away: {slots:?}"
    );

    // From the records alone: each admitted request's span, counted per key.
    let mut counted = [InFlightCounter::default(), InFlightCounter::default()];
    for r in &kept.records {
        let target = usize::from(r.rule.as_ref() == "t-concurrency");
        if r.allowed {
            assert_eq!(
                r.hold_ms,
                Some(200),
                "an admitted request carries its hold: {r:?}"
            );
            assert!(r.answered_us > 0, "{r:?}");
        } else {
            assert_eq!(
                r.hold_ms, None,
                "a denied request was never in flight: {r:?}"
            );
        }
        counted[target].add(r);
    }
    let peak = |c: &InFlightCounter| c.peak().expect("something was in flight").count;
    assert_eq!(
        peak(&counted[1]),
        2,
        "never more than the limit's 2, and it filled"
    );
    assert!(
        peak(&counted[0]) > 2,
        "under the rate limit requests pile up: {}",
        peak(&counted[0])
    );
    // The report says the same.
    assert_eq!(slots.peak_in_flight.as_ref().map(|p| p.count), Some(2));
    assert_eq!(
        rate.peak_in_flight.as_ref().map(|p| p.count),
        Some(peak(&counted[0]))
    );

    // The chart's timeline: per bin, the concurrency line never passes 2, the rate line does.
    let timeline = timeline.finish(report.duration_ms);
    let lines = &timeline.targets;
    assert!(
        lines[1].in_flight.iter().all(|n| *n <= 2),
        "{:?}",
        lines[1].in_flight
    );
    assert!(
        lines[0].in_flight.iter().any(|n| *n > 2),
        "{:?}",
        lines[0].in_flight
    );
    let view = export::ChartView::of_timeline(&timeline, "in flight", "");
    let panel = view.panels.last().expect("panels");
    assert!(panel.title.contains("in flight"), "{}", panel.title);
    assert!(
        panel
            .lines
            .iter()
            .any(|l| l.label == "t-concurrency limit (2)"),
        "the limit is drawn: {:?}",
        panel.lines.iter().map(|l| &l.label).collect::<Vec<_>>()
    );

    // The CSV carries the columns, read back by name.
    let mut from_csv = InFlightCounter::default();
    export::for_each_record_ref(&csv_path, |r| {
        if r.rule == "t-concurrency" {
            if let Some((from, to)) = r.in_flight_us() {
                from_csv.add_span(r.key, from, to);
            }
        }
    })
    .expect("reads");
    assert_eq!(from_csv.peak().map(|p| p.count), Some(2));
}
