//! `ratelockr reset`: deletes a rule's limiter state, for one client key or for all of them.

use crate::console::print_json;
use crate::opts::{flag_error, Global};
use anyhow::{anyhow, Context};
use clap::Args;
use ratelockr::ResetError;
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ResetArgs {
    /// The rule whose state goes (every algorithm's keys under that name, and every
    /// simulation run's namespace). Its telemetry counters stay.
    #[arg(long)]
    pub rule: String,
    /// Only this client key's state (in the shared namespace). Without it, every key of the
    /// rule goes: a SCAN over the rule's prefix, meant for maintenance, not for a hot path.
    #[arg(long)]
    pub key: Option<String>,
}

#[derive(Serialize)]
struct Json<'a> {
    rule: &'a str,
    key: Option<&'a str>,
    deleted: u64,
}

pub async fn run(global: &Global, args: &ResetArgs) -> anyhow::Result<ExitCode> {
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let deleted = match limiter.reset(&args.rule, args.key.as_deref()).await {
        Ok(n) => n,
        Err(ResetError::Rule(err)) => return Err(flag_error(err)),
        Err(ResetError::Redis(failure)) => {
            return Err(anyhow!(failure))
                .with_context(|| format!("resetting at Redis {}", limiter.target()))
        }
    };
    if global.json {
        print_json(&Json {
            rule: &args.rule,
            key: args.key.as_deref(),
            deleted,
        })?;
    } else {
        let what = match &args.key {
            Some(key) => format!("rule {:?}, key {key:?}", args.rule),
            None => format!("rule {:?}", args.rule),
        };
        let keys = if deleted == 1 { "key" } else { "keys" };
        println!("reset {what}: {deleted} {keys} deleted");
    }
    Ok(ExitCode::SUCCESS)
}
