//! Where MCP server definitions come from; the MCP client parses them.

use std::path::PathBuf;

/// Which place an extension came from (E7 precedence: workspace > config dir > plugin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Workspace,
    ConfigDir,
    Plugin(String),
    /// The admin's deployment config (D5): HTTP servers, never from a workspace.
    Deployment,
}

/// One `mcpServers` object (or VS Code's `servers`, or a bare map of servers) to hand to the MCP
/// layer.
#[derive(Debug, Clone)]
pub struct McpSource {
    /// The mcp.json or plugin.json it came from.
    pub file: PathBuf,
    /// The `mcpServers` object, unparsed.
    pub servers: serde_json::Value,
    /// Relative `cwd` values resolve against this: the workspace, for every source (M4) — the
    /// source's own folder while the workspace is untrusted (`contained`).
    pub cwd_base: PathBuf,
    /// Where a server without `cwd` runs: the workspace, or a plugin's folder (M4).
    pub default_cwd: PathBuf,
    /// The workspace root, for `${workspaceFolder}` (whatever `cwd_base` is).
    pub workspace: PathBuf,
    pub origin: Origin,
    /// The workspace is not trusted (T1): nothing of it may run, so discovery made `cwd_base`
    /// and `default_cwd` the source's own folder (the config dir, the plugin folder) and the
    /// servers get `PYTHONSAFEPATH=1` (no current or script folder on Python's `sys.path`).
    pub contained: bool,
}
