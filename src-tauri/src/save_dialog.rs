//! Where an export goes: the native save dialog, or `$RATELOCKR_EXPORT_DIR/<name>` when that
//! variable is set (the end-to-end test cannot click a GTK dialog).

use crate::core::error::{AppError, ErrorCode};
use std::path::PathBuf;
use tauri::{AppHandle, Runtime};
use tauri_plugin_dialog::DialogExt;

/// Bypasses the save dialog: exports are written into this directory.
pub const EXPORT_DIR_ENV: &str = "RATELOCKR_EXPORT_DIR";

/// Asks the user where to save `default_name`. Must not run on the main thread (it blocks
/// until the dialog closes); async commands run on the async runtime, so they may call it.
pub fn choose_path<R: Runtime>(
    app: &AppHandle<R>,
    default_name: &str,
    filter_name: &str,
    extension: &str,
) -> Result<PathBuf, AppError> {
    if let Some(dir) = std::env::var_os(EXPORT_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join(default_name));
    }
    app.dialog()
        .file()
        .set_file_name(default_name)
        .add_filter(filter_name, &[extension])
        .blocking_save_file()
        .ok_or_else(|| AppError::new(ErrorCode::Cancelled, "export cancelled"))?
        .into_path()
        .map_err(|e| AppError::new(ErrorCode::Export, format!("cannot save there: {e}")))
}
