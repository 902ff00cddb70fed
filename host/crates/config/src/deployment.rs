//! The deployment config (D1): an admin's version-1 JSON file of MCP servers, their repository
//! scopes and lifecycle hooks, at a system path the admin controls; and the permission profile
//! (D2), which the specification keeps beside it, in `settings.json`.
//!
//! - where it lives: [`installed_path`] — `/etc/cst-agent/deployment.json` (Linux and other
//!   Unix), `/Library/Application Support/cst-agent/deployment.json` (macOS),
//!   `%ProgramData%\cst-agent\deployment.json` (Windows); `CST_DEPLOYMENT_FILE` overrides it.
//!   Never a workspace file, never the user's config dir (D16).
//! - a missing file is the defaults: no servers, no hooks;
//! - a file that exists is validated whole ([`parse`]): every problem is collected, each named by
//!   the JSON path of the bad field (`mcp.servers[1].url`), and one problem refuses the file;
//! - no error message quotes a URL, a header value or a command argument (D9, D10).
//!
//! This module only reads and validates. Connecting to the servers, running the hooks and
//! enforcing the profile are the later parts of issue 17; they take a [`DeploymentConfig`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The one format version.
pub const VERSION: u64 = 1;

/// The environment variable that points at another deployment file (tests, packaging).
pub const ENV_FILE: &str = "CST_DEPLOYMENT_FILE";

/// The prefix every `credential_headers` variable must have (D8; the specification's is
/// `SAKURA_MCP_`, ours is the product's own).
pub const CREDENTIAL_PREFIX: &str = "CST_MCP_";

/// `timeout_seconds` when a server gives none (D6).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;

/// A deployment file larger than this is refused unread.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What every header value is shown as (D9).
pub const MASK: &str = "[UNCHANGED SECRET]";

/// The longest server or hook id.
pub const MAX_ID_LEN: usize = 64;

// ---------------------------------------------------------------------------------------------
// The shape

/// A valid version-1 deployment config. Only [`parse`] builds one from text, so every value in it
/// has passed validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentConfig {
    pub version: u64,
    #[serde(default)]
    pub mcp: McpConfig,
    /// Server id → the `owner/repo`s it is offered to; `None` (null or absent): every repository;
    /// `[]`: none (D11).
    #[serde(default)]
    pub mcp_repository_scopes: BTreeMap<String, Option<Vec<String>>>,
    #[serde(default)]
    pub hooks: Vec<Hook>,
    /// The permission profile the administrator sets (D2). Absent: `autonomous`. It is a setting
    /// of its own beside the plugin config; it lives in this file because this is the one file
    /// only an administrator writes, and a user's `settings.json` must not loosen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_profile: Option<PermissionProfile>,
}

impl Default for DeploymentConfig {
    fn default() -> Self {
        Self {
            version: VERSION,
            mcp: McpConfig::default(),
            mcp_repository_scopes: BTreeMap::new(),
            hooks: Vec::new(),
            permission_profile: None,
        }
    }
}

/// `mcp`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    #[serde(default)]
    pub servers: Vec<McpServer>,
}

/// One HTTP MCP server (D5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    pub id: String,
    /// http or https, no userinfo, query or fragment.
    pub url: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// HTTP I/O inactivity timeout, not a cap on a running call (D6).
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Header name → the name of a `CST_MCP_*` variable holding the whole header value (D8).
    #[serde(default)]
    pub credential_headers: BTreeMap<String, String>,
    /// Header name → static value.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The policy of every tool the server offers that `tools` does not name (D12).
    #[serde(default)]
    pub default_policy: ToolPolicy,
    /// Exact remote tool name → its policy (D12).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolPolicy>,
}

/// `{enabled, read_only}`; a missing field is `enabled: true`, `read_only: false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub read_only: bool,
}

impl Default for ToolPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            read_only: false,
        }
    }
}

impl McpServer {
    /// The policy of the remote tool `name`: its `tools` entry, else `default_policy`.
    pub fn policy_of(&self, name: &str) -> ToolPolicy {
        self.tools.get(name).copied().unwrap_or(self.default_policy)
    }
}

/// One lifecycle hook (D14, D15).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    pub id: String,
    pub event: HookEvent,
    pub kind: HookKind,
    /// `command` hooks only: the program and its arguments; `{workspace}` as a whole argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default)]
    pub required: bool,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Never `true` for a `command` hook.
    #[serde(default)]
    pub read_only: bool,
    /// Capability names from [`crate::capabilities::KNOWN`] (D13).
    #[serde(default)]
    pub capabilities: Vec<String>,
}

/// The eleven hook events (D14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    SessionStart,
    BeforeModel,
    AfterModel,
    BeforeTool,
    AfterTool,
    BeforeWrite,
    AfterWrite,
    BeforeFinish,
    AfterFinish,
    TaskFailed,
    TaskCancelled,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        Self::SessionStart,
        Self::BeforeModel,
        Self::AfterModel,
        Self::BeforeTool,
        Self::AfterTool,
        Self::BeforeWrite,
        Self::AfterWrite,
        Self::BeforeFinish,
        Self::AfterFinish,
        Self::TaskFailed,
        Self::TaskCancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionStart => "session_start",
            Self::BeforeModel => "before_model",
            Self::AfterModel => "after_model",
            Self::BeforeTool => "before_tool",
            Self::AfterTool => "after_tool",
            Self::BeforeWrite => "before_write",
            Self::AfterWrite => "after_write",
            Self::BeforeFinish => "before_finish",
            Self::AfterFinish => "after_finish",
            Self::TaskFailed => "task_failed",
            Self::TaskCancelled => "task_cancelled",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// `audit` records the event; `command` runs `argv` (D15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookKind {
    Audit,
    Command,
}

fn yes() -> bool {
    true
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECONDS
}

impl DeploymentConfig {
    /// The config as JSON with every default filled in and every header value — static or
    /// credential — replaced by [`MASK`] (D9): what `deployment show` prints.
    pub fn masked(&self) -> Value {
        let mut copy = self.clone();
        for s in &mut copy.mcp.servers {
            for v in s.headers.values_mut().chain(s.credential_headers.values_mut()) {
                *v = MASK.to_string();
            }
        }
        serde_json::to_value(&copy).unwrap_or(Value::Null)
    }

    /// The server with this id.
    pub fn server(&self, id: &str) -> Option<&McpServer> {
        self.mcp.servers.iter().find(|s| s.id == id)
    }
}

// ---------------------------------------------------------------------------------------------
// Validation

/// One problem of a deployment file: the JSON path of the bad field and what is wrong. The
/// message never quotes a URL, a header value or a command argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// `mcp.servers[1].url`; empty for the document itself.
    pub path: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(top level)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// Parse and validate a deployment file's text: the config, or every problem found.
pub fn parse(text: &str) -> Result<DeploymentConfig, Vec<FieldError>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        vec![FieldError {
            path: String::new(),
            message: format!("not valid JSON: line {} column {}: {}", e.line(), e.column(), e),
        }]
    })?;
    let mut v = Validator::default();
    v.document(&value);
    if !v.errors.is_empty() {
        return Err(v.errors);
    }
    // Every field was checked above; this cannot fail, but a mismatch must refuse, not panic.
    serde_json::from_value(value).map_err(|e| {
        vec![FieldError {
            path: String::new(),
            message: format!("does not match the version-1 shape: {e}"),
        }]
    })
}

const TOP_FIELDS: &[&str] = &["version", "mcp", "mcp_repository_scopes", "hooks", "permission_profile"];
const MCP_FIELDS: &[&str] = &["servers"];
const SERVER_FIELDS: &[&str] = &[
    "id",
    "url",
    "enabled",
    "timeout_seconds",
    "credential_headers",
    "headers",
    "default_policy",
    "tools",
];
const POLICY_FIELDS: &[&str] = &["enabled", "read_only"];
const HOOK_FIELDS: &[&str] = &[
    "id",
    "event",
    "kind",
    "argv",
    "required",
    "enabled",
    "read_only",
    "capabilities",
];

/// `path.key`, or `path["key"]` when the key is not a plain name.
fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (_, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{key:?}]"),
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[derive(Default)]
struct Validator {
    errors: Vec<FieldError>,
}

impl Validator {
    fn err(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(FieldError {
            path: path.to_string(),
            message: message.into(),
        });
    }

    /// `v` as an object whose keys are all in `fields`; every unknown key is an error.
    fn object<'a>(&mut self, v: &'a Value, path: &str, fields: &[&str]) -> Option<&'a Map<String, Value>> {
        let Some(m) = v.as_object() else {
            self.err(path, format!("must be an object, not {}", kind_of(v)));
            return None;
        };
        for k in m.keys() {
            if !fields.contains(&k.as_str()) {
                self.err(&child(path, k), format!("unknown field; known: {}", fields.join(", ")));
            }
        }
        Some(m)
    }

    /// An optional boolean field.
    fn bool(&mut self, m: &Map<String, Value>, path: &str, key: &str) -> Option<bool> {
        match m.get(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                self.err(
                    &child(path, key),
                    format!("must be true or false, not {}", kind_of(other)),
                );
                None
            }
        }
    }

    /// A required string field.
    fn string<'a>(&mut self, m: &'a Map<String, Value>, path: &str, key: &str) -> Option<&'a str> {
        match m.get(key) {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.err(&child(path, key), format!("must be a string, not {}", kind_of(other)));
                None
            }
            None => {
                self.err(&child(path, key), "missing (required)");
                None
            }
        }
    }

    /// A required id: a safe name, unique among `seen`.
    fn id(&mut self, m: &Map<String, Value>, path: &str, seen: &mut BTreeSet<String>) -> Option<String> {
        let id = self.string(m, path, "id")?;
        let p = child(path, "id");
        if let Err(why) = check_id(id) {
            self.err(&p, why);
            return None;
        }
        if !seen.insert(id.to_string()) {
            self.err(&p, format!("duplicate id `{id}`"));
        }
        Some(id.to_string())
    }

    fn document(&mut self, v: &Value) {
        let Some(top) = self.object(v, "", TOP_FIELDS) else {
            return;
        };
        match top.get("version") {
            None => self.err("version", format!("missing (must be {VERSION})")),
            Some(Value::Number(n)) if n.as_u64() == Some(VERSION) => {}
            Some(other) => self.err("version", format!("must be {VERSION}, not {other}")),
        }
        let mut server_ids = BTreeSet::new();
        if let Some(mcp) = top.get("mcp").and_then(|m| self.object(m, "mcp", MCP_FIELDS)) {
            match mcp.get("servers") {
                None => {}
                Some(Value::Array(servers)) => {
                    for (i, s) in servers.iter().enumerate() {
                        self.server(s, &index("mcp.servers", i), &mut server_ids);
                    }
                }
                Some(other) => self.err("mcp.servers", format!("must be an array, not {}", kind_of(other))),
            }
        }
        match top.get("mcp_repository_scopes") {
            None | Some(Value::Null) => {}
            Some(Value::Object(scopes)) => {
                for (id, list) in scopes {
                    self.scope(id, list, &server_ids);
                }
            }
            Some(other) => self.err(
                "mcp_repository_scopes",
                format!(
                    "must be an object of server id → list of owner/repo, not {}",
                    kind_of(other)
                ),
            ),
        }
        match top.get("hooks") {
            None => {}
            Some(Value::Array(hooks)) => {
                let mut ids = BTreeSet::new();
                for (i, h) in hooks.iter().enumerate() {
                    self.hook(h, &index("hooks", i), &mut ids);
                }
            }
            Some(other) => self.err("hooks", format!("must be an array, not {}", kind_of(other))),
        }
        match top.get(PermissionProfile::SETTING) {
            None => {}
            Some(Value::String(s)) if PermissionProfile::parse(s).is_some() => {}
            Some(other) => self.err(
                PermissionProfile::SETTING,
                format!(
                    "must be one of {}, not {other}",
                    PermissionProfile::ALL.map(PermissionProfile::as_str).join(", ")
                ),
            ),
        }
    }

    fn server(&mut self, v: &Value, path: &str, ids: &mut BTreeSet<String>) {
        let Some(m) = self.object(v, path, SERVER_FIELDS) else {
            return;
        };
        self.id(m, path, ids);
        if let Some(url) = self.string(m, path, "url") {
            if let Err(why) = check_url(url) {
                self.err(&child(path, "url"), why);
            }
        }
        self.bool(m, path, "enabled");
        if let Some(t) = m.get("timeout_seconds") {
            match t.as_u64() {
                Some(n) if n > 0 => {}
                _ => self.err(
                    &child(path, "timeout_seconds"),
                    "must be a whole number of seconds greater than 0",
                ),
            }
        }
        let mut names = BTreeMap::new();
        if let Some(c) = m.get("credential_headers") {
            let p = child(path, "credential_headers");
            self.header_map(c, &p, &mut names, |var| check_credential_var(var).err());
        }
        if let Some(h) = m.get("headers") {
            let p = child(path, "headers");
            self.header_map(h, &p, &mut names, |value| {
                (value.is_empty() || value.chars().any(|c| c.is_control()))
                    .then(|| "must be a non-empty header value without control characters".to_string())
            });
        }
        if let Some(p) = m.get("default_policy") {
            self.policy(p, &child(path, "default_policy"));
        }
        match m.get("tools") {
            None => {}
            Some(Value::Object(tools)) => {
                let tp = child(path, "tools");
                for (name, policy) in tools {
                    let p = child(&tp, name);
                    if name.is_empty() || name.chars().any(|c| c.is_control()) {
                        self.err(&p, "a tool name must be non-empty, without control characters");
                    }
                    self.policy(policy, &p);
                }
            }
            Some(other) => self.err(
                &child(path, "tools"),
                format!("must be an object of tool name → policy, not {}", kind_of(other)),
            ),
        }
    }

    /// `headers` or `credential_headers`: header name → string, each value checked by `check`
    /// (which never quotes the value). A name in both maps (in any case) is an error.
    fn header_map(
        &mut self,
        v: &Value,
        path: &str,
        names: &mut BTreeMap<String, String>,
        check: impl Fn(&str) -> Option<String>,
    ) {
        let Some(m) = v.as_object() else {
            self.err(
                path,
                format!("must be an object of header name → string, not {}", kind_of(v)),
            );
            return;
        };
        for (name, value) in m {
            let p = child(path, name);
            if !valid_header_name(name) {
                self.err(&p, "not a valid HTTP header name");
            } else if let Some(first) = names.insert(name.to_ascii_lowercase(), p.clone()) {
                self.err(&p, format!("header also set at {first}"));
            }
            match value {
                Value::String(s) => {
                    if let Some(why) = check(s) {
                        self.err(&p, why);
                    }
                }
                other => self.err(&p, format!("must be a string, not {}", kind_of(other))),
            }
        }
    }

    fn policy(&mut self, v: &Value, path: &str) {
        if let Some(m) = self.object(v, path, POLICY_FIELDS) {
            self.bool(m, path, "enabled");
            self.bool(m, path, "read_only");
        }
    }

    fn scope(&mut self, id: &str, list: &Value, servers: &BTreeSet<String>) {
        let path = child("mcp_repository_scopes", id);
        if !servers.contains(id) {
            self.err(&path, format!("no server has the id `{id}`"));
        }
        match list {
            Value::Null => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = index(&path, i);
                    match item.as_str() {
                        Some(repo) if valid_owner_repo(repo) => {}
                        Some(_) => self.err(&p, "must be `owner/repo`"),
                        None => self.err(&p, format!("must be a string `owner/repo`, not {}", kind_of(item))),
                    }
                }
            }
            other => self.err(
                &path,
                format!("must be a list of owner/repo or null, not {}", kind_of(other)),
            ),
        }
    }

    fn hook(&mut self, v: &Value, path: &str, ids: &mut BTreeSet<String>) {
        let Some(m) = self.object(v, path, HOOK_FIELDS) else {
            return;
        };
        self.id(m, path, ids);
        if let Some(event) = self.string(m, path, "event") {
            if HookEvent::parse(event).is_none() {
                let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                self.err(
                    &child(path, "event"),
                    format!("unknown event {event:?}; known: {}", known.join(", ")),
                );
            }
        }
        let kind = match self.string(m, path, "kind") {
            Some("audit") => Some(HookKind::Audit),
            Some("command") => Some(HookKind::Command),
            Some(other) => {
                self.err(
                    &child(path, "kind"),
                    format!("unknown kind {other:?}; known: audit, command"),
                );
                None
            }
            None => None,
        };
        self.bool(m, path, "required");
        self.bool(m, path, "enabled");
        let read_only = self.bool(m, path, "read_only");
        let argv_path = child(path, "argv");
        match (kind, m.get("argv")) {
            (Some(HookKind::Audit), Some(_)) => self.err(&argv_path, "an audit hook runs no command: remove `argv`"),
            (Some(HookKind::Command), None) => self.err(&argv_path, "missing: a command hook needs `argv`"),
            (Some(HookKind::Command), Some(argv)) => self.argv(argv, &argv_path),
            _ => {}
        }
        if kind == Some(HookKind::Command) && read_only == Some(true) {
            self.err(
                &child(path, "read_only"),
                "a command hook cannot be read-only: remove `read_only` or set it to false",
            );
        }
        match m.get("capabilities") {
            None => {}
            Some(Value::Array(caps)) => {
                let cp = child(path, "capabilities");
                for (i, c) in caps.iter().enumerate() {
                    let p = index(&cp, i);
                    match c.as_str() {
                        Some(name) if crate::capabilities::is_known(name) => {}
                        Some(name) => self.err(
                            &p,
                            format!(
                                "unknown capability {name:?}; known: {}",
                                crate::capabilities::KNOWN.join(", ")
                            ),
                        ),
                        None => self.err(&p, format!("must be a string, not {}", kind_of(c))),
                    }
                }
            }
            Some(other) => self.err(
                &child(path, "capabilities"),
                format!("must be an array of capability names, not {}", kind_of(other)),
            ),
        }
    }

    /// A command hook's `argv`: non-empty strings; `{workspace}` only as a whole argument. The
    /// messages never quote an argument.
    fn argv(&mut self, v: &Value, path: &str) {
        let Some(items) = v.as_array() else {
            self.err(path, format!("must be an array of strings, not {}", kind_of(v)));
            return;
        };
        if items.is_empty() {
            self.err(path, "must not be empty: a command hook needs a program to run");
        }
        for (i, item) in items.iter().enumerate() {
            let p = index(path, i);
            match item.as_str() {
                Some("") if i == 0 => self.err(&p, "the program must not be empty"),
                Some(a) if a != "{workspace}" && a.contains("{workspace}") => {
                    self.err(&p, "`{workspace}` is replaced only as a whole argument, not inside one")
                }
                Some(a) if a.contains('\0') => self.err(&p, "must not contain a NUL character"),
                Some(_) => {}
                None => self.err(&p, format!("must be a string, not {}", kind_of(item))),
            }
        }
    }
}

/// A server or hook id: 1–64 ASCII letters, digits, `-` and `_`, starting with a letter or digit.
pub fn check_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id.as_bytes()[0].is_ascii_alphanumeric()
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be 1–{MAX_ID_LEN} ASCII letters, digits, `-` or `_`, starting with a letter or digit"
        ))
    }
}

/// D5: an absolute http or https URL with a host and no userinfo, query or fragment. The error
/// never quotes the URL (it may hold a password).
pub fn check_url(raw: &str) -> Result<(), String> {
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    let url = url::Url::parse(raw).map_err(|e| format!("not a valid URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http:// or https:// URL".into());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("must name a host".into());
    }
    // `https://@host/` parses with an empty username: look at the authority's text too.
    let authority = raw
        .split_once("://")
        .map_or("", |(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""));
    if !url.username().is_empty() || url.password().is_some() || authority.contains('@') {
        return Err("must not contain userinfo (`user:password@`): put credentials in `credential_headers`".into());
    }
    if url.query().is_some() {
        return Err("must not contain a query string (`?…`)".into());
    }
    if url.fragment().is_some() {
        return Err("must not contain a fragment (`#…`)".into());
    }
    Ok(())
}

/// D8: a `credential_headers` value is the name of a `CST_MCP_*` variable: the prefix, then
/// uppercase ASCII letters, digits and `_`.
pub fn check_credential_var(name: &str) -> Result<(), String> {
    let rest = name.strip_prefix(CREDENTIAL_PREFIX).unwrap_or("");
    if !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        Ok(())
    } else {
        Err(format!(
            "must name an environment variable `{CREDENTIAL_PREFIX}…` (uppercase letters, digits and `_` after the prefix); no other variable is read"
        ))
    }
}

/// An HTTP header name (an RFC 9110 token).
fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `owner/repo` as GitHub spells them: two non-empty parts of ASCII letters, digits, `-`, `_`
/// and `.`, neither `.` nor `..`.
pub fn valid_owner_repo(s: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    };
    matches!(s.split_once('/'), Some((owner, repo)) if part(owner) && part(repo))
}

// ---------------------------------------------------------------------------------------------
// Where it lives, and reading it

/// A deployment file that exists but cannot be used: its path and every problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DeploymentError {
    pub path: PathBuf,
    /// `json.path: message`, or one line for a file that could not be read.
    pub problems: Vec<String>,
}

impl fmt::Display for DeploymentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "{}: the deployment config is refused ({n} problem{}):",
            self.path.display(),
            if n == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

/// The installed deployment config: where it was looked for, and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub path: PathBuf,
    /// `None`: no file there, so the defaults.
    pub config: Option<DeploymentConfig>,
}

impl Installed {
    /// The config in force: the file's, or the defaults (no servers, no hooks).
    pub fn effective(&self) -> DeploymentConfig {
        self.config.clone().unwrap_or_default()
    }
}

/// The system path of the platform (D1): a folder only an administrator can write.
pub fn system_path() -> PathBuf {
    system_path_for(std::env::consts::OS, std::env::var_os("ProgramData").map(PathBuf::from))
}

fn system_path_for(os: &str, program_data: Option<PathBuf>) -> PathBuf {
    match os {
        "windows" => program_data
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from(r"C:\ProgramData"))
            .join("cst-agent")
            .join("deployment.json"),
        "macos" => PathBuf::from("/Library/Application Support/cst-agent/deployment.json"),
        _ => PathBuf::from("/etc/cst-agent/deployment.json"),
    }
}

/// Where the installed deployment file is read from: `CST_DEPLOYMENT_FILE` when set and not
/// empty, else [`system_path`]. Never a workspace or the user's config dir (D16).
pub fn installed_path() -> PathBuf {
    match std::env::var_os(ENV_FILE) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => system_path(),
    }
}

/// Load the installed deployment file ([`installed_path`]). A missing file is the defaults; a
/// file that exists and is invalid is an error listing every problem.
pub fn load() -> Result<Installed, DeploymentError> {
    let path = installed_path();
    let system = path == system_path();
    let config = load_file(&path, system)?;
    Ok(Installed { path, config })
}

/// Load the deployment file at `path`; `Ok(None)` when there is none. `system`: the file is the
/// platform's system path, which (on Unix) must be owned by root.
pub fn load_file(path: &Path, system: bool) -> Result<Option<DeploymentConfig>, DeploymentError> {
    let refuse = |problem: String| DeploymentError {
        path: path.to_path_buf(),
        problems: vec![problem],
    };
    // `metadata` follows symlinks: the checks apply to the file actually read.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(format!("cannot read: {e}"))),
    };
    if !meta.is_file() {
        return Err(refuse("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refuse(format!(
            "larger than {MAX_FILE_BYTES} bytes ({} bytes)",
            meta.len()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        check_ownership(meta.mode(), meta.uid(), system).map_err(refuse)?;
    }
    #[cfg(not(unix))]
    let _ = system;
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text));
    match read {
        Ok(n) if n as u64 > MAX_FILE_BYTES => {
            return Err(refuse(format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        Ok(_) => {}
        Err(e) => return Err(refuse(format!("cannot read: {e}"))),
    }
    parse(&text).map(Some).map_err(|errors| DeploymentError {
        path: path.to_path_buf(),
        problems: errors.iter().map(ToString::to_string).collect(),
    })
}

/// Unix file checks: nobody but its owner and group may write the file, and the system file
/// belongs to root (a file anyone can write is anyone's config, not the admin's).
#[cfg_attr(not(unix), allow(dead_code))]
fn check_ownership(mode: u32, uid: u32, system: bool) -> Result<(), String> {
    if mode & 0o002 != 0 {
        return Err("writable by every user: make it writable by its owner only (chmod 644)".into());
    }
    if system && uid != 0 {
        return Err("not owned by root: the system deployment file must belong to an administrator".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The permission profile (D2)

/// The permission profile: `settings.json` `permission_profile`, default `autonomous`. Every
/// profile stays inside the sandbox and network policy. Enforcing it is later work (issue 17).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionProfile {
    #[default]
    Autonomous,
    ReadOnly,
    WorkspaceWrite,
    FullAccess,
}

impl PermissionProfile {
    pub const ALL: [PermissionProfile; 4] = [Self::Autonomous, Self::ReadOnly, Self::WorkspaceWrite, Self::FullAccess];

    /// The settings key.
    pub const SETTING: &'static str = "permission_profile";

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Autonomous => "autonomous",
            Self::ReadOnly => "read_only",
            Self::WorkspaceWrite => "workspace_write",
            Self::FullAccess => "full_access",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The profile of a settings file; an unknown value or a non-string is an error naming the
    /// file.
    pub fn from_settings(settings: &crate::settings::Settings) -> Result<Self, String> {
        match settings.values.get(Self::SETTING) {
            None | Some(Value::Null) => Ok(Self::default()),
            Some(Value::String(s)) => Self::parse(s).ok_or_else(|| {
                format!(
                    "{}: {}: unknown profile {s:?}; known: {}",
                    settings.path.display(),
                    Self::SETTING,
                    Self::ALL.map(Self::as_str).join(", ")
                )
            }),
            Some(other) => Err(format!(
                "{}: {}: must be a string, not {}",
                settings.path.display(),
                Self::SETTING,
                kind_of(other)
            )),
        }
    }
}

/// Who chose the permission profile in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileSource {
    /// Nobody: the nominal default `autonomous`, and the approval mode alone decides (P11).
    Default,
    /// The user's `settings.json` (no deployment file is installed).
    Settings,
    /// The installed deployment file, which then alone decides (D1, D2).
    Deployment,
}

/// The permission profile of a session and who chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileSetting {
    pub profile: PermissionProfile,
    pub source: ProfileSource,
}

impl ProfileSetting {
    /// The profile to enforce: `None` when nobody chose one, so the approval mode alone decides.
    /// A chosen profile also makes the `auto` mode ask nobody (D19).
    pub fn chosen(&self) -> Option<PermissionProfile> {
        (self.source != ProfileSource::Default).then_some(self.profile)
    }

    /// `autonomous (deployment file)`, for `status` and logs.
    pub fn describe(&self) -> String {
        let from = match self.source {
            ProfileSource::Default => "default; the approval mode decides",
            ProfileSource::Settings => "settings.json",
            ProfileSource::Deployment => "deployment file",
        };
        format!("{} ({from})", self.profile)
    }
}

/// The profile in force: an installed deployment file decides alone (its `permission_profile`,
/// else `autonomous`) and a user's `settings.json` cannot loosen it; without one, `settings.json`
/// `permission_profile`; without that, nobody chose one.
pub fn resolve_profile(
    installed: Option<&DeploymentConfig>,
    settings: Option<&crate::settings::Settings>,
) -> Result<ProfileSetting, String> {
    if let Some(config) = installed {
        return Ok(ProfileSetting {
            profile: config.permission_profile.unwrap_or_default(),
            source: ProfileSource::Deployment,
        });
    }
    let named = settings.is_some_and(|s| s.values.get(PermissionProfile::SETTING).is_some_and(|v| !v.is_null()));
    match settings {
        Some(s) if named => Ok(ProfileSetting {
            profile: PermissionProfile::from_settings(s)?,
            source: ProfileSource::Settings,
        }),
        _ => Ok(ProfileSetting {
            profile: PermissionProfile::default(),
            source: ProfileSource::Default,
        }),
    }
}

impl fmt::Display for PermissionProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(v: Value) -> Vec<String> {
        parse(&v.to_string())
            .expect_err("should be refused")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn has(errs: &[String], path: &str, word: &str) -> bool {
        errs.iter()
            .any(|e| e.starts_with(&format!("{path}: ")) && e.contains(word))
    }

    fn spec_example() -> Value {
        json!({
          "version": 1,
          "mcp": {"servers": [{
              "id": "docs",
              "url": "https://mcp.example.com/mcp",
              "enabled": true,
              "timeout_seconds": 300,
              "credential_headers": {"Authorization": "CST_MCP_DOCS_TOKEN"},
              "default_policy": {"enabled": true, "read_only": false},
              "tools": {"search": {"enabled": true, "read_only": true}}
          }]},
          "mcp_repository_scopes": {"docs": ["owner/repo"]},
          "hooks": [{
              "id": "checks", "event": "before_finish", "kind": "command",
              "argv": ["python", "-m", "pytest", "-q"], "required": true, "enabled": true
          }]
        })
    }

    #[test]
    fn d1_spec_example_and_defaults() {
        let c = parse(&spec_example().to_string()).unwrap();
        assert_eq!(c.mcp.servers.len(), 1);
        let s = c.server("docs").unwrap();
        assert_eq!(s.timeout_seconds, 300);
        assert!(s.policy_of("search").read_only);
        assert!(s.policy_of("other").enabled && !s.policy_of("other").read_only);
        assert_eq!(c.hooks[0].event, HookEvent::BeforeFinish);
        assert_eq!(c.hooks[0].kind, HookKind::Command);
        let d = parse(r#"{"version": 1}"#).unwrap();
        assert_eq!(d, DeploymentConfig::default());
        assert!(d.mcp.servers.is_empty() && d.hooks.is_empty());
    }

    #[test]
    fn d6_timeout_default_and_positive() {
        let c = parse(r#"{"version":1,"mcp":{"servers":[{"id":"a","url":"http://h/"}]}}"#).unwrap();
        assert_eq!(c.mcp.servers[0].timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
        assert!(c.mcp.servers[0].enabled);
        for bad in [json!(0), json!(-1), json!(1.5), json!("300")] {
            let e = errors(json!({"version":1,"mcp":{"servers":[{"id":"a","url":"http://h/","timeout_seconds":bad}]}}));
            assert!(has(&e, "mcp.servers[0].timeout_seconds", "greater than 0"), "{e:?}");
        }
    }

    #[test]
    fn d1_version_and_unknown_fields() {
        assert!(has(&errors(json!({"version": 2})), "version", "must be 1"));
        assert!(has(&errors(json!({})), "version", "missing"));
        assert!(has(&errors(json!([])), "(top level)", "object"));
        let e = errors(json!({"version": 1, "extra": 1, "mcp": {"servers": [], "x": 1}}));
        assert!(has(&e, "extra", "unknown field"), "{e:?}");
        assert!(has(&e, "mcp.x", "unknown field"), "{e:?}");
        assert!(parse("{").unwrap_err()[0].message.contains("not valid JSON"));
    }

    #[test]
    fn d5_urls() {
        assert!(check_url("https://mcp.example.com/mcp").is_ok());
        assert!(check_url("http://127.0.0.1:8080/mcp").is_ok());
        assert!(check_url("https://h/users/@me").is_ok());
        for (bad, word) in [
            ("ftp://h/x", "http"),
            ("https://user:pw@h/x", "userinfo"),
            ("https://user@h/x", "userinfo"),
            ("https://@h/x", "userinfo"),
            ("https://h/x?a=1", "query"),
            ("https://h/x?", "query"),
            ("https://h/x#f", "fragment"),
            ("https://h/x#", "fragment"),
            ("not a url", "spaces"),
            ("/relative", "valid URL"),
            ("file:///etc/passwd", "http"),
        ] {
            let e = check_url(bad).unwrap_err();
            assert!(e.contains(word), "{bad}: {e}");
            assert!(!e.contains("pw") && !e.contains("a=1"), "{e}");
        }
    }

    #[test]
    fn d8_credential_prefix() {
        assert!(check_credential_var("CST_MCP_DOCS_TOKEN").is_ok());
        for bad in [
            "SAKURA_MCP_X",
            "CST_MCP_",
            "HOME",
            "cst_mcp_x",
            "CST_MCP_lower",
            "CST_MCP_A-B",
        ] {
            assert!(check_credential_var(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn d5_server_fields_all_errors_at_once() {
        let e = errors(json!({"version": 1, "mcp": {"servers": [
            {"id": "a", "url": "https://h/"},
            {"id": "a", "url": "https://u:p@h/", "enabled": "yes",
             "headers": {"X Bad": "v", "Authorization": "Bearer s"},
             "credential_headers": {"authorization": "HOME"},
             "default_policy": {"enabled": true, "ro": true},
             "tools": {"t": {"read_only": 1}}},
            {"id": "", "url": 3}
        ]}}));
        for (path, word) in [
            ("mcp.servers[1].id", "duplicate"),
            ("mcp.servers[1].url", "userinfo"),
            ("mcp.servers[1].enabled", "true or false"),
            ("mcp.servers[1].headers[\"X Bad\"]", "header name"),
            (
                "mcp.servers[1].headers.Authorization",
                "also set at mcp.servers[1].credential_headers.authorization",
            ),
            ("mcp.servers[1].credential_headers.authorization", "CST_MCP_"),
            ("mcp.servers[1].default_policy.ro", "unknown field"),
            ("mcp.servers[1].tools.t.read_only", "true or false"),
            ("mcp.servers[2].id", "ASCII"),
            ("mcp.servers[2].url", "string"),
        ] {
            assert!(has(&e, path, word), "{path} {word}: {e:#?}");
        }
        assert!(e.iter().all(|m| !m.contains("Bearer s") && !m.contains("u:p")), "{e:?}");
    }

    #[test]
    fn d11_scopes() {
        let base = |scopes: Value| json!({"version": 1, "mcp": {"servers": [{"id": "docs", "url": "https://h/"}]}, "mcp_repository_scopes": scopes});
        let c = parse(&base(json!({"docs": null})).to_string()).unwrap();
        assert_eq!(c.mcp_repository_scopes.get("docs"), Some(&None));
        let c = parse(&base(json!({"docs": []})).to_string()).unwrap();
        assert_eq!(c.mcp_repository_scopes.get("docs"), Some(&Some(vec![])));
        let e = errors(base(
            json!({"nope": ["a/b"], "docs": ["a/b", "ab", "a/b/c", "../x", 3]}),
        ));
        assert!(has(&e, "mcp_repository_scopes.nope", "no server"), "{e:?}");
        assert!(has(&e, "mcp_repository_scopes.docs[1]", "owner/repo"), "{e:?}");
        assert!(has(&e, "mcp_repository_scopes.docs[2]", "owner/repo"), "{e:?}");
        assert!(has(&e, "mcp_repository_scopes.docs[3]", "owner/repo"), "{e:?}");
        assert!(has(&e, "mcp_repository_scopes.docs[4]", "string"), "{e:?}");
        assert!(!e.iter().any(|m| m.starts_with("mcp_repository_scopes.docs[0]")));
        assert!(has(
            &errors(base(json!({"docs": "a/b"}))),
            "mcp_repository_scopes.docs",
            "list"
        ));
    }

    #[test]
    fn d14_d15_hooks() {
        let hook = |h: Value| json!({"version": 1, "hooks": [h]});
        let ok = parse(
            &json!({"version": 1, "hooks": [
                {"id": "a", "event": "session_start", "kind": "audit"},
                {"id": "b", "event": "task_cancelled", "kind": "command", "argv": ["make", "{workspace}"],
                 "capabilities": ["network", "env:CI"], "read_only": false}
            ]})
            .to_string(),
        )
        .unwrap();
        assert!(ok.hooks[0].enabled && !ok.hooks[0].required && ok.hooks[0].argv.is_none());
        for (name, e) in HookEvent::ALL.iter().map(|e| (e.as_str(), e)) {
            assert_eq!(HookEvent::parse(name), Some(*e));
        }
        let cases = [
            (
                json!({"id": "a", "event": "before_commit", "kind": "audit"}),
                "hooks[0].event",
                "unknown event",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "audit", "argv": []}),
                "hooks[0].argv",
                "audit",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "command", "argv": []}),
                "hooks[0].argv",
                "empty",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "command"}),
                "hooks[0].argv",
                "missing",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "command", "argv": ["x"], "read_only": true}),
                "hooks[0].read_only",
                "read-only",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "shell"}),
                "hooks[0].kind",
                "unknown kind",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "audit", "capabilities": ["filesystem"]}),
                "hooks[0].capabilities[0]",
                "unknown capability",
            ),
            (
                json!({"id": "a", "event": "after_tool", "kind": "command", "argv": ["x", "--dir={workspace}"]}),
                "hooks[0].argv[1]",
                "whole argument",
            ),
            (
                json!({"event": "after_tool", "kind": "audit"}),
                "hooks[0].id",
                "missing",
            ),
        ];
        for (h, path, word) in cases {
            let e = errors(hook(h.clone()));
            assert!(has(&e, path, word), "{h}: {e:?}");
        }
        let dup = errors(json!({"version": 1, "hooks": [
            {"id": "a", "event": "after_tool", "kind": "audit"},
            {"id": "a", "event": "after_tool", "kind": "audit"}
        ]}));
        assert!(has(&dup, "hooks[1].id", "duplicate"), "{dup:?}");
    }

    #[test]
    fn d9_masked_shows_no_header_value() {
        let mut v = spec_example();
        v["mcp"]["servers"][0]["headers"] = json!({"X-Team": "static-secret-value"});
        let c = parse(&v.to_string()).unwrap();
        let shown = c.masked().to_string();
        assert!(
            !shown.contains("static-secret-value") && !shown.contains("CST_MCP_DOCS_TOKEN"),
            "{shown}"
        );
        assert_eq!(c.masked()["mcp"]["servers"][0]["headers"]["X-Team"], MASK);
        assert_eq!(
            c.masked()["mcp"]["servers"][0]["credential_headers"]["Authorization"],
            MASK
        );
        assert!(shown.contains("https://mcp.example.com/mcp"));
    }

    #[test]
    fn d1_system_paths() {
        assert_eq!(
            system_path_for("linux", None),
            PathBuf::from("/etc/cst-agent/deployment.json")
        );
        assert_eq!(
            system_path_for("macos", None),
            PathBuf::from("/Library/Application Support/cst-agent/deployment.json")
        );
        assert_eq!(
            system_path_for("windows", Some(PathBuf::from(r"D:\PD"))),
            PathBuf::from(r"D:\PD").join("cst-agent").join("deployment.json")
        );
        assert_eq!(
            system_path_for("windows", None),
            PathBuf::from(r"C:\ProgramData")
                .join("cst-agent")
                .join("deployment.json")
        );
    }

    #[test]
    fn d1_ownership_rules() {
        assert!(check_ownership(0o100644, 0, true).is_ok());
        assert!(check_ownership(0o100644, 1000, false).is_ok());
        assert!(check_ownership(0o100664, 1000, false).is_ok());
        assert!(check_ownership(0o100646, 0, true).unwrap_err().contains("every user"));
        assert!(check_ownership(0o100644, 1000, true).unwrap_err().contains("root"));
    }

    #[test]
    fn d1_files_missing_large_and_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("deployment.json");
        assert_eq!(load_file(&p, false).unwrap(), None);
        std::fs::write(&p, vec![b' '; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        assert!(load_file(&p, false).unwrap_err().problems[0].contains("larger"));
        std::fs::write(&p, r#"{"version": 2, "hooks": 1}"#).unwrap();
        let e = load_file(&p, false).unwrap_err();
        assert_eq!(e.problems.len(), 2, "{e}");
        assert!(e.to_string().starts_with(&format!("{}: ", p.display())), "{e}");
        assert!(load_file(dir.path(), false).unwrap_err().problems[0].contains("regular file"));
    }

    #[test]
    fn d2_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        let s = |v: Value| crate::settings::Settings {
            path: p.clone(),
            values: v.as_object().unwrap().clone(),
        };
        assert_eq!(
            PermissionProfile::from_settings(&s(json!({}))).unwrap(),
            PermissionProfile::Autonomous
        );
        for prof in PermissionProfile::ALL {
            let got = PermissionProfile::from_settings(&s(json!({"permission_profile": prof.as_str()}))).unwrap();
            assert_eq!(got, prof);
        }
        let e = PermissionProfile::from_settings(&s(json!({"permission_profile": "yolo"}))).unwrap_err();
        assert!(e.contains(&p.display().to_string()) && e.contains("yolo"), "{e}");
        assert!(PermissionProfile::from_settings(&s(json!({"permission_profile": 1}))).is_err());
    }

    /// D1, D2: the deployment file's profile wins and a user's settings cannot loosen it; an
    /// unknown value in the file is refused with its path.
    #[test]
    fn d2_the_deployment_file_decides_the_profile() {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::settings::Settings {
            path: dir.path().join("settings.json"),
            values: json!({"permission_profile": "full_access"})
                .as_object()
                .unwrap()
                .clone(),
        };
        let empty = crate::settings::Settings {
            path: dir.path().join("settings.json"),
            values: Map::new(),
        };
        let file = parse(r#"{"version": 1, "permission_profile": "read_only"}"#).unwrap();
        let got = resolve_profile(Some(&file), Some(&settings)).unwrap();
        assert_eq!(
            (got.profile, got.source),
            (PermissionProfile::ReadOnly, ProfileSource::Deployment)
        );
        // A file that names none: `autonomous`, chosen by the deployment; settings still ignored.
        let bare = parse(r#"{"version": 1}"#).unwrap();
        let got = resolve_profile(Some(&bare), Some(&settings)).unwrap();
        assert_eq!(got.chosen(), Some(PermissionProfile::Autonomous));
        // No deployment: the user's settings, else nobody.
        let got = resolve_profile(None, Some(&settings)).unwrap();
        assert_eq!(
            (got.chosen(), got.source),
            (Some(PermissionProfile::FullAccess), ProfileSource::Settings)
        );
        let got = resolve_profile(None, Some(&empty)).unwrap();
        assert_eq!((got.chosen(), got.profile), (None, PermissionProfile::Autonomous));
        assert_eq!(resolve_profile(None, None).unwrap().chosen(), None);
        assert!(has(
            &errors(json!({"version": 1, "permission_profile": "yolo"})),
            "permission_profile",
            "must be one of"
        ));
        assert!(has(
            &errors(json!({"version": 1, "permission_profile": 3})),
            "permission_profile",
            "autonomous"
        ));
    }
}
