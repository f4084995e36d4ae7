//! Settings persisted as one JSON object in `settings.json`, written whole and atomically (a
//! private temporary file beside it, then a rename), so a reader, a crash or a second save at
//! the same moment never sees half a file. A damaged file is set aside first and the file is
//! kept private to its owner.
//!
//! The desktop app keeps the entries in tauri-plugin-store, but never lets the plugin write
//! them: its `save` rewrites the file in place (`fs::write`), on each save and again at exit,
//! and an app opened while another was saving read a truncated file, took it for damaged and
//! started without its rules (seen in the IPC tests). Every save, the app's included, goes
//! through [`write_entries`] here.

use crate::settings::{
    back_up, quarantine_if_corrupt, restrict_to_owner, Persist, SaveError, Settings,
};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The settings file's name inside the data directory.
pub const SETTINGS_FILE: &str = "settings.json";

/// The settings file and what it holds. Entries this version does not know are kept as they
/// are, so a newer version's settings survive a save by this one.
#[derive(Debug)]
pub struct JsonStore {
    path: PathBuf,
    /// Under one lock from update to rename, so two saves land in the order they were made.
    entries: Mutex<Map<String, Value>>,
}

/// Writes `entries` whole to `path`: a private temporary file beside it (mode 0600 on unix, in
/// the same directory so the rename is atomic), synced, then renamed over it. What every
/// settings save goes through, the app's tauri-plugin-store included.
pub fn write_entries(path: &Path, entries: &Map<String, Value>) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut file, entries)?;
    file.write_all(b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

impl Persist for JsonStore {
    fn save(&self, updates: Vec<(&'static str, Value)>) -> Result<(), SaveError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = entries.clone();
        for (key, value) in updates {
            next.insert(key.to_string(), value);
        }
        write_entries(&self.path, &next).map_err(|source| SaveError {
            path: self.path.clone(),
            source,
        })?;
        // Only what reached the disk is what the store holds.
        *entries = next;
        Ok(())
    }
}

/// Opens the settings at `path`: a damaged file is renamed aside, refused entries are
/// reported and the file copied aside before anything overwrites it.
pub fn open(path: &Path) -> std::io::Result<(Settings, JsonStore, Vec<String>)> {
    let (settings, entries, warnings) = load(path)?;
    let store = JsonStore {
        path: path.to_path_buf(),
        entries: Mutex::new(entries),
    };
    Ok((settings, store, warnings))
}

/// Reads the settings at `path` as [`open`] does, with the file's entries as they are, for
/// another store to keep in memory (the app's tauri-plugin-store).
pub fn load(path: &Path) -> std::io::Result<(Settings, Map<String, Value>, Vec<String>)> {
    let mut warnings: Vec<String> = quarantine_if_corrupt(path).into_iter().collect();
    if let Err(err) = restrict_to_owner(path) {
        warnings.push(format!(
            "could not make the settings file {} private to you ({err}); a Redis password saved in it may be readable by others",
            path.display()
        ));
    }
    let entries = match std::fs::read(path) {
        // Damaged files were moved aside above, so what is here parses (or is being replaced
        // by the rename of a whole new file, which parses too).
        Ok(bytes) => serde_json::from_slice::<Map<String, Value>>(&bytes).unwrap_or_default(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(err) => {
            return Err(std::io::Error::new(
                err.kind(),
                format!("cannot read the settings file {}: {err}", path.display()),
            ))
        }
    };
    let (settings, refused) = Settings::from_entries(|key| entries.get(key).cloned());
    if !refused.is_empty() {
        match back_up(path, "refused") {
            Ok(copy) => warnings.push(format!(
                "some saved settings were refused; the original file was kept at {}",
                copy.display()
            )),
            Err(err) => warnings.push(format!("could not back up the settings file: {err}")),
        }
        warnings.extend(refused);
    }
    Ok((settings, entries, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_are_whole_private_and_keep_unknown_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(SETTINGS_FILE);
        std::fs::write(&path, br#"{"from_a_newer_version": [1, 2]}"#).expect("write");
        let (_, store, warnings) = open(&path).expect("opens");
        assert!(warnings.is_empty(), "{warnings:?}");
        store
            .save(vec![(
                "redis_url",
                Value::String("redis://127.0.0.1:1".into()),
            )])
            .expect("saves");
        let saved: Map<String, Value> =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        assert_eq!(saved["redis_url"], "redis://127.0.0.1:1");
        assert_eq!(saved["from_a_newer_version"], serde_json::json!([1, 2]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        // Nothing but the file itself is left in the directory.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(SETTINGS_FILE)]);
    }

    #[test]
    fn a_failed_write_is_an_error_and_changes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(SETTINGS_FILE);
        let (_, store, _) = open(&path).expect("opens");
        store
            .save(vec![("redis_url", Value::String("redis://a:1".into()))])
            .expect("saves");
        // The path is now a directory: the rename fails.
        std::fs::remove_file(&path).expect("remove");
        std::fs::create_dir(&path).expect("dir in the way");
        let err = store
            .save(vec![("redis_url", Value::String("redis://b:2".into()))])
            .expect_err("cannot write");
        assert!(err.to_string().contains(SETTINGS_FILE), "{err}");
        std::fs::remove_dir(&path).expect("rmdir");
        store.save(vec![]).expect("saves again");
        let saved: Map<String, Value> =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        assert_eq!(
            saved["redis_url"], "redis://a:1",
            "the failed save was not kept"
        );
    }
}
