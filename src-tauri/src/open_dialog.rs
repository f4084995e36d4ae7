//! Which log to replay: the native open dialog, or `$RATELOCKR_OPEN_LOG` when that variable is
//! set (the end-to-end test cannot click a GTK dialog).

use crate::core::error::{AppError, ErrorCode};
use tauri::{AppHandle, Runtime};
use tauri_plugin_dialog::DialogExt;

/// Bypasses the open dialog: its answer is this path.
pub const OPEN_LOG_ENV: &str = "RATELOCKR_OPEN_LOG";

/// Asks the user for a log file. Blocks until the dialog closes, so only from async commands.
pub fn choose_log<R: Runtime>(app: &AppHandle<R>) -> Result<String, AppError> {
    if let Some(path) = std::env::var_os(OPEN_LOG_ENV).filter(|p| !p.is_empty()) {
        return Ok(path.to_string_lossy().into_owned());
    }
    let path = app
        .dialog()
        .file()
        .add_filter("Access logs", &["log", "gz", "jsonl", "json", "csv", "txt"])
        .add_filter("All files", &["*"])
        .blocking_pick_file()
        .ok_or_else(|| AppError::new(ErrorCode::Cancelled, "no log chosen"))?
        .into_path()
        .map_err(|e| AppError::new(ErrorCode::LogUnreadable, format!("cannot open that: {e}")))?;
    Ok(path.display().to_string())
}
