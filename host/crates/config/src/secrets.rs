//! The secrets the host knows, for the whole process: the values to redact from every output
//! (the model's API key, the `${NAME}` values expanded into MCP servers' `env` and `args`) and
//! which environment variables never reach a child process.
//!
//! Process-wide on purpose: a secret learnt anywhere (the model config, an mcp.json parsed on a
//! reload) must be redacted everywhere (the JSONL stream, transcripts, stderr, error messages),
//! whichever front end or command prints it. Remembering more than one session needs only
//! redacts more.

use std::collections::BTreeSet;
use std::sync::RwLock;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are not redacted: they would mangle ordinary text.
pub const MIN_SECRET_LEN: usize = 6;

/// The model key variable when `settings.json` names none.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// `${NAME}` variables whose values are paths or names, not secrets: expanding them into an MCP
/// server's args (`${HOME}/notes`) does not make every path in every output `[REDACTED]`.
const NOT_SECRET_VARS: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "USERNAME",
    "PATH",
    "PWD",
    "SHELL",
    "LANG",
    "TMPDIR",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "SystemRoot",
];

static VALUES: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());
static VAR_NAMES: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());

/// Remember `value` as a secret (ignored when shorter than [`MIN_SECRET_LEN`]).
pub fn remember(value: &str) {
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut set = VALUES.write().unwrap_or_else(|e| e.into_inner());
    if !set.contains(value) {
        set.insert(value.to_string());
    }
}

/// Remember the value of `${name}` expanded into an MCP server's env or args (M3): a secret
/// unless `name` is one of the well-known path and name variables (`HOME`, `USER`, `PATH`...).
pub fn remember_expanded(name: &str, value: &str) {
    if !NOT_SECRET_VARS.iter().any(|n| n.eq_ignore_ascii_case(name)) && !name.starts_with("XDG_") {
        remember(value);
    }
}

/// Remember that variable `name` holds a secret (the model key's `api_key_env`): it never reaches
/// a child process unless a config names it explicitly.
pub fn remember_var(name: &str) {
    if name.is_empty() {
        return;
    }
    VAR_NAMES
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string());
}

/// The secret values known so far, longest first (so a secret containing another is replaced
/// whole).
pub fn values() -> Vec<String> {
    let mut v: Vec<String> = VALUES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect();
    v.sort_by_key(|s| std::cmp::Reverse(s.len()));
    v
}

/// `text` with every known secret value replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    redact_with(text, &values())
}

/// `text` with each of `values` (longest first) replaced by [`REDACTED`].
pub fn redact_with(text: &str, values: &[String]) -> String {
    let mut out = text.to_string();
    for v in values {
        if v.len() >= MIN_SECRET_LEN && out.contains(v.as_str()) {
            out = out.replace(v.as_str(), REDACTED);
        }
    }
    out
}

/// Whether an environment variable must not reach a child: the model key variable (the default
/// one and any remembered), `CST_MCP_*`, and names ending `_KEY`, `_TOKEN`, `_SECRET`,
/// `_PASSWORD` (case-insensitive, so `*_API_KEY` too).
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper == DEFAULT_API_KEY_ENV || upper.starts_with("CST_MCP_") {
        return true;
    }
    if ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"]
        .iter()
        .any(|s| upper.ends_with(s))
    {
        return true;
    }
    VAR_NAMES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_var_names() {
        for n in [
            "OPENAI_API_KEY",
            "openai_api_key",
            "FOO_TOKEN",
            "Db_Password",
            "AWS_SECRET",
            "CST_MCP_X",
            "GH_KEY",
        ] {
            assert!(is_secret_var(n), "{n}");
        }
        for n in ["PATH", "HOME", "KEYBOARD", "TOKENIZER", "LANG", "CST_WORKSPACE"] {
            assert!(!is_secret_var(n), "{n}");
        }
        remember_var("MY_MODEL_CRED");
        assert!(is_secret_var("MY_MODEL_CRED"));
    }

    #[test]
    fn redacts_longest_first_and_ignores_short_values() {
        remember("abc");
        remember("sk-unit-secret");
        remember("sk-unit-secret-longer");
        remember_expanded("HOME", "/home/someone-unit");
        remember_expanded("SOME_VALUE", "value-unit-1");
        let r = redact("abc sk-unit-secret-longer sk-unit-secret /home/someone-unit value-unit-1");
        assert_eq!(r, "abc [REDACTED] [REDACTED] /home/someone-unit [REDACTED]");
    }
}
