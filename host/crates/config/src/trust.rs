//! Workspace trust (T1–T3): a workspace's `.agent/plugins` and `.agent/mcp.json` run commands, so
//! they load only when the workspace is in `settings.json` `trusted_workspaces`. Reaching the same
//! folder through a symlink is the same workspace.
//!
//! Trust is pinned to content (issue 13 item 5): an entry is `{"path": REAL_PATH, "sha256": H}`,
//! H the [`config_hash`] of the workspace's executable host config (`.agent/plugins/**`,
//! `.agent/mcp.json`) when it was trusted. Any change there since — by the model, a script, a
//! `git pull` — makes the workspace [`TrustState::Changed`]: nothing of it loads until the user
//! trusts it again. A plain string entry (written before pinning) is a path without content and
//! counts as changed, with a message saying so.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

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

/// Whether a workspace's host config may load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    Trusted,
    Untrusted,
    /// Trusted once, but its host config is not what was trusted; `why` says what (for a
    /// message: "… since it was trusted; run `plugins trust` again").
    Changed {
        why: String,
    },
}

/// Most entries [`config_hash`] walks; a bigger `.agent/plugins` cannot be pinned (and so not
/// trusted).
const MAX_ENTRIES: usize = 20_000;

/// The sha256 (hex) of the workspace's executable host config: every entry under
/// `.agent/plugins` (names, kinds, file contents, symlink targets — never followed) and
/// `.agent/mcp.json`, in name order. An error when it cannot be read completely.
pub fn config_hash(ws: &Path) -> std::io::Result<String> {
    let agent = ws.join(".agent");
    let mut h = Sha256::new();
    let mut count = 0usize;
    for (rel, p) in [("mcp.json", agent.join("mcp.json")), ("plugins", agent.join("plugins"))] {
        hash_entry(&mut h, rel, &p, &mut count)?;
    }
    Ok(hex::encode(h.finalize()))
}

fn hash_entry(h: &mut Sha256, rel: &str, p: &Path, count: &mut usize) -> std::io::Result<()> {
    *count += 1;
    if *count > MAX_ENTRIES {
        return Err(std::io::Error::other(format!(
            "more than {MAX_ENTRIES} files under .agent/plugins"
        )));
    }
    let meta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            h.update(format!("none {rel}\0"));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = std::fs::read_link(p)?;
        h.update(format!("link {rel}\0{}\0", target.to_string_lossy()));
    } else if ft.is_dir() {
        h.update(format!("dir {rel}\0"));
        let mut names: Vec<String> = std::fs::read_dir(p)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        names.sort();
        for n in names {
            hash_entry(h, &format!("{rel}/{n}"), &p.join(&n), count)?;
        }
    } else if ft.is_file() {
        h.update(format!("file {rel} {}\0", meta.len()));
        let mut f = std::fs::File::open(p)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        h.update(b"\0");
    } else {
        // FIFOs, sockets, devices: their kind only, never opened.
        h.update(format!("special {rel}\0"));
    }
    Ok(())
}

/// The trust of `ws` according to `settings`. A workspace that does not exist is not trusted.
pub fn state_in(settings: &Settings, ws: &Path) -> TrustState {
    let Ok(k) = key(ws) else {
        return TrustState::Untrusted;
    };
    let mut legacy = false;
    let mut pinned = None;
    for e in settings.trusted_entries() {
        match e {
            Value::String(p) if p == k => legacy = true,
            Value::Object(o) if o.get("path").and_then(Value::as_str) == Some(k.as_str()) => {
                pinned = o.get("sha256").and_then(Value::as_str).map(str::to_string);
            }
            _ => {}
        }
    }
    match (pinned, legacy) {
        (Some(want), _) => match config_hash(ws) {
            Ok(have) if have == want => TrustState::Trusted,
            Ok(_) => TrustState::Changed {
                why: "its .agent/plugins or .agent/mcp.json changed since it was trusted".into(),
            },
            Err(e) => TrustState::Changed {
                why: format!("its .agent/plugins or .agent/mcp.json cannot be read completely ({e})"),
            },
        },
        (None, true) => TrustState::Changed {
            why: "it was trusted by path only, before trust was pinned to the content of \
                  .agent/plugins and .agent/mcp.json"
                .into(),
        },
        (None, false) => TrustState::Untrusted,
    }
}

/// The trust of `ws`. A broken settings file counts as "not trusted" (fail closed) and is
/// returned as the error so the caller can report it.
pub fn state(ws: &Path) -> Result<TrustState, SettingsError> {
    let settings = Settings::load()?;
    Ok(state_in(&settings, ws))
}

/// Whether `ws` is trusted, and its host config is what was trusted.
pub fn is_trusted_in(settings: &Settings, ws: &Path) -> bool {
    state_in(settings, ws) == TrustState::Trusted
}

/// Whether `ws` is trusted (see [`state`]).
pub fn is_trusted(ws: &Path) -> Result<bool, SettingsError> {
    Ok(state(ws)? == TrustState::Trusted)
}

fn is_entry_for(v: &Value, k: &str) -> bool {
    match v {
        Value::String(p) => p == k,
        Value::Object(o) => o.get("path").and_then(Value::as_str) == Some(k),
        _ => false,
    }
}

/// Add `ws` to `trusted_workspaces`, pinned to the current [`config_hash`] of its host config
/// (replacing an older entry of the same path); returns the stored real path.
pub fn trust(ws: &Path) -> Result<PathBuf, SettingsError> {
    let k = key(ws)?;
    let hash = config_hash(ws).map_err(|e| SettingsError {
        path: ws.to_path_buf(),
        line: None,
        message: format!(
            "{}: cannot read .agent/plugins and .agent/mcp.json to pin the trust to them: {e}",
            ws.display()
        ),
    })?;
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
            a.retain(|v| !is_entry_for(v, &k));
            a.push(json!({"path": k, "sha256": hash}));
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
            a.retain(|v| !is_entry_for(v, &k));
            removed = a.len() != before;
        }
    })?;
    Ok(removed)
}
