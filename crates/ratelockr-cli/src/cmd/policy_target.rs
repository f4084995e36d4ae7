//! The policy a follow-up of `check` acts on (`release`, `settle`): a policy of a file, or a
//! rule given as flags, as `check` was given it.

use crate::opts::{AlgorithmArg, RuleArgs};
use clap::Args;
use ratelockr::Policy;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PolicyTarget {
    /// The policies file the request's policy is in (TOML or JSON, or a rules file).
    #[arg(
        long,
        value_name = "FILE",
        requires = "policy",
        conflicts_with = "algorithm"
    )]
    pub policies: Option<PathBuf>,
    /// The policy of --policies the request was decided under.
    #[arg(long, value_name = "NAME", requires = "policies")]
    pub policy: Option<String>,
    /// The algorithm of a rule given as flags, as `check` was given it.
    #[arg(long, value_enum, required_unless_present = "policies")]
    pub algorithm: Option<AlgorithmArg>,
    #[command(flatten)]
    pub rule: RuleArgs,
}

impl PolicyTarget {
    /// The policy of the file, or the rule's policy of one limit; `algorithms` says which
    /// `--algorithm` the command takes when neither is given.
    pub fn policy(&self, algorithms: &str) -> anyhow::Result<Policy> {
        match (&self.policies, &self.policy, self.algorithm) {
            (Some(path), Some(name), _) => {
                self.rule.refuse_with("--policies")?;
                super::check_policy::load_policy(path, name)
            }
            (_, _, Some(algorithm)) => {
                Ok(Policy::from_rule(&self.rule.rule_for(algorithm.into())?))
            }
            _ => anyhow::bail!(
                "give --policies FILE with --policy NAME, or --algorithm {algorithms}"
            ),
        }
    }
}
