//! What the app remembers between runs, and how a damaged settings file is handled: set aside
//! under a new name and reported, never silently overwritten. The file may hold a Redis
//! password, so it is readable by its owner only.

use crate::error::{AppError, ErrorCode};
use crate::history::HistorySettings;
use ratelockr::Rule;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use ts_rs::TS;

/// The default port of the app's metrics endpoint: one above `ratelockr serve`'s 9464, so the
/// app and the CLI's endpoint can run side by side.
pub const DEFAULT_METRICS_PORT: u16 = 9465;

/// The metrics endpoint's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MetricsSettings {
    pub enabled: bool,
    /// Served on 127.0.0.1 only.
    pub port: u16,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            enabled: true,
            port: DEFAULT_METRICS_PORT,
        }
    }
}

/// The metrics form as the window sends it: the port as any number, so that 70000 or -1 get
/// a message naming the field instead of a deserialization error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct MetricsDraft {
    pub enabled: bool,
    pub port: f64,
}

impl MetricsDraft {
    pub fn to_settings(self) -> Result<MetricsSettings, AppError> {
        let port = self.port;
        if !port.is_finite() || port.fract() != 0.0 || !(0.0..=65535.0).contains(&port) {
            return Err(AppError::new(
                ErrorCode::InvalidSettings,
                format!(
                    "invalid port: must be a whole number from 1 to 65535, or 0 for any free port; got {port}"
                ),
            )
            .with_field("port"));
        }
        Ok(MetricsSettings {
            enabled: self.enabled,
            port: port as u16,
        })
    }
}

/// Everything persisted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// None: the default Redis if it answers, else the embedded one.
    pub redis_url: Option<String>,
    /// The TLS files (paths, never their contents) and the insecure opt-out for `redis_url`.
    pub redis_tls: ratelockr::TlsOptions,
    pub metrics: MetricsSettings,
    pub rules: Vec<Rule>,
    /// Policies an older version kept here, in their policies-file JSON form: read only to be
    /// moved into a policies file at start (the file is the one truth), and written back only
    /// while that move fails, so nothing is lost.
    pub policies: Vec<ratelockr::Policy>,
    /// The policies file the Policies view has open, opened again at start (a file gone or
    /// broken by then is reported, and kept here until another is chosen).
    pub policies_file: Option<PathBuf>,
    /// How much run history is kept.
    pub history: HistorySettings,
    /// The policies file the Watch panel follows, opened again at start (a file gone by then
    /// is reported, and kept here until another is chosen).
    pub watch_file: Option<PathBuf>,
    /// The port of the app's embedded redis-server, chosen once and taken again at the next
    /// start (another is taken only when it is busy, and the app says so).
    pub embedded_port: Option<u16>,
}

/// The store keys.
pub const KEY_REDIS_URL: &str = "redis_url";
pub const KEY_REDIS_TLS: &str = "redis_tls";
pub const KEY_METRICS: &str = "metrics";
pub const KEY_RULES: &str = "rules";
pub const KEY_HISTORY: &str = "history";
pub const KEY_POLICIES: &str = "policies";
pub const KEY_WATCH_FILE: &str = "watch_file";
pub const KEY_POLICIES_FILE: &str = "policies_file";
pub const KEY_EMBEDDED_PORT: &str = "embedded_port";

/// Where settings are written. The app implements it with [`crate::store::JsonStore`]; tests
/// may use anything.
pub trait Persist: Send + Sync {
    fn save(&self, entries: Vec<(&'static str, Value)>) -> Result<(), SaveError>;
}

/// Settings that did not reach the disk (what the store holds is unchanged).
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct SaveError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl Settings {
    /// The store entries for these settings.
    pub fn entries(&self) -> Vec<(&'static str, Value)> {
        vec![
            (
                KEY_REDIS_URL,
                self.redis_url
                    .clone()
                    .map(Value::String)
                    .unwrap_or(Value::Null),
            ),
            (
                KEY_REDIS_TLS,
                match self.redis_tls.is_empty() {
                    true => Value::Null,
                    false => serde_json::to_value(&self.redis_tls).unwrap_or(Value::Null),
                },
            ),
            (
                KEY_METRICS,
                serde_json::to_value(self.metrics).unwrap_or(Value::Null),
            ),
            (
                KEY_RULES,
                serde_json::to_value(&self.rules).unwrap_or(Value::Array(vec![])),
            ),
            (
                KEY_HISTORY,
                serde_json::to_value(self.history).unwrap_or(Value::Null),
            ),
            (
                KEY_POLICIES,
                serde_json::to_value(&self.policies).unwrap_or(Value::Array(vec![])),
            ),
            (KEY_WATCH_FILE, path_value(self.watch_file.as_deref())),
            (KEY_POLICIES_FILE, path_value(self.policies_file.as_deref())),
            (
                KEY_EMBEDDED_PORT,
                self.embedded_port.map(Value::from).unwrap_or(Value::Null),
            ),
        ]
    }

    /// Reads settings from store entries, keeping whatever is valid and describing the rest.
    /// Returns the settings and one warning per entry that was refused.
    pub fn from_entries(get: impl Fn(&str) -> Option<Value>) -> (Settings, Vec<String>) {
        let mut warnings = Vec::new();
        let mut settings = Settings::default();
        match get(KEY_REDIS_URL) {
            None | Some(Value::Null) => {}
            Some(Value::String(url)) if url.trim().is_empty() => {}
            Some(Value::String(url)) => settings.redis_url = Some(url),
            Some(_) => warnings.push("the saved Redis URL is not a string; ignored".into()),
        }
        if let Some(value) = get(KEY_REDIS_TLS).filter(|v| !v.is_null()) {
            match serde_json::from_value(value) {
                Ok(tls) => settings.redis_tls = tls,
                Err(err) => warnings.push(format!(
                    "the saved TLS settings are invalid ({err}); connecting without them"
                )),
            }
        }
        if let Some(value) = get(KEY_METRICS) {
            match serde_json::from_value(value) {
                Ok(metrics) => settings.metrics = metrics,
                Err(err) => warnings.push(format!(
                    "the saved metrics settings are invalid ({err}); using the defaults"
                )),
            }
        }
        if let Some(value) = get(KEY_HISTORY).filter(|v| !v.is_null()) {
            match serde_json::from_value(value) {
                Ok(history) => settings.history = history,
                Err(err) => warnings.push(format!(
                    "the saved run history limits are invalid ({err}); using the defaults"
                )),
            }
        }
        settings.watch_file =
            read_path(get(KEY_WATCH_FILE), "watched policies file", &mut warnings);
        settings.policies_file =
            read_path(get(KEY_POLICIES_FILE), "open policies file", &mut warnings);
        match get(KEY_EMBEDDED_PORT) {
            None | Some(Value::Null) => {}
            Some(value) => match value.as_u64().and_then(|p| u16::try_from(p).ok()) {
                Some(port) if port > 0 => settings.embedded_port = Some(port),
                _ => warnings.push(format!(
                    "the saved port of the embedded Redis ({value}) is not a port from 1 to 65535; a free one is taken"
                )),
            },
        }
        match get(KEY_RULES) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    match serde_json::from_value::<Rule>(item) {
                        Ok(rule) if settings.rules.iter().any(|r| r.name() == rule.name()) => {
                            warnings.push(format!(
                                "saved rule #{} is a second rule named {:?}; the first one is kept and this one dropped",
                                i + 1,
                                rule.name()
                            ))
                        }
                        Ok(rule) => settings.rules.push(rule),
                        Err(err) => {
                            warnings.push(format!("saved rule #{} was refused: {err}", i + 1))
                        }
                    }
                }
            }
            Some(_) => warnings.push("the saved rules are not a list; ignored".into()),
        }
        match get(KEY_POLICIES) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    match ratelockr::policy::parse_policy_json(item) {
                        Ok(p) if settings.policies.iter().any(|q| q.name() == p.name()) => {
                            warnings.push(format!(
                                "saved policy #{} is a second policy named {:?}; the first one is kept and this one dropped",
                                i + 1,
                                p.name()
                            ))
                        }
                        Ok(p) => settings.policies.push(p),
                        Err(err) => warnings.push(format!(
                            "saved policy #{} was refused: {}: {}",
                            i + 1,
                            err.at,
                            err.message
                        )),
                    }
                }
            }
            Some(_) => warnings.push("the saved policies are not a list; ignored".into()),
        }
        (settings, warnings)
    }
}

fn path_value(path: Option<&Path>) -> Value {
    path.map(|p| Value::String(p.display().to_string()))
        .unwrap_or(Value::Null)
}

/// A saved path: a string, or nothing (`what` names it in the warning).
fn read_path(value: Option<Value>, what: &str, warnings: &mut Vec<String>) -> Option<PathBuf> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(file)) if file.trim().is_empty() => None,
        Some(Value::String(file)) => Some(PathBuf::from(file)),
        Some(_) => {
            warnings.push(format!("the saved {what} is not a path; ignored"));
            None
        }
    }
}

/// If the file at `path` exists but is not a JSON object, renames it to
/// `<name>.corrupt-<unix seconds>` so that nothing is lost, and says so.
pub fn quarantine_if_corrupt(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    if serde_json::from_slice::<Map<String, Value>>(&bytes).is_ok() {
        return None;
    }
    let aside = aside_path(path, "corrupt");
    Some(match std::fs::rename(path, &aside) {
        Ok(()) => format!(
            "the settings file was damaged; it was moved to {} and the app started with defaults",
            aside.display()
        ),
        Err(err) => format!(
            "the settings file {} is damaged and could not be moved aside ({err}); it will not be overwritten",
            path.display()
        ),
    })
}

/// Makes the settings file readable and writable by its owner only (mode 0600), since the
/// Redis URL in it may carry a password. A missing file is created empty (`{}`) with that mode
/// first, so the password is never written into a file others can read (each save then
/// replaces it with a private temporary file, mode 0600 as well: [`crate::store`]). On other platforms the per-user data directory is
/// the guard and this does nothing.
pub fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::io::Write;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        match created {
            Ok(mut file) => file.write_all(b"{}")?,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?
            }
            Err(err) => return Err(err),
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Copies the file aside (`<name>.<tag>-<unix seconds>`) before entries that were refused are
/// dropped by the next save. Returns the copy's path.
pub fn back_up(path: &Path, tag: &str) -> std::io::Result<PathBuf> {
    let aside = aside_path(path, tag);
    std::fs::copy(path, &aside)?;
    Ok(aside)
}

fn aside_path(path: &Path, tag: &str) -> PathBuf {
    let secs = ratelockr::telemetry::now_ms() / 1000;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{tag}-{secs}"));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_corrupt_file_is_moved_aside_not_lost() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("settings.json");
        std::fs::write(&path, b"{\"rules\": [oops").expect("write");
        let warning = quarantine_if_corrupt(&path).expect("reported");
        assert!(warning.contains("damaged"), "{warning}");
        assert!(!path.exists());
        let moved: Vec<_> = std::fs::read_dir(dir.path()).expect("ls").collect();
        assert_eq!(moved.len(), 1);
        let moved = moved
            .into_iter()
            .next()
            .expect("one")
            .expect("entry")
            .path();
        assert_eq!(std::fs::read(moved).expect("read"), b"{\"rules\": [oops");
        std::fs::write(&path, b"{}").expect("write");
        assert_eq!(quarantine_if_corrupt(&path), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_settings_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        let dir = tempfile::tempdir().expect("tempdir");
        // A new file is born 0600 and empty, before any password is written into it.
        let fresh = dir.path().join("new").join("settings.json");
        restrict_to_owner(&fresh).expect("create");
        assert_eq!(mode(&fresh), 0o600);
        assert_eq!(std::fs::read(&fresh).expect("read"), b"{}");
        // A file from before keeps its contents and loses the group and world bits.
        let old = dir.path().join("settings.json");
        std::fs::write(&old, br#"{"redis_url":"redis://:pw@127.0.0.1:6390"}"#).expect("write");
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        restrict_to_owner(&old).expect("restrict");
        assert_eq!(mode(&old), 0o600);
        assert!(std::fs::read_to_string(&old)
            .expect("read")
            .contains(":pw@"));
    }

    #[test]
    fn the_watched_file_is_a_path_or_nothing() {
        let read =
            |value: Value| Settings::from_entries(|k| (k == KEY_WATCH_FILE).then(|| value.clone()));
        let (settings, warnings) = read(json!("/etc/ratelockr/policies.toml"));
        assert_eq!(
            (settings.watch_file.as_deref(), warnings.len()),
            (Some(Path::new("/etc/ratelockr/policies.toml")), 0)
        );
        assert_eq!(read(json!("  ")).0.watch_file, None);
        let (settings, warnings) = read(json!(42));
        assert_eq!(settings.watch_file, None);
        assert!(
            warnings[0].contains("watched policies file"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_metrics_port_out_of_range_names_the_field() {
        for port in [70000.0, -1.0, 80.5, f64::NAN] {
            let err = MetricsDraft {
                enabled: true,
                port,
            }
            .to_settings()
            .expect_err("refused");
            assert_eq!(err.field.as_deref(), Some("port"), "{port}");
            assert!(err.message.contains("65535"), "{err:?}");
            assert!(!err.message.contains("u16"), "no internals: {err:?}");
        }
        let ok = MetricsDraft {
            enabled: false,
            port: 0.0,
        };
        assert_eq!(
            ok.to_settings().expect("valid"),
            MetricsSettings {
                enabled: false,
                port: 0
            }
        );
    }

    #[test]
    fn invalid_entries_are_reported_and_valid_ones_kept() {
        let entries = json!({
            "redis_url": "rediss://:pw@127.0.0.1:6390",
            "redis_tls": {"ca": "/etc/redis/ca.pem", "insecure": false},
            "metrics": {"enabled": false, "port": 9999},
            "rules": [
                {"name": "ok", "algorithm": "fixed_window", "limit": 5, "window_ms": 1000},
                {"name": "bad", "algorithm": "fixed_window", "limit": 0, "window_ms": 1000},
                {"name": "ok", "algorithm": "fixed_window", "limit": 9, "window_ms": 1000}
            ]
        });
        let (settings, warnings) = Settings::from_entries(|k| entries.get(k).cloned());
        assert_eq!(settings.rules.len(), 1);
        assert_eq!(
            settings.redis_tls.ca.as_deref(),
            Some(Path::new("/etc/redis/ca.pem"))
        );
        assert_eq!(
            settings.metrics,
            MetricsSettings {
                enabled: false,
                port: 9999
            }
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("limit"), "{warnings:?}");
        assert!(
            warnings[1].contains("second rule named \"ok\""),
            "a duplicate is reported, not dropped silently: {warnings:?}"
        );
        assert_eq!(
            settings.rules[0],
            Rule::fixed_window("ok", 5, std::time::Duration::from_secs(1)).expect("valid")
        );
        let round: Map<String, Value> = settings
            .entries()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let (again, none) = Settings::from_entries(|k| round.get(k).cloned());
        assert_eq!((again, none.len()), (settings, 0));
    }
}
