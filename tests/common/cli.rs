//! Running the `ratelockr` binary as a user would, with none of this shell's Redis settings
//! leaking in. Included by path (`#[path = "common/cli.rs"] mod cli;`) only by the test
//! binaries of the root crate, where `CARGO_BIN_EXE_ratelockr` exists.
#![allow(dead_code)]

use std::process::{Command, Output};

/// The variables that would point the binary at another Redis than the test's.
const REDIS_ENV: [&str; 6] = [
    "REDIS_URL",
    "REDIS_TLS_CA",
    "REDIS_TLS_CERT",
    "REDIS_TLS_KEY",
    "REDIS_TLS_INSECURE",
    "RUST_LOG",
];

pub fn ratelockr(args: &[&str]) -> Output {
    ratelockr_env(args, &[])
}

/// `ratelockr args…` with `env` set (and nothing else of this shell's Redis settings).
pub fn ratelockr_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratelockr"));
    cmd.args(args);
    for var in REDIS_ENV {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied())
        .output()
        .expect("run the ratelockr binary")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The JSON a successful run printed; a failed run or other output fails the test, saying why.
pub fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)))
}
