//! Parsing a combined-format log the way a replay does (read, parse, key, sort, spread), no
//! Redis: `cargo bench -p ratelockr-cli --bench replay_parse`. The figure in docs/benchmarks.md comes from
//! `ratelockr bench --replay`, on a generated 1,000,000-line file; this one runs on 100,000
//! lines in memory, for before/after comparisons of parser changes.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ratelockr_lab::replay::{self, LogSource, ParseSpec};
use std::sync::atomic::AtomicU64;

const LINES: u64 = 100_000;

fn parse(c: &mut Criterion) {
    let path =
        std::env::temp_dir().join(format!("ratelockr-parse-bench-{}.log", std::process::id()));
    ratelockr_cli::bench::replay::write_log(&path, LINES).expect("write the log");
    let text = std::fs::read_to_string(&path).expect("read it back");
    let _ = std::fs::remove_file(&path);
    let source = LogSource::Text(text);
    let compiled = ParseSpec::default().compile().expect("the default spec");
    let mut group = c.benchmark_group("replay_parse");
    group.throughput(Throughput::Elements(LINES));
    group.sample_size(10);
    group.bench_function("combined, key ip", |b| {
        b.iter(|| {
            let progress = AtomicU64::new(0);
            let mut n = 0u64;
            replay::read::read(
                &source,
                &compiled,
                u64::MAX,
                &progress,
                |_| false,
                |_| {
                    n += 1;
                    true
                },
            )
            .expect("parses");
            assert_eq!(n, LINES);
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
