//! Shared helpers of the `ext_*` tests: isolated config dirs, plugin folders, the CLI binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

/// Library tests that read the config dir set `XDG_CONFIG_HOME`, which is process-wide: they
/// hold this lock while they run.
pub fn env_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh config home + workspace; `XDG_CONFIG_HOME` points at the config home while the
/// guard lives (library tests) and [`Env::cli`] passes it to the binary.
pub struct Env {
    pub root: tempfile::TempDir,
    pub config_home: PathBuf,
    pub ws: PathBuf,
    _lock: Option<MutexGuard<'static, ()>>,
}

impl Env {
    /// For CLI tests (no process-wide state touched).
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let config_home = root.path().join("config");
        let ws = root.path().join("ws");
        std::fs::create_dir_all(config_home.join("cst-agent")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let ws = std::fs::canonicalize(ws).unwrap();
        Self {
            root,
            config_home,
            ws,
            _lock: None,
        }
    }

    /// For library tests: also sets `XDG_CONFIG_HOME` under the env lock.
    pub fn in_process() -> Self {
        let lock = env_lock();
        let mut e = Self::new();
        // SAFETY (edition 2021: safe call): other threads of this binary that read the env hold
        // the same lock.
        std::env::set_var("XDG_CONFIG_HOME", &e.config_home);
        e._lock = Some(lock);
        e
    }

    /// `<config>/cst-agent`.
    pub fn config(&self) -> PathBuf {
        self.config_home.join("cst-agent")
    }

    pub fn cli(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::cargo_bin("cst-agent").unwrap();
        c.env("XDG_CONFIG_HOME", &self.config_home)
            .env_remove("CST_LOG")
            .arg("--workspace")
            .arg(&self.ws);
        c
    }

    pub fn opts(&self) -> cst_agent::discovery::LoadOptions {
        cst_agent::discovery::LoadOptions {
            workspace: self.ws.clone(),
            profile: cst_agent::discovery::ToolsProfile::Default,
        }
    }
}

/// Write `<parent>/<folder>/plugin.json` (+ extra files) and return the plugin folder.
pub fn plugin(parent: &Path, folder: &str, manifest: Value, files: &[(&str, &str)]) -> PathBuf {
    let dir = parent.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        #[cfg(unix)]
        if name.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir
}

/// Write `<root>/<folder>/SKILL.md`.
pub fn skill(root: &Path, folder: &str, text: &str) -> PathBuf {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
    dir
}

/// A load's warnings as the text people read, one a line (for `contains` checks).
pub fn warnings_text(l: &cst_agent::discovery::Loaded) -> String {
    l.warnings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
