//! The policies file the Policies view edits: the one truth, the same file `serve --policies`,
//! `check` and the tower layer load. The app keeps no copy of its own: what it shows is the file
//! as last read, with the version it was read at, and every edit is applied to the file as it is
//! on disk at that moment and written back whole and atomically.
//!
//! - **A change made outside the app** (an editor, `sed -i`, a deploy) is taken at the next look:
//!   the file is read again when its modification time or size moved, and its content compared.
//! - **An invalid outside change** is shown with the engine's error (the file, the line or JSON
//!   path, the field); the last good policies stay shown and nothing is written.
//! - **A save over a newer file** is refused unless the user said to overwrite: a save carries
//!   the version its edit began from ([`FileVersion`]: the content's length and SHA-256), and the
//!   file's version at the save must be that one.
//! - **What the user wrote is kept**: an edit replaces, adds or removes one policy of the file
//!   as read at the save; in a TOML file every other policy keeps its text, comments and layout
//!   ([`crate::toml_splice`]); a JSON file (or a TOML one that cannot be spliced) is written
//!   whole by the engine's writer, every other policy as it was read (its mode included), in
//!   its place.

use crate::book::Book;
use crate::error::{AppError, ErrorCode};
use ratelockr::policy::{parse_policies, write, Format};
use ratelockr::Policy;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use ts_rs::TS;

/// The version of a file's content: `<length>-<SHA-256 in hex>`, `absent` for no file, `unread`
/// before a file ever loaded. What a save's base is compared with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(transparent)]
pub struct FileVersion(pub String);

impl FileVersion {
    /// No file at the path.
    pub fn absent() -> Self {
        FileVersion("absent".into())
    }

    /// A file that never loaded: no save is based on it.
    fn unread() -> Self {
        FileVersion("unread".into())
    }

    pub fn of(bytes: &[u8]) -> Self {
        let digest = Sha256::digest(bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        FileVersion(format!("{}-{hex}", bytes.len()))
    }
}

/// What a file's change is noticed by, before its content is read.
type Stamp = (Option<SystemTime>, u64);

/// A file modified this recently can change again within the same clock tick and keep its
/// stamp (a same-length edit right after a save: `capacity = 10` to `-1`), so its content is
/// compared too; an older one changes its modification time when it is written.
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether an unchanged stamp means an unchanged file.
fn settled(stamp: Option<Stamp>) -> bool {
    stamp
        .and_then(|(modified, _)| modified)
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age > RACY)
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len()))
}

/// The file's bytes now, or None when there is no file.
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, AppError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(AppError::new(
            ErrorCode::PolicyFile,
            format!("cannot read policies file {}: {err}", path.display()),
        )
        .with_field("path")),
    }
}

/// The policies of a file's bytes, or the engine's reason naming the file, the line or JSON
/// path, and the field.
fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Policy>, AppError> {
    let text = String::from_utf8_lossy(bytes);
    parse_policies(&text, Format::of(path)).map_err(|invalid| {
        let field = invalid.field().map(str::to_string);
        let err = AppError::new(
            ErrorCode::PolicyFile,
            format!("invalid policies file {}: {invalid}", path.display()),
        );
        match field {
            Some(field) => err.with_field(field),
            None => err,
        }
    })
}

/// The file's name, for messages ("policies.toml").
fn short(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// What one look at the file found.
#[derive(Debug, Clone, PartialEq)]
pub enum Look {
    /// The file is as last read (or written by the app).
    Unchanged,
    /// The file changed outside the app and its policies are now the ones shown.
    Reloaded,
    /// The file changed outside the app but does not load (or is gone): the last good
    /// policies stay shown, and [`PolicyFile::error`] says why.
    Refused,
}

/// The open policies file: its policies as last read, and the version they were read at.
#[derive(Debug, Clone)]
pub struct PolicyFile {
    path: PathBuf,
    /// The policies as last read from the file or written to it by the app: what is shown.
    policies: Vec<Policy>,
    /// The content's version when `policies` were read or written.
    version: FileVersion,
    /// The stamp at the last look, so an untouched file is not read again.
    seen: Option<Stamp>,
    /// Why the file on disk is not what is shown; cleared by the next load.
    error: Option<AppError>,
    /// The content refused last, so that looking at it again says nothing new.
    refused: Option<FileVersion>,
}

impl PolicyFile {
    /// Opens the file at `path`; one that does not load is refused (naming the file, the line
    /// or JSON path, and the field).
    pub fn open(path: &Path) -> Result<PolicyFile, AppError> {
        let seen = stamp(path);
        let bytes = read_bytes(path)?.ok_or_else(|| {
            AppError::new(
                ErrorCode::PolicyFile,
                format!("cannot read policies file {}: no such file", path.display()),
            )
            .with_field("path")
        })?;
        let policies = parse(path, &bytes)?;
        Ok(PolicyFile {
            path: path.to_path_buf(),
            policies,
            version: FileVersion::of(&bytes),
            seen,
            error: None,
            refused: None,
        })
    }

    /// The file remembered from the last run: opened, or (moved, broken since) kept with why
    /// it does not load, and taken up by the first look at which it does.
    pub fn reopen(path: &Path) -> PolicyFile {
        PolicyFile::open(path).unwrap_or_else(|err| PolicyFile {
            path: path.to_path_buf(),
            policies: Vec::new(),
            version: FileVersion::unread(),
            seen: None,
            error: Some(err),
            refused: None,
        })
    }

    /// A new file at `path`, with no policies yet: written by its first save. A file already
    /// there is opened instead (nothing is replaced by an empty one).
    pub fn create(path: &Path) -> Result<PolicyFile, AppError> {
        if path.exists() {
            return PolicyFile::open(path);
        }
        Ok(PolicyFile {
            path: path.to_path_buf(),
            policies: Vec::new(),
            version: FileVersion::absent(),
            seen: None,
            error: None,
            refused: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    pub fn version(&self) -> &FileVersion {
        &self.version
    }

    pub fn error(&self) -> Option<&AppError> {
        self.error.as_ref()
    }

    /// Whether the file is on disk (a new one is not until its first save).
    pub fn exists(&self) -> bool {
        self.seen.is_some()
    }

    /// The file's modification time at the last look, in ms since the epoch.
    pub fn modified_ms(&self) -> Option<u64> {
        let modified = self.seen?.0?;
        Some(modified.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64)
    }

    /// Looks at the file: read again when its modification time or size moved, and taken when
    /// its content changed and loads. An invalid or vanished file keeps the policies shown.
    pub fn look(&mut self) -> Look {
        let now = stamp(&self.path);
        let unchanged = match now {
            Some(_) => settled(now),
            None => self.version == FileVersion::absent(),
        };
        if now == self.seen && unchanged {
            return Look::Unchanged;
        }
        self.seen = now;
        let bytes = match read_bytes(&self.path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) if self.version == FileVersion::absent() => return Look::Unchanged,
            Ok(None) => {
                self.error = Some(
                    AppError::new(
                        ErrorCode::PolicyFile,
                        format!(
                            "{} is gone from disk: the policies shown are those last read; the next save writes the file again",
                            self.path.display()
                        ),
                    )
                    .with_field("path"),
                );
                return Look::Refused;
            }
            Err(err) => {
                self.error = Some(err);
                return Look::Refused;
            }
        };
        let version = FileVersion::of(&bytes);
        if version == self.version {
            // Touched, or put back as it was: what is shown is what is on disk.
            self.refused = None;
            let cleared = self.error.take().is_some();
            return if cleared {
                Look::Reloaded
            } else {
                Look::Unchanged
            };
        }
        if self.refused.as_ref() == Some(&version) {
            return Look::Unchanged;
        }
        match parse(&self.path, &bytes) {
            Ok(policies) => {
                self.policies = policies;
                self.version = version;
                self.error = None;
                self.refused = None;
                Look::Reloaded
            }
            Err(err) => {
                self.error = Some(err);
                self.refused = Some(version);
                Look::Refused
            }
        }
    }

    /// Applies `edit` to the file's policies and writes the file whole and atomically.
    ///
    /// `base` is the version the user's edit began from. When the file on disk is no longer at
    /// that version, the save is refused ([`ErrorCode::FileChanged`]) unless `overwrite`: then
    /// the edit is applied to the file as it is now (so a change outside the app to another
    /// policy is kept), or, when the file does not load now, to the policies shown.
    pub fn save(
        &mut self,
        base: &FileVersion,
        overwrite: bool,
        edit: impl FnOnce(&mut Book<Policy>) -> Result<(), AppError>,
    ) -> Result<(), AppError> {
        let bytes = read_bytes(&self.path)?;
        let now = bytes
            .as_deref()
            .map(FileVersion::of)
            .unwrap_or_else(FileVersion::absent);
        if now != *base && !overwrite {
            return Err(self.changed(bytes.is_some()));
        }
        // The file as it is now: its policies, unless it does not load (then, overwriting,
        // the policies shown).
        let current = match &bytes {
            Some(bytes) => match parse(&self.path, bytes) {
                Ok(policies) => policies,
                Err(_) if overwrite => self.policies.clone(),
                Err(err) => {
                    return Err(AppError::new(
                        ErrorCode::FileChanged,
                        format!(
                            "{} does not load now ({}); fix it, or overwrite it with the policies the app shows",
                            short(&self.path),
                            err.message
                        ),
                    ))
                }
            },
            None => self.policies.clone(),
        };
        let mut book = Book::new(current.clone());
        edit(&mut book)?;
        let policies = book.items().to_vec();
        if policies.is_empty() {
            return Err(AppError::new(
                ErrorCode::InvalidPolicy,
                format!(
                    "{} would hold no policy, and serve and the layer refuse an empty policies file: add another policy first, or delete the file itself",
                    short(&self.path)
                ),
            ));
        }
        let format = Format::of(&self.path);
        let spliced = match (format, &bytes) {
            (Format::Toml, Some(old)) => {
                crate::toml_splice::splice(&String::from_utf8_lossy(old), &current, &policies)
            }
            _ => None,
        };
        let text = spliced.unwrap_or_else(|| write::render(&policies, format));
        write_atomically(&self.path, &text)?;
        self.policies = policies;
        self.version = FileVersion::of(text.as_bytes());
        self.seen = stamp(&self.path);
        self.error = None;
        self.refused = None;
        Ok(())
    }

    /// Applies `edit` to the file as it is on disk now (an action that begins and ends at once,
    /// as putting a rule in: nothing of an older read to protect), and writes it in place. A
    /// file that does not load now is left as it is.
    pub fn apply(
        &mut self,
        edit: impl FnOnce(&mut Book<Policy>) -> Result<(), AppError>,
    ) -> Result<(), AppError> {
        let now = read_bytes(&self.path)?
            .as_deref()
            .map(FileVersion::of)
            .unwrap_or_else(FileVersion::absent);
        self.save(&now, false, edit)
    }

    /// The refusal of a save over a file that changed since the edit began.
    fn changed(&self, exists: bool) -> AppError {
        let name = short(&self.path);
        let what = if exists {
            "changed on disk"
        } else {
            "was removed from disk"
        };
        AppError::new(
            ErrorCode::FileChanged,
            format!(
                "{name} {what} since this edit began: reload it from disk, or overwrite it with this edit"
            ),
        )
    }
}

/// Puts a rule into a file's policies as a policy of one limit (named as the rule, so it
/// decides on the rule's own keys). A policy of that name that is itself one limit gets the
/// rule's limit and keeps its mode and key expression (a file switched to shadow or enforce by
/// hand stays so); a stacked policy of that name is refused, naming it.
pub fn put_rule(book: &mut Book<Policy>, rule: &ratelockr::Rule) -> Result<(), AppError> {
    let policy = Policy::from_rule(rule);
    let Some(existing) = book.get(rule.name()) else {
        return book.upsert(None, policy);
    };
    if existing.limits().len() != 1 || !existing.overrides().is_empty() {
        return Err(AppError::new(
            ErrorCode::PolicyExists,
            format!(
                "the policies file's {:?} is a stack of {} limit(s) and {} tier(s), not one rule: edit it in the Policies view, or rename the rule",
                rule.name(),
                existing.limits().len(),
                existing.overrides().len()
            ),
        )
        .with_field("name"));
    }
    let mut policy = policy.with_mode(existing.mode());
    if let Some(key) = existing.key() {
        policy = policy
            .with_key(key)
            .map_err(|e| AppError::new(ErrorCode::InvalidPolicy, e.to_string()))?;
    }
    book.upsert(Some(rule.name()), policy)
}

/// Writes `text` to `dest` whole or not at all: a temporary file beside it, renamed over it.
pub fn write_atomically(dest: &Path, text: &str) -> Result<(), AppError> {
    use ratelockr::atomic_file::{AtomicFile, Replace};
    let failed = |e: std::io::Error| {
        AppError::new(
            ErrorCode::PolicyFile,
            format!("cannot write {}: {e}", dest.display()),
        )
        .with_field("path")
    };
    let out = AtomicFile::create(dest, Replace::Allow).map_err(failed)?;
    out.file().write_all(text.as_bytes()).map_err(failed)?;
    out.commit().map_err(failed)
}

/// Where the policies an older version kept in its settings are written: `policies.toml` in
/// `dir`, or `policies-<n>.toml` when that name is taken (nothing existing is replaced).
pub fn migrate(dir: &Path, policies: &[Policy]) -> Result<PathBuf, AppError> {
    use ratelockr::atomic_file::{AtomicFile, Replace};
    let text = write::render(policies, Format::Toml);
    let mut n = 1;
    loop {
        let name = match n {
            1 => "policies.toml".to_string(),
            n => format!("policies-{n}.toml"),
        };
        let dest = dir.join(name);
        n += 1;
        if dest.symlink_metadata().is_ok() {
            continue;
        }
        let failed = |e: std::io::Error| {
            AppError::new(
                ErrorCode::PolicyFile,
                format!("cannot write {}: {e}", dest.display()),
            )
        };
        let out = AtomicFile::create(&dest, Replace::Never).map_err(failed)?;
        out.file().write_all(text.as_bytes()).map_err(failed)?;
        out.commit().map_err(failed)?;
        return Ok(dest);
    }
}

/// What the Policies view shows: the open file, its policies as last read, the version to send
/// back with a save, and why the file on disk is not what is shown.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PolicyFileStatus {
    /// The open file; absent when none is open.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Whether the file is on disk (a new file is written by its first save).
    pub exists: bool,
    /// The file's policies as last read (the last good ones when the file on disk is invalid).
    pub policies: Vec<Policy>,
    /// The version those policies were read at: a save sends it back as its base.
    pub version: FileVersion,
    /// When the file was last modified, in ms since the epoch.
    #[ts(optional, type = "number")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_ms: Option<u64>,
    /// This look took a change made outside the app.
    pub reloaded: bool,
    /// Why the file on disk is not what is shown (invalid, unreadable, gone), naming the
    /// file, the line or JSON path and the field.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AppError>,
}

impl PolicyFileStatus {
    pub fn of(file: Option<&PolicyFile>, reloaded: bool) -> Self {
        match file {
            Some(f) => PolicyFileStatus {
                file: Some(f.path.display().to_string()),
                exists: f.exists(),
                policies: f.policies.clone(),
                version: f.version.clone(),
                modified_ms: f.modified_ms(),
                reloaded,
                error: f.error.clone(),
            },
            None => PolicyFileStatus {
                file: None,
                exists: false,
                policies: Vec::new(),
                version: FileVersion::absent(),
                modified_ms: None,
                reloaded: false,
                error: None,
            },
        }
    }
}

#[cfg(test)]
#[path = "policy_file_tests.rs"]
mod tests;
