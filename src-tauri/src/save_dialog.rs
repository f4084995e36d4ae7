//! Where an export goes: the native save dialog; for tests, `$RATELOCKR_EXPORT_DIR/<name>`
//! when that variable is set, or the answer written in the file `$RATELOCKR_E2E_SAVE_ANSWER`
//! names (the end-to-end test cannot click a GTK dialog, but must choose names in it).

use ratelockr_app_core::error::{AppError, ErrorCode};
use std::path::PathBuf;
use tauri::{AppHandle, Runtime};
use tauri_plugin_dialog::DialogExt;

/// Bypasses the save dialog: exports are written into this directory.
pub const EXPORT_DIR_ENV: &str = "RATELOCKR_EXPORT_DIR";

/// Stands in for the save dialog's answer: while the file this names exists, each dialog
/// answers with the path on its first line, as if the user had typed it and confirmed (an
/// empty first line: the user cancelled). Honoured only when set, and only while the file
/// exists, so a test can change the answer between exports.
pub const SAVE_ANSWER_ENV: &str = "RATELOCKR_E2E_SAVE_ANSWER";

/// The dialog's answer from the text of the answer file.
fn scripted(text: &str) -> Result<PathBuf, AppError> {
    match text.lines().next().map(str::trim) {
        Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
        _ => Err(cancelled()),
    }
}

fn cancelled() -> AppError {
    AppError::new(ErrorCode::Cancelled, "export cancelled")
}

/// Asks the user where to save `default_name`. Must not run on the main thread (it blocks
/// until the dialog closes); async commands run on the async runtime, so they may call it.
pub fn choose_path<R: Runtime>(
    app: &AppHandle<R>,
    default_name: &str,
    filter_name: &str,
    extension: &str,
) -> Result<PathBuf, AppError> {
    if let Some(file) = std::env::var_os(SAVE_ANSWER_ENV).filter(|f| !f.is_empty()) {
        if let Ok(text) = std::fs::read_to_string(file) {
            return scripted(&text);
        }
    }
    if let Some(dir) = std::env::var_os(EXPORT_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join(default_name));
    }
    app.dialog()
        .file()
        .set_file_name(default_name)
        .add_filter(filter_name, &[extension])
        .blocking_save_file()
        .ok_or_else(cancelled)?
        .into_path()
        .map_err(|e| AppError::new(ErrorCode::Export, format!("cannot save there: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripted_answer_is_the_first_line_and_an_empty_one_cancels() {
        assert_eq!(
            scripted("/tmp/x/precious.svg\nignored").expect("a path"),
            PathBuf::from("/tmp/x/precious.svg")
        );
        assert_eq!(
            scripted("  /tmp/y.png  ").expect("trimmed"),
            PathBuf::from("/tmp/y.png")
        );
        for cancel in ["", "\n", "   \nlater"] {
            assert_eq!(
                scripted(cancel).expect_err("cancelled").code,
                ErrorCode::Cancelled
            );
        }
    }
}
