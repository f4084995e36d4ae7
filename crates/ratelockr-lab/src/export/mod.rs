//! Export: simulation records as CSV, and per-second charts as PNG or SVG.
//!
//! - [`csv`]   the CSV writer, streaming records as they complete
//! - `canvas`  what every chart file shares: the font, PNG or SVG ([`ChartFormat`]), the panels' axes
//! - [`chart`] allowed and denied per second, one series per algorithm
//! - [`view`] a run chart as the screen shows it: panels of styled lines, zoom, a key's state
//! - [`run_chart`] draws a view (the app's, or the CLI's default for a run), PNG or SVG
//! - [`timeline`] records binned per target at the width that fits the run
//! - [`style`] the run chart's bins, colours, dashes and envelope, shared with the app
//! - [`replay_chart`] a replay's decisions over log time, through [`chart`]
//! - [`heatmap`] a replay's sweep: % of requests and of keys denied per configuration

pub(crate) mod canvas;
pub mod chart;
pub mod csv;
pub mod heatmap;
pub mod replay_chart;
pub mod run_chart;
pub mod style;
pub mod timeline;
pub mod view;

pub use self::canvas::ChartFormat;
pub use self::chart::render_chart;
pub use self::csv::{for_each_record, for_each_record_ref, read_records, CsvSink, RecordRef};
pub use self::run_chart::{render_run_chart, render_view, timeline_from_csv};
pub use self::timeline::{Timeline, TimelineBuilder};
pub use self::view::ChartView;
/// Defined beside the records, under `sim` and `replay`, which stream to the CSV writer.
pub use crate::record::ExportError;

pub use ratelockr::atomic_file::Replace;
use std::path::Path;

/// Checks, before a run starts, that `path` can be written: not a folder, its folder writable
/// and, unless `replace` allows it, no file there yet. Nothing is created or replaced.
pub fn ensure_writable(path: &Path, replace: Replace) -> Result<(), ExportError> {
    ratelockr::atomic_file::check_writable(path, replace).map_err(|e| ExportError::io(path, e))
}
