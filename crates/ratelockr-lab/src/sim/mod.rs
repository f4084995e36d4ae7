//! The traffic simulator: one workload, offered open-loop by several simulated app instances
//! (each with its own Redis connection) against one rule, all five algorithms side by side, and
//! optionally the naive GET/SET limiter that shows the race the scripts remove.
//!
//! - `spec`       what to run: the workload, the targets, the clock and the key namespace
//! - [`workload`] patterns, lengths, servers and key distributions
//! - [`workload_spec`] a workload as the CLI's flags and the app's form describe it: the one
//!   set of defaults, and refusals that name the field
//! - `run`        the run loop: simulated servers, the schedule, records as they complete
//! - [`report`]   summaries and per-second series
//! - [`in_flight`] requests in flight per key (runs with holds): per bin and the peak
//! - `error`      why a simulation could not run or finish, naming the parameter
//! - [`naive`]    the deliberately broken limiter of the race demo
//! - `exact`      the sliding window counter's decisions judged by the exact log
//! - [`peak`]     the most admitted in any window of the rule's length, and where
//! - [`preview`]  a workload's offered traffic per bin, before it runs
//!
//! Records stream out as they complete (to a [`RecordSink`] such as the CSV writer, and to a
//! [`SimObserver`] for live charts and progress bars), so memory stays bounded on long runs.

mod error;
mod exact;
pub mod hold;
pub mod in_flight;
pub mod naive;
pub mod peak;
pub mod preview;
pub mod report;
mod run;
mod spec;
pub mod workload;
pub mod workload_spec;

/// Defined beside [`crate::export::ExportError`], below the simulator, replay and export.
pub use crate::record::{Record, RecordSink};
/// Defined below the simulator, replay and export, which all carry it.
pub use crate::subject::{Subject, UnknownSubject};
pub use error::SimError;
pub use in_flight::{InFlightCounter, InFlightPeak};
pub use peak::PeakWindow;
pub use preview::Preview;
pub use report::{Report, Series, SeriesPoint, TargetSummary};
pub use run::{run, NoObserver, Progress, SimObserver};
pub use spec::{SimClock, SimSpec, Target};
pub use workload::{KeyDistribution, Length, Pattern, Retry, Workload};
pub use workload_spec::{PatternKind, WorkloadSpec};
