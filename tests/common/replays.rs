//! Replaying text through a spec and keeping every record: shared by the replay tests.

use ratelockr::Limiter;
use ratelockr_lab::export::ExportError;
use ratelockr_lab::replay::{
    self, LogSource, NoReplayObserver, ReplayError, ReplayReport, ReplaySpec,
};
use ratelockr_lab::sim::{Record, RecordSink};
use tokio_util::sync::CancellationToken;

/// Keeps every record.
#[derive(Default)]
pub struct Records(pub Vec<Record>);

impl RecordSink for Records {
    fn write(&mut self, record: &Record) -> Result<(), ExportError> {
        self.0.push(record.clone());
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

/// Replays `log` (the log's text) through `spec`: the report and every record, in order.
pub async fn replay(
    limiter: &Limiter,
    log: &str,
    spec: &ReplaySpec,
) -> Result<(ReplayReport, Vec<Record>), ReplayError> {
    let mut records = Records::default();
    let report = replay::run(
        limiter,
        &LogSource::Text(log.to_string()),
        spec,
        Some(&mut records),
        &NoReplayObserver,
        CancellationToken::new(),
    )
    .await?;
    Ok((report, records.0))
}
