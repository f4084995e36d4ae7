//! Why a simulation could not run or finish: a workload parameter (named), a rule, or the
//! records' sink.

use crate::record::ExportError;
use ratelockr::rule::RuleError;

/// Why a simulation could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("invalid {parameter}: {reason}")]
    InvalidWorkload {
        parameter: &'static str,
        reason: String,
    },
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("the run stopped because its records could not be written: {0}")]
    Export(#[from] ExportError),
    /// The simulated servers' own runtime could not start, or stopped on a panic.
    #[error("the simulated servers could not run: {0}")]
    Servers(String),
}
