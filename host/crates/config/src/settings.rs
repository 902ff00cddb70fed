//! `settings.json` in the config dir (E2).
//!
//! - created on first write (reading a missing file gives empty settings);
//! - keys this version does not know are kept as they are;
//! - written atomically: a temp file in the same folder, flushed, then renamed over the old one,
//!   so a crash leaves either the old or the new file, never a truncated one;
//! - a broken file is reported with its path and line and is never overwritten: every write
//!   re-reads the file first and refuses when it does not parse.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The settings file of the config dir.
#[derive(Debug, Clone)]
pub struct Settings {
    pub path: PathBuf,
    pub values: Map<String, Value>,
}

/// A settings file that could not be read, parsed or written.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SettingsError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// `<config dir>/settings.json`.
pub fn settings_path() -> anyhow::Result<PathBuf> {
    Ok(crate::config_dir::config_dir()?.join("settings.json"))
}

impl Settings {
    /// Load the settings of the config dir.
    pub fn load() -> Result<Self, SettingsError> {
        let path = settings_path().map_err(|e| SettingsError {
            path: PathBuf::from("settings.json"),
            line: None,
            message: format!("settings.json: {e}"),
        })?;
        Self::load_from(&path)
    }

    /// Load `path`; a missing file is empty settings.
    pub fn load_from(path: &Path) -> Result<Self, SettingsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    values: Map::new(),
                })
            }
            Err(e) => {
                return Err(SettingsError {
                    path: path.to_path_buf(),
                    line: None,
                    message: format!("{}: cannot read settings: {e}", path.display()),
                })
            }
        };
        let values = parse(path, &text)?;
        Ok(Self {
            path: path.to_path_buf(),
            values,
        })
    }

    /// Read-modify-write under one call: the file is re-read (so changes made since `load` by
    /// another process are kept), `change` is applied, and the result is written atomically.
    /// A broken file is not touched.
    pub fn update(path: &Path, change: impl FnOnce(&mut Map<String, Value>)) -> Result<Self, SettingsError> {
        let mut current = Self::load_from(path)?;
        change(&mut current.values);
        current.write()?;
        Ok(current)
    }

    /// Write atomically (temp file + rename). Refuses when the file on disk is broken.
    pub fn write(&self) -> Result<(), SettingsError> {
        let path = &self.path;
        let err = |message: String| SettingsError {
            path: path.clone(),
            line: None,
            message,
        };
        // Never overwrite a file the user has to fix by hand (their edits would be lost).
        if let Ok(text) = std::fs::read_to_string(path) {
            parse(path, &text)?;
        }
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: cannot create folder: {e}", dir.display())))?;
        let mut text = serde_json::to_string_pretty(&Value::Object(self.values.clone()))
            .map_err(|e| err(format!("{}: cannot encode settings: {e}", path.display())))?;
        text.push('\n');
        crate::fs::replace_atomically(path, text.as_bytes(), None)
            .map_err(|e| err(format!("{}: cannot write settings: {e}", path.display())))?;
        Ok(())
    }

    /// The entries of `trusted_workspaces` as stored: `{"path", "sha256"}` objects, or plain path
    /// strings from before trust was pinned to content (see `trust`).
    pub fn trusted_entries(&self) -> Vec<Value> {
        match self.values.get("trusted_workspaces") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        }
    }

    /// The paths of `trusted_workspaces` (both forms; entries of another type are ignored).
    pub fn trusted_workspaces(&self) -> Vec<String> {
        match self.values.get("trusted_workspaces") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().or_else(|| v.get("path").and_then(Value::as_str)))
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn parse(path: &Path, text: &str) -> Result<Map<String, Value>, SettingsError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(SettingsError {
            path: path.to_path_buf(),
            line: Some(1),
            message: format!(
                "{}:1: settings.json must be a JSON object; fix it by hand (it is never overwritten)",
                path.display()
            ),
        }),
        Err(e) => Err(SettingsError {
            path: path.to_path_buf(),
            line: Some(e.line()),
            message: format!(
                "{}:{}:{}: settings.json is not valid JSON ({e}); fix it by hand (it is never overwritten)",
                path.display(),
                e.line(),
                e.column()
            ),
        }),
    }
}
