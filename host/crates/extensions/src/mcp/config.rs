//! mcp.json and plugin `mcpServers` parsing (M1–M6, E5, E7).
//!
//! Every server entry becomes a [`ParsedServer`]: startable, disabled (M5) or invalid with a
//! reason (a `url` server under M2, a missing `${NAME}` under M3, a malformed entry). Invalid
//! servers are still listed so `mcp list` can show why they failed.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use cst_config::{McpSource, Origin};
use cst_protocol::{Diagnostic, DiagnosticKind};

/// Default time for the handshake plus the whole `tools/list` (M7).
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time for one `tools/call` (M10).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Which tools of a server count as read-only (M6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AutoApprove {
    #[default]
    None,
    All,
    Tools(BTreeSet<String>),
}

impl AutoApprove {
    /// `tool` is the server's own tool name; the registered `mcp__…` name is also accepted.
    pub fn covers(&self, tool: &str, registered: &str) -> bool {
        match self {
            AutoApprove::None => false,
            AutoApprove::All => true,
            AutoApprove::Tools(set) => set.contains(tool) || set.contains(registered),
        }
    }
}

/// How to reach a server: a stdio process (mcp.json, plugins) or HTTP (the deployment config,
/// [`super::http`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportConfig {
    Stdio(StdioConfig),
    Http(super::http::HttpConfig),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioConfig {
    /// As written (looked up on `PATH` when it has no path separator, M2).
    pub command: String,
    /// After `${NAME}` expansion.
    pub args: Vec<String>,
    /// Added to the host's environment, after `${NAME}` expansion (M3).
    pub env: Vec<(String, String)>,
    /// Absolute working directory (M4).
    pub cwd: PathBuf,
}

/// A server that can be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub transport: TransportConfig,
    pub auto_approve: AutoApprove,
    pub start_timeout: Duration,
    pub call_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerKind {
    Start(ServerConfig),
    /// `disabled: true` (M5).
    Disabled,
    /// Cannot be started; the reason names the file.
    Invalid(String),
}

/// One entry of an `mcpServers` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedServer {
    pub name: String,
    pub file: PathBuf,
    pub origin: Origin,
    pub kind: ServerKind,
}

/// Read an mcp.json file into an [`McpSource`] (E5, M1). `Ok(None)` when the file does not
/// exist. Relative `cwd` values and servers without `cwd` use the workspace (M4).
pub fn read_mcp_json(path: &Path, origin: Origin, workspace: &Path) -> Result<Option<McpSource>, Diagnostic> {
    let broken = |message: String| Diagnostic::in_file(DiagnosticKind::BrokenFile, path, message);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(broken(format!("cannot read: {e}"))),
    };
    let value = parse_json_or_jsonc(&text).map_err(|e| broken(format!("not valid JSON: {e}")))?;
    let servers = servers_of(&value).map_err(broken)?;
    Ok(Some(McpSource {
        file: path.to_path_buf(),
        servers,
        cwd_base: workspace.to_path_buf(),
        default_cwd: workspace.to_path_buf(),
        workspace: workspace.to_path_buf(),
        contained: false,
        origin,
    }))
}

/// JSON, or else JSON with comments and trailing commas (VS Code's `mcp.json` is JSONC). The
/// error is JSON's, which names the line and column.
pub fn parse_json_or_jsonc(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match jsonc_parser::parse_to_serde_value(text, &Default::default()) {
            Ok(Some(v)) => Ok(v),
            _ => Err(e),
        },
    }
}

/// The servers of an mcp.json, in any of the shapes people have (issue 14 item 6): `mcpServers`
/// (Claude Desktop, Cursor, Claude Code), `servers` (VS Code), or a bare `{name: {...}}` map (a
/// Claude Code plugin's `.mcp.json`). A file with none of these is an error, not zero servers.
pub fn servers_of(value: &Value) -> Result<Value, String> {
    let Value::Object(top) = value else {
        return Err("must be a JSON object with `mcpServers`".into());
    };
    for key in ["mcpServers", "servers"] {
        match top.get(key) {
            Some(s @ Value::Object(_)) => return Ok(s.clone()),
            Some(_) => return Err(format!("`{key}` must be an object")),
            None => {}
        }
    }
    let looks_like_a_server = |v: &Value| {
        v.as_object()
            .is_some_and(|o| ["command", "url", "httpUrl", "type"].iter().any(|k| o.contains_key(*k)))
    };
    if !top.is_empty() && top.values().all(looks_like_a_server) {
        return Ok(value.clone());
    }
    Err("has no `mcpServers` (or VS Code's `servers`) object, so no server is loaded from it".into())
}

/// Parse sources in precedence order. On a server-name clash the first wins (E7) and a warning
/// names both files. `env` looks up `${NAME}` (the current environment in production).
pub fn parse_sources(
    sources: &[McpSource],
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<ParsedServer> {
    let mut out: Vec<ParsedServer> = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for source in sources {
        let Value::Object(servers) = &source.servers else {
            warnings.push(Diagnostic::in_file(
                DiagnosticKind::BrokenFile,
                &source.file,
                "`mcpServers` must be an object",
            ));
            continue;
        };
        for (name, entry) in servers {
            if let Some(first) = seen.get(name) {
                warnings.push(Diagnostic::in_file(
                    DiagnosticKind::NameClash,
                    &source.file,
                    format!(
                        "MCP server `{name}` clashes with the one in {}; the first one is kept",
                        first.display()
                    ),
                ));
                continue;
            }
            seen.insert(name.clone(), source.file.clone());
            let kind = match parse_entry(name, entry, source, env) {
                Ok(kind) => kind,
                Err(reason) => ServerKind::Invalid(format!("{}: server `{name}`: {reason}", source.file.display())),
            };
            out.push(ParsedServer {
                name: name.clone(),
                file: source.file.clone(),
                origin: source.origin.clone(),
                kind,
            });
        }
    }
    out
}

/// One server entry. The checks follow M1 (shape), M2 (`command`, `args`, no `url`), M3 (`env`,
/// `${NAME}`), M4 (`cwd`), M5 (`disabled`) and M6 (`autoApprove`).
fn parse_entry(
    name: &str,
    entry: &Value,
    source: &McpSource,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerKind, String> {
    let Value::Object(obj) = entry else {
        return Err("must be an object".into());
    };
    if obj.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(ServerKind::Disabled);
    }
    if let Some(d) = obj.get("disabled") {
        if !d.is_boolean() {
            return Err("`disabled` must be true or false".into());
        }
    }
    let remote_type = matches!(
        obj.get("type").and_then(Value::as_str),
        Some("http" | "sse" | "streamable-http" | "streamableHttp")
    );
    // Gemini CLI names a streamable HTTP server's address `httpUrl`.
    if obj.contains_key("url") || obj.contains_key("httpUrl") || remote_type {
        return Err("mcp.json supports stdio servers only; `url` (remote) servers are not started".into());
    }
    // `${workspaceFolder}` and `${userHome}` as VS Code expands them.
    let workspace = source.workspace.to_string_lossy().into_owned();
    let lookup = |name: &str| match name {
        "workspaceFolder" => Some(workspace.clone()),
        "userHome" => std::env::var("HOME").ok().or_else(|| std::env::var("USERPROFILE").ok()),
        _ => env(name),
    };
    let env: &dyn Fn(&str) -> Option<String> = &lookup;
    if name.is_empty() {
        return Err("the server name is empty".into());
    }
    let command = match obj.get("command") {
        // A plugin's own program (`./server.sh`) is the plugin folder's, whatever the `cwd`, as
        // P4 does for command tools: a relative `cwd` points into the workspace (M4), and a
        // workspace file must not stand in for a plugin's program.
        Some(Value::String(c)) if matches!(source.origin, Origin::Plugin(_)) && is_relative_path(c) => {
            source.default_cwd.join(c).to_string_lossy().into_owned()
        }
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(_) => return Err("`command` must be a non-empty string".into()),
        None => return Err("`command` is missing".into()),
    };
    let mut args = Vec::new();
    match obj.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, a) in items.iter().enumerate() {
                let Some(s) = a.as_str() else {
                    return Err(format!("`args[{i}]` must be a string"));
                };
                args.push(expand_vars(s, env).map_err(|var| missing_var(&var, &format!("args[{i}]")))?);
            }
        }
        Some(_) => return Err("`args` must be an array of strings".into()),
    }
    let mut env_pairs = Vec::new();
    match obj.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let Some(s) = v.as_str() else {
                    return Err(format!("`env.{k}` must be a string"));
                };
                let value = expand_vars(s, env).map_err(|var| missing_var(&var, &format!("env.{k}")))?;
                env_pairs.push((k.clone(), value));
            }
        }
        Some(_) => return Err("`env` must be an object of strings".into()),
    }
    if source.contained {
        // T1: the workspace is untrusted; Python must not take modules from the current folder or
        // the script's, and a plugin's own modules still import (its folder on PYTHONPATH).
        env_pairs.retain(|(k, _)| k != crate::child_env::PYTHON_SAFE_PATH.0);
        let (k, v) = crate::child_env::PYTHON_SAFE_PATH;
        env_pairs.push((k.to_string(), v.to_string()));
        if matches!(source.origin, Origin::Plugin(_)) && !env_pairs.iter().any(|(k, _)| k == "PYTHONPATH") {
            env_pairs.push((
                "PYTHONPATH".into(),
                crate::child_env::python_path_with(&source.default_cwd),
            ));
        }
    }
    let cwd = match obj.get("cwd") {
        None | Some(Value::Null) => source.default_cwd.clone(),
        Some(Value::String(c)) => {
            let p = PathBuf::from(c);
            if p.is_absolute() {
                p
            } else {
                source.cwd_base.join(p)
            }
        }
        Some(_) => return Err("`cwd` must be a string".into()),
    };
    let auto_approve = match obj.get("autoApprove") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => AutoApprove::None,
        Some(Value::Bool(true)) => AutoApprove::All,
        Some(Value::Array(items)) => {
            let mut set = BTreeSet::new();
            for (i, t) in items.iter().enumerate() {
                let Some(s) = t.as_str() else {
                    return Err(format!("`autoApprove[{i}]` must be a tool name"));
                };
                set.insert(s.to_string());
            }
            AutoApprove::Tools(set)
        }
        Some(_) => return Err("`autoApprove` must be true, false or a list of tool names".into()),
    };
    let start_timeout = secs_field(obj, "startTimeout", DEFAULT_START_TIMEOUT)?;
    let call_timeout = secs_field(obj, "callTimeout", DEFAULT_CALL_TIMEOUT)?;
    Ok(ServerKind::Start(ServerConfig {
        transport: TransportConfig::Stdio(StdioConfig {
            command,
            args,
            env: env_pairs,
            cwd,
        }),
        auto_approve,
        start_timeout,
        call_timeout,
    }))
}

/// A relative path with a separator (`./x`, `bin/x`), not a bare name looked up on `PATH`.
fn is_relative_path(command: &str) -> bool {
    let has_sep = command.contains('/') || (cfg!(windows) && command.contains('\\'));
    has_sep && !Path::new(command).is_absolute()
}

/// `startTimeout` / `callTimeout` in seconds (a design extension; 1–600).
fn secs_field(obj: &Map<String, Value>, key: &str, default: Duration) -> Result<Duration, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= cst_registry::MAX_TIMEOUT_SECS as f64 => Ok(Duration::from_secs_f64(s)),
            _ => Err(format!(
                "`{key}` must be a number of seconds between 0 and {}",
                cst_registry::MAX_TIMEOUT_SECS
            )),
        },
    }
}

fn missing_var(var: &str, field: &str) -> String {
    if var.starts_with("${") {
        format!("`{var}` in `{field}` cannot be expanded (not a set environment variable, `${{env:NAME}}`, `${{NAME:-default}}`, `${{workspaceFolder}}` or `${{userHome}}`)")
    } else {
        format!("environment variable `{var}` used in `{field}` is not set")
    }
}

/// Replace every `${…}`: `${NAME}` and `${env:NAME}` with the variable's value, `${NAME:-default}`
/// with the value or the default, and whatever `env` knows besides (`workspaceFolder`,
/// `userHome`). A missing variable is an error naming it (never an empty string); so is any other
/// `${…}` (VS Code's `${input:…}`), never passed through as text. A `$` not followed by `{…}` is
/// kept. Each value expanded is remembered as a secret ([`cst_config::secrets::remember_expanded`]).
pub fn expand_vars(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: not a reference.
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner.strip_prefix("env:").unwrap_or(inner), None),
        };
        if !is_var_name(name) {
            return Err(format!("${{{inner}}}"));
        }
        // `:-` also replaces an empty value, as the shell does.
        let value = env(name).filter(|v| !(v.is_empty() && default.is_some()));
        match (value, default) {
            (Some(v), _) => {
                // A value put into a server's env or args is a secret the host knows: it is
                // redacted from every output from now on (the two folders VS Code names are not).
                if !matches!(name, "workspaceFolder" | "userHome") {
                    cst_config::secrets::remember_expanded(name, &v);
                }
                out.push_str(&v)
            }
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The current process environment, for [`parse_sources`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn source(file: &str, servers: Value, origin: Origin) -> McpSource {
        McpSource {
            file: PathBuf::from(file),
            servers,
            cwd_base: PathBuf::from("/ws"),
            default_cwd: PathBuf::from("/ws"),
            workspace: PathBuf::from("/ws"),
            contained: false,
            origin,
        }
    }

    #[test]
    fn expands_and_reports_missing_vars() {
        assert_eq!(expand_vars("a ${TOKEN} b", &env).unwrap(), "a s3cret b");
        assert_eq!(expand_vars("${EMPTY}x", &env).unwrap(), "x");
        assert_eq!(expand_vars("$HOME ${", &env).unwrap(), "$HOME ${");
        assert_eq!(expand_vars("${NOPE}", &env).unwrap_err(), "NOPE");
        // Issue 14 item 6: the forms VS Code, Cursor and Claude Code write.
        assert_eq!(expand_vars("${env:TOKEN}", &env).unwrap(), "s3cret");
        assert_eq!(expand_vars("${NOPE:-fallback}/x", &env).unwrap(), "fallback/x");
        assert_eq!(expand_vars("${TOKEN:-fallback}", &env).unwrap(), "s3cret");
        assert_eq!(expand_vars("${EMPTY:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(
            expand_vars("${input:github_token}", &env).unwrap_err(),
            "${input:github_token}"
        );
        assert_eq!(expand_vars("${ not a var}", &env).unwrap_err(), "${ not a var}");
    }

    #[test]
    fn the_shapes_of_mcp_json() {
        let servers = |text: &str| servers_of(&parse_json_or_jsonc(text).unwrap());
        let one = json!({"a": {"command": "x"}});
        assert_eq!(servers(r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap(), one);
        assert_eq!(
            servers(r#"{"servers": {"a": {"command": "x"}}, "inputs": []}"#).unwrap(),
            one
        );
        assert_eq!(servers(r#"{"a": {"command": "x"}}"#).unwrap(), one);
        assert_eq!(
            servers("// c\n{\"servers\": {\"a\": {\"command\": \"x\",},}, /* d */}").unwrap(),
            one
        );
        assert!(servers("{}").unwrap_err().contains("no `mcpServers`"));
        assert!(servers(r#"{"mcp": {"servers": {}}}"#).is_err());
        assert!(servers(r#"{"mcpServers": []}"#)
            .unwrap_err()
            .contains("must be an object"));
        assert!(parse_json_or_jsonc("{broken")
            .unwrap_err()
            .to_string()
            .contains("line 1"));
    }

    #[test]
    fn parses_every_field_and_keeps_the_first_on_clash() {
        let a = source(
            "/ws/.agent/mcp.json",
            json!({
                "ok": {"command": "srv", "args": ["--t", "${TOKEN}"], "env": {"K": "v-${TOKEN}"},
                       "cwd": "sub", "autoApprove": ["echo"], "startTimeout": 2},
                "off": {"command": "srv", "disabled": true},
                "web": {"url": "http://127.0.0.1:1/mcp"},
                "miss": {"command": "srv", "env": {"K": "${NOPE}"}},
            }),
            Origin::Workspace,
        );
        let b = source(
            "/cfg/mcp.json",
            json!({"ok": {"command": "other"}, "b": {"command": "/bin/b", "autoApprove": true}}),
            Origin::ConfigDir,
        );
        let mut warnings = Vec::new();
        let parsed = parse_sources(&[a, b], &env, &mut warnings);
        let by = |n: &str| parsed.iter().find(|p| p.name == n).unwrap().kind.clone();
        let ServerKind::Start(ok) = by("ok") else { panic!() };
        let TransportConfig::Stdio(st) = &ok.transport else {
            panic!()
        };
        assert_eq!(st.command, "srv");
        assert_eq!(st.args, vec!["--t", "s3cret"]);
        assert_eq!(st.env, vec![("K".to_string(), "v-s3cret".to_string())]);
        assert_eq!(st.cwd, PathBuf::from("/ws/sub"));
        assert_eq!(ok.start_timeout, Duration::from_secs(2));
        assert!(ok.auto_approve.covers("echo", "mcp__ok__echo"));
        assert!(!ok.auto_approve.covers("other", "mcp__ok__other"));
        assert_eq!(by("off"), ServerKind::Disabled);
        let ServerKind::Invalid(r) = by("web") else { panic!() };
        assert!(r.contains("stdio servers only") && r.contains("`url`"), "{r}");
        let ServerKind::Invalid(r) = by("miss") else { panic!() };
        assert!(r.contains("`NOPE`") && r.contains("env.K"), "{r}");
        let ServerKind::Start(b) = by("b") else { panic!() };
        assert_eq!(b.auto_approve, AutoApprove::All);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].kind, DiagnosticKind::NameClash);
        let w = warnings[0].to_string();
        assert!(w.contains("/cfg/mcp.json") && w.contains("/ws/.agent/mcp.json"), "{w}");
        assert_eq!(parsed.len(), 5);
    }
}
