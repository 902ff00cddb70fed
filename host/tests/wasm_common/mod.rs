//! Shared helpers of the wasm/plugins integration tests: locate the example components built by
//! `example-plugins/build.sh`, make plugin folders, run the real `cst-agent` binary with its
//! config and cache dirs in a temp dir.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A built component, e.g. `wasm("text_stats")`. Fails clearly when the examples are not built.
pub fn wasm(crate_name: &str) -> PathBuf {
    let p = repo()
        .join("example-plugins/target/wasm32-wasip2/release")
        .join(format!("{crate_name}.wasm"));
    assert!(
        p.is_file(),
        "{} is missing: run example-plugins/build.sh first",
        p.display()
    );
    p
}

/// An example plugin folder (plugin.json + the copied .wasm), e.g. `example_dir("json-query")`.
pub fn example_dir(name: &str) -> PathBuf {
    let dir = repo().join("example-plugins").join(name);
    assert!(
        dir.join(format!("{name}.wasm")).is_file(),
        "{}/{name}.wasm is missing: run example-plugins/build.sh first",
        dir.display()
    );
    dir
}

/// A temp home: config dir, cache dir and a workspace.
pub struct Env {
    pub tmp: tempfile::TempDir,
    cache: PathBuf,
}

/// One compile cache per test binary: compiling is slow in a debug build, and entries are keyed
/// by content and engine, so sharing is safe. Tests that damage the cache use `isolated()`.
static INSTALL_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
static SHARED_CACHE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
/// The checksum records of the shared cache's artifacts live in a config dir (never beside the
/// cache); the envs sharing the cache share this records folder too (a symlink), or every
/// env would recompile.
static SHARED_RECORDS: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

impl Env {
    pub fn new() -> Self {
        let cache = SHARED_CACHE
            .get_or_init(|| tempfile::tempdir().expect("tempdir").keep())
            .clone();
        Self::with_cache(Some(cache))
    }

    /// An env with a compile cache of its own.
    pub fn isolated() -> Self {
        Self::with_cache(None)
    }

    fn with_cache(cache: Option<PathBuf>) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["config", "cache", "ws", "src"] {
            std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
        }
        #[cfg(unix)]
        if cache.is_some() {
            let records = SHARED_RECORDS
                .get_or_init(|| tempfile::tempdir().expect("tempdir").keep())
                .clone();
            let cfg = tmp.path().join("config/cst-agent");
            std::fs::create_dir_all(&cfg).expect("mkdir");
            std::os::unix::fs::symlink(records, cfg.join("compile-cache")).expect("symlink");
        }
        let cache = cache.unwrap_or_else(|| tmp.path().join("cache"));
        Env { tmp, cache }
    }
    pub fn config(&self) -> PathBuf {
        self.tmp.path().join("config")
    }
    pub fn cache(&self) -> PathBuf {
        self.cache.clone()
    }
    pub fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }
    pub fn plugins_dir(&self) -> PathBuf {
        self.config().join("cst-agent/plugins")
    }
    pub fn components_dir(&self) -> PathBuf {
        self.cache().join("cst-agent/components")
    }

    /// `cst-agent --workspace <ws> ARGS...` with this env's config and cache dirs.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("cst-agent").expect("cst-agent binary");
        c.env("XDG_CONFIG_HOME", self.config())
            .env("XDG_CACHE_HOME", self.cache())
            .env_remove("CST_LOG")
            .arg("--workspace")
            .arg(self.ws())
            .args(args);
        c
    }

    /// Run and return (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().expect("run cst-agent");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub fn install(&self, path: &Path) -> String {
        // One install at a time per test binary: the first compiles into the shared cache, the
        // others load from it instead of compiling the same component in parallel.
        let _guard = INSTALL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let (code, out, err) = self.run(&["plugins", "install", &path.to_string_lossy()]);
        assert_eq!(code, 0, "install {} failed: {err}", path.display());
        out
    }

    /// A plugin folder under the temp dir with `manifest` as plugin.json and `wasm` copied in.
    pub fn plugin_dir(&self, name: &str, wasm_src: &Path, manifest: serde_json::Value) -> PathBuf {
        let dir = self.tmp.path().join("src").join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let file = manifest["wasm"].as_str().unwrap_or("plugin.wasm").to_string();
        std::fs::copy(wasm_src, dir.join(file)).expect("copy wasm");
        std::fs::write(dir.join("plugin.json"), manifest.to_string()).expect("write plugin.json");
        dir
    }
}

/// Files in `dir` (recursively, none when it does not exist).
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
