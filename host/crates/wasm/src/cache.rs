//! The compile cache: `<cache dir>/components/<sha256 of the wasm>-<engine hash>.cwasm`.
//! Deserializing is `unsafe` (the artifact is trusted machine code), so an entry is used only
//! when its own sha256 matches the record written with it, and that record lives in the
//! **config dir** (`<config>/compile-cache/<same name>.sha256`), never beside the artifact: the
//! cache dir may be under a temp dir that a sandboxed shell can write, and whoever can swap an
//! artifact there could forge a sidecar too (issue 13 item 5). The config dir is never a
//! sandbox-writable root. The verified bytes are the ones deserialized (read once, no second
//! open). A missing, corrupt, swapped or stale entry is rebuilt, never trusted. Writes are atomic
//! (temp file + rename).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

use super::engine;

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Feeds `Hash` into sha256 so the engine key is stable across Rust releases.
struct ShaHasher(Sha256);
impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Hex key of everything that makes an artifact loadable: wasmtime version, target, config.
pub fn engine_key(engine: &Engine) -> String {
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    hex::encode(&h.0.finalize()[..8])
}

/// `<cache dir>/components`.
pub fn components_dir() -> Result<PathBuf, String> {
    cst_config::config_dir::cache_dir()
        .map(|d| d.join("components"))
        .map_err(|e| format!("cache dir: {e}"))
}

/// The cache file of a component with content hash `sha`.
pub fn artifact_path(engine: &Engine, sha: &str) -> Result<PathBuf, String> {
    Ok(components_dir()?.join(format!("{sha}-{}.cwasm", engine_key(engine))))
}

/// Where the sha256 of `artifact` is recorded: `<config dir>/compile-cache/<name>.sha256`.
pub fn record_path(artifact: &Path) -> Result<PathBuf, String> {
    let name = artifact.file_name().ok_or("artifact path has no file name")?;
    let mut n = name.to_owned();
    n.push(".sha256");
    cst_config::config_dir::config_dir()
        .map(|d| d.join("compile-cache").join(n))
        .map_err(|e| format!("config dir: {e}"))
}

/// When to print the `compiling …` line on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Never (benches, a tool call).
    Quiet,
    /// When compiling takes more than a second (install).
    IfSlow,
    /// Whenever the component is compiled rather than loaded from the cache (a workspace plugin
    /// seen for the first time: the user learns that something new was compiled).
    Always,
}

/// How a component was obtained (for the bench and install output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Cached,
    Compiled,
}

/// Load the component for `wasm` (content hash `sha`) from the cache, or compile it and write the
/// cache entry. `progress` says when a line is printed on stderr while compiling.
pub fn load_or_compile(file: &Path, wasm: &[u8], sha: &str, progress: Progress) -> Result<(Component, Origin), String> {
    let engine = engine::engine()?;
    let artifact = artifact_path(engine, sha)?;
    if let Some(c) = load_cached(engine, &artifact) {
        return Ok((c, Origin::Cached));
    }
    let component = compile(engine, file, wasm, progress)?;
    if let Err(e) = store(&component, &artifact) {
        // The cache is an optimisation: a read-only cache dir must not break plugins.
        tracing::warn!("cannot write the compile cache {}: {e}", artifact.display());
    }
    Ok((component, Origin::Compiled))
}

fn load_cached(engine: &Engine, artifact: &Path) -> Option<Component> {
    let expected = std::fs::read_to_string(record_path(artifact).ok()?).ok()?;
    let bytes = std::fs::read(artifact).ok()?;
    if sha256_hex(&bytes) != expected.trim() {
        tracing::warn!(
            "compile cache entry {} does not match its record in the config dir; rebuilding it",
            artifact.display()
        );
        return None;
    }
    // SAFETY: these bytes hash to what `store` recorded, in the config dir, for the artifact it
    // wrote for this engine configuration (the file name carries the engine key). They are the
    // bytes checked, not a second read of the file.
    match unsafe { Component::deserialize(engine, &bytes) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(
                "compile cache entry {} is stale ({e}); rebuilding it",
                artifact.display()
            );
            None
        }
    }
}

/// Compile `wasm`, printing a progress line as `progress` says.
pub fn compile(engine: &Engine, file: &Path, wasm: &[u8], progress: Progress) -> Result<Component, String> {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let name = file.display().to_string();
    let line = move || eprintln!("compiling {name} (large components take a few seconds)...");
    let notice = match progress {
        Progress::Quiet => None,
        Progress::Always => {
            line();
            None
        }
        Progress::IfSlow => Some(std::thread::spawn(move || {
            if done_rx.recv_timeout(Duration::from_secs(1)).is_err() {
                line();
            }
        })),
    };
    let started = Instant::now();
    let result = Component::from_binary(engine, wasm);
    drop(done_tx);
    if let Some(h) = notice {
        let _ = h.join();
    }
    let component = result.map_err(|e| format!("{}: not a valid wasm component: {e}", file.display()))?;
    tracing::debug!("compiled {} in {:?}", file.display(), started.elapsed());
    Ok(component)
}

/// Write the artifact and its checksum record (in the config dir) atomically.
pub fn store(component: &Component, artifact: &Path) -> Result<(), String> {
    let bytes = component.serialize().map_err(|e| format!("serialize: {e}"))?;
    let record = record_path(artifact)?;
    for dir in [artifact.parent(), record.parent()] {
        let dir = dir.ok_or("path has no parent")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    write_atomic(artifact, &bytes)?;
    write_atomic(&record, sha256_hex(&bytes).as_bytes())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().ok_or("no parent")?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    tmp.persist(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}
