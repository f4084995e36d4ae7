//! A run's own timeline: per target and bin, the requests offered, allowed, denied and failed
//! open, at the bin width that fits the run ([`super::style::bin_ms`]), and the keys seen (the
//! envelope is per key).
//!
//! Records are counted at the finest bin width first and merged once the run's length is
//! known, so the CLI can build it while the run goes and the app from a kept CSV.

use super::style::{bin_ms, BIN_STEPS};
use crate::record::Record;
use crate::sim::{InFlightCounter, SimObserver, SimSpec};
use crate::subject::Subject;
use ratelockr::rule::Algorithm;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// One target's counts per bin.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetLine {
    pub rule: String,
    /// What its records are of: a script, or the naive limiter.
    pub subject: Subject,
    pub naive: bool,
    pub algorithm: Algorithm,
    pub offered: Vec<u64>,
    pub allowed: Vec<u64>,
    pub denied: Vec<u64>,
    pub fail_open: Vec<u64>,
    /// Distinct client keys that sent to this target.
    pub keys: u64,
    /// A run with holds: per bin, the most requests one key had in flight at once
    /// ([`crate::sim::in_flight`]); empty without holds.
    pub in_flight: Vec<u64>,
}

/// One client key's limiter state after each of its decisions on one rule.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyTrace {
    pub key: String,
    pub rule: String,
    pub algorithm: Algorithm,
    /// `(ms from the run's start, remaining)` in sending order; `None` where it failed open.
    pub points: Vec<(u64, Option<i64>)>,
}

/// A run's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub bin_ms: u64,
    pub duration_ms: u64,
    pub targets: Vec<TargetLine>,
    /// The key asked for with [`TimelineBuilder::with_key`], if any.
    pub key: Option<KeyTrace>,
}

impl Timeline {
    pub fn bins(&self) -> usize {
        self.targets.first().map_or(0, |t| t.offered.len())
    }
}

/// Builds a [`Timeline`] from records; also a [`SimObserver`], to build one during a run.
#[derive(Debug)]
pub struct TimelineBuilder {
    started_at_ms: u64,
    fine_ms: u64,
    index: HashMap<String, usize>,
    lines: Vec<TargetLine>,
    keys: Vec<HashSet<String>>,
    /// Each target's requests in flight.
    in_flight: Vec<InFlightCounter>,
    /// The traced key, with each point's sending order.
    trace: Option<(KeyTrace, Vec<SendOrder>)>,
}

/// `(sent ms, seq, attempt)`: a record's place in sending order.
type SendOrder = (u64, u64, u32);

impl TimelineBuilder {
    /// A builder for `spec`'s targets, counting from `started_at_ms` (as an observer, from
    /// the run's own start, whatever is given here).
    pub fn new(spec: &SimSpec, started_at_ms: u64) -> Self {
        let lines: Vec<TargetLine> = spec
            .targets
            .iter()
            .map(|t| TargetLine {
                rule: t.rule.name().to_string(),
                subject: t.subject(),
                naive: t.naive,
                algorithm: *t.rule.algorithm(),
                offered: Vec::new(),
                allowed: Vec::new(),
                denied: Vec::new(),
                fail_open: Vec::new(),
                keys: 0,
                in_flight: Vec::new(),
            })
            .collect();
        TimelineBuilder {
            started_at_ms,
            fine_ms: BIN_STEPS[0].bin_ms,
            index: lines
                .iter()
                .enumerate()
                .map(|(i, l)| (l.rule.clone(), i))
                .collect(),
            keys: vec![HashSet::new(); lines.len()],
            in_flight: vec![InFlightCounter::default(); lines.len()],
            lines,
            trace: None,
        }
    }

    /// Also keeps `key`'s state after each decision on the first real (not naive) rule.
    pub fn with_key(mut self, key: &str) -> Self {
        self.trace = self.lines.iter().find(|l| !l.naive).map(|l| {
            let trace = KeyTrace {
                key: key.to_string(),
                rule: l.rule.clone(),
                algorithm: l.algorithm,
                points: Vec::new(),
            };
            (trace, Vec::new())
        });
        self
    }

    /// Counts one record (records of rules the spec does not name are ignored).
    pub fn add(&mut self, record: &Record) {
        let Some(&i) = self.index.get(&*record.rule) else {
            return;
        };
        let bin = (record.sent_at_ms.saturating_sub(self.started_at_ms) / self.fine_ms) as usize;
        let line = &mut self.lines[i];
        if line.offered.len() <= bin {
            for v in [
                &mut line.offered,
                &mut line.allowed,
                &mut line.denied,
                &mut line.fail_open,
            ] {
                v.resize(bin + 1, 0);
            }
        }
        line.offered[bin] += 1;
        if record.fail_open {
            line.fail_open[bin] += 1;
        } else if record.allowed {
            line.allowed[bin] += 1;
        } else {
            line.denied[bin] += 1;
        }
        self.in_flight[i].add(record);
        if !self.keys[i].contains(&*record.key) {
            self.keys[i].insert(record.key.to_string());
        }
        if let Some((trace, order)) = &mut self.trace {
            if *trace.rule == *record.rule && *trace.key == *record.key {
                let at = record.sent_at_ms.saturating_sub(self.started_at_ms);
                let remaining = (!record.fail_open).then_some(record.remaining);
                trace.points.push((at, remaining));
                order.push((at, record.seq, record.attempt));
            }
        }
    }

    /// The timeline of a run that lasted `duration_ms` (the latest record decides when it is
    /// later), at that length's bin width.
    pub fn finish(mut self, duration_ms: u64) -> Timeline {
        let fine_bins = self
            .lines
            .iter()
            .map(|l| l.offered.len())
            .max()
            .unwrap_or(0) as u64;
        // A request still in flight after the last send is drawn to its end.
        let held_ms = self.in_flight.iter().map(InFlightCounter::end_ms).max();
        let duration_ms = duration_ms
            .max(fine_bins.saturating_sub(1) * self.fine_ms)
            .max(held_ms.unwrap_or(0));
        let width = bin_ms(duration_ms);
        let factor = (width / self.fine_ms).max(1) as usize;
        let bins = (duration_ms.div_ceil(width).max(1)) as usize;
        let merge = |fine: &[u64]| -> Vec<u64> {
            let mut out = vec![0; bins];
            for (i, v) in fine.iter().enumerate() {
                out[(i / factor).min(bins - 1)] += v;
            }
            out
        };
        for ((line, keys), in_flight) in self.lines.iter_mut().zip(&self.keys).zip(&self.in_flight)
        {
            if !in_flight.is_empty() {
                line.in_flight = in_flight.per_bin(width, bins);
            }
            line.offered = merge(&line.offered);
            line.allowed = merge(&line.allowed);
            line.denied = merge(&line.denied);
            line.fail_open = merge(&line.fail_open);
            line.keys = keys.len() as u64;
        }
        // Records arrive in completion order; a key's story is told in sending order.
        let key = self.trace.map(|(mut trace, order)| {
            let mut both: Vec<_> = order.into_iter().zip(trace.points).collect();
            both.sort_by_key(|(o, _)| *o);
            trace.points = both.into_iter().map(|(_, p)| p).collect();
            trace
        });
        Timeline {
            bin_ms: width,
            duration_ms,
            targets: self.lines,
            key,
        }
    }

    /// Wraps the builder for use as a run's observer.
    pub fn observer(self) -> TimelineObserver {
        TimelineObserver(Mutex::new(self))
    }
}

/// A [`TimelineBuilder`] that watches a run (an observer sees records through `&self`).
#[derive(Debug)]
pub struct TimelineObserver(Mutex<TimelineBuilder>);

impl TimelineObserver {
    pub fn finish(self, duration_ms: u64) -> Timeline {
        self.0
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .finish(duration_ms)
    }
}

impl SimObserver for TimelineObserver {
    fn on_start(&self, started_at_ms: u64) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .started_at_ms = started_at_ms;
    }

    fn on_record(&self, record: &Record) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).add(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Workload;
    use ratelockr::rule::{AlgorithmKind, Rule};

    fn record(rule: &str, at: u64, key: &str, allowed: bool) -> Record {
        Record {
            seq: 0,
            sent_at_ms: at,
            server: 0,
            rule: rule.into(),
            algorithm: AlgorithmKind::FixedWindow.into(),
            key: key.into(),
            allowed,
            remaining: 0,
            retry_after_ms: 0,
            latency_us: 1,
            fail_open: false,
            reset_after_ms: 0,
            attempt: 0,
            offset_ms: 0,
            ..Record::default()
        }
    }

    #[test]
    fn bins_fit_the_run_and_every_record_is_counted_once() {
        let rule = Rule::fixed_window("fw", 5, std::time::Duration::from_secs(1)).expect("valid");
        let spec = SimSpec::single(rule, Workload::default(), false).expect("spec");
        let mut b = TimelineBuilder::new(&spec, 10_000);
        // Bursts of 3 every 500 ms over 2 s: a 2 s run bins at 10 ms, so bursts stay bursts.
        for burst in 0..4u64 {
            for k in 0..3 {
                b.add(&record("fw", 10_000 + burst * 500, &format!("k{k}"), k < 2));
            }
        }
        b.add(&record("other", 10_000, "k0", true));
        let t = b.finish(2_000);
        assert_eq!(t.bin_ms, 10);
        let line = &t.targets[0];
        assert_eq!(line.offered.iter().sum::<u64>(), 12);
        assert_eq!(line.allowed.iter().sum::<u64>(), 8);
        assert_eq!(line.denied.iter().sum::<u64>(), 4);
        assert_eq!(line.offered[0], 3);
        assert_eq!(line.offered[50], 3);
        assert_eq!(
            line.offered[1..50].iter().sum::<u64>(),
            0,
            "quiet between bursts"
        );
        assert_eq!(line.keys, 3);
        // A 60 s run merges into 200 ms bins.
        let mut b = TimelineBuilder::new(&spec, 0);
        b.add(&record("fw", 150, "a", true));
        b.add(&record("fw", 190, "a", true));
        b.add(&record("fw", 59_999, "a", true));
        let t = b.finish(60_000);
        assert_eq!((t.bin_ms, t.bins()), (200, 300));
        assert_eq!(t.key, None, "no key asked for");
        // A traced key: its state in sending order, a gap where it failed open.
        let mut b = TimelineBuilder::new(&spec, 1_000).with_key("a");
        let mut late = record("fw", 1_300, "a", true);
        late.remaining = 4;
        let mut open = record("fw", 1_200, "a", true);
        open.fail_open = true;
        b.add(&late);
        b.add(&open);
        b.add(&record("fw", 1_100, "a", false));
        b.add(&record("fw", 1_100, "b", true));
        let key = b.finish(1_000).key.expect("traced");
        assert_eq!((key.key.as_str(), key.rule.as_str()), ("a", "fw"));
        assert_eq!(
            key.points,
            vec![(100, Some(0)), (200, None), (300, Some(4))]
        );
        assert_eq!(t.targets[0].offered[0], 2);
        assert_eq!(t.targets[0].offered[299], 1);
    }
}
