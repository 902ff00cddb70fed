//! The environment of every child the host starts (command tools, `run_shell`, MCP servers):
//! the host's environment without its secrets, plus what the child's config declares.
//!
//! Dropped from the host's environment ([`cst_config::secrets::is_secret_var`]): the model key
//! variable (`api_key_env`, default `OPENAI_API_KEY`), `CST_MCP_*`, and every name ending `_KEY`,
//! `_TOKEN`, `_SECRET` or `_PASSWORD` (case-insensitive). For a sandboxed child also the
//! variables that lead to the user's running services ([`IPC_VARS`]: tmux, ssh-agent, D-Bus, X11,
//! Wayland, the runtime dir). Then the declared variables are laid over it (`env` in mcp.json,
//! P9's `CST_*`): a variable a config names explicitly (`"env": {"K": "${OPENAI_API_KEY}"}`)
//! is passed, because the user asked for it.
//!
//! Callers run the child with `env_clear()` and then [`child_env`]'s list.

use std::ffi::OsString;

/// Variables that reach the user's tmux server, ssh-agent, D-Bus session, X11 and Wayland
/// displays and runtime sockets; removed from sandboxed children (issue 13 item 2).
pub const IPC_VARS: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
];

/// Set for a child while the workspace is untrusted (T1): Python then puts neither the current
/// folder (`-m`, `-c`) nor the script's folder first on `sys.path`.
pub const PYTHON_SAFE_PATH: (&str, &str) = ("PYTHONSAFEPATH", "1");

/// Whether the host's variable `name` is kept for a child.
pub fn keeps(name: &str, sandboxed: bool) -> bool {
    if cst_config::secrets::is_secret_var(name) {
        return false;
    }
    !(sandboxed && IPC_VARS.iter().any(|v| v.eq_ignore_ascii_case(name)))
}

/// The host's environment without its secrets (and without [`IPC_VARS`] when `sandboxed`), then
/// `declared` laid over it.
pub fn child_env<'a>(
    sandboxed: bool,
    declared: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| keeps(k, sandboxed)))
        .collect();
    for (k, v) in declared {
        env.retain(|(name, _)| !same_name(name, k));
        env.push((OsString::from(k), OsString::from(v)));
    }
    env
}

/// Variable names compare case-insensitively on Windows.
fn same_name(a: &OsString, b: &str) -> bool {
    if cfg!(windows) {
        a.to_str().is_some_and(|a| a.eq_ignore_ascii_case(b))
    } else {
        a == b
    }
}

/// `dir` first on `PYTHONPATH` (the host's value kept after it): a contained plugin's own Python
/// modules still import while [`PYTHON_SAFE_PATH`] keeps the script's folder off `sys.path`.
pub fn python_path_with(dir: &std::path::Path) -> String {
    let mut parts = vec![dir.to_path_buf()];
    if let Some(old) = std::env::var_os("PYTHONPATH") {
        parts.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(parts)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| dir.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_secrets_and_ipc_keeps_the_rest() {
        assert!(!keeps("OPENAI_API_KEY", false));
        assert!(!keeps("foo_token", false));
        assert!(keeps("PATH", true));
        assert!(keeps("TMUX", false));
        assert!(!keeps("TMUX", true));
        assert!(!keeps("SSH_AUTH_SOCK", true));
        let env = child_env(true, [("A_DECLARED", "1"), ("PATH", "/declared")]);
        assert!(env.iter().any(|(k, v)| k == "A_DECLARED" && v == "1"));
        assert_eq!(env.iter().filter(|(k, _)| k == "PATH").count(), 1);
        assert!(env.iter().any(|(k, v)| k == "PATH" && v == "/declared"));
    }
}
