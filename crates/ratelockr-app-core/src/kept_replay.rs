//! A replay as the run history keeps it: which log (its name, size and SHA-256, so that a
//! reopened replay says whether it is still the same file), the request and the rules it was
//! decided with, and its report. Its decisions sit beside it in `runs/<id>/records.csv`,
//! the same CSV a simulation's records use.

use crate::error::{AppError, ErrorCode};
use crate::replay::ReplayRequest;
use crate::summary::RunStatus;
use ratelockr::Rule;
use ratelockr_lab::replay::ReplayReport;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use ts_rs::TS;

/// The log a replay read, identified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LogIdentity {
    /// The file's name (without its directory).
    pub name: String,
    /// The full path it was read from.
    pub path: String,
    #[ts(type = "number")]
    pub bytes: u64,
    /// SHA-256 of the file's bytes (as stored: of the `.gz` when it is compressed), hex.
    pub sha256: String,
}

impl LogIdentity {
    /// Reads the whole file once to hash it (a 1,000,000-line log in well under a second).
    pub fn of(path: &Path) -> Result<LogIdentity, AppError> {
        let unreadable = |e: std::io::Error| {
            AppError::new(
                ErrorCode::LogUnreadable,
                format!("cannot read {}: {e}", path.display()),
            )
            .with_field("path")
        };
        let mut file = std::fs::File::open(path).map_err(unreadable)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut bytes = 0u64;
        loop {
            let n = file.read(&mut buf).map_err(unreadable)?;
            if n == 0 {
                break;
            }
            bytes += n as u64;
            hasher.update(&buf[..n]);
        }
        let sha256 = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(LogIdentity {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: path.display().to_string(),
            bytes,
            sha256,
        })
    }
}

/// One replay as stored in `runs/<id>/replay.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredReplay {
    pub id: String,
    pub name: String,
    pub created_ms: u64,
    pub status: RunStatus,
    pub log: LogIdentity,
    /// The panel's request as it was started.
    pub request: ReplayRequest,
    /// The rules as they were then (the book may have changed since).
    pub rules: Vec<Rule>,
    /// Absent while it runs and when it failed; partial when it was cancelled.
    pub report: Option<ReplayReport>,
    pub error: Option<AppError>,
}

/// A replay as the lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ReplayRunInfo {
    pub id: String,
    pub name: String,
    #[ts(type = "number")]
    pub created_ms: u64,
    pub status: RunStatus,
    pub log: LogIdentity,
    pub rules: Vec<Rule>,
    /// Requests decided (of the report; absent while running or when it failed).
    #[ts(optional, type = "number")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AppError>,
    /// Bytes on disk, decisions included.
    #[ts(type = "number")]
    pub bytes: u64,
}

impl StoredReplay {
    pub fn info(&self, bytes: u64) -> ReplayRunInfo {
        ReplayRunInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            created_ms: self.created_ms,
            status: self.status,
            log: self.log.clone(),
            rules: self.rules.clone(),
            requests: self.report.as_ref().map(|r| r.requests),
            error: self.error.clone(),
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_named_sized_and_hashed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.log");
        std::fs::write(&path, b"abc").expect("write");
        let id = LogIdentity::of(&path).expect("identity");
        assert_eq!((id.name.as_str(), id.bytes), ("a.log", 3));
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            id.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let err = LogIdentity::of(&dir.path().join("none")).expect_err("missing");
        assert_eq!(err.field.as_deref(), Some("path"));
    }
}
