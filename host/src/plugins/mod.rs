//! Plugins: `plugin.json` folders and bare `.wasm` components — the manifest, install/list/remove,
//! and turning one plugin folder into registered tools.

pub mod manifest;

pub use manifest::{CommandLine, CommandToolDecl, ManifestError, PluginManifest};

use std::path::{Path, PathBuf};

use crate::tools::Registry;

/// A plugin folder that loaded, with the names of the tools it registered.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    pub name: String,
    pub dir: PathBuf,
    pub file: PathBuf,
    pub manifest: PluginManifest,
    pub tools: Vec<String>,
}

/// Load one plugin folder: parse `plugin.json`, register its command tools (POSIX only) and its
/// wasm component's tools. A tool whose name is taken is skipped with a warning (E7, P2); a
/// broken manifest fails the whole plugin with an error naming the file.
pub fn load_plugin_dir(
    dir: &Path,
    registry: &Registry,
    warnings: &mut Vec<String>,
) -> Result<LoadedPlugin, ManifestError> {
    let file = dir.join("plugin.json");
    let manifest = PluginManifest::load(&file)?;
    let mut loaded = LoadedPlugin {
        name: manifest.name.clone(),
        dir: dir.to_path_buf(),
        file,
        manifest,
        tools: Vec::new(),
    };
    // Command tools (P1–P12); POSIX only, skipped with one message elsewhere.
    loaded.tools.extend(crate::command_tools::register_all(
        &loaded.manifest,
        &loaded.dir,
        &loaded.file,
        registry,
        warnings,
    ));
    Ok(loaded)
}
