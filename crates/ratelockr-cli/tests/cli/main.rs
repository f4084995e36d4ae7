//! The `ratelockr` command's integration tests in one binary (where
//! `CARGO_BIN_EXE_ratelockr` exists): the command as a user runs it, serve's endpoint, the
//! benchmarks, and the core's behaviours a command shows; the helpers are tests/common.

#[path = "../../../../tests/common/mod.rs"]
mod common;
#[path = "../../../../tests/common/cli.rs"]
mod helper_cli;
#[path = "../../../../tests/common/tls.rs"]
mod helper_tls;

mod acl;
mod api;
mod api_policies;
mod bad_input_cli;
mod bench;
mod budget;
mod calendar_cli;
mod cli;
mod cli_tls;
mod cluster;
mod concurrency;
mod diagnose;
mod export_atomic;
mod lease_cli;
mod policy_cli;
mod replay_cli;
mod server_info;
mod settle_cli;
mod simulator;
mod simulator_sweep;
mod stop_signals;
