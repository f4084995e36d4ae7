//! A run's records in columns, for the run chart, the per-key view and the decision inspector.
//!
//! A row of JSON objects repeats every field name and the rule, algorithm and key strings in
//! each of 200,000 records; parallel arrays of numbers with the strings in dictionaries
//! (targets, keys) cost a fraction of that to build, send and parse (docs/app-performance.md).

use crate::error::{AppError, ErrorCode};
use crate::kept_run::{RunTarget, StoredRun};
use ratelockr_lab::export::RecordRef;
use ratelockr_lab::sim::InFlightCounter;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use ts_rs::TS;

/// Outcome codes in [`RunRecords::outcome`].
pub const OUTCOME_ALLOWED: u8 = 0;
pub const OUTCOME_DENIED: u8 = 1;
pub const OUTCOME_FAIL_OPEN: u8 = 2;

/// Every record of a run as parallel arrays: record `i` is `t_ms[i]`, `target[i]`, `key[i]`...
/// in completion order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, TS)]
pub struct RunRecords {
    pub id: String,
    /// The run's start (ms since the epoch); `t_ms` counts from here.
    #[ts(type = "number")]
    pub started_at_ms: u64,
    #[ts(type = "number")]
    pub duration_ms: u64,
    /// The bin width the run chart uses for this run (`CHART_STYLE.bins`).
    #[ts(type = "number")]
    pub bin_ms: u64,
    /// The rules decided with; `target[i]` indexes this.
    pub targets: Vec<RunTarget>,
    /// The client keys; `key[i]` indexes this.
    pub keys: Vec<String>,
    /// Send time, ms after `started_at_ms`.
    pub t_ms: Vec<u32>,
    pub target: Vec<u16>,
    pub key: Vec<u32>,
    /// 0 allowed, 1 denied, 2 fail-open.
    pub outcome: Vec<u8>,
    /// As decided; -1 on fail-open.
    pub remaining: Vec<i64>,
    #[ts(type = "Array<number>")]
    pub retry_after_ms: Vec<u64>,
    #[ts(type = "Array<number>")]
    pub reset_after_ms: Vec<u64>,
    /// Client-observed round trip of the decision.
    pub latency_us: Vec<u32>,
    /// 0 for a first try, n for the nth retry (retry storms).
    pub attempt: Vec<u32>,
    /// The request's number in the schedule (shared by the targets it was offered to).
    #[ts(type = "Array<number>")]
    pub seq: Vec<u64>,
    /// Runs of policies only (empty otherwise): the limit that decided each decision and the
    /// key's tier, as indexes into `labels` (0: none), and whether a limit denied it (a
    /// shadow policy's admission its limits denied has outcome allowed and `would_deny` 1).
    pub binding: Vec<u16>,
    pub tier: Vec<u16>,
    pub would_deny: Vec<u8>,
    /// The limit and tier names `binding` and `tier` index; `labels[0]` is "".
    pub labels: Vec<String>,
    /// Runs with holds only (empty otherwise): per target, per bin of `bin_ms` from the
    /// run's start, the most requests one key had in flight at once (from an admitted
    /// request's answer to its hold's end; `ratelockr_lab::sim::in_flight`). The bins run to
    /// the last hold's end, past the last send.
    #[ts(optional, as = "Option<Vec<Vec<u32>>>")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_flight: Vec<Vec<u32>>,
}

impl RunRecords {
    pub fn len(&self) -> usize {
        self.t_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ms.is_empty()
    }

    /// Reads `run`'s records from `csv`.
    pub fn read(run: &StoredRun, csv: &Path) -> Result<RunRecords, AppError> {
        let (started_at_ms, duration_ms) = match &run.report {
            Some(r) => (r.started_at_ms, r.duration_ms),
            None => (run.created_ms, 0),
        };
        let mut columns = Columns::new(&run.id, &run.spec, started_at_ms);
        ratelockr_lab::export::for_each_record_ref(csv, |r| columns.push(r))
            .map_err(|e| AppError::new(ErrorCode::History, e.to_string()))?;
        columns.finish(duration_ms).map_err(|UnknownRule(rule)| {
            AppError::new(
                ErrorCode::History,
                format!(
                    "the records of run {} name a rule ({rule:?}) the run did not use; the file {} is kept as it is",
                    run.id,
                    csv.display()
                ),
            )
        })
    }
}

/// The records name a rule the run did not use (its name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the records name a rule ({0:?}) the run did not use")]
pub struct UnknownRule(pub String);

/// Builds [`RunRecords`] a record at a time: from a kept CSV, or during the run itself, so the
/// run that just ended is at hand without reading its file back.
#[derive(Debug)]
pub struct Columns {
    out: RunRecords,
    index: HashMap<String, u16>,
    keys: HashMap<String, u32>,
    unknown_rule: Option<String>,
    /// Set when a target is a policy: the label dictionary of `binding` and `tier`.
    labels: Option<HashMap<String, u16>>,
    /// Each target's requests in flight (runs with holds).
    in_flight: Vec<InFlightCounter>,
}

impl Columns {
    pub fn new(id: &str, spec: &ratelockr_lab::sim::SimSpec, started_at_ms: u64) -> Self {
        let targets: Vec<RunTarget> = spec.targets.iter().map(RunTarget::of).collect();
        let policies = targets.iter().any(|t| t.policy.is_some());
        Columns {
            in_flight: vec![InFlightCounter::default(); targets.len()],
            index: targets
                .iter()
                .enumerate()
                .map(|(i, t)| (t.rule.name().to_string(), i as u16))
                .collect(),
            out: RunRecords {
                id: id.to_string(),
                started_at_ms,
                targets,
                ..RunRecords::default()
            },
            keys: HashMap::new(),
            unknown_rule: None,
            labels: policies.then(|| HashMap::from([(String::new(), 0)])),
        }
    }

    /// The run's start, once it is known (`t_ms` counts from it).
    pub fn set_start(&mut self, started_at_ms: u64) {
        self.out.started_at_ms = started_at_ms;
    }

    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    pub fn push(&mut self, r: &RecordRef<'_>) {
        let out = &mut self.out;
        let Some(&target) = self.index.get(r.rule) else {
            self.unknown_rule.get_or_insert_with(|| r.rule.to_string());
            return;
        };
        // Look up before inserting: most rows repeat a key already seen.
        let key = match self.keys.get(r.key) {
            Some(&k) => k,
            None => {
                let k = self.keys.len() as u32;
                self.keys.insert(r.key.to_string(), k);
                k
            }
        };
        if let Some((from, to)) = r.in_flight_us() {
            self.in_flight[usize::from(target)].add_span(r.key, from, to);
        }
        out.t_ms
            .push(r.sent_at_ms.saturating_sub(out.started_at_ms) as u32);
        out.target.push(target);
        out.key.push(key);
        out.outcome.push(if r.fail_open {
            OUTCOME_FAIL_OPEN
        } else if r.allowed {
            OUTCOME_ALLOWED
        } else {
            OUTCOME_DENIED
        });
        out.remaining.push(r.remaining);
        out.retry_after_ms.push(r.retry_after_ms);
        out.reset_after_ms.push(r.reset_after_ms);
        out.latency_us
            .push(r.latency_us.min(u64::from(u32::MAX)) as u32);
        out.attempt.push(r.attempt);
        out.seq.push(r.seq);
        if let Some(labels) = &mut self.labels {
            let mut label = |name: &str| match labels.get(name) {
                Some(&i) => i,
                None => {
                    let i = u16::try_from(labels.len()).unwrap_or(u16::MAX);
                    labels.insert(name.to_string(), i);
                    i
                }
            };
            out.binding.push(label(r.binding));
            out.tier.push(label(r.tier));
            out.would_deny.push(u8::from(r.would_deny));
        }
    }

    /// The columns of a run that lasted `duration_ms` (0: up to the last record), or the rule
    /// the records used that the run did not.
    pub fn finish(self, duration_ms: u64) -> Result<RunRecords, UnknownRule> {
        if let Some(rule) = self.unknown_rule {
            return Err(UnknownRule(rule));
        }
        let mut out = self.out;
        let mut names = vec![String::new(); self.keys.len()];
        for (name, i) in self.keys {
            names[i as usize] = name;
        }
        out.keys = names;
        if let Some(labels) = self.labels {
            let mut names = vec![String::new(); labels.len()];
            for (name, i) in labels {
                names[usize::from(i)] = name;
            }
            out.labels = names;
        }
        out.duration_ms = if duration_ms == 0 {
            out.t_ms.iter().copied().max().map_or(0, u64::from)
        } else {
            duration_ms
        };
        out.bin_ms = ratelockr_lab::export::style::bin_ms(out.duration_ms);
        if self.in_flight.iter().any(|c| !c.is_empty()) {
            let end_ms = self.in_flight.iter().map(InFlightCounter::end_ms).max();
            let bins = out
                .duration_ms
                .max(end_ms.unwrap_or(0))
                .div_ceil(out.bin_ms.max(1));
            out.in_flight = self
                .in_flight
                .iter()
                .map(|c| {
                    let most = c.per_bin(out.bin_ms, bins.max(1) as usize);
                    most.into_iter()
                        .map(|n| n.min(u64::from(u32::MAX)) as u32)
                        .collect()
                })
                .collect();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratelockr_lab::sim::{Record, SimSpec, Workload};

    #[test]
    fn a_run_with_holds_gives_each_target_its_most_in_flight_per_bin_to_the_last_holds_end() {
        let spec =
            SimSpec::in_flight_beside_rate("c-", 2, 100, 1000, Workload::default()).expect("spec");
        let mut columns = Columns::new("r1", &spec, 1_000);
        // Three admitted at once on the token bucket, two on the concurrency limit (a third
        // denied), each in flight 300 ms from about 10 ms in; nothing on another key.
        for (rule, allowed) in [
            ("c-token-bucket", true),
            ("c-token-bucket", true),
            ("c-token-bucket", true),
            ("c-concurrency", true),
            ("c-concurrency", true),
            ("c-concurrency", false),
        ] {
            let record = Record {
                sent_at_ms: 1_010,
                rule: rule.into(),
                key: "client-0".into(),
                allowed,
                hold_ms: allowed.then_some(300),
                answered_us: 10_500,
                ..Record::default()
            };
            columns.push(&RecordRef::from(&record));
        }
        let out = columns.finish(100).expect("known rules");
        // A 100 ms run bins at 10 ms; the bins run on to 310.5 ms, where the last hold ends.
        assert_eq!(out.bin_ms, 10);
        assert_eq!(out.in_flight.len(), 2);
        let [bucket, slots] = [&out.in_flight[0], &out.in_flight[1]];
        assert_eq!(bucket.len(), 32);
        assert_eq!((bucket[0], bucket[1], bucket[31]), (0, 3, 3));
        assert_eq!(slots.iter().max(), Some(&2));
        // Without holds, nothing to draw.
        let mut plain = Columns::new("r2", &spec, 1_000);
        let record = Record {
            rule: "c-token-bucket".into(),
            allowed: true,
            ..Record::default()
        };
        plain.push(&RecordRef::from(&record));
        assert!(plain.finish(100).expect("known").in_flight.is_empty());
    }
}
