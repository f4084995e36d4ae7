//! The policies as the other views pick them by name (the simulator, replay, the inspector):
//! the open policies file's, as it is on disk now ([`crate::policy_file`]), and a draft's
//! validation for the editor. The app keeps no policies of its own.

use super::AppCore;
use crate::error::AppError;
use crate::policies;
use ratelockr::Policy;

impl AppCore {
    /// The open file's policies (the last good ones when it does not load now).
    pub fn policies(&self) -> Vec<Policy> {
        self.file_policies()
    }

    /// The open file's policy `name`, as the file holds it now.
    pub fn policy(&self, name: &str) -> Option<Policy> {
        self.file_policies().into_iter().find(|p| p.name() == name)
    }

    pub fn policy_validate(&self, draft: &serde_json::Value) -> Result<Policy, AppError> {
        policies::policy_from_draft(draft)
    }
}
