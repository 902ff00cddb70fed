//! `cst-agent plugins install|list|remove` (H4): portable (no POSIX-only calls), validating a
//! wasm component fully before it lands in `<config dir>/plugins/<name>/`, and recording its
//! tool metadata in `installed.json` so start-up and `tools list` never compile or instantiate.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::plugin_manifest::{ManifestError, PluginManifest};
use cst_registry::schema::InputSchema;
use cst_registry::{is_valid_tool_name, timeout_from_secs, Perm};
use cst_wasm::{Capabilities, Limits, WasmPlugin};

/// File name of the install record inside an installed plugin folder.
pub const RECORD_FILE: &str = "installed.json";
const RECORD_FORMAT: u32 = 1;

/// What install recorded about a plugin's wasm component.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstalledRecord {
    pub format: u32,
    pub name: String,
    /// The component file, relative to the plugin folder.
    pub wasm: String,
    pub sha256: String,
    pub size: u64,
    /// Modification time of the installed copy (seconds, nanoseconds since the Unix epoch):
    /// with `size`, the cheap check at load that the file is still the one recorded.
    pub mtime: (u64, u32),
    /// The `cst:plugin` version the component was built for.
    pub world_version: String,
    pub tools: Vec<RecordedTool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub perm: Perm,
}

impl InstalledRecord {
    pub fn load(dir: &Path) -> Result<Option<Self>, String> {
        let file = dir.join(RECORD_FILE);
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: cannot read: {e}", file.display())),
        };
        let rec: InstalledRecord =
            serde_json::from_str(&text).map_err(|e| format!("{}: not a valid install record: {e}", file.display()))?;
        if rec.format != RECORD_FORMAT {
            return Err(format!(
                "{}: record format {} is not {RECORD_FORMAT}",
                file.display(),
                rec.format
            ));
        }
        Ok(Some(rec))
    }

    /// True when the wasm file still has the recorded size and modification time.
    pub fn matches_file(&self, wasm: &Path) -> bool {
        match std::fs::metadata(wasm) {
            Ok(m) => m.len() == self.size && mtime(&m) == Some(self.mtime),
            Err(_) => false,
        }
    }
}

fn mtime(m: &std::fs::Metadata) -> Option<(u64, u32)> {
    let d = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((d.as_secs(), d.subsec_nanos()))
}

/// Plugin folder names (and so plugin names) are `[A-Za-z0-9_-]`: safe on every filesystem.
pub fn valid_plugin_name(name: &str) -> bool {
    is_valid_tool_name(name)
}

/// The wasm part of a manifest, checked the same way at install and at load.
pub struct WasmDecl {
    pub file: PathBuf,
    pub caps: Capabilities,
    pub limits: Limits,
    pub timeout: Duration,
}

/// Check `wasm`, `capabilities`, `limits` and `timeout` of a manifest; `None` when it has no wasm.
pub fn wasm_decl(dir: &Path, manifest_file: &Path, m: &PluginManifest) -> Result<Option<WasmDecl>, ManifestError> {
    let Some(wasm) = &m.wasm else {
        if !m.capabilities.is_empty() {
            return Err(ManifestError::new(
                manifest_file,
                "`capabilities` needs a `wasm` component",
            ));
        }
        return Ok(None);
    };
    let rel = Path::new(wasm);
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(ManifestError::new(
            manifest_file,
            format!("`wasm` must be a file inside the plugin folder, not `{wasm}`"),
        ));
    }
    let caps = Capabilities::parse(&m.capabilities)
        .map_err(|e| ManifestError::new(manifest_file, format!("`capabilities`: {e}")))?;
    let timeout =
        timeout_from_secs(m.timeout).map_err(|e| ManifestError::new(manifest_file, format!("`timeout`: {e}")))?;
    Ok(Some(WasmDecl {
        file: dir.join(rel),
        caps,
        limits: Limits {
            memory_mb: m.limits.memory_mb.unwrap_or(cst_wasm::DEFAULT_MEMORY_MB),
            fuel: m.limits.fuel,
        },
        timeout,
    }))
}

/// What an install did.
#[derive(Debug, Clone)]
pub struct Installed {
    pub name: String,
    pub dir: PathBuf,
    pub tools: Vec<String>,
}

/// Install `path` (a `.wasm` component or a folder with plugin.json) into `plugins_dir`.
/// Nothing is changed there unless every check passes.
pub async fn install(path: &Path, plugins_dir: &Path, workspace: &Path) -> Result<Installed, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::create_dir_all(plugins_dir).map_err(|e| format!("{}: {e}", plugins_dir.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".installing-")
        .tempdir_in(plugins_dir)
        .map_err(|e| format!("{}: {e}", plugins_dir.display()))?;
    let stage = staging.path();

    let name = if meta.is_dir() {
        let file = crate::plugin_manifest::manifest_file(path).unwrap_or_else(|| path.join("plugin.json"));
        let m = PluginManifest::load_dir(path)
            .unwrap_or_else(|| {
                Err(ManifestError::new(
                    &file,
                    "cannot read: no plugin.json (nor .claude-plugin/plugin.json)",
                ))
            })
            .map_err(|e| e.to_string())?;
        if !valid_plugin_name(&m.name) {
            return Err(format!(
                "{}: plugin name `{}` must be 1-63 characters of [A-Za-z0-9_-]",
                file.display(),
                m.name
            ));
        }
        copy_tree(path, stage)?;
        m.name
    } else {
        if path.extension().and_then(|e| e.to_str()) != Some("wasm") {
            return Err(format!(
                "{}: expected a .wasm component or a folder with plugin.json",
                path.display()
            ));
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("plugin");
        let name = cst_registry::sanitize_tool_name(stem);
        let wasm_name = format!("{name}.wasm");
        std::fs::copy(path, stage.join(&wasm_name)).map_err(|e| format!("{}: cannot copy: {e}", path.display()))?;
        let manifest = serde_json::json!({
            "name": name,
            "description": format!("wasm component installed from {}", path.display()),
            "wasm": wasm_name,
            "capabilities": [],
        });
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
        std::fs::write(stage.join("plugin.json"), text).map_err(|e| format!("{}: {e}", stage.display()))?;
        name
    };

    // Validate the staged copy: that is exactly what will be loaded later. Errors name the
    // user's path, not the staging folder.
    let unstage = |e: ManifestError| {
        let shown = if meta.is_dir() {
            crate::plugin_manifest::manifest_file(path).unwrap_or_else(|| path.join("plugin.json"))
        } else {
            path.to_path_buf()
        };
        format!("{}: {}", shown.display(), e.message)
    };
    let m = PluginManifest::load_dir(stage)
        .unwrap_or_else(|| {
            Err(ManifestError::new(
                &stage.join("plugin.json"),
                "cannot read: no plugin.json",
            ))
        })
        .map_err(unstage)?;
    let file = m.file_in(stage);
    let mut tools = Vec::new();
    if let Some(decl) = wasm_decl(stage, &file, &m).map_err(unstage)? {
        let shown = if meta.is_dir() {
            path.join(m.wasm.as_deref().unwrap_or(""))
        } else {
            path.to_path_buf()
        };
        let record = inspect_component(&name, &decl, &shown, workspace).await?;
        tools = record.tools.iter().map(|t| t.name.clone()).collect();
        let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string())?;
        std::fs::write(stage.join(RECORD_FILE), text).map_err(|e| format!("{}: {e}", stage.display()))?;
    }

    let dest = plugins_dir.join(&name);
    if dest.exists() {
        std::fs::remove_dir_all(&dest).map_err(|e| format!("cannot replace {}: {e}", dest.display()))?;
    }
    let stage = staging.keep();
    std::fs::rename(&stage, &dest).map_err(|e| {
        let _ = std::fs::remove_dir_all(&stage);
        format!("cannot move the plugin into {}: {e}", dest.display())
    })?;
    // A rename keeps the modification time, so the record's size+mtime stay valid.
    Ok(Installed { name, dir: dest, tools })
}

/// Compile (with progress), check the world, call `list-tools` once, check every tool.
/// `shown` is the path named in errors (the user's file, not the staging copy).
async fn inspect_component(
    name: &str,
    decl: &WasmDecl,
    shown: &Path,
    workspace: &Path,
) -> Result<InstalledRecord, String> {
    let bytes = std::fs::read(&decl.file).map_err(|e| format!("{}: cannot read: {e}", shown.display()))?;
    cst_wasm::inspect::check_header(shown, &bytes)?;
    let sha = cst_wasm::cache::sha256_hex(&bytes);
    let (component, _) = cst_wasm::cache::load_or_compile(shown, &bytes, &sha, cst_wasm::cache::Progress::IfSlow)?;
    let engine = cst_wasm::engine::engine()?;
    let world_version = cst_wasm::inspect::world_version(shown, engine, &component)?;
    drop(component);

    let plugin = WasmPlugin::new(
        name,
        decl.file.clone(),
        Some(sha.clone()),
        decl.caps.clone(),
        decl.limits,
    );
    let listed = plugin
        .list_tools(workspace, decl.timeout)
        .await
        .map_err(|e| format!("{}: {e}", shown.display()))?;
    let tools = check_listed(shown, listed)?;
    let meta = std::fs::metadata(&decl.file).map_err(|e| e.to_string())?;
    Ok(InstalledRecord {
        format: RECORD_FORMAT,
        name: name.to_string(),
        wasm: decl
            .file
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256: sha,
        size: meta.len(),
        mtime: mtime(&meta).unwrap_or((0, 0)),
        world_version,
        tools,
    })
}

/// Check what `list-tools` returned — at least one tool, valid and distinct names, input
/// schemas that are JSON Schema — and turn it into the recorded form. `shown` is the file named
/// in errors. Install and workspace plugins check the same way.
pub fn check_listed(shown: &Path, listed: Vec<cst_wasm::ListedTool>) -> Result<Vec<RecordedTool>, String> {
    if listed.is_empty() {
        return Err(format!("{}: list-tools returned no tools", shown.display()));
    }
    let mut tools: Vec<RecordedTool> = Vec::new();
    for t in listed {
        if !is_valid_tool_name(&t.name) {
            return Err(format!(
                "{}: tool name `{}` is not valid: 1-63 characters of [A-Za-z0-9_-]",
                shown.display(),
                t.name
            ));
        }
        if tools.iter().any(|x| x.name == t.name) {
            return Err(format!("{}: tool `{}` is listed twice", shown.display(), t.name));
        }
        let schema: Value = serde_json::from_str(&t.input_schema)
            .map_err(|e| format!("{}: tool `{}`: input schema is not JSON: {e}", shown.display(), t.name))?;
        InputSchema::compile(&schema).map_err(|e| format!("{}: tool `{}`: {e}", shown.display(), t.name))?;
        tools.push(RecordedTool {
            name: t.name,
            description: t.description,
            input_schema: schema,
            perm: t.perm,
        });
    }
    Ok(tools)
}

/// Copy a plugin folder; build output (`target`), VCS data and symlinks are not copied.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let walker = walkdir::WalkDir::new(from)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0 || !matches!(e.file_name().to_str(), Some("target" | ".git" | "node_modules"))
        });
    for entry in walker {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let rel = entry.path().strip_prefix(from).map_err(|e| e.to_string())?;
        let dest = to.join(rel);
        let ft = entry.file_type();
        if ft.is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &dest).map_err(|e| format!("{}: {e}", entry.path().display()))?;
        } else {
            tracing::warn!("not copying {} (not a regular file)", entry.path().display());
        }
    }
    Ok(())
}

/// One row of `plugins list`.
#[derive(Debug, Clone, Serialize)]
pub struct PluginRow {
    pub name: String,
    pub dir: PathBuf,
    pub description: String,
    pub wasm: Option<String>,
    pub capabilities: Vec<String>,
    pub tools: Vec<String>,
    /// `ok`, or what is wrong (broken manifest, needs reinstall).
    pub status: String,
}

/// Every plugin folder in `plugins_dir`, sorted by name.
pub fn list(plugins_dir: &Path) -> Vec<PluginRow> {
    let mut rows = Vec::new();
    for dir in cst_config::sorted_subdirs(plugins_dir) {
        let dir_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if dir_name.starts_with('.') {
            continue;
        }
        let file = crate::plugin_manifest::manifest_file(&dir).unwrap_or_else(|| dir.join("plugin.json"));
        let loaded = PluginManifest::load_dir(&dir)
            .unwrap_or_else(|| Err(ManifestError::new(&file, "cannot read: no plugin.json")));
        let m = match loaded {
            Ok(m) => m,
            Err(e) => {
                rows.push(PluginRow {
                    name: dir_name,
                    dir,
                    description: String::new(),
                    wasm: None,
                    capabilities: Vec::new(),
                    tools: Vec::new(),
                    status: format!("broken: {e}"),
                });
                continue;
            }
        };
        let mut tools: Vec<String> = m.tools.iter().map(|t| t.name.clone()).collect();
        let mut status = "ok".to_string();
        if let Err(e) = wasm_decl(&dir, &file, &m) {
            status = format!("broken: {e}");
        } else if m.wasm.is_some() {
            match InstalledRecord::load(&dir) {
                Ok(Some(rec)) => {
                    if !rec.matches_file(&dir.join(&rec.wasm)) {
                        status = "wasm changed since install: run `cst-agent plugins install` again".into();
                    }
                    tools.extend(rec.tools.iter().map(|t| t.name.clone()));
                }
                Ok(None) => status = "not installed (no installed.json): run `cst-agent plugins install`".into(),
                Err(e) => status = format!("broken: {e}"),
            }
        }
        rows.push(PluginRow {
            name: m.name,
            dir,
            description: m.description,
            wasm: m.wasm,
            capabilities: m.capabilities,
            tools,
            status,
        });
    }
    rows
}

/// Remove the installed plugin `name` (and its compile-cache entries).
pub fn remove(plugins_dir: &Path, name: &str) -> Result<PathBuf, String> {
    if !valid_plugin_name(name) {
        return Err(format!("`{name}` is not a plugin name"));
    }
    let dir = plugins_dir.join(name);
    if crate::plugin_manifest::manifest_file(&dir).is_none() {
        return Err(format!(
            "no installed plugin named `{name}` in {}",
            plugins_dir.display()
        ));
    }
    let sha = InstalledRecord::load(&dir).ok().flatten().map(|r| r.sha256);
    std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    if let (Some(sha), Ok(cache)) = (sha, cst_wasm::cache::components_dir()) {
        // Another installed plugin may share the same component; it is recompiled on demand.
        if let Ok(rd) = std::fs::read_dir(&cache) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(&sha) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    Ok(dir)
}
