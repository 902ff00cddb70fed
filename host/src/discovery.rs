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

/// What a session loaded.
pub struct Loaded {
    pub registry: Arc<Registry>,
    pub plugins: Vec<LoadedPlugin>,
    /// Problems that did not stop loading (broken files, clashes), each naming its file.
    pub warnings: Vec<String>,
}

/// Load everything for a session.
pub fn load(opts: &LoadOptions) -> Loaded {
    let registry = Arc::new(Registry::new());
    let mut warnings = Vec::new();
    let mut loaded_plugins = Vec::new();
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
