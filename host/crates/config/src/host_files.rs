//! The host's own files, which the model's tools must never change without a person (issue 13
//! item 5): what a workspace carries for the host (`.agent/` — plugins, `mcp.json`, roles,
//! skills, settings — and `.claude/skills`, `.claude/agents`, which we read too), the config dir
//! and the compile cache. A write there would become code or instructions the host runs or reads
//! at the next start.
//!
//! [`host_file`] says whether a path argument of a file tool lands there; the approval gate asks
//! for every such write, in every mode.

use std::path::{Component, Path, PathBuf};

/// What a workspace path is, when it is one of the host's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFile {
    /// The resolved path.
    pub path: PathBuf,
    /// Which of the host's files it is, for messages: e.g. "the workspace's host config `.agent/`".
    pub what: String,
}

/// Folders of a workspace the host reads as configuration, relative to its root. Compared
/// ASCII-case-insensitively (case-insensitive file systems reach `.AGENT/` the same).
const WORKSPACE_HOST_DIRS: &[&[&str]] = &[&[".agent"], &[".claude", "skills"], &[".claude", "agents"]];

/// Whether `arg` (a file tool's `path`, relative to `workspace` or absolute) names one of the
/// host's files: inside the workspace's host config, the config dir or the cache dir (`others`,
/// e.g. `[config_dir, cache_dir]`). Symlinks of the part that exists are resolved, and `..` is
/// applied lexically, so neither hides the target.
pub fn host_file(workspace: &Path, others: &[PathBuf], arg: &str) -> Option<HostFile> {
    let joined = workspace.join(arg);
    let lexical = normalize(&joined);
    let resolved = resolve_existing(&lexical);
    let ws_forms = [workspace.to_path_buf(), canonical_or_self(workspace)];
    for p in [&lexical, &resolved] {
        for ws in &ws_forms {
            if let Ok(rel) = p.strip_prefix(ws) {
                let names: Vec<String> = rel
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect();
                for dir in WORKSPACE_HOST_DIRS {
                    if names.len() >= dir.len() && dir.iter().zip(&names).all(|(d, n)| d.eq_ignore_ascii_case(n)) {
                        return Some(HostFile {
                            path: resolved.clone(),
                            what: format!("the workspace's host config `{}/`", dir.join("/")),
                        });
                    }
                }
            }
        }
        for other in others {
            for o in [other.clone(), canonical_or_self(other)] {
                if p.starts_with(&o) {
                    return Some(HostFile {
                        path: resolved.clone(),
                        what: format!("the host's own folder `{}`", other.display()),
                    });
                }
            }
        }
    }
    None
}

fn canonical_or_self(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `..` and `.` applied lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The longest existing prefix of `p` canonicalized (symlinks resolved), the rest appended.
fn resolve_existing(p: &Path) -> PathBuf {
    let mut existing = p;
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for n in rest.iter().rev() {
                out.push(n);
            }
            return normalize(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_config_paths() {
        let ws = tempfile::tempdir().unwrap();
        let cfg = tempfile::tempdir().unwrap();
        let w = ws.path();
        let others = [cfg.path().to_path_buf()];
        for hit in [
            ".agent/mcp.json",
            ".agent/plugins/x/plugin.json",
            "./.agent/agents/r.md",
            "src/../.agent/skills/s/SKILL.md",
            ".AGENT/mcp.json",
            ".claude/skills/a/SKILL.md",
            ".claude/agents/r.md",
            ".agent",
        ] {
            assert!(host_file(w, &others, hit).is_some(), "{hit}");
        }
        let abs = cfg.path().join("plugins/x/plugin.json");
        assert!(host_file(w, &others, abs.to_str().unwrap()).is_some());
        for miss in [
            "src/main.rs",
            ".agentx/a",
            ".claude/settings-notes.md",
            "agent/mcp.json",
        ] {
            assert!(host_file(w, &others, miss).is_none(), "{miss}");
        }
        // A symlink inside the workspace pointing at `.agent` is the same place.
        #[cfg(unix)]
        {
            std::fs::create_dir_all(w.join(".agent")).unwrap();
            std::os::unix::fs::symlink(w.join(".agent"), w.join("link")).unwrap();
            assert!(host_file(w, &others, "link/mcp.json").is_some());
        }
    }
}
