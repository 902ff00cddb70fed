//! The workspace's repository identity, `owner/repo`, from the git remote `origin` (D11).
//!
//! Read by the host from the repository's own config file — never from model input: the
//! workspace folder or the nearest parent with a `.git` (a folder, or a worktree's or
//! submodule's `.git` file naming the git dir; a worktree's config is its main repository's).
//! The config file is read bounded. Anything unexpected — no repository, no `origin`, a remote
//! that is not `host/owner/repo` — is "unknown", and an unknown identity offers only unscoped
//! servers (fail closed).

use std::io::Read;
use std::path::{Path, PathBuf};

/// A git config or `.git` file larger than this is not read.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;
/// How many parents of the workspace are looked at for a `.git`.
const MAX_DEPTH: usize = 64;

/// The `owner/repo` of the workspace's `origin` remote, or `None` when unknown.
pub fn workspace_identity(workspace: &Path) -> Option<String> {
    let config = git_config_path(workspace)?;
    let text = read_bounded(&config)?;
    let url = origin_url(&text)?;
    parse_remote(&url)
}

/// The git config file of the repository holding `workspace`.
fn git_config_path(workspace: &Path) -> Option<PathBuf> {
    let mut dir = Some(workspace);
    for _ in 0..MAX_DEPTH {
        let d = dir?;
        let dot_git = d.join(".git");
        if let Ok(meta) = std::fs::metadata(&dot_git) {
            if meta.is_dir() {
                return Some(dot_git.join("config"));
            }
            if meta.is_file() {
                // `gitdir: <path>`, relative to the folder holding the `.git` file.
                let text = read_bounded(&dot_git)?;
                let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
                let gitdir = d.join(gitdir);
                // A worktree's git dir has `commondir`: the main repository's git dir.
                if let Some(common) = read_bounded(&gitdir.join("commondir")) {
                    return Some(gitdir.join(common.trim()).join("config"));
                }
                return Some(gitdir.join("config"));
            }
        }
        dir = d.parent();
    }
    None
}

fn read_bounded(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text).ok()?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return None;
    }
    Some(text)
}

/// The `url` of `[remote "origin"]` in a git config file's text (the first one).
pub fn origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let header: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            in_origin = header.eq_ignore_ascii_case("[remote\"origin\"]");
            continue;
        }
        if !in_origin || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("url") {
            let v = value.trim();
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            return Some(v.to_string());
        }
    }
    None
}

/// `owner/repo` of a remote URL: `https://host/owner/repo(.git)`, `ssh://[user@]host[:port]/owner/repo`,
/// `git://…`, or the scp form `user@host:owner/repo(.git)`. Anything else (a local path, more or
/// fewer than two path parts) is `None`.
pub fn parse_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let path = if let Some((scheme, rest)) = url.split_once("://") {
        if !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "https" | "http" | "ssh" | "git" | "git+ssh"
        ) {
            return None;
        }
        let (_, path) = rest.split_once('/')?;
        path
    } else {
        // scp-like: `[user@]host:path`, never a local path.
        let (host, path) = url.split_once(':')?;
        if host.is_empty() || host.contains('/') || path.starts_with('/') {
            return None;
        }
        path
    };
    let path = path.split(['?', '#']).next()?.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let mut parts = path.split('/');
    let (owner, repo) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let id = format!("{owner}/{repo}");
    cst_config::deployment::valid_owner_repo(&id).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d11_remote_forms() {
        let ok = [
            "https://github.com/owner/repo.git",
            "https://github.com/owner/repo",
            "https://github.com/owner/repo/",
            "http://git.example:8080/owner/repo.git",
            "git@github.com:owner/repo.git",
            "github.com:owner/repo",
            "ssh://git@github.com/owner/repo.git",
            "ssh://git@github.com:2222/owner/repo",
            "https://user@github.com/owner/repo.git",
        ];
        for u in ok {
            assert_eq!(parse_remote(u).as_deref(), Some("owner/repo"), "{u}");
        }
        let bad = [
            "/srv/git/repo.git",
            "file:///srv/owner/repo",
            "../owner/repo",
            "https://gitlab.com/group/sub/repo.git",
            "https://github.com/owner",
            "C:/owner/repo",
            "",
        ];
        for u in bad {
            assert_eq!(parse_remote(u), None, "{u}");
        }
    }

    #[test]
    fn d11_origin_section() {
        let cfg = "[core]\n\turl = nope\n[remote \"upstream\"]\n\turl = https://h/a/b\n[remote \"origin\"]\n\tfetch = +refs/heads/*\n\turl = git@h:o/r.git\n";
        assert_eq!(origin_url(cfg).as_deref(), Some("git@h:o/r.git"));
        assert_eq!(origin_url("[remote \"upstream\"]\nurl = x\n"), None);
    }

    #[test]
    fn d11_worktree_git_file() {
        let d = tempfile::tempdir().unwrap();
        let main = d.path().join("main");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::write(
            main.join(".git/config"),
            "[remote \"origin\"]\n\turl = https://h/own/rep.git\n",
        )
        .unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        let wt = d.path().join("wt");
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        assert_eq!(workspace_identity(&wt.join("sub")).as_deref(), Some("own/rep"));
        assert_eq!(workspace_identity(&main).as_deref(), Some("own/rep"));
        let none = tempfile::tempdir().unwrap();
        // The temp dir has no repository above it (unless /tmp is in one: then not `own/rep`).
        assert_ne!(workspace_identity(none.path()).as_deref(), Some("own/rep"));
    }
}
