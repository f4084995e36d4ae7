//! RateLockr's lab: what a person uses to see and tune limits before production, deciding on
//! the core's ([`ratelockr`]) limits, policies and scripts, so a tuned policy is the one a
//! service then enforces.
//!
//! - [`sim`]       the traffic simulator: workloads, compare mode (all five), the naive race
//!   demo, the sliding window counter judged by the exact log
//! - [`replay`]    a real log decided on its own clock through the rules' scripts: who was denied
//! - [`sweep`]     grids of one or two of a rule's parameters, for replays and simulations,
//!   and the smallest configuration within a bound, said as a sentence
//! - [`export`]    simulation records as CSV, per-second charts as PNG or SVG
//!
//! Inside the crate:
//!
//! - `record`      one decision as a row ([`sim::Record`]), its sink, and the export error
//!   ([`export::ExportError`]): below `sim`, `replay` and `export`, which all use them
//! - `subject`     what a run's figures are of ([`sim::Subject`]: a script, the naive demo, a
//!   policy), read and written as the labels CSVs and JSON carry
//! - `budget`      whether a run's connections fit the Redis it opens them on
//! - `bins`        the bin width that fits a run, for the run chart and the workload preview

// An item of a crate-private module is `pub(crate)`: `pub` says another crate can reach it.
#![warn(unreachable_pub)]

pub(crate) mod bins;
pub(crate) mod budget;
pub mod export;
pub(crate) mod record;
pub mod replay;
pub mod sim;
pub(crate) mod subject;
pub mod sweep;
