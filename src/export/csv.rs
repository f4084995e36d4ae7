//! Simulation records as CSV: design.md's columns, in order, written with the csv crate.

use super::ExportError;
use crate::sim::{Record, RecordSink};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The header row: design.md's columns in its order, then the ones added since.
pub const COLUMNS: [&str; 13] = [
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
];

/// Streams records to a CSV file as they complete.
#[derive(Debug)]
pub struct CsvSink {
    writer: csv::Writer<BufWriter<File>>,
    path: PathBuf,
    rows: u64,
}

impl CsvSink {
    /// Creates (or truncates) `path` and writes the header at once, so an unwritable path
    /// fails before a run starts.
    pub fn create(path: &Path) -> Result<Self, ExportError> {
        let file = File::create(path).map_err(|e| ExportError::io(path, e))?;
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
            writer,
            path: path.to_path_buf(),
            rows: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Data rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

impl RecordSink for CsvSink {
    fn write(&mut self, record: &Record) -> Result<(), ExportError> {
        self.writer
            .serialize(record)
            .map_err(|source| ExportError::Csv {
                path: self.path.clone(),
                source,
            })?;
        self.rows += 1;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        self.writer
            .flush()
            .map_err(|e| ExportError::io(&self.path, e))
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
