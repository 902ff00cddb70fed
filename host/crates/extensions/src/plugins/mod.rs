//! Plugins: `plugin.json` folders and bare `.wasm` components — the manifest, install/list/remove,
//! and turning one plugin folder into registered tools.

pub mod install;
pub mod workspace;

pub use crate::plugin_manifest::{CommandLine, CommandToolDecl, ManifestError, PluginManifest};

use std::path::{Path, PathBuf};

use std::sync::Arc;

use cst_protocol::{Diagnostic, DiagnosticKind};
use cst_registry::{Confinement, Registry, SourceKind, ToolSource, ToolSpec};
use cst_wasm::{WasmPlugin, WasmToolRunner};

/// Where a plugin folder was found; it decides where its wasm tools come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginPlace<'a> {
    /// Installed (`<config>/plugins`): the tools come from the install record `installed.json`.
    /// `contained` while the workspace is untrusted (T1): its command tools run in the plugin
    /// folder with `PYTHONSAFEPATH=1`, not in the workspace.
    Installed { contained: bool },
    /// `<ws>/.agent/plugins` of a trusted workspace (E4): no install step; the tools come from a
    /// record in the cache dir keyed by the component's content ([`workspace`]).
    Workspace(&'a Path),
}

/// A plugin folder that loaded, with the names of the tools it registered.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    pub name: String,
    pub dir: PathBuf,
    pub file: PathBuf,
    pub manifest: PluginManifest,
    pub tools: Vec<String>,
    /// Found in the workspace's `.agent/plugins` (so its paths are checked more strictly).
    pub from_workspace: bool,
}

/// Load one plugin folder: parse `plugin.json`, register its command tools (POSIX only) and its
/// wasm component's tools. A tool whose name is taken is skipped with a warning (E7, P2); a
/// broken manifest fails the whole plugin with an error naming the file. Its command tools run
/// in the workspace they are called for (the caller trusts it); discovery decides by trust.
pub fn load_plugin_dir(
    dir: &Path,
    registry: &Registry,
    warnings: &mut Vec<Diagnostic>,
) -> Result<LoadedPlugin, ManifestError> {
    let manifest = PluginManifest::load_dir(dir).unwrap_or_else(|| {
        Err(ManifestError::new(
            &dir.join("plugin.json"),
            "cannot read: no plugin.json",
        ))
    })?;
    load_plugin(
        dir,
        manifest,
        PluginPlace::Installed { contained: false },
        registry,
        warnings,
    )
}

/// [`load_plugin_dir`] for a manifest already read (discovery reads it first for the E7 check),
/// found at `place`.
pub fn load_plugin(
    dir: &Path,
    manifest: PluginManifest,
    place: PluginPlace<'_>,
    registry: &Registry,
    warnings: &mut Vec<Diagnostic>,
) -> Result<LoadedPlugin, ManifestError> {
    let file = manifest.file_in(dir);
    let mut loaded = LoadedPlugin {
        name: manifest.name.clone(),
        dir: dir.to_path_buf(),
        file,
        manifest,
        tools: Vec::new(),
        from_workspace: matches!(place, PluginPlace::Workspace(_)),
    };
    // The wasm part first: its errors (e.g. an unknown capability) fail the plugin before any
    // tool is registered.
    let wasm_tools = match place {
        PluginPlace::Installed { .. } => register_wasm_tools(&loaded, registry, warnings)?,
        PluginPlace::Workspace(ws) => register_workspace_wasm_tools(&loaded, ws, registry, warnings)?,
    };
    loaded.tools.extend(wasm_tools);
    // Command tools (P1–P12); POSIX only, skipped with one message elsewhere.
    loaded.tools.extend(crate::command_tools::register_all(
        &loaded.manifest,
        &loaded.dir,
        &loaded.file,
        matches!(place, PluginPlace::Installed { contained: true }),
        registry,
        warnings,
    ));
    Ok(loaded)
}

/// The wasm part of a plugin folder: tools come from the install record (`installed.json`), so
/// loading never compiles or instantiates; the component is loaded at its first call. A wasm
/// file that changed since install (size or mtime) or was never installed is skipped with a
/// warning; an unknown capability fails the plugin (D13).
fn register_wasm_tools(
    p: &LoadedPlugin,
    registry: &Registry,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Vec<String>, ManifestError> {
    let Some(decl) = install::wasm_decl(&p.dir, &p.file, &p.manifest)? else {
        return Ok(Vec::new());
    };
    let reinstall = format!("run `cst-agent plugins install {}`", p.dir.display());
    let skipped = |why: String| {
        Diagnostic::in_file(
            DiagnosticKind::NotInstalled,
            &p.file,
            format!("wasm tools skipped: {why}; {reinstall}"),
        )
    };
    let record = match install::InstalledRecord::load(&p.dir) {
        Ok(Some(r)) => r,
        Ok(None) => {
            warnings.push(skipped(format!(
                "the component was not installed (no {})",
                install::RECORD_FILE
            )));
            return Ok(Vec::new());
        }
        Err(e) => {
            warnings.push(skipped(e));
            return Ok(Vec::new());
        }
    };
    if !record.matches_file(&decl.file) {
        warnings.push(skipped(format!(
            "{} changed since it was installed",
            decl.file.display()
        )));
        return Ok(Vec::new());
    }
    let plugin = Arc::new(WasmPlugin::new(
        &p.name,
        decl.file.clone(),
        Some(record.sha256.clone()),
        decl.caps,
        decl.limits,
    ));
    Ok(register_recorded(
        p,
        plugin,
        record.tools,
        decl.timeout,
        registry,
        warnings,
    ))
}

/// The wasm part of a trusted workspace's plugin folder (E4): checked as hostile input, its
/// tools from the cache dir's record or, the first time, from the component
/// ([`workspace::load`]). A problem with the component skips its tools with a warning naming
/// the file; the plugin's other parts and every other plugin still load.
fn register_workspace_wasm_tools(
    p: &LoadedPlugin,
    ws: &Path,
    registry: &Registry,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Vec<String>, ManifestError> {
    let Some(decl) = install::wasm_decl(&p.dir, &p.file, &p.manifest)? else {
        return Ok(Vec::new());
    };
    match workspace::load(&p.name, &p.dir, &decl, ws) {
        Ok(c) => Ok(register_recorded(
            p,
            c.plugin,
            c.tools,
            decl.timeout,
            registry,
            warnings,
        )),
        Err(refused) => {
            warnings.push(Diagnostic::in_file(
                DiagnosticKind::BrokenFile,
                refused.file,
                format!("wasm tools skipped: {}", refused.message),
            ));
            Ok(Vec::new())
        }
    }
}

/// Register a component's recorded tools, all run by `plugin`; a taken name is a warning (E7).
fn register_recorded(
    p: &LoadedPlugin,
    plugin: Arc<WasmPlugin>,
    tools: Vec<install::RecordedTool>,
    timeout: std::time::Duration,
    registry: &Registry,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let runner = Arc::new(WasmToolRunner { plugin });
    let mut names = Vec::new();
    for t in tools {
        let spec = ToolSpec {
            name: t.name.clone(),
            description: t.description,
            input_schema: t.input_schema,
            perm: t.perm,
            source: ToolSource {
                kind: SourceKind::Wasm,
                owner: p.name.clone(),
                file: Some(p.file.clone()),
            },
            timeout,
            // A component reaches only what its capabilities pre-open, whatever the gate says.
            confine_with: Confinement::None,
        };
        match registry.register(spec, runner.clone()) {
            Ok(()) => names.push(t.name),
            Err(clash) => warnings.push(clash.into()),
        }
    }
    names
}
