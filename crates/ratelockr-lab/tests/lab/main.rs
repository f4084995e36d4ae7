//! The lab's integration tests in one binary: the simulator, replay, sweeps, exports and
//! runs, on private redis-servers; the helpers are the core's (tests/common).

#[path = "../../../../tests/common/mod.rs"]
mod common;
#[path = "../../../../tests/common/replays.rs"]
mod helper_replays;

mod bad_input_lib;
mod peak_window;
mod policy_replay;
mod policy_simulate;
mod replay;
mod replay_in_flight;
mod runs;
mod sim_delay;
mod sim_in_flight;
