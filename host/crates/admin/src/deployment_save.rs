//! Saving the deployment config from the editor: the sent-back masks resolved against the stored
//! file, the whole result validated by `cst_config::deployment::parse`, and only then the file
//! replaced atomically. Nothing here contacts a server or runs a command: saving is text in, text
//! out.

use std::io::Read;
use std::path::{Path, PathBuf};

use cst_config::deployment::{self, DeploymentConfig, MASK};
use serde_json::Value;

/// Why a save was refused.
#[derive(Debug)]
pub enum SaveError {
    /// The submission is refused (HTTP 400): one line per problem, each starting with the JSON
    /// path of its field. Nothing was written.
    Invalid(Vec<String>),
    /// The file could not be written (HTTP 500). The old file is left as it was.
    Io(String),
}

/// The deployment file being edited.
#[derive(Debug, Clone)]
pub struct DeploymentFile {
    pub path: PathBuf,
}

/// What the page shows of the stored file.
pub enum Stored {
    /// No file: the defaults.
    Missing,
    Valid(DeploymentConfig),
    /// A file that is refused: its problems, and (when it is JSON) its value with every header
    /// value masked, so the admin can fix it in the editor.
    Invalid {
        problems: Vec<String>,
        masked: Option<Value>,
    },
}

impl DeploymentFile {
    fn is_system(&self) -> bool {
        self.path == deployment::system_path()
    }

    /// The stored file, as the loader sees it.
    pub fn read(&self) -> Stored {
        match deployment::load_file(&self.path, self.is_system()) {
            Ok(None) => Stored::Missing,
            Ok(Some(c)) => Stored::Valid(c),
            Err(e) => {
                let masked = read_bounded(&self.path)
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .map(|mut v| {
                        mask_value(&mut v);
                        v
                    });
                Stored::Invalid {
                    problems: e.problems,
                    masked,
                }
            }
        }
    }

    /// Resolve the masks of `text`, validate the whole result and replace the file. Returns the
    /// saved config.
    pub fn save(&self, text: &str) -> Result<DeploymentConfig, SaveError> {
        let mut submitted: Value = serde_json::from_str(text).map_err(|e| {
            SaveError::Invalid(vec![format!(
                "(top level): not valid JSON: line {} column {}: {e}",
                e.line(),
                e.column()
            )])
        })?;
        let stored = match self.read() {
            Stored::Valid(c) => Some(c),
            _ => None,
        };
        let mut problems = resolve_masks(&mut submitted, stored.as_ref());
        let resolved = serde_json::to_string_pretty(&submitted).map_err(|e| SaveError::Io(e.to_string()))? + "\n";
        let config = match deployment::parse(&resolved) {
            Ok(c) => Some(c),
            Err(errors) => {
                // A value still `[UNCHANGED SECRET]` was reported above; its validation error
                // would only repeat it.
                let more: Vec<String> = errors
                    .iter()
                    .map(ToString::to_string)
                    .filter(|e| !problems.iter().any(|p| first_field(p) == first_field(e)))
                    .collect();
                problems.extend(more);
                None
            }
        };
        match config {
            Some(c) if problems.is_empty() => {
                // Written as validated: the format's field order, every default spelled out.
                let text = serde_json::to_string_pretty(&c).map_err(|e| SaveError::Io(e.to_string()))? + "\n";
                write_atomic(&self.path, text.as_bytes()).map_err(SaveError::Io)?;
                Ok(c)
            }
            _ => Err(SaveError::Invalid(problems)),
        }
    }
}

fn first_field(line: &str) -> &str {
    line.split(": ").next().unwrap_or(line)
}

fn read_bounded(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(deployment::MAX_FILE_BYTES)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// Every value of every server's `headers` and `credential_headers` replaced by the mask, in a
/// value that may not be a valid config (D9).
pub fn mask_value(v: &mut Value) {
    let Some(servers) = v.pointer_mut("/mcp/servers").and_then(Value::as_array_mut) else {
        return;
    };
    for s in servers {
        for map in ["headers", "credential_headers"] {
            if let Some(m) = s.get_mut(map).and_then(Value::as_object_mut) {
                for value in m.values_mut() {
                    *value = Value::String(MASK.to_string());
                }
            }
        }
    }
}

/// `path.key`, or `path["key"]` when the key is not a plain name (as the validator spells them).
fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

/// D9: replace each `[UNCHANGED SECRET]` header value with the stored one — only when the stored
/// file has a server with the same id, the same URL and a value for that header name in the same
/// map. Every other mask is a problem naming its field (a changed URL needs the credential
/// again: the stored secret must not follow a server to a new endpoint).
fn resolve_masks(submitted: &mut Value, stored: Option<&DeploymentConfig>) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(servers) = submitted.pointer_mut("/mcp/servers").and_then(Value::as_array_mut) else {
        return problems;
    };
    for (i, s) in servers.iter_mut().enumerate() {
        let id = s.get("id").and_then(Value::as_str).map(str::to_string);
        let url = s.get("url").and_then(Value::as_str).map(str::to_string);
        let old = stored.zip(id.as_deref()).and_then(|(c, id)| c.server(id));
        for map in ["headers", "credential_headers"] {
            let Some(m) = s.get_mut(map).and_then(Value::as_object_mut) else {
                continue;
            };
            for (name, value) in m.iter_mut() {
                if value.as_str() != Some(MASK) {
                    continue;
                }
                let path = child(&format!("mcp.servers[{i}].{map}"), name);
                let kept = match old {
                    None => Err("`[UNCHANGED SECRET]` keeps a stored value, but no stored server has this id: enter the value"),
                    Some(o) if Some(&o.url) != url.as_ref() => Err("the server's URL changed: enter this header's value again (`[UNCHANGED SECRET]` keeps a stored value only for the same server id, URL and header name)"),
                    Some(o) => {
                        let stored_map = if map == "headers" { &o.headers } else { &o.credential_headers };
                        stored_map.get(name).ok_or("`[UNCHANGED SECRET]` keeps a stored value, but this server has none for this header name: enter the value")
                    }
                };
                match kept {
                    Ok(v) => *value = Value::String(v.clone()),
                    Err(why) => problems.push(format!("{path}: {why}")),
                }
            }
        }
    }
    problems
}

/// Replace `path` with `bytes` atomically: a new file in the same folder (the old file's mode,
/// or 0644 — readable by the agents of every user, writable by its owner), flushed, renamed over
/// the old one, the folder synced. A crash leaves the old file or the new one, never half of one.
/// A symlink is followed: the file it leads to is replaced (the one the loader checks and reads),
/// and the link stays.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let resolved = std::fs::canonicalize(path).ok();
    let path = resolved.as_deref().unwrap_or(path);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    #[cfg(unix)]
    let mode = Some({
        use std::os::unix::fs::PermissionsExt;
        // Never world-writable: the loader would refuse the file.
        std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o7775)
            .unwrap_or(0o644)
    });
    #[cfg(not(unix))]
    let mode = None;
    if !dir.exists() {
        // The first save on a machine: `/etc/cst-agent/`, readable by every user's agent.
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o755);
        b.create(dir)
            .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    }
    cst_config::fs::replace_atomically(path, bytes, mode).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored() -> DeploymentConfig {
        deployment::parse(
            &json!({"version": 1, "mcp": {"servers": [{
                "id": "docs", "url": "https://h/mcp",
                "headers": {"X-Team": "s3cret"},
                "credential_headers": {"Authorization": "CST_MCP_DOCS"}
            }]}})
            .to_string(),
        )
        .unwrap()
    }

    #[test]
    fn d9_masks_resolve_only_for_same_id_url_and_name() {
        let mut v = stored().masked();
        assert!(resolve_masks(&mut v, Some(&stored())).is_empty());
        assert_eq!(v["mcp"]["servers"][0]["headers"]["X-Team"], "s3cret");
        assert_eq!(
            v["mcp"]["servers"][0]["credential_headers"]["Authorization"],
            "CST_MCP_DOCS"
        );

        let mut moved = stored().masked();
        moved["mcp"]["servers"][0]["url"] = json!("https://elsewhere/mcp");
        let p = resolve_masks(&mut moved, Some(&stored()));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with("mcp.servers[0].headers.X-Team: the server's URL changed"),
            "{p:?}"
        );
        assert!(!moved.to_string().contains("s3cret"));

        let mut renamed = stored().masked();
        renamed["mcp"]["servers"][0]["id"] = json!("other");
        assert!(resolve_masks(&mut renamed, Some(&stored()))[0].contains("no stored server"));

        let mut other_name = stored().masked();
        other_name["mcp"]["servers"][0]["headers"] = json!({"X-Other": MASK});
        assert!(resolve_masks(&mut other_name, Some(&stored()))[0].contains("none for this header name"));

        let mut crossed = stored().masked();
        crossed["mcp"]["servers"][0]["headers"] = json!({"Authorization": MASK});
        crossed["mcp"]["servers"][0]["credential_headers"] = json!({"X-Team": MASK});
        assert_eq!(resolve_masks(&mut crossed, Some(&stored())).len(), 2);
        assert_eq!(resolve_masks(&mut stored().masked(), None).len(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_the_mode_and_follows_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("deployment.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
        // A new file is 0644 (its folder made when missing); a world-writable one loses o+w.
        let fresh = dir.path().join("etc").join("fresh.json");
        write_atomic(&fresh, b"x").unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o644);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_atomic(&fresh, b"y").unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o664);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no temp file left");
        assert_eq!(
            std::fs::read_dir(dir.path().join("etc")).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn mask_value_masks_an_invalid_file_too() {
        let mut v = json!({"version": 9, "mcp": {"servers": [{"headers": {"A": "x", "B": 3}}, 7]}});
        mask_value(&mut v);
        assert_eq!(v["mcp"]["servers"][0]["headers"], json!({"A": MASK, "B": MASK}));
    }
}
