//! The desktop app's behaviour without Tauri: connection, rules, stats, simulator, replay,
//! run history, settings, export and metrics over the engine. The Tauri crate's commands are
//! one-line calls into [`AppCore`]; everything here is built, tested (and usable) without a
//! window or WebKitGTK.
//!
//! - [`app`]         [`AppCore`], the state the commands act on, one file per command group
//! - [`error`]       the `{code, message, field}` error the UI receives
//! - [`connection`]  the Redis in use: open, status, test
//! - [`copy_commands`] serve, the example service and redis-cli at that Redis, ready to copy
//! - [`transport`]   single node or cluster, plain TCP or TLS: the TLS form and its errors
//! - [`topology`]    a cluster's nodes, roles, slots and round trips
//! - [`book`]        a book of named things the user edits: rules, a file's policies
//! - [`rules`]       rule drafts validated by the engine, the rule book
//! - [`policies`]    policy drafts validated by the engine
//! - [`policy_file`] the open policies file, the one truth: looked at, saved in place
//! - [`toml_splice`] a TOML policies file rewritten only where its policies changed
//! - [`settings`]    what is persisted, and how a damaged file is set aside
//! - [`store`]       the settings in one JSON file, written whole and atomically
//! - [`sim`]         the simulator form, a run's progress and status, where its events go
//! - [`relay`]       a running simulation's observer: events, fail-open counts, columns
//! - [`summary`]     how a run ended and its summary table (shared by runs and replays)
//! - [`replay`]      the Replay panel's request, status and events; a log's preview
//! - [`kept_run`]    a simulation as the history keeps it and lists it
//! - [`kept_replay`] a replay as the history keeps it: the log identified, rules, report
//! - [`history`]     the kept runs on disk: bounded, restored after a restart
//! - [`records`]     a run's records in columns, for charting
//! - [`export_path`] chart exports go exactly where the user confirmed
//! - [`coalesce`]    at most one `refetch-stats` per frame
//! - [`bindings`]    the TypeScript types in `ui/src/bindings/`, generated from Rust

pub mod app;
pub mod bindings;
pub mod book;
pub mod coalesce;
pub mod connection;
pub mod copy_commands;
pub mod error;
pub mod export_path;
pub mod history;
pub mod kept_replay;
pub mod kept_run;
pub mod policies;
pub mod policy_file;
pub mod records;
pub mod relay;
pub mod replay;
pub mod rules;
pub mod sample_log;
pub mod settings;
pub mod sim;
pub mod store;
pub mod summary;
pub mod toml_splice;
pub mod topology;
pub mod transport;

pub use app::AppCore;
