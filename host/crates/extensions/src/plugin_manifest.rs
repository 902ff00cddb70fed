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
        Self::parse(file, &text)
    }

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
}
