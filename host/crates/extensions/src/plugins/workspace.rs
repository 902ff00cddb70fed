//! Wasm components of a trusted workspace's plugins (E4, T1): a folder in `<ws>/.agent/plugins/`
//! with `plugin.json` and the `.wasm` it names — the shape `plugins install` accepts — loaded
//! without an install step.
//!
//! The workspace is hostile, so nothing is written into it and nothing it holds is taken on its
//! word: the component must be a regular file inside the plugin folder (no symlink, no `..`),
//! at most [`MAX_WASM_BYTES`], and a component of our world. Its tools are listed once per
//! content: the first start that sees a `.wasm` compiles it into the component cache (saying
//! so on stderr), calls `list-tools`, checks the answer as install does and writes the list to
//! `<cache dir>/tool-lists/<sha256>.json`. Later starts hash the file and take the tools from
//! that record without compiling or instantiating; a changed file has a new hash, so it is
//! compiled and listed again. The first call checks the file still has the listed hash.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::install::{check_listed, RecordedTool, WasmDecl};
use cst_wasm::WasmPlugin;

/// Largest workspace `.wasm` read (64 MiB; a Python component is about 18 MiB).
pub const MAX_WASM_BYTES: u64 = 64 << 20;

/// `list-tools` of a workspace component runs at load, so it gets at most this long.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

const RECORD_FORMAT: u32 = 1;

/// What `list-tools` returned for one component content, kept in the cache dir.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ToolList {
    format: u32,
    sha256: String,
    tools: Vec<RecordedTool>,
}

/// `<cache dir>/tool-lists`: the recorded tool lists of workspace components, by content hash.
pub fn records_dir() -> Result<PathBuf, String> {
    cst_config::config_dir::cache_dir()
        .map(|d| d.join("tool-lists"))
        .map_err(|e| format!("cache dir: {e}"))
}

fn record_path(sha: &str) -> Result<PathBuf, String> {
    Ok(records_dir()?.join(format!("{sha}.json")))
}

/// A workspace plugin's component, ready to register: the runner and its tools.
pub struct WorkspaceComponent {
    pub plugin: Arc<WasmPlugin>,
    pub tools: Vec<RecordedTool>,
}

/// A problem with a workspace component: the file it concerns and what is wrong.
#[derive(Debug)]
pub struct Refused {
    pub file: PathBuf,
    pub message: String,
}

/// Load the component `decl` of the workspace plugin `name` in `dir`: checks, then the tools
/// from the record or, the first time this content is seen, from the component itself.
pub fn load(name: &str, dir: &Path, decl: &WasmDecl, workspace: &Path) -> Result<WorkspaceComponent, Refused> {
    let refused = |message: String| Refused {
        file: decl.file.clone(),
        message: strip_file(&decl.file, message),
    };
    check_inside(dir, &decl.file).map_err(refused)?;
    let bytes = cst_wasm::inspect::read_limited(&decl.file, MAX_WASM_BYTES).map_err(refused)?;
    cst_wasm::inspect::check_header(&decl.file, &bytes).map_err(refused)?;
    let sha = cst_wasm::cache::sha256_hex(&bytes);
    drop(bytes);
    let plugin = WasmPlugin::new(
        name,
        decl.file.clone(),
        Some(sha.clone()),
        decl.caps.clone(),
        decl.limits,
    )
    .with_max_bytes(MAX_WASM_BYTES)
    .with_changed_advice("reload the plugins (`/plugins reload`) or start again")
    .announce_compile();
    if let Some(tools) = read_record(&sha) {
        return Ok(WorkspaceComponent {
            plugin: Arc::new(plugin),
            tools,
        });
    }
    let timeout = decl.timeout.min(LIST_TIMEOUT);
    let listed = off_the_runtime(|| plugin.list_tools(workspace, timeout)).map_err(refused)?;
    let tools = check_listed(&decl.file, listed).map_err(refused)?;
    if let Err(e) = write_record(&sha, &tools) {
        // The record is an optimisation: without it the next start lists the tools again.
        tracing::warn!("cannot record the tools of {}: {e}", decl.file.display());
    }
    // The same runner: the component is compiled and linked already.
    Ok(WorkspaceComponent {
        plugin: Arc::new(plugin),
        tools,
    })
}

/// The component must be a regular file (not a symlink) whose real path is inside the real
/// plugin folder: nothing outside the folder is read through it.
fn check_inside(dir: &Path, file: &Path) -> Result<(), String> {
    let f = file.display();
    let meta = std::fs::symlink_metadata(file).map_err(|e| format!("{f}: cannot read: {e}"))?;
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{f}: a symlink; a workspace plugin's component must be a regular file inside its folder"
        ));
    }
    let real_dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let real = std::fs::canonicalize(file).map_err(|e| format!("{f}: cannot read: {e}"))?;
    if !real.starts_with(&real_dir) {
        return Err(format!(
            "{f}: leads outside the plugin folder (to {}); a workspace plugin's component must be a regular file inside its folder",
            real.display()
        ));
    }
    Ok(())
}

/// The recorded tools for content `sha`, if a valid record exists. A broken record is ignored
/// (and replaced once the tools are listed again).
fn read_record(sha: &str) -> Option<Vec<RecordedTool>> {
    let path = record_path(sha).ok()?;
    let text = std::fs::read_to_string(&path).ok()?;
    match serde_json::from_str::<ToolList>(&text) {
        Ok(r) if r.format == RECORD_FORMAT && r.sha256 == sha => Some(r.tools),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!("{}: not a valid tool list ({e}); listing again", path.display());
            None
        }
    }
}

/// Write the record atomically (temp file + rename).
fn write_record(sha: &str, tools: &[RecordedTool]) -> Result<(), String> {
    let path = record_path(sha)?;
    let dir = path.parent().ok_or("the record path has no parent")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let record = ToolList {
        format: RECORD_FORMAT,
        sha256: sha.to_string(),
        tools: tools.to_vec(),
    };
    let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string())?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    tmp.persist(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// Run an async wasm call to completion from synchronous discovery, whatever runtime (if any)
/// the caller is on: on a thread of its own with a runtime of its own, joined.
fn off_the_runtime<'a, T, F>(make: impl FnOnce() -> F + Send + 'a) -> Result<T, String>
where
    F: std::future::Future<Output = Result<T, String>> + 'a,
    T: Send + 'a,
{
    std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime to list the tools: {e}"))?;
            rt.block_on(make())
        })
        .join()
        .unwrap_or_else(|_| Err("listing the tools panicked".to_string()))
    })
}

/// The wasm layer's errors start with the file; a diagnostic names it separately.
fn strip_file(file: &Path, message: String) -> String {
    let prefix = format!("{}: ", file.display());
    match message.strip_prefix(&prefix) {
        Some(rest) => rest.to_string(),
        None => message,
    }
}
