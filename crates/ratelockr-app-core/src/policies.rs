//! The policy book: policies as the Policies card edits them (a draft in the policies file's
//! JSON form, validated by the engine with the path of the offending field), imported from and
//! exported to a policies file that `serve --policies`, `check` and the tower layer load.

use crate::book::{Book, Named};
use crate::error::{AppError, ErrorCode};
use crate::export_path::Exported;
use ratelockr::policy::{parse_policy_json, write, Format};
use ratelockr::{Policy, Rule};
use serde::Serialize;
use std::io::Write as _;
use std::path::Path;
use ts_rs::TS;

/// The user's policies, unique by name, in the order they were created.
pub type PolicyBook = Book<Policy>;

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

/// What an import did.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PolicyImport {
    /// The file read.
    pub path: String,
    /// Every policy of the book after the import.
    pub policies: Vec<Policy>,
    /// The names imported as new policies.
    pub added: Vec<String>,
    /// The names that replaced a policy of the same name.
    pub replaced: Vec<String>,
}

/// Reads a policies file (TOML, JSON, or a rules file: its rules become policies of one limit)
/// into `book`: new names are added, a name already in the book replaces that policy. An
/// invalid file changes nothing and the error names the file, the line or path, and the field.
pub fn import(book: &mut PolicyBook, path: &Path) -> Result<PolicyImport, AppError> {
    let read = ratelockr::policy::load_policies_file(path)
        .map_err(|err| AppError::new(ErrorCode::InvalidPolicy, err.to_string()))?;
    let (mut added, mut replaced) = (Vec::new(), Vec::new());
    for policy in read {
        let name = policy.name().to_string();
        if book.put(policy) {
            replaced.push(name);
        } else {
            added.push(name);
        }
    }
    Ok(PolicyImport {
        path: path.display().to_string(),
        policies: book.items().to_vec(),
        added,
        replaced,
    })
}

/// The policies file of the app's policies and rules (each rule a policy of one limit, named
/// as it, deciding on its own keys): TOML for a `.toml` path, JSON otherwise. A rule named as
/// a policy is refused, since the file's names are one namespace.
pub fn file_text(policies: &[Policy], rules: &[Rule], format: Format) -> Result<String, AppError> {
    let mut all = policies.to_vec();
    for rule in rules {
        if policies.iter().any(|p| p.name() == rule.name()) {
            return Err(AppError::new(
                ErrorCode::Export,
                format!(
                    "the rule {:?} and the policy {:?} share a name, and a policies file holds one of each name: rename one before exporting",
                    rule.name(),
                    rule.name()
                ),
            ));
        }
        all.push(Policy::from_rule(rule));
    }
    Ok(write::render(&all, format))
}

/// Writes `text` to `dest` whole or not at all (the save dialog asked before replacing a file).
pub fn write_file(dest: &Path, text: &str) -> Result<Exported, AppError> {
    let failed = |e: std::io::Error| {
        AppError::new(
            ErrorCode::Export,
            format!("cannot write {}: {e}", dest.display()),
        )
    };
    let out =
        ratelockr::atomic_file::AtomicFile::create(dest, ratelockr::atomic_file::Replace::Allow)
            .map_err(failed)?;
    out.file().write_all(text.as_bytes()).map_err(failed)?;
    out.commit().map_err(failed)?;
    Ok(Exported {
        path: dest.display().to_string(),
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

    #[test]
    fn import_adds_and_replaces_and_export_reads_back_with_the_rules() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut book = PolicyBook::default();
        book.put(
            policy_from_draft(&json!({"name": "api", "limits": [
            {"name": "a", "algorithm": "fixed_window", "limit": 1, "window_ms": 1000}]}))
            .expect("valid"),
        );
        let rules = [Rule::fixed_window("login", 5, 60_000).expect("valid")];
        let exported = dir.path().join("policies.toml");
        let incoming = [policy_from_draft(&draft()).expect("valid")];
        let text = file_text(&incoming, &rules, Format::Toml).expect("text");
        write_file(&exported, &text).expect("written");
        let done = import(&mut book, &exported).expect("imports");
        assert_eq!(done.replaced, ["api"]);
        assert_eq!(done.added, ["login"]);
        assert_eq!(book.get("api"), Some(&incoming[0]));
        assert_eq!(book.get("login"), Some(&Policy::from_rule(&rules[0])));
        // A bad file changes nothing, and says where it is wrong.
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[[policies]]\nname = \"x\"\nlimits = []\n").expect("write");
        let before = book.items().to_vec();
        let err = import(&mut book, &bad).expect_err("refused");
        assert!(
            err.message.contains("bad.toml") && err.message.contains("line"),
            "{err:?}"
        );
        assert_eq!(book.items(), before.as_slice());
        // One namespace in a file.
        let clash = [Rule::fixed_window("api", 5, 60_000).expect("valid")];
        let err = file_text(&incoming, &clash, Format::Json).expect_err("clash");
        assert!(err.message.contains("share a name"), "{err:?}");
    }
}
