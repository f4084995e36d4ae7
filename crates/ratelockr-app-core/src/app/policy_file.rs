//! The Policies view's file: opened (or made new), looked at for changes made outside the app,
//! and edited in place, each save checked against the version its edit began from. The file
//! open is remembered in the settings and opened again at start. See [`crate::policy_file`].

use super::{lock, AppCore};
use crate::error::{AppError, ErrorCode};
use crate::policies::policy_from_draft;
use crate::policy_file::{FileVersion, Look, PolicyFile, PolicyFileStatus};
use ratelockr::Policy;
use std::path::{Path, PathBuf};

impl AppCore {
    /// The open file looked at (a change made outside the app is taken; an invalid one is
    /// reported and the last good policies stay), and what the view shows of it.
    pub fn policy_file_status(&self) -> PolicyFileStatus {
        let mut slot = lock(&self.policy_file);
        let look = slot.as_mut().map(PolicyFile::look);
        PolicyFileStatus::of(slot.as_ref(), look == Some(Look::Reloaded))
    }

    /// The open file's policies as they are on disk now (the last good ones when the file does
    /// not load): what the simulator, replay and inspector pick a policy from.
    pub fn file_policies(&self) -> Vec<Policy> {
        let mut slot = lock(&self.policy_file);
        match slot.as_mut() {
            Some(file) => {
                file.look();
                file.policies().to_vec()
            }
            None => Vec::new(),
        }
    }

    /// Opens the policies file at `path` from now on, and remembers it. A file that does not
    /// load is refused (naming the file, the line or JSON path, and the field), and the file
    /// open before stays open.
    pub fn policy_file_open(&self, path: &str) -> Result<PolicyFileStatus, AppError> {
        let path = chosen(path)?;
        let file = PolicyFile::open(&path)?;
        self.set_policy_file(Some(file))
    }

    /// A new policies file at `path`, written by its first save; a file already there is
    /// opened instead (nothing is replaced by an empty file).
    pub fn policy_file_new(&self, path: &str) -> Result<PolicyFileStatus, AppError> {
        let path = chosen(path)?;
        let file = PolicyFile::create(&path)?;
        self.set_policy_file(Some(file))
    }

    /// Creates (`original` None) or replaces a policy in the open file, written in place.
    /// `base` is the version the edit began from; a file changed since is not overwritten
    /// unless `overwrite` ([`ErrorCode::FileChanged`] otherwise).
    pub fn policy_file_save(
        &self,
        original: Option<&str>,
        draft: &serde_json::Value,
        base: &FileVersion,
        overwrite: bool,
    ) -> Result<PolicyFileStatus, AppError> {
        let policy = policy_from_draft(draft)?;
        self.edit_policy_file(base, overwrite, |book| book.upsert(original, policy))
    }

    /// Deletes a policy from the open file, written in place (checked against `base` as a
    /// save is).
    pub fn policy_file_delete(
        &self,
        name: &str,
        base: &FileVersion,
        overwrite: bool,
    ) -> Result<PolicyFileStatus, AppError> {
        self.edit_policy_file(base, overwrite, |book| book.remove(name).map(drop))
    }

    /// Puts the rule `name` into the open file as a policy of one limit, so that `serve
    /// --policies` and the layer load what was tuned here ([`crate::policy_file::put_rule`]:
    /// a one-limit policy of that name keeps its mode and key).
    pub fn rule_to_policy_file(&self, name: &str) -> Result<PolicyFileStatus, AppError> {
        let rule = lock(&self.rules).get(name).cloned().ok_or_else(|| {
            AppError::new(ErrorCode::RuleNotFound, format!("no rule named {name:?}"))
        })?;
        let mut slot = lock(&self.policy_file);
        let file = slot.as_mut().ok_or_else(no_file)?;
        file.apply(|book| crate::policy_file::put_rule(book, &rule))?;
        Ok(PolicyFileStatus::of(Some(file), false))
    }

    fn edit_policy_file(
        &self,
        base: &FileVersion,
        overwrite: bool,
        edit: impl FnOnce(&mut crate::book::Book<Policy>) -> Result<(), AppError>,
    ) -> Result<PolicyFileStatus, AppError> {
        let mut slot = lock(&self.policy_file);
        let file = slot.as_mut().ok_or_else(no_file)?;
        file.save(base, overwrite, edit)?;
        Ok(PolicyFileStatus::of(Some(file), false))
    }

    /// Makes `file` the open one and remembers it; when the settings cannot be saved, the file
    /// open before stays.
    fn set_policy_file(&self, file: Option<PolicyFile>) -> Result<PolicyFileStatus, AppError> {
        let before = std::mem::replace(&mut *lock(&self.policy_file), file);
        if let Err(err) = self.save() {
            *lock(&self.policy_file) = before;
            return Err(err);
        }
        Ok(PolicyFileStatus::of(
            lock(&self.policy_file).as_ref(),
            false,
        ))
    }

    /// The path of the open file, for the settings.
    pub(super) fn policy_file_path(&self) -> Option<PathBuf> {
        lock(&self.policy_file)
            .as_ref()
            .map(|f| f.path().to_path_buf())
    }
}

fn no_file() -> AppError {
    AppError::new(
        ErrorCode::PolicyFile,
        "no policies file is open: open one, or make a new one, in the Policies view",
    )
    .with_field("path")
}

fn chosen(path: &str) -> Result<PathBuf, AppError> {
    let path = Path::new(path.trim());
    if path.as_os_str().is_empty() {
        return Err(
            AppError::new(ErrorCode::PolicyFile, "choose a policies file").with_field("path"),
        );
    }
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use crate::app::AppCore;
    use crate::store::SETTINGS_FILE;
    use ratelockr::policy::load_policies_file;
    use ratelockr::EmbeddedRedis;
    use serde_json::json;

    #[tokio::test(flavor = "multi_thread")]
    async fn policies_an_older_version_kept_in_its_settings_move_into_a_file_it_opens() {
        let redis = EmbeddedRedis::start().expect("redis-server on PATH");
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = dir.path().join(SETTINGS_FILE);
        let kept = json!({"name": "old-api", "mode": "enforce", "limits": [
            {"name": "burst", "algorithm": "token_bucket", "capacity": 5, "refill_per_sec": 1}]});
        let first = json!({
            "redis_url": redis.url(),
            "metrics": {"enabled": false, "port": 0},
            "policies": [kept],
        });
        std::fs::write(&settings, first.to_string()).expect("write settings");
        let moved = dir.path().join("policies.toml");
        {
            let app = AppCore::open(dir.path().to_path_buf()).expect("opens");
            let status = app.policy_file_status();
            assert_eq!(status.file.as_deref(), Some(moved.to_str().expect("utf-8")));
            assert_eq!(status.policies.len(), 1);
            assert_eq!(app.policy("old-api"), Some(status.policies[0].clone()));
            assert_eq!(load_policies_file(&moved).expect("loads"), status.policies);
            let said = app.info().warnings.join("\n");
            assert!(
                said.contains("old-api") && said.contains("policies.toml"),
                "{said}"
            );
            // The settings no longer hold a copy: the file is the one truth.
            let saved: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&settings).expect("read"))
                    .expect("json");
            assert_eq!(saved["policies"], json!([]), "{saved}");
            assert_eq!(saved["policies_file"], json!(moved), "{saved}");
        }
        // Started again: the same file, moved once.
        let app = AppCore::open(dir.path().to_path_buf()).expect("opens");
        assert_eq!(app.policies().len(), 1);
        assert!(!dir.path().join("policies-2.toml").exists());
    }
}
