//! Policies as the Policies view's editor sends them: a draft in the policies file's JSON form,
//! validated by the engine with the path of the offending field. Where they are kept is the
//! open policies file ([`crate::policy_file`]).

use crate::book::Named;
use crate::error::{AppError, ErrorCode};
use ratelockr::policy::parse_policy_json;
use ratelockr::Policy;

impl Named for Policy {
    const WHAT: &'static str = "policy";
    const EXISTS: ErrorCode = ErrorCode::PolicyExists;
    const NOT_FOUND: ErrorCode = ErrorCode::PolicyNotFound;
    fn name(&self) -> &str {
        Policy::name(self)
    }
}

/// The engine's policy from the editor's draft (the file's JSON form), or the engine's reason
/// with the path of the field it names (`limits[1].capacity`, `overrides[0].keys[2]`).
pub fn policy_from_draft(draft: &serde_json::Value) -> Result<Policy, AppError> {
    parse_policy_json(draft).map_err(|err| {
        let message = if err.at.is_empty() {
            err.message
        } else {
            format!("{}: {}", err.at, err.message)
        };
        let mut error = AppError::new(ErrorCode::InvalidPolicy, message);
        if !err.at.is_empty() {
            error = error.with_field(err.at);
        }
        error
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn draft() -> serde_json::Value {
        json!({
            "name": "api", "key": "ip", "mode": "shadow",
            "limits": [
                {"name": "per-second", "algorithm": "token_bucket", "capacity": 10, "refill_per_sec": 10},
                {"name": "daily", "algorithm": "fixed_window", "limit": 2000, "window_ms": 86_400_000}
            ],
            "overrides": [{"tier": "premium", "keys": ["premium_*"], "limits": [
                {"name": "per-second", "algorithm": "gcra", "limit": 100, "window_ms": 1000}
            ]}]
        })
    }

    #[test]
    fn drafts_are_refused_with_the_path_of_the_field() {
        assert!(policy_from_draft(&draft()).is_ok());
        let mut bad = draft();
        bad["limits"][1]["limit"] = json!(0);
        let err = policy_from_draft(&bad).expect_err("limit 0");
        assert_eq!(
            (err.code, err.field.as_deref()),
            (ErrorCode::InvalidPolicy, Some("limits[1].limit"))
        );
        let mut bad = draft();
        bad["overrides"][0]["keys"] = json!([]);
        let err = policy_from_draft(&bad).expect_err("no keys");
        assert_eq!(err.field.as_deref(), Some("overrides[0].keys"));
        let mut bad = draft();
        bad["limits"][1]["name"] = json!("per-second");
        let err = policy_from_draft(&bad).expect_err("twice");
        assert!(err.message.contains("per-second"), "{err:?}");
    }
}
