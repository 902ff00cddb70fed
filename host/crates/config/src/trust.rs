//! Workspace trust (T1–T3): a workspace's `.agent/plugins` and `.agent/mcp.json` run commands, so
//! they load only when the workspace's canonical real path is in `settings.json`
//! `trusted_workspaces`. Reaching the same folder through a symlink is the same workspace.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::settings::{Settings, SettingsError};

/// The real path of `ws` (symlinks resolved), the key stored in `trusted_workspaces`.
pub fn canonical_workspace(ws: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(ws)
}

fn key(ws: &Path) -> Result<String, SettingsError> {
    let real = canonical_workspace(ws).map_err(|e| SettingsError {
        path: ws.to_path_buf(),
        line: None,
        message: format!("{}: cannot resolve the workspace's real path: {e}", ws.display()),
    })?;
    Ok(real.to_string_lossy().into_owned())
}

/// Whether `ws` is trusted according to `settings`. A workspace that does not exist is not.
pub fn is_trusted_in(settings: &Settings, ws: &Path) -> bool {
    match key(ws) {
        Ok(k) => settings.trusted_workspaces().contains(&k),
        Err(_) => false,
    }
}

/// Whether `ws` is trusted. A broken settings file counts as "not trusted" (fail closed) and is
/// returned as the error so the caller can report it.
pub fn is_trusted(ws: &Path) -> Result<bool, SettingsError> {
    let settings = Settings::load()?;
    Ok(is_trusted_in(&settings, ws))
}

/// Add `ws` to `trusted_workspaces`; returns the stored real path. Idempotent.
pub fn trust(ws: &Path) -> Result<PathBuf, SettingsError> {
    let k = key(ws)?;
    let path = crate::settings::settings_path().map_err(|e| SettingsError {
        path: PathBuf::from("settings.json"),
        line: None,
        message: format!("settings.json: {e}"),
    })?;
    Settings::update(&path, |m| {
        let list = m
            .entry("trusted_workspaces")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(a) = list {
            if !a.iter().any(|v| v.as_str() == Some(k.as_str())) {
                a.push(Value::String(k.clone()));
            }
        }
    })?;
    Ok(PathBuf::from(k))
}

/// Remove `ws` from `trusted_workspaces`; returns whether it was there.
pub fn untrust(ws: &Path) -> Result<bool, SettingsError> {
    // An untrusted folder that no longer exists can still be removed by the path given.
    let k = key(ws).unwrap_or_else(|_| ws.to_string_lossy().into_owned());
    let path = crate::settings::settings_path().map_err(|e| SettingsError {
        path: PathBuf::from("settings.json"),
        line: None,
        message: format!("settings.json: {e}"),
    })?;
    let mut removed = false;
    Settings::update(&path, |m| {
        if let Some(Value::Array(a)) = m.get_mut("trusted_workspaces") {
            let before = a.len();
            a.retain(|v| v.as_str() != Some(k.as_str()));
            removed = a.len() != before;
        }
    })?;
    Ok(removed)
}
