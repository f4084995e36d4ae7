//! The core's integration tests in one binary: one link of the crate instead of one per
//! file. Each module is one area (an algorithm, the scripts, policies, failures...), as each
//! file was its own binary before; they share the helpers in tests/common.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/tls.rs"]
mod helper_tls;

mod api_batch;
mod bad_input_serve;
mod calendar;
mod cluster_routing;
mod concurrency_script;
mod degraded;
mod delay;
mod deny_cache;
mod eviction;
mod failure;
mod file_sizes;
mod fixed_window;
mod fixed_window_clock;
mod gcra;
mod invariants;
mod layering;
mod lease;
mod lease_property;
mod lua_blocks;
mod lua_compat;
mod lua_scripts;
mod metrics;
mod misconfig_deadline;
mod peek;
mod policy_cluster;
mod policy_concurrency;
mod policy_inflight;
mod policy_modes;
mod policy_script;
mod policy_stack;
mod policy_watch;
mod refund;
mod script_calls;
mod served;
mod settle;
mod sliding_window_counter;
mod sliding_window_log;
mod telemetry;
mod tls;
mod token_bucket;
mod waits;
