//! The one error type that crosses the IPC boundary: a machine-readable code, a message for
//! people, and (for validation) the field to show it beside.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What kind of failure an [`AppError`] is; the UI switches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The Redis URL is not one we can use.
    InvalidUrl,
    /// A TLS option (CA file, client certificate or key) cannot be used; `field` names it.
    InvalidTls,
    /// A rule's name or parameters were refused by the engine.
    InvalidRule,
    /// A simulator parameter was refused by the engine.
    InvalidWorkload,
    RuleExists,
    RuleNotFound,
    /// A policy's name, limits, overrides or mode were refused by the engine; `field` is the
    /// path (`limits[1].capacity`).
    InvalidPolicy,
    PolicyExists,
    PolicyNotFound,
    /// Redis did not answer (the test button, a stats read).
    RedisUnavailable,
    /// The managed redis-server could not be started (missing binary, say).
    EmbeddedUnavailable,
    SimulationRunning,
    /// Nothing to export yet: no run has finished.
    NoRun,
    /// The settings file could not be read or written.
    Store,
    /// A file could not be written.
    Export,
    /// The metrics endpoint could not be started.
    Metrics,
    /// The user closed a save dialog.
    Cancelled,
    /// No run with that id in the history.
    RunNotFound,
    /// A run name that cannot be used (empty, too long).
    InvalidRunName,
    /// The run history on disk could not be read or written.
    History,
    /// A setting was refused (the metrics port, say); `field` names it.
    InvalidSettings,
    /// A replay's parameters were refused (key expression, path regex, rules, sweep); `field`
    /// names it.
    InvalidReplay,
    /// A log could not be opened, or nothing in it parsed.
    LogUnreadable,
    /// A policies file could not be read or was refused; the message names the file, the line
    /// or JSON path and what is wrong, `field` the field.
    PolicyFile,
    /// The policies file changed on disk since the edit being saved began (or does not load
    /// now): the save was refused, and the user chooses to reload or to overwrite.
    FileChanged,
    ReplayRunning,
    Internal,
}

/// An error as the UI receives it: `{ code, message, field? }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, thiserror::Error)]
#[error("{message}")]
pub struct AppError {
    pub code: ErrorCode,
    pub message: String,
    /// The input the message is about (`capacity`, `window_ms`, `name`, `rps`...), for inline
    /// validation messages.
    #[ts(optional)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AppError {
            code,
            message: message.into(),
            field: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
}

impl From<ratelockr::RuleError> for AppError {
    fn from(err: ratelockr::RuleError) -> Self {
        use ratelockr::RuleError as E;
        let field = match &err {
            E::InvalidParameter { parameter, .. } => Some(parameter.to_string()),
            E::InvalidName(_) => Some("name".to_string()),
            E::UnknownAlgorithm(_) => Some("algorithm".to_string()),
            E::InvalidCost { .. } => Some("cost".to_string()),
            E::InvalidKey(_) => Some("key".to_string()),
            E::UnknownField { field, .. } => Some(field.clone()),
        };
        AppError {
            code: ErrorCode::InvalidRule,
            message: err.to_string(),
            field,
        }
    }
}

/// A file not written; a chart view that cannot be drawn names its field under `view.`.
impl From<ratelockr_lab::export::ExportError> for AppError {
    fn from(err: ratelockr_lab::export::ExportError) -> Self {
        let field = match &err {
            ratelockr_lab::export::ExportError::InvalidView { field, .. } => {
                Some(format!("view.{field}"))
            }
            _ => None,
        };
        AppError {
            code: ErrorCode::Export,
            message: err.to_string(),
            field,
        }
    }
}

impl From<ratelockr::TargetError> for AppError {
    fn from(err: ratelockr::TargetError) -> Self {
        // TargetError holds only the redacted URL, so its message is safe to show.
        AppError::new(ErrorCode::InvalidUrl, err.to_string()).with_field("redis_url")
    }
}

impl From<ratelockr::BackendError> for AppError {
    fn from(err: ratelockr::BackendError) -> Self {
        match err {
            ratelockr::BackendError::Target(t) => t.into(),
            ratelockr::BackendError::Embedded(e) => {
                AppError::new(ErrorCode::EmbeddedUnavailable, e.to_string())
            }
        }
    }
}

impl From<ratelockr::RedisFailure> for AppError {
    fn from(err: ratelockr::RedisFailure) -> Self {
        AppError::new(ErrorCode::RedisUnavailable, err.to_string())
    }
}

impl From<ratelockr_lab::sim::SimError> for AppError {
    fn from(err: ratelockr_lab::sim::SimError) -> Self {
        use ratelockr_lab::sim::SimError as E;
        match err {
            E::InvalidWorkload { parameter, .. } => {
                AppError::new(ErrorCode::InvalidWorkload, err.to_string()).with_field(parameter)
            }
            E::Rule(rule) => rule.into(),
            E::Export(_) => AppError::new(ErrorCode::Export, err.to_string()),
            E::Servers(_) => AppError::new(ErrorCode::Internal, err.to_string()),
        }
    }
}

/// A replay refused or failed: a bad parameter or an unreadable log on its field.
impl From<ratelockr_lab::replay::ReplayError> for AppError {
    fn from(err: ratelockr_lab::replay::ReplayError) -> Self {
        use ratelockr_lab::replay::ReplayError;
        let message = err.to_string();
        match err {
            ReplayError::InvalidSpec { parameter, .. } => {
                AppError::new(ErrorCode::InvalidReplay, message).with_field(parameter)
            }
            ReplayError::Open { .. } | ReplayError::Detect { .. } => {
                AppError::new(ErrorCode::LogUnreadable, message).with_field("path")
            }
            ReplayError::NothingParsed { .. } => {
                AppError::new(ErrorCode::LogUnreadable, message).with_field("format")
            }
            ReplayError::Redis(failure) => failure.into(),
            ReplayError::Export(_) => AppError::new(ErrorCode::Export, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_code_message_field() {
        let err: AppError =
            ratelockr::Rule::fixed_window("api", 0, std::time::Duration::from_secs(1))
                .expect_err("limit 0")
                .into();
        let json = serde_json::to_value(&err).expect("serializes");
        assert_eq!(json["code"], "invalid_rule");
        assert_eq!(json["field"], "limit");
        assert!(json["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit")));
    }
}
