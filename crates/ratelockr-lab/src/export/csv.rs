//! Simulation records as CSV: design.md's columns, in order, written with the csv crate.

use super::ExportError;
use crate::record::{Record, RecordSink};
use crate::subject::Subject;
use ratelockr::atomic_file::{AtomicFile, Replace};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The header row: design.md's columns in its order, then the ones added since.
pub const COLUMNS: [&str; 19] = [
    "seq",
    "sent_at_ms",
    "server",
    "rule",
    "algorithm",
    "key",
    "allowed",
    "remaining",
    "retry_after_ms",
    "latency_us",
    "fail_open",
    "reset_after_ms",
    "attempt",
    "offset_ms",
    "binding",
    "tier",
    "would_deny",
    "hold_ms",
    "answered_us",
];

/// Streams records to a CSV file as they complete, whole or not at all: the rows go to a
/// temporary file beside the destination, which [`RecordSink::flush`] (called once, when the
/// run ends, cancelled runs included) syncs and renames into place. A write that fails, or a run
/// that ends without that flush, leaves an existing file exactly as it was.
#[derive(Debug)]
pub struct CsvSink {
    writer: Option<csv::Writer<BufWriter<File>>>,
    out: Option<AtomicFile>,
    path: PathBuf,
    rows: u64,
    /// The first write error: once a row is lost the file is never put in place.
    failed: Option<String>,
}

impl CsvSink {
    /// A sink for `path` that replaces an existing file when the run ends (the user confirmed
    /// it). The header is written at once, so an unwritable folder fails before a run starts.
    pub fn create(path: &Path) -> Result<Self, ExportError> {
        Self::create_with(path, Replace::Allow)
    }

    /// As [`create`](Self::create), keeping an existing file unless `replace` allows it.
    pub fn create_with(path: &Path, replace: Replace) -> Result<Self, ExportError> {
        let out = AtomicFile::create(path, replace).map_err(|e| ExportError::io(path, e))?;
        let file = out
            .file()
            .try_clone()
            .map_err(|e| ExportError::io(path, e))?;
        let mut writer = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(BufWriter::new(file));
        let csv_err = |source| ExportError::Csv {
            path: path.to_path_buf(),
            source,
        };
        writer.write_record(COLUMNS).map_err(csv_err)?;
        writer.flush().map_err(|e| ExportError::io(path, e))?;
        Ok(CsvSink {
            writer: Some(writer),
            out: Some(out),
            path: path.to_path_buf(),
            rows: 0,
            failed: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Data rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn fail(&mut self, err: ExportError) -> ExportError {
        self.failed.get_or_insert_with(|| err.to_string());
        // The temporary file goes now; the destination was never touched.
        self.writer = None;
        self.out = None;
        err
    }
}

impl RecordSink for CsvSink {
    fn write(&mut self, record: &Record) -> Result<(), ExportError> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(self.closed());
        };
        match writer.serialize(record) {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            Err(source) => {
                let err = ExportError::Csv {
                    path: self.path.clone(),
                    source,
                };
                Err(self.fail(err))
            }
        }
    }

    /// Ends the file: flushes, syncs and renames it over the destination. Called again, it
    /// does nothing; after a failed write it repeats the failure and leaves the destination.
    fn flush(&mut self) -> Result<(), ExportError> {
        let (Some(mut writer), Some(out)) = (self.writer.take(), self.out.take()) else {
            return match self.failed {
                Some(_) => Err(self.closed()),
                None => Ok(()),
            };
        };
        let path = self.path.clone();
        let ended = writer
            .flush()
            .and_then(|()| {
                writer
                    .into_inner()
                    .map_err(|e| e.into_error())?
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .map(drop)
            })
            .and_then(|()| out.commit());
        ended.map_err(|e| {
            let err = ExportError::io(&path, e);
            self.failed.get_or_insert_with(|| err.to_string());
            err
        })
    }
}

impl CsvSink {
    /// The error for a sink that can take no more rows.
    fn closed(&self) -> ExportError {
        let why = self
            .failed
            .clone()
            .unwrap_or_else(|| "the file was already completed".to_string());
        ExportError::io(
            &self.path,
            std::io::Error::other(format!("not written: {why}")),
        )
    }
}

/// Streams the records of a CSV written by [`CsvSink`] to `each`, one at a time, so a long
/// run's file never has to fit in memory as records. Returns how many there were.
pub fn for_each_record(path: &Path, mut each: impl FnMut(Record)) -> Result<u64, ExportError> {
    let csv_err = |source| ExportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::Reader::from_path(path).map_err(csv_err)?;
    let mut count = 0;
    for row in reader.deserialize() {
        each(row.map_err(csv_err)?);
        count += 1;
    }
    Ok(count)
}

/// One row of a records CSV, borrowed from the reader's buffer: what a reader that keeps
/// columns (not records) needs, without allocating the rule, algorithm and key of every row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordRef<'a> {
    pub seq: u64,
    pub sent_at_ms: u64,
    pub server: u32,
    pub rule: &'a str,
    pub algorithm: Subject,
    pub key: &'a str,
    pub allowed: bool,
    pub remaining: i64,
    pub retry_after_ms: u64,
    pub latency_us: u64,
    pub fail_open: bool,
    /// 0 in files written before the column existed.
    pub reset_after_ms: u64,
    /// 0 in files written before the column existed.
    pub attempt: u32,
    /// Milliseconds since the run started; 0 in files written before the column existed.
    pub offset_ms: u64,
    /// A policy's binding limit ("" for rules, and in files written before the column existed).
    pub binding: &'a str,
    /// A policy's tier ("" for the policy's own limits, rules and older files).
    pub tier: &'a str,
    /// A policy's denial, admitted in shadow mode or not (false in older files).
    pub would_deny: bool,
    /// An admitted request's time in flight after its answer (runs with holds only).
    pub hold_ms: Option<u64>,
    /// µs from the run's start to the answer; 0 in older files.
    pub answered_us: u64,
}

impl RecordRef<'_> {
    /// As [`Record::in_flight_us`].
    pub fn in_flight_us(&self) -> Option<(u64, u64)> {
        crate::record::in_flight_span(self.allowed, self.hold_ms, self.answered_us)
    }
}

impl<'a> From<&'a Record> for RecordRef<'a> {
    fn from(r: &'a Record) -> Self {
        RecordRef {
            seq: r.seq,
            sent_at_ms: r.sent_at_ms,
            server: r.server,
            rule: &r.rule,
            algorithm: r.algorithm,
            key: &r.key,
            allowed: r.allowed,
            remaining: r.remaining,
            retry_after_ms: r.retry_after_ms,
            latency_us: r.latency_us,
            fail_open: r.fail_open,
            reset_after_ms: r.reset_after_ms,
            attempt: r.attempt,
            offset_ms: r.offset_ms,
            binding: &r.binding,
            tier: &r.tier,
            would_deny: r.would_deny,
            hold_ms: r.hold_ms,
            answered_us: r.answered_us,
        }
    }
}

/// Streams the rows of a CSV written by [`CsvSink`] as borrowed [`RecordRef`]s: several times
/// faster than [`for_each_record`] on long runs. Columns are found by name, so files with the
/// later columns missing still read. Returns how many rows there were.
pub fn for_each_record_ref(
    path: &Path,
    mut each: impl FnMut(&RecordRef<'_>),
) -> Result<u64, ExportError> {
    let csv_err = |source| ExportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::Reader::from_path(path).map_err(csv_err)?;
    let headers = reader.headers().map_err(csv_err)?.clone();
    let find = |name: &str| headers.iter().position(|h| h == name);
    let column = |name: &'static str| {
        find(name).ok_or_else(|| ExportError::Csv {
            path: path.to_path_buf(),
            source: csv::Error::from(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("no {name} column"),
            )),
        })
    };
    let idx = [
        column("seq")?,
        column("sent_at_ms")?,
        column("server")?,
        column("rule")?,
        column("algorithm")?,
        column("key")?,
        column("allowed")?,
        column("remaining")?,
        column("retry_after_ms")?,
        column("latency_us")?,
        column("fail_open")?,
    ];
    let (reset_col, attempt_col, offset_col) =
        (find("reset_after_ms"), find("attempt"), find("offset_ms"));
    let (binding_col, tier_col, would_deny_col) =
        (find("binding"), find("tier"), find("would_deny"));
    let (hold_col, answered_col) = (find("hold_ms"), find("answered_us"));
    let mut row = csv::StringRecord::new();
    let mut count = 0u64;
    while reader.read_record(&mut row).map_err(csv_err)? {
        count += 1;
        let bad = |name: &str| ExportError::Csv {
            path: path.to_path_buf(),
            source: csv::Error::from(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("row {count}: {name} is not what the simulator writes"),
            )),
        };
        let text = |i: usize| row.get(i).unwrap_or("");
        let num = |i: usize, name: &str| text(i).parse::<u64>().map_err(|_| bad(name));
        let flag = |i: usize, name: &str| match text(i) {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(bad(name)),
        };
        let optional = |col: Option<usize>, name: &str| match col {
            Some(i) if !text(i).is_empty() => num(i, name),
            _ => Ok(0),
        };
        let record = RecordRef {
            seq: num(idx[0], "seq")?,
            sent_at_ms: num(idx[1], "sent_at_ms")?,
            server: num(idx[2], "server")? as u32,
            rule: text(idx[3]),
            algorithm: text(idx[4]).parse().map_err(|_| bad("algorithm"))?,
            key: text(idx[5]),
            allowed: flag(idx[6], "allowed")?,
            remaining: text(idx[7]).parse().map_err(|_| bad("remaining"))?,
            retry_after_ms: num(idx[8], "retry_after_ms")?,
            latency_us: num(idx[9], "latency_us")?,
            fail_open: flag(idx[10], "fail_open")?,
            reset_after_ms: optional(reset_col, "reset_after_ms")?,
            attempt: optional(attempt_col, "attempt")? as u32,
            offset_ms: optional(offset_col, "offset_ms")?,
            binding: binding_col.map_or("", text),
            tier: tier_col.map_or("", text),
            would_deny: match would_deny_col {
                Some(i) if !text(i).is_empty() => flag(i, "would_deny")?,
                _ => false,
            },
            hold_ms: match hold_col {
                Some(i) if !text(i).is_empty() => Some(num(i, "hold_ms")?),
                _ => None,
            },
            answered_us: optional(answered_col, "answered_us")?,
        };
        each(&record);
    }
    Ok(count)
}

/// Reads a CSV written by [`CsvSink`] back into records.
pub fn read_records(path: &Path) -> Result<Vec<Record>, ExportError> {
    let mut reader = csv::Reader::from_path(path).map_err(|source| ExportError::Csv {
        path: path.to_path_buf(),
        source,
    })?;
    reader
        .deserialize()
        .map(|row| {
            row.map_err(|source| ExportError::Csv {
                path: path.to_path_buf(),
                source,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, key: &str, allowed: bool) -> Record {
        Record {
            seq,
            sent_at_ms: 1_000 + seq,
            server: 2,
            rule: "r".into(),
            algorithm: ratelockr::rule::AlgorithmKind::FixedWindow.into(),
            key: key.into(),
            allowed,
            remaining: if allowed { 3 } else { 0 },
            retry_after_ms: if allowed { 0 } else { 250 },
            latency_us: 40,
            fail_open: false,
            reset_after_ms: 900,
            attempt: seq as u32 % 2,
            offset_ms: seq * 10,
            binding: if allowed {
                Default::default()
            } else {
                "daily".into()
            },
            tier: if seq == 1 {
                "premium".into()
            } else {
                Default::default()
            },
            would_deny: !allowed,
            hold_ms: allowed.then_some(250),
            answered_us: 1_000 * seq + 700,
        }
    }

    #[test]
    fn borrowed_rows_read_what_the_sink_wrote_and_older_files_too() {
        let dir = std::env::temp_dir().join(format!("ratelockr-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("records.csv");
        let mut sink = CsvSink::create(&path).expect("create");
        let written = [record(0, "a", true), record(1, "b,\"quoted\"", false)];
        for r in &written {
            sink.write(r).expect("write");
        }
        sink.flush().expect("flush");
        let mut seen = Vec::new();
        for_each_record_ref(&path, |r| {
            seen.push(Record {
                seq: r.seq,
                sent_at_ms: r.sent_at_ms,
                server: r.server,
                rule: r.rule.into(),
                algorithm: r.algorithm,
                key: r.key.into(),
                allowed: r.allowed,
                remaining: r.remaining,
                retry_after_ms: r.retry_after_ms,
                latency_us: r.latency_us,
                fail_open: r.fail_open,
                reset_after_ms: r.reset_after_ms,
                attempt: r.attempt,
                offset_ms: r.offset_ms,
                binding: r.binding.into(),
                tier: r.tier.into(),
                would_deny: r.would_deny,
                hold_ms: r.hold_ms,
                answered_us: r.answered_us,
            })
        })
        .expect("reads");
        assert_eq!(seen, written);
        assert_eq!(read_records(&path).expect("serde reads"), written);
        // A file from before reset_after_ms and attempt existed.
        let old = dir.join("old.csv");
        std::fs::write(&old, "seq,sent_at_ms,server,rule,algorithm,key,allowed,remaining,retry_after_ms,latency_us,fail_open\n0,5,0,r,token_bucket,k,true,-1,0,9,true\n").expect("write");
        let mut rows = 0;
        for_each_record_ref(&old, |r| {
            rows += 1;
            assert_eq!((r.remaining, r.fail_open, r.attempt), (-1, true, 0));
        })
        .expect("reads");
        assert_eq!(rows, 1);
        std::fs::write(&old, "seq,sent_at_ms\n0,5\n").expect("write");
        assert!(
            for_each_record_ref(&old, |_| {}).is_err(),
            "missing columns are named"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
