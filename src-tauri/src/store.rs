//! Settings persisted with tauri-plugin-store, with a damaged file set aside first (the plugin
//! would otherwise ignore it and overwrite it on the next save) and the file kept private to
//! its owner.

use crate::core::settings::{back_up, quarantine_if_corrupt, restrict_to_owner, Persist, Settings};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tauri::{AppHandle, Runtime};
use tauri_plugin_store::{Store, StoreBuilder};

/// The settings file's name inside the data directory.
pub const SETTINGS_FILE: &str = "settings.json";

pub struct PluginStore<R: Runtime> {
    store: Arc<Store<R>>,
}

impl<R: Runtime> std::fmt::Debug for PluginStore<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PluginStore")
    }
}

impl<R: Runtime> Persist for PluginStore<R> {
    fn save(&self, entries: Vec<(&'static str, Value)>) -> Result<(), String> {
        for (key, value) in entries {
            self.store.set(key, value);
        }
        self.store.save().map_err(|e| e.to_string())
    }
}

/// Opens the settings at `path`: a damaged file is renamed aside, refused entries are
/// reported and the file copied aside before anything overwrites it.
pub fn open<R: Runtime>(
    app: &AppHandle<R>,
    path: &Path,
) -> Result<(Settings, PluginStore<R>, Vec<String>), tauri_plugin_store::Error> {
    let mut warnings: Vec<String> = quarantine_if_corrupt(path).into_iter().collect();
    if let Err(err) = restrict_to_owner(path) {
        warnings.push(format!(
            "could not make the settings file {} private to you ({err}); a Redis password saved in it may be readable by others",
            path.display()
        ));
    }
    let store = StoreBuilder::new(app, path).disable_auto_save().build()?;
    let (settings, refused) = Settings::from_entries(|key| store.get(key));
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
    Ok((settings, PluginStore { store }, warnings))
}
