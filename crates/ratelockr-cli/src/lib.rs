//! The `ratelockr` command's library half: the load tests its `bench` subcommand runs (and
//! `cargo bench --bench engine` reuses). The command itself is `src/main.rs`.
//!
//! - [`mod@bench`] load tests: the engine against redis-benchmark's ceiling, Lua cost, stats cost

pub mod bench;
