//! Discovery: find every extension (E1–E7) and build the registry a session uses.

use std::path::PathBuf;
use std::sync::Arc;

use crate::plugins::{self, LoadedPlugin};
use crate::tools::Registry;

/// `--tools default` loads extensions; `--tools minimal` loads none (E1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolsProfile {
    #[default]
    Default,
    Minimal,
}

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub workspace: PathBuf,
    pub profile: ToolsProfile,
}

/// Which place an extension came from (E7 precedence: workspace > config dir > plugin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Workspace,
    ConfigDir,
    Plugin(String),
}

/// One `mcpServers` object to hand to the MCP layer.
#[derive(Debug, Clone)]
pub struct McpSource {
    /// The mcp.json or plugin.json it came from.
    pub file: PathBuf,
    /// The `mcpServers` object, unparsed.
    pub servers: serde_json::Value,
    /// Relative `cwd` values resolve against this; a plugin's servers default to it (M4).
    pub cwd_base: PathBuf,
    /// Whether a server without `cwd` runs in `cwd_base` (plugins) or the workspace.
    pub default_cwd: PathBuf,
    pub origin: Origin,
}

/// What a session loaded.
pub struct Loaded {
    pub registry: Arc<Registry>,
    pub plugins: Vec<LoadedPlugin>,
    pub skills: Vec<crate::skills::Skill>,
    /// mcp.json files and plugins' `mcpServers`, in precedence order (E5, E7); the MCP layer
    /// parses and starts them.
    pub mcp_sources: Vec<McpSource>,
    /// Problems that did not stop loading (broken files, clashes), each naming its file.
    pub warnings: Vec<String>,
}

/// Load everything for a session.
pub fn load(opts: &LoadOptions) -> Loaded {
    let registry = Arc::new(Registry::new());
    let mut warnings = Vec::new();
    let mut loaded_plugins = Vec::new();
    crate::builtin_tools::register_builtins(&registry, opts.profile, &mut warnings);
    if opts.profile == ToolsProfile::Default {
        match crate::config_dir::plugins_dir() {
            Ok(dir) => {
                for plugin_dir in sorted_subdirs(&dir) {
                    if !plugin_dir.join("plugin.json").is_file() {
                        continue;
                    }
                    match plugins::load_plugin_dir(&plugin_dir, &registry, &mut warnings) {
                        Ok(p) => loaded_plugins.push(p),
                        Err(e) => warnings.push(e.to_string()),
                    }
                }
            }
            Err(e) => warnings.push(format!("config dir: {e}")),
        }
    }
    Loaded {
        registry,
        plugins: loaded_plugins,
        skills: Vec::new(),
        mcp_sources: Vec::new(),
        warnings,
    }
}

/// Subfolders of `dir`, sorted by name so the order (and so which tool wins a clash) is stable.
pub fn sorted_subdirs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}
