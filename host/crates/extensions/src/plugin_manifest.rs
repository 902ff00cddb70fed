//! `plugin.json` (rule P1): parsing and the checks every loader shares. Errors name the file, so
//! a broken plugin is reported and the others keep loading.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use cst_protocol::{Diagnostic, DiagnosticKind};
use cst_registry::{timeout_from_secs, Perm};

/// Largest `plugin.json` read (1 MiB).
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// A plugin folder's `plugin.json`. Unknown keys are ignored so files written for other hosts load.
#[derive(Debug, Clone, Deserialize)]
pub struct PluginManifest {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// plugin.json command tools (P1–P10).
    #[serde(default)]
    pub tools: Vec<CommandToolDecl>,
    /// A folder of skills inside the plugin (P1).
    #[serde(default)]
    pub skills: Option<String>,
    /// MCP servers, the same shape as mcp.json's `mcpServers` (P1); parsed by the MCP layer.
    #[serde(default, rename = "mcpServers")]
    pub mcp_servers: Option<Value>,
    /// A wasm component beside plugin.json (H2).
    #[serde(default)]
    pub wasm: Option<String>,
    /// Capabilities granted to the wasm component (D13); checked by `wasm::capabilities`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Resource limits of the wasm component.
    #[serde(default)]
    pub limits: WasmLimitsDecl,
    /// Time limit of each wasm tool call, seconds (P7: default 60, at most 600).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Set for a Claude Code (or Codex) plugin: its own parts (issue 14 item 9).
    #[serde(skip)]
    pub claude: Option<ClaudeLayout>,
}

/// What a Claude Code plugin (`.claude-plugin/plugin.json`, or `.codex-plugin/`) brings besides
/// skills and MCP servers: sub-agent roles, slash commands, and hooks (not loaded: hooks come
/// from the deployment config).
#[derive(Debug, Clone, Default)]
pub struct ClaudeLayout {
    /// The manifest file (`<dir>/.claude-plugin/plugin.json`).
    pub manifest_file: PathBuf,
    /// `agents/`: role files.
    pub agents: Option<PathBuf>,
    /// `commands/`: `*.md` slash commands.
    pub commands: Option<PathBuf>,
    /// `hooks/hooks.json`, when there is one.
    pub hooks: Option<PathBuf>,
}

/// The manifest of a plugin folder: our `plugin.json`, else Claude Code's
/// `.claude-plugin/plugin.json`, else Codex's `.codex-plugin/plugin.json`.
pub fn manifest_file(dir: &Path) -> Option<PathBuf> {
    [
        dir.join("plugin.json"),
        dir.join(".claude-plugin").join("plugin.json"),
        dir.join(".codex-plugin").join("plugin.json"),
    ]
    .into_iter()
    .find(|f| f.is_file())
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct WasmLimitsDecl {
    /// Fuel budget per call; none = unlimited fuel (the deadline still applies).
    #[serde(default)]
    pub fuel: Option<u64>,
    /// Linear-memory cap per call in MiB (default 256).
    #[serde(default)]
    pub memory_mb: Option<u64>,
}

/// One entry of `tools[]`.
#[derive(Debug, Clone, Deserialize)]
pub struct CommandToolDecl {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub command: CommandLine,
    #[serde(default)]
    pub parameters: Option<Value>,
    #[serde(default, rename = "inputSchema")]
    pub input_schema: Option<Value>,
    #[serde(default)]
    pub perm: Option<String>,
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// `command` as an array (run directly) or a string (run by `sh -c`), P4.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum CommandLine {
    Argv(Vec<String>),
    Shell(String),
}

/// A manifest error: always names the file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ManifestError {
    pub file: PathBuf,
    pub message: String,
}

impl ManifestError {
    pub fn new(file: &Path, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            message: message.into(),
        }
    }
}

impl From<ManifestError> for Diagnostic {
    fn from(e: ManifestError) -> Self {
        Diagnostic::in_file(DiagnosticKind::BrokenFile, e.file, e.message)
    }
}

impl PluginManifest {
    /// Read and parse `plugin.json`; syntax errors carry the line and column. A file larger than
    /// [`MAX_MANIFEST_BYTES`] is refused unread (a workspace can hold anything).
    pub fn load(file: &Path) -> Result<Self, ManifestError> {
        Self::parse(file, &read_manifest_text(file)?)
    }

    /// The plugin of folder `dir`, in whichever layout it has ([`manifest_file`]); `None` when
    /// it has no manifest.
    pub fn load_dir(dir: &Path) -> Option<Result<Self, ManifestError>> {
        let file = manifest_file(dir)?;
        if file == dir.join("plugin.json") {
            return Some(Self::load(&file));
        }
        Some(read_manifest_text(&file).and_then(|text| Self::parse_claude(dir, &file, &text)))
    }

    /// A Claude Code plugin: `name`, `description`; `skills/`, `agents/`, `commands/`,
    /// `hooks/hooks.json` by convention or where the manifest points (inside the folder); MCP
    /// servers from the manifest's `mcpServers` (an object or a file) or `.mcp.json`, with
    /// `${CLAUDE_PLUGIN_ROOT}` replaced by the plugin folder.
    fn parse_claude(dir: &Path, file: &Path, text: &str) -> Result<Self, ManifestError> {
        let err = |m: String| ManifestError::new(file, m);
        let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not a valid plugin.json: {e}")))?;
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| err("`name` is missing or empty".into()))?
            .to_string();
        let description = v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // A path the manifest names (or the conventional one), inside the plugin folder.
        let part = |key: &str, default: &str| -> Result<Option<PathBuf>, ManifestError> {
            let rel = match v.get(key) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => match a.first().and_then(Value::as_str) {
                    Some(s) => s.to_string(),
                    None => return Ok(None),
                },
                Some(Value::Object(_)) | None => default.to_string(),
                Some(_) => return Err(err(format!("`{key}` must be a path"))),
            };
            let rel_path = Path::new(&rel);
            if rel_path.is_absolute()
                || rel_path
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
            {
                return Err(err(format!(
                    "`{key}` must be a path inside the plugin folder, not `{rel}`"
                )));
            }
            let p = dir.join(rel_path);
            Ok(p.exists().then_some(p))
        };
        let skills = part("skills", "skills")?.map(|p| {
            p.strip_prefix(dir)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "skills".into())
        });
        let root = dir.to_string_lossy().into_owned();
        let mcp_servers = match v.get("mcpServers") {
            Some(Value::Object(_)) => v.get("mcpServers").cloned(),
            _ => match part("mcpServers", ".mcp.json")? {
                Some(f) if f.is_file() => {
                    let text = read_manifest_text(&f)?;
                    let value = crate::mcp::config::parse_json_or_jsonc(&text)
                        .map_err(|e| ManifestError::new(&f, format!("not valid JSON: {e}")))?;
                    Some(crate::mcp::config::servers_of(&value).map_err(|e| ManifestError::new(&f, e))?)
                }
                _ => None,
            },
        }
        .map(|mut servers| {
            replace_strings(&mut servers, "${CLAUDE_PLUGIN_ROOT}", &root);
            servers
        });
        Ok(Self {
            name,
            description,
            tools: Vec::new(),
            skills,
            mcp_servers,
            wasm: None,
            capabilities: Vec::new(),
            limits: WasmLimitsDecl::default(),
            timeout: None,
            claude: Some(ClaudeLayout {
                manifest_file: file.to_path_buf(),
                agents: part("agents", "agents")?,
                commands: part("commands", "commands")?,
                hooks: part("hooks", "hooks/hooks.json")?,
            }),
        })
    }

    /// The file the manifest came from: `<dir>/plugin.json`, or a Claude Code plugin's.
    pub fn file_in(&self, dir: &Path) -> PathBuf {
        match &self.claude {
            Some(c) => c.manifest_file.clone(),
            None => dir.join("plugin.json"),
        }
    }
}

/// Every string in `v` with `from` replaced by `to`.
fn replace_strings(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_strings(x, from, to)),
        Value::Object(o) => o.values_mut().for_each(|x| replace_strings(x, from, to)),
        _ => {}
    }
}

/// A manifest's text: a regular file of at most [`MAX_MANIFEST_BYTES`], refused unread when
/// larger (a workspace can hold anything).
fn read_manifest_text(file: &Path) -> Result<String, ManifestError> {
    {
        use std::io::Read;
        let cannot_read = |e: std::io::Error| ManifestError::new(file, format!("cannot read: {e}"));
        let too_large = |len: u64| {
            ManifestError::new(
                file,
                format!("too large ({len} bytes; a plugin.json may have at most {MAX_MANIFEST_BYTES})"),
            )
        };
        let meta = std::fs::metadata(file).map_err(cannot_read)?;
        if !meta.is_file() {
            // A FIFO would block the open, a device might never end.
            return Err(ManifestError::new(file, "cannot read: not a regular file"));
        }
        let len = meta.len();
        if len > MAX_MANIFEST_BYTES {
            return Err(too_large(len));
        }
        let mut text = String::new();
        std::fs::File::open(file)
            .map_err(cannot_read)?
            .take(MAX_MANIFEST_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(cannot_read)?;
        if text.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(too_large(text.len() as u64));
        }
        Ok(text)
    }
}

impl PluginManifest {
    pub fn parse(file: &Path, text: &str) -> Result<Self, ManifestError> {
        let m: PluginManifest = serde_json::from_str(text)
            .map_err(|e| ManifestError::new(file, format!("not a valid plugin.json: {e}")))?;
        // P1
        if m.name.trim().is_empty() {
            return Err(ManifestError::new(file, "`name` is empty"));
        }
        // P7
        if let Some(t) = m.timeout {
            timeout_from_secs(Some(t)).map_err(|e| ManifestError::new(file, format!("`timeout`: {e}")))?;
        }
        if let Some(mb) = m.limits.memory_mb {
            if mb == 0 || mb > 4096 {
                return Err(ManifestError::new(
                    file,
                    format!("`limits.memory_mb` {mb} must be between 1 and 4096"),
                ));
            }
        }
        if m.limits.fuel == Some(0) {
            return Err(ManifestError::new(file, "`limits.fuel` must be greater than 0"));
        }
        Ok(m)
    }
}

impl CommandToolDecl {
    /// The input schema: `parameters`, else `inputSchema`, else any object (P5).
    pub fn schema(&self) -> Value {
        self.parameters
            .clone()
            .or_else(|| self.input_schema.clone())
            .unwrap_or_else(cst_registry::schema::empty_object_schema)
    }

    /// `perm`, default `shell` (P6).
    pub fn perm(&self, file: &Path) -> Result<Perm, ManifestError> {
        match &self.perm {
            None => Ok(Perm::Shell),
            Some(p) => Perm::parse(p).ok_or_else(|| {
                ManifestError::new(
                    file,
                    format!("tool `{}`: perm `{p}` is not one of read, write, net, shell", self.name),
                )
            }),
        }
    }

    /// `timeout` as P7 says.
    pub fn timeout(&self, file: &Path) -> Result<std::time::Duration, ManifestError> {
        timeout_from_secs(self.timeout).map_err(|e| ManifestError::new(file, format!("tool `{}`: {e}", self.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_spec_example_and_names_line_on_error() {
        let f = Path::new("/x/plugin.json");
        let m = PluginManifest::parse(
            f,
            r#"{"name":"jira","description":"Read Jira issues.","tools":[{"name":"jira_issue","command":["python3","issue.py"],
               "parameters":{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]},"perm":"net","timeout":30}],
               "skills":"skills","mcpServers":{"jira-search":{"command":"npx","args":["-y","x"]}}}"#,
        )
        .unwrap();
        assert_eq!(
            m.tools[0].command,
            CommandLine::Argv(vec!["python3".into(), "issue.py".into()])
        );
        assert_eq!(m.tools[0].perm(f).unwrap(), Perm::Net);
        let err = PluginManifest::parse(f, "{\n \"name\": \"x\",\n oops }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/x/plugin.json") && err.contains("line 3"), "{err}");
        let t = CommandToolDecl {
            name: "t".into(),
            description: String::new(),
            command: CommandLine::Shell("true".into()),
            parameters: None,
            input_schema: None,
            perm: None,
            timeout: Some(601),
        };
        assert!(t.timeout(f).unwrap_err().to_string().contains("600"));
        assert_eq!(t.perm(f).unwrap(), Perm::Shell);
    }

    /// Codex's `.codex-plugin/plugin.json` is read like Claude Code's; ours wins when both are
    /// there; manifest paths may not leave the plugin folder.
    #[test]
    fn codex_and_claude_layouts() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::create_dir_all(dir.join(".codex-plugin")).unwrap();
        std::fs::create_dir_all(dir.join("commands")).unwrap();
        std::fs::write(
            dir.join(".codex-plugin/plugin.json"),
            r#"{"name": "codex-tools", "mcpServers": {"s": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/s"}}}"#,
        )
        .unwrap();
        let m = PluginManifest::load_dir(dir).unwrap().unwrap();
        assert_eq!(m.name, "codex-tools");
        let c = m.claude.as_ref().unwrap();
        assert_eq!(c.manifest_file, dir.join(".codex-plugin/plugin.json"));
        assert_eq!(c.commands.as_deref(), Some(dir.join("commands").as_path()));
        assert_eq!(
            m.mcp_servers.unwrap()["s"]["command"],
            format!("{}/bin/s", dir.display())
        );
        std::fs::write(
            dir.join(".codex-plugin/plugin.json"),
            r#"{"name": "x", "agents": "../../etc"}"#,
        )
        .unwrap();
        let e = PluginManifest::load_dir(dir).unwrap().unwrap_err();
        assert!(e.message.contains("inside the plugin folder"), "{}", e.message);
        std::fs::write(dir.join("plugin.json"), r#"{"name": "ours"}"#).unwrap();
        assert_eq!(PluginManifest::load_dir(dir).unwrap().unwrap().name, "ours");
        assert!(manifest_file(&dir.join("commands")).is_none());
    }
}
