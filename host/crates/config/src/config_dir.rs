//! Where cst-agent keeps its files (rule E2).
//!
//! Config dir: `$XDG_CONFIG_HOME/cst-agent/`, else `~/.config/cst-agent/`; on Windows
//! `%APPDATA%\cst-agent\`. The compile cache lives under the cache dir
//! (`$XDG_CACHE_HOME/cst-agent/`, else the platform cache dir) because it can always be rebuilt.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// The config dir of E2. Does not create it.
pub fn config_dir() -> Result<PathBuf> {
    if let Some(xdg) = non_empty_env("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(xdg).join("cst-agent"));
    }
    if cfg!(windows) {
        if let Some(appdata) = non_empty_env("APPDATA") {
            return Ok(PathBuf::from(appdata).join("cst-agent"));
        }
    }
    let home = dirs::home_dir().context("cannot find the home directory for the config dir (set XDG_CONFIG_HOME)")?;
    Ok(home.join(".config").join("cst-agent"))
}

/// Where compiled components and other rebuildable data go.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(xdg) = non_empty_env("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(xdg).join("cst-agent"));
    }
    match dirs::cache_dir() {
        Some(dir) => Ok(dir.join("cst-agent")),
        None => Ok(config_dir()?.join("cache")),
    }
}

/// `<config dir>/plugins`, where `plugins install` puts plugins (E4).
pub fn plugins_dir() -> Result<PathBuf> {
    Ok(config_dir()?.join("plugins"))
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
