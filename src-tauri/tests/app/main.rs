//! The app's integration tests, one binary (each test binary links the whole Tauri stack, so
//! one link instead of four): the app on Tauri's mock runtime with the real handler,
//! capabilities and settings store, called over IPC as the window calls it, against real
//! redis-servers.
//!
//! - `commands`          every command the window calls, and what each refuses
//! - `connection_kinds`  a real cluster and a real TLS redis-server through the connection panel
//! - `policies_file`     the policies file as the one truth, edited in place
//! - `watch`             a policies file followed live over IPC

mod commands;
mod common;
mod connection_kinds;
mod policies_file;
mod watch;
