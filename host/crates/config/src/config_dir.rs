//! Where cst-agent keeps its files (rule E2).
//!
//! Config dir: `$XDG_CONFIG_HOME/cst-agent/`, else `~/.config/cst-agent/`; on Windows
//! `%APPDATA%\cst-agent\`, and there `XDG_CONFIG_HOME` is not read: it is a Unix convention that
//! MSYS2 and Git Bash shells set for their own tools, and a config dir that moved with the shell
//! a user started from would hide their plugins and trust. The compile cache lives under the
//! cache dir (`$XDG_CACHE_HOME/cst-agent/`, else the platform cache dir; on Windows
//! `%LOCALAPPDATA%\cst-agent\`) because it can always be rebuilt.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// The config dir of E2. Does not create it.
pub fn config_dir() -> Result<PathBuf> {
    config_dir_for(cfg!(windows), &non_empty_env, dirs::home_dir(), dirs::config_dir())
}

/// [`config_dir`] for a platform (`windows`), an environment and the platform's own answers
/// (home dir; on Windows the Roaming AppData folder), so both platforms' rules are testable.
fn config_dir_for(
    windows: bool,
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<PathBuf>,
    platform_config: Option<PathBuf>,
) -> Result<PathBuf> {
    if windows {
        let appdata = env("APPDATA").map(PathBuf::from).or(platform_config);
        return Ok(appdata
            .context("cannot find the config dir: %APPDATA% is not set")?
            .join("cst-agent"));
    }
    if let Some(xdg) = env("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(xdg).join("cst-agent"));
    }
    let home = home.context("cannot find the home directory for the config dir (set XDG_CONFIG_HOME)")?;
    Ok(home.join(".config").join("cst-agent"))
}

/// Where compiled components and other rebuildable data go.
pub fn cache_dir() -> Result<PathBuf> {
    let env_var = if cfg!(windows) {
        "LOCALAPPDATA"
    } else {
        "XDG_CACHE_HOME"
    };
    if let Some(dir) = non_empty_env(env_var) {
        return Ok(PathBuf::from(dir).join("cst-agent"));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn e2_unix_xdg_then_home() {
        let home = Some(PathBuf::from("/home/u"));
        let xdg = env_of(&[("XDG_CONFIG_HOME", "/x"), ("APPDATA", "/a")]);
        assert_eq!(
            config_dir_for(false, &xdg, home.clone(), None).unwrap(),
            PathBuf::from("/x/cst-agent")
        );
        assert_eq!(
            config_dir_for(false, &env_of(&[]), home, None).unwrap(),
            PathBuf::from("/home/u/.config/cst-agent")
        );
        assert!(config_dir_for(false, &env_of(&[]), None, None).is_err());
    }

    #[test]
    fn e2_windows_appdata_even_when_xdg_is_set() {
        let home = Some(PathBuf::from("C:/Users/u"));
        let both = env_of(&[("XDG_CONFIG_HOME", "/x"), ("APPDATA", "C:/Users/u/AppData/Roaming")]);
        assert_eq!(
            config_dir_for(true, &both, home.clone(), None).unwrap(),
            PathBuf::from("C:/Users/u/AppData/Roaming").join("cst-agent")
        );
        // No %APPDATA%: the platform's Roaming folder, never XDG or ~/.config.
        let xdg_only = env_of(&[("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(
            config_dir_for(true, &xdg_only, home.clone(), Some(PathBuf::from("R:/roaming"))).unwrap(),
            PathBuf::from("R:/roaming").join("cst-agent")
        );
        let err = config_dir_for(true, &xdg_only, home, None).unwrap_err();
        assert!(err.to_string().contains("%APPDATA%"), "{err}");
    }
}
