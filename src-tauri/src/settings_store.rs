//! The settings' entries in tauri-plugin-store, the product's settings store, with today's
//! guarantee kept: each save is written whole and atomically by the app core
//! ([`ratelockr_app_core::store::write_entries`]), never by the plugin's `save`, which
//! rewrites the file in place. The plugin also saves every store it holds at exit, so this one
//! is taken out of its collection as soon as it is made: the plugin keeps the entries in
//! memory, the app core writes them.

use ratelockr_app_core::settings::{Persist, SaveError};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Runtime};
use tauri_plugin_store::{Store, StoreBuilder};

/// The settings file's entries, held by the plugin's store.
pub struct PluginSettings<R: Runtime> {
    store: Arc<Store<R>>,
    path: PathBuf,
    /// From reading the entries to the rename, so two saves land in the order they were made.
    order: Mutex<()>,
}

impl<R: Runtime> std::fmt::Debug for PluginSettings<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the entries: a saved Redis URL may carry a password.
        f.debug_struct("PluginSettings")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A store over `entries` (the settings file at `path` as read and checked by the app core).
pub fn open<R: Runtime>(
    app: &AppHandle<R>,
    path: &Path,
    entries: Map<String, Value>,
) -> Result<Box<dyn Persist>, tauri_plugin_store::Error> {
    let store = StoreBuilder::new(app, path)
        .defaults(entries.into_iter().collect())
        .disable_auto_save()
        // The entries were read above (a damaged file set aside): not read again from disk.
        .create_new()
        .build()?;
    // Out of the plugin's collection: it never saves this store, at exit or otherwise.
    store.close_resource();
    Ok(Box::new(PluginSettings {
        store,
        path: path.to_path_buf(),
        order: Mutex::new(()),
    }))
}

impl<R: Runtime> Persist for PluginSettings<R> {
    fn save(&self, updates: Vec<(&'static str, Value)>) -> Result<(), SaveError> {
        let _order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let mut next: Map<String, Value> = self.store.entries().into_iter().collect();
        for (key, value) in &updates {
            next.insert(key.to_string(), value.clone());
        }
        ratelockr_app_core::store::write_entries(&self.path, &next).map_err(|source| {
            SaveError {
                path: self.path.clone(),
                source,
            }
        })?;
        // Only what reached the disk is what the store holds.
        for (key, value) in updates {
            self.store.set(key, value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tauri_plugin_store::StoreExt;

    /// The entries live in the plugin's store, each save reaches the disk whole (a private
    /// file, unknown entries kept), and the plugin holds no store it could save in place at
    /// exit.
    #[test]
    fn the_plugin_keeps_the_entries_and_never_writes_them() {
        let app = crate::app(tauri::test::mock_builder())
            .build(crate::context())
            .expect("app builds");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"from_a_newer_version": [1, 2]}"#).expect("seed");
        let (_, entries, warnings) = ratelockr_app_core::store::load(&path).expect("loads");
        assert!(warnings.is_empty(), "{warnings:?}");
        let persist = open(app.handle(), &path, entries).expect("a store");
        assert!(
            app.get_store(&path).is_none(),
            "out of the plugin's collection: no save at exit"
        );
        persist
            .save(vec![(
                "redis_url",
                Value::String("redis://:pw@127.0.0.1:1".into()),
            )])
            .expect("saves");
        let saved: Map<String, Value> =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("whole JSON");
        assert_eq!(saved["redis_url"], "redis://:pw@127.0.0.1:1");
        assert_eq!(saved["from_a_newer_version"], serde_json::json!([1, 2]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        // A save that cannot reach the disk leaves the store as it was.
        std::fs::remove_file(&path).expect("remove");
        std::fs::create_dir(&path).expect("a folder in the way");
        let err = persist
            .save(vec![("redis_url", Value::String("redis://b:2".into()))])
            .expect_err("cannot write");
        assert!(err.to_string().contains("settings.json"), "{err}");
        std::fs::remove_dir(&path).expect("rmdir");
        persist.save(vec![]).expect("saves again");
        let saved: Map<String, Value> =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("whole JSON");
        assert_eq!(saved["redis_url"], "redis://:pw@127.0.0.1:1");
        // Nothing but the file itself is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("settings.json")]);
    }
}
