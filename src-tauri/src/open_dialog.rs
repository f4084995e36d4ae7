//! Files the user opens: the log to replay, the TLS files of the connection form, and the
//! policies file to watch. The native
//! open dialog, or the path in an environment variable when it is set (the tests cannot click a
//! GTK dialog).

use ratelockr_app_core::error::{AppError, ErrorCode};
use tauri::{AppHandle, Runtime};
use tauri_plugin_dialog::DialogExt;

/// Bypasses the log's open dialog: its answer is this path.
pub const OPEN_LOG_ENV: &str = "RATELOCKR_OPEN_LOG";

/// Bypasses the TLS files' open dialog: its answer is this path.
pub const OPEN_PEM_ENV: &str = "RATELOCKR_OPEN_PEM";

/// Bypasses the open dialogs of the Watch card and the Policies view: their answer is this path.
pub const OPEN_POLICIES_ENV: &str = "RATELOCKR_OPEN_POLICIES";

/// Asks the user for a policies file to watch (TOML or JSON, as `serve --policies` takes).
pub fn choose_policies<R: Runtime>(app: &AppHandle<R>) -> Result<String, AppError> {
    choose(
        app,
        OPEN_POLICIES_ENV,
        "Watch a policies file",
        ("Policies files", &["toml", "json"]),
        ErrorCode::PolicyFile,
        "no policies file chosen",
    )
}

/// Asks the user for the policies file the Policies view opens and edits in place.
pub fn choose_policies_file<R: Runtime>(app: &AppHandle<R>) -> Result<String, AppError> {
    choose(
        app,
        OPEN_POLICIES_ENV,
        "Open a policies file",
        ("Policies files", &["toml", "json"]),
        ErrorCode::PolicyFile,
        "no policies file chosen",
    )
}

/// Asks the user for a log file. Blocks until the dialog closes, so only from async commands.
pub fn choose_log<R: Runtime>(app: &AppHandle<R>) -> Result<String, AppError> {
    choose(
        app,
        OPEN_LOG_ENV,
        "Open an access log",
        ("Access logs", &["log", "gz", "jsonl", "json", "csv", "txt"]),
        ErrorCode::LogUnreadable,
        "no log chosen",
    )
}

/// Asks the user for the PEM file of a TLS field of the connection form (`tls_ca`, `tls_cert`,
/// `tls_key`). Only the path is returned: the file is read and checked on Test and Use.
pub fn choose_pem<R: Runtime>(app: &AppHandle<R>, field: &str) -> Result<String, AppError> {
    let title = match field {
        "tls_ca" => "Choose the CA file (PEM)",
        "tls_cert" => "Choose the client certificate (PEM)",
        "tls_key" => "Choose the client key (PEM)",
        other => {
            return Err(AppError::new(
                ErrorCode::InvalidTls,
                format!("no TLS file field named {other:?}: expected tls_ca, tls_cert or tls_key"),
            )
            .with_field("field"))
        }
    };
    choose(
        app,
        OPEN_PEM_ENV,
        title,
        ("PEM files", &["pem", "crt", "cer", "key"]),
        ErrorCode::InvalidTls,
        "no file chosen",
    )
    .map_err(|err| err.with_field(field))
}

fn choose<R: Runtime>(
    app: &AppHandle<R>,
    bypass: &str,
    title: &str,
    (kind, extensions): (&str, &[&str]),
    unreadable: ErrorCode,
    nothing: &str,
) -> Result<String, AppError> {
    if let Some(path) = std::env::var_os(bypass).filter(|p| !p.is_empty()) {
        return Ok(path.to_string_lossy().into_owned());
    }
    let path = app
        .dialog()
        .file()
        .set_title(title)
        .add_filter(kind, extensions)
        .add_filter("All files", &["*"])
        .blocking_pick_file()
        .ok_or_else(|| AppError::new(ErrorCode::Cancelled, nothing))?
        .into_path()
        .map_err(|e| AppError::new(unreadable, format!("cannot open that: {e}")))?;
    Ok(path.display().to_string())
}
