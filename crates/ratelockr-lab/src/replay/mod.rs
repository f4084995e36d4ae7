//! Replay: what would these limits have done to the requests of a real log?
//!
//! Each request of the log goes through the rule's own script with its log time as `now_ms`
//! ([`At::Millis`](ratelockr::scripts::At::Millis)), in a private key namespace
//! (`<prefix>:replay:<run id>:…`, deleted after the run) and without live telemetry (those
//! counters are per wall-clock second). Several rules, and a sweep's grid of configurations,
//! are decided side by side in one pass. The same log and rules give the same decisions, byte
//! for byte in the CSV.
//!
//! - [`input`]    files, stdin, gzip; lines of bounded length
//! - [`format`]   combined, common, JSON lines, CSV; detection; one view of a parsed line
//! - [`clf`], [`jsonl`], [`csvlog`], [`time`]  the parsers, failing with a [`LineError`]
//! - [`duration`] a request's time in flight (`--duration-field`, nginx's `$request_time`)
//! - [`key`]      client key expressions (`ip`, `header:x-api-key`, `ip+path[1]`, …)
//! - [`order`]    sorting within a lookahead; whole seconds spread over the second
//! - [`pace`]     a warning when the replay ran slower than the log for longer than a key's TTL
//! - [`read`]     from a log to requests in order, on a thread of its own
//! - [`decide`]   pipelined decisions in lanes, each key's in log order
//! - [`stats`], [`keytable`], [`series`], [`distinct`]  bounded-memory figures
//! - `spec`       what to replay: how to read the log, the rules, the sweep, the sizes
//! - `run`        the run loop: the reader thread, batches through the lanes, the accounting
//! - [`report`]   the serializable report
//! - `error`      why a replay could not run, naming the parameter
//! - `preview`    the first lines of a log as a replay would see them
//! - `calls`      each request's script calls on its lane, and their replies read
//! - `leases`     with durations, leases given back when their requests ended (log time)
//! - `changes`    side by side: how each candidate decides the log differently from the first

mod calls;
mod changes;
pub mod clf;
pub mod csvlog;
pub mod csvrecord;
pub mod decide;
pub mod distinct;
pub mod duration;
mod error;
pub mod format;
pub mod input;
pub mod jsonl;
pub mod key;
pub mod keytable;
mod leases;
pub mod line_error;
pub mod order;
pub mod pace;
mod preview;
pub mod read;
pub mod report;
mod run;
pub mod series;
mod spec;
pub mod stats;
pub mod time;

pub use crate::sweep::SweepAxis;
pub use duration::DurationUnit;
pub use error::ReplayError;
pub use format::{FieldNames, LogFormat, UnknownLogFormat};
pub use input::LogSource;
pub use key::KeyExpr;
pub use line_error::LineError;
pub use preview::{preview, Preview, PreviewLine, MAX_PREVIEW_LINES};
pub use report::{
    pct, InFlight, KeyChange, KeyInFlight, LineIssue, PeakRates, PolicyFigures, ReplayPoint,
    ReplayReport, ReplaySeries, RuleChange, RuleReport, Suggestion, SweepPoint, TopKey,
};
pub use run::{run, NoReplayObserver, ReplayObserver, ReplayProgress};
pub use spec::{Compiled, ParseSpec, ReplaySpec, MAX_BATCH, MAX_KEY_CAPACITY, MAX_LANES, MAX_TOP};
