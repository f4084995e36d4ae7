//! The policy book as the Policies card edits it: drafts validated by the engine, saved,
//! deleted, imported from and exported to a policies file, persisted (or put back as they
//! were when saving fails).

use super::{lock, AppCore};
use crate::error::{AppError, ErrorCode};
use crate::export_path::Exported;
use crate::policies::{self, PolicyBook, PolicyImport};
use ratelockr::policy::Format;
use ratelockr::Policy;
use std::path::Path;

impl AppCore {
    pub fn policies(&self) -> Vec<Policy> {
        lock(&self.policies).items().to_vec()
    }

    pub fn policy(&self, name: &str) -> Option<Policy> {
        lock(&self.policies).get(name).cloned()
    }

    pub fn policy_validate(&self, draft: &serde_json::Value) -> Result<Policy, AppError> {
        policies::policy_from_draft(draft)
    }

    /// Creates (`original` None) or replaces a policy, persists, and returns all policies.
    pub fn policy_save(
        &self,
        original: Option<&str>,
        draft: &serde_json::Value,
    ) -> Result<Vec<Policy>, AppError> {
        let policy = policies::policy_from_draft(draft)?;
        self.edit_policies(|book| book.upsert(original, policy))
    }

    pub fn policy_delete(&self, name: &str) -> Result<Vec<Policy>, AppError> {
        self.edit_policies(|book| book.remove(name).map(drop))
    }

    /// Imports a policies file (or a rules file) into the book, and persists.
    pub fn policies_import(&self, path: &Path) -> Result<PolicyImport, AppError> {
        let mut done = None;
        self.edit_policies(|book| {
            done = Some(policies::import(book, path)?);
            Ok(())
        })?;
        done.ok_or_else(|| AppError::new(ErrorCode::Internal, "the import did not run"))
    }

    /// Writes the policies and the rules (as policies of one limit) to `dest`: TOML for a
    /// `.toml` name, JSON otherwise; the file `serve --policies` and the layer load.
    pub fn policies_export(&self, dest: &Path) -> Result<Exported, AppError> {
        let text = policies::file_text(&self.policies(), &self.rules(), Format::of(dest))?;
        policies::write_file(dest, &text)
    }

    fn edit_policies(
        &self,
        edit: impl FnOnce(&mut PolicyBook) -> Result<(), AppError>,
    ) -> Result<Vec<Policy>, AppError> {
        self.edit_book(&self.policies, edit)
    }
}
