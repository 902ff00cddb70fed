//! A wasm plugin's tools as a [`ToolRunner`]. The component is loaded lazily at the first call
//! (from the compile cache) and kept as an `InstancePre`; every call gets a fresh `Store` with
//! its own WASI context, fuel, memory cap and deadline, so a trap poisons nothing: the next
//! call starts clean.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::io::AsyncWrite;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::{cache, engine, inspect, Capabilities, DEFAULT_MEMORY_MB};
use cst_registry::{Confinement, Failure, Invocation, Perm, ToolRunner};

/// Host bindings of `wit/v0.1.0`.
pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../../../wit/v0.1.0",
        exports: { default: async },
    });
}

use bindings::cst::plugin::host::Level;
use bindings::exports::cst::plugin::tool;
use bindings::PluginPre;

/// WASI p2 + the `cst:plugin/host` import, linked once for the process's engine. Here rather
/// than in `engine` because it needs this module's bindings and store state.
fn linker() -> Result<&'static Linker<State>, String> {
    static LINKER: OnceLock<Result<Linker<State>, String>> = OnceLock::new();
    LINKER
        .get_or_init(|| {
            let mut linker: Linker<State> = Linker::new(engine::engine()?);
            wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| format!("cannot link WASI: {e}"))?;
            bindings::Plugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
                .map_err(|e| format!("cannot link host: {e}"))?;
            Ok(linker)
        })
        .as_ref()
        .map_err(|e| e.clone())
}

/// Captured guest stdout/stderr per call; the rest is dropped (the guest never sees an error).
const OUTPUT_CAP: usize = 64 * 1024;

/// Resource limits of one plugin (plugin.json `limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub memory_mb: u64,
    /// `None` = no fuel budget (the deadline still applies).
    pub fuel: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mb: DEFAULT_MEMORY_MB,
            fuel: None,
        }
    }
}

/// A tool as `list-tools` reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    /// JSON text, unparsed.
    pub input_schema: String,
    pub perm: Perm,
}

/// Per-store state.
pub(crate) struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryCap,
    plugin: Arc<str>,
    timed_out: bool,
    /// `log` lines of this call so far, and how many were dropped past [`MAX_LOG_LINES`].
    log_lines: usize,
    log_dropped: usize,
}

/// Most `log` lines one call may emit; the rest are counted and reported in one line (a plugin
/// once logged 100,000 lines of 1 KB to the user's terminal).
pub const MAX_LOG_LINES: usize = 200;
/// Longest `log` message kept, in bytes; the rest of a line is cut.
pub const MAX_LOG_LINE_BYTES: usize = 2048;
/// Host resources (open files, streams, pollables) one call may hold at once. Each open file is
/// a host descriptor: without a cap a `workspace-read` guest opened ~20,000 and could exhaust the
/// host's descriptor limit. Far above what a tool walking a tree keeps open.
pub const MAX_RESOURCES: usize = 1024;

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl bindings::cst::plugin::host::Host for State {
    fn log(&mut self, level: Level, mut message: String) {
        if self.log_lines >= MAX_LOG_LINES {
            self.log_dropped += 1;
            return;
        }
        self.log_lines += 1;
        if message.len() > MAX_LOG_LINE_BYTES {
            let mut cut = MAX_LOG_LINE_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        let plugin = &*self.plugin;
        match level {
            Level::Trace => tracing::trace!(target: "cst_agent::plugin", plugin, "{message}"),
            Level::Debug => tracing::debug!(target: "cst_agent::plugin", plugin, "{message}"),
            Level::Info => tracing::info!(target: "cst_agent::plugin", plugin, "{message}"),
            Level::Warn => tracing::warn!(target: "cst_agent::plugin", plugin, "{message}"),
            Level::Error => tracing::error!(target: "cst_agent::plugin", plugin, "{message}"),
        }
    }
}

/// The memory cap, on the **sum** of every linear memory of the store (a component can have
/// several; each under the cap must not add up to more). It records a refused growth because
/// wasmtime reports it as a plain error, not a `Trap`, and we want the plain reason
/// `memory limit of N MiB exceeded`.
struct MemoryCap {
    bytes: usize,
    /// Bytes of all memories so far (each growth adds `desired - current`).
    used: usize,
    exceeded: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let total = self.used.saturating_add(desired.saturating_sub(current));
        if total > self.bytes {
            self.exceeded = true;
            return Err(wasmtime::Error::msg("memory limit exceeded"));
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// Guest stdout/stderr: kept up to [`OUTPUT_CAP`] bytes, the rest counted and dropped.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<(Vec<u8>, usize)>>);

impl Captured {
    fn take(&self) -> (String, usize) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&g.0).into_owned();
        let dropped = g.1;
        *g = (Vec::new(), 0);
        (text, dropped)
    }
}

impl IsTerminal for Captured {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Captured {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for Captured {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = OUTPUT_CAP.saturating_sub(g.0.len());
        let keep = buf.len().min(room);
        g.0.extend_from_slice(&buf[..keep]);
        g.1 += buf.len() - keep;
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// One wasm plugin (installed, or from a trusted workspace); shared by all of its tools.
pub struct WasmPlugin {
    name: Arc<str>,
    wasm: PathBuf,
    /// sha256 recorded at install (or when a workspace plugin was loaded); the file is checked
    /// against it before it is loaded.
    expected_sha256: Option<String>,
    caps: Capabilities,
    limits: Limits,
    /// Largest `.wasm` read; `None`: no limit (an installed plugin is the user's own file).
    max_bytes: Option<u64>,
    /// What to do when the file no longer has the expected sha256; `None`: reinstall.
    changed_advice: Option<String>,
    /// When `list_tools` compiles, always say so (not only when it is slow).
    announce_compile: bool,
    pre: OnceLock<Result<PluginPre<State>, String>>,
}

impl WasmPlugin {
    pub fn new(name: &str, wasm: PathBuf, expected_sha256: Option<String>, caps: Capabilities, limits: Limits) -> Self {
        Self {
            name: Arc::from(name),
            wasm,
            expected_sha256,
            caps,
            limits,
            max_bytes: None,
            changed_advice: None,
            announce_compile: false,
            pre: OnceLock::new(),
        }
    }

    /// Refuse a `.wasm` file larger than `max` bytes without reading it (a workspace's plugin).
    pub fn with_max_bytes(mut self, max: u64) -> Self {
        self.max_bytes = Some(max);
        self
    }

    /// What the error says to do when the file changed since its sha256 was taken.
    pub fn with_changed_advice(mut self, advice: impl Into<String>) -> Self {
        self.changed_advice = Some(advice.into());
        self
    }

    /// Print the `compiling …` line whenever `list_tools` compiles the component.
    pub fn announce_compile(mut self) -> Self {
        self.announce_compile = true;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the component is loaded and pre-linked (the next call compiles nothing).
    pub fn is_loaded(&self) -> bool {
        self.pre.get().is_some()
    }

    /// Load (cache or compile), check the world version, and pre-link once.
    pub fn prepare(&self, progress: bool) -> Result<(), String> {
        let progress = if progress {
            cache::Progress::IfSlow
        } else {
            cache::Progress::Quiet
        };
        self.pre_or_load(progress).map(|_| ())
    }

    fn pre_or_load(&self, progress: cache::Progress) -> Result<&PluginPre<State>, String> {
        self.pre
            .get_or_init(|| self.load(progress))
            .as_ref()
            .map_err(|e| e.clone())
    }

    fn load(&self, progress: cache::Progress) -> Result<PluginPre<State>, String> {
        let bytes = match self.max_bytes {
            Some(max) => inspect::read_limited(&self.wasm, max)?,
            None => std::fs::read(&self.wasm).map_err(|e| format!("{}: cannot read: {e}", self.wasm.display()))?,
        };
        inspect::check_header(&self.wasm, &bytes)?;
        let sha = cache::sha256_hex(&bytes);
        if let Some(expected) = &self.expected_sha256 {
            if *expected != sha {
                return Err(match &self.changed_advice {
                    None => format!(
                        "{}: changed since it was installed (sha256 {sha}, recorded {expected}); run `cst-agent plugins install` again",
                        self.wasm.display()
                    ),
                    Some(advice) => format!(
                        "{}: changed since its tools were listed (sha256 {sha}, listed {expected}); {advice}",
                        self.wasm.display()
                    ),
                });
            }
        }
        let (component, _) = cache::load_or_compile(&self.wasm, &bytes, &sha, progress)?;
        let engine = engine::engine()?;
        inspect::world_version(&self.wasm, engine, &component)?;
        let linker = linker()?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| format!("{}: cannot link: {e}", self.wasm.display()))?;
        PluginPre::new(pre).map_err(|e| format!("{}: {e}", self.wasm.display()))
    }

    fn new_store(
        &self,
        caps: &Capabilities,
        workspace: &Path,
        timeout: Duration,
    ) -> Result<(Store<State>, Captured, Captured), String> {
        let engine = engine::engine()?;
        let out = Captured::default();
        let err = Captured::default();
        // Never inherit the host's environment, arguments, stdio or network.
        let mut b = WasiCtxBuilder::new();
        b.stdout(out.clone()).stderr(err.clone());
        if caps.workspace_read || caps.workspace_write {
            let perms = if caps.workspace_write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            // Rust std and CPython on wasip2 resolve relative paths against a `.` preopen.
            for guest in ["/workspace", "."] {
                b.preopened_dir(workspace, guest, perms)
                    .map_err(|e| format!("cannot open the workspace {}: {e}", workspace.display()))?;
            }
        }
        for name in &caps.env {
            if let Ok(v) = std::env::var(name) {
                b.env(name, v);
            }
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        let state = State {
            wasi: b.build(),
            table,
            limiter: MemoryCap {
                bytes: usize::try_from(self.limits.memory_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
                used: 0,
                exceeded: false,
            },
            plugin: self.name.clone(),
            timed_out: false,
            log_lines: 0,
            log_dropped: 0,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limiter);
        store
            .set_fuel(self.limits.fuel.unwrap_or(u64::MAX))
            .map_err(|e| format!("fuel: {e}"))?;
        // Checked on every tick: yields to tokio (so cancellation and the registry's backstop
        // can act) and stops the guest once the wall-clock deadline has passed.
        let deadline = Instant::now() + timeout;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut ctx| {
            if Instant::now() >= deadline {
                ctx.data_mut().timed_out = true;
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Ok((store, out, err))
    }

    /// The one line that reports the `log` lines a call had dropped; returns how many.
    fn log_dropped(&self, store: &Store<State>) -> usize {
        let dropped = store.data().log_dropped;
        if dropped > 0 {
            let plugin = &*self.name;
            tracing::warn!(
                target: "cst_agent::plugin",
                plugin,
                "{dropped} more log lines of this call dropped (at most {MAX_LOG_LINES} per call)"
            );
        }
        dropped
    }

    fn log_output(&self, out: &Captured, err: &Captured) {
        for (stream, c) in [("stdout", out), ("stderr", err)] {
            let (text, dropped) = c.take();
            if !text.is_empty() {
                let plugin = &*self.name;
                tracing::info!(target: "cst_agent::plugin", plugin, stream, dropped, "{}", text.trim_end());
            }
        }
    }

    fn classify(&self, store: &Store<State>, e: &wasmtime::Error, timeout: Duration) -> Failure {
        let state = store.data();
        if state.timed_out || matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return Failure::TimedOut {
                message: format!("timed out after {} s", timeout.as_secs()),
            };
        }
        if state.limiter.exceeded {
            return failed(format!("memory limit of {} MiB exceeded", self.limits.memory_mb));
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => failed("out of fuel".into()),
            Some(Trap::StackOverflow) => failed("stack overflow".into()),
            Some(t) => failed(format!("wasm trap: {t}")),
            None => failed(format!("wasm error: {e}")),
        }
    }

    /// `list-tools`, run under the plugin's limits and deadline but with no capabilities (used by
    /// install and by a workspace plugin's first load).
    pub async fn list_tools(&self, workspace: &Path, timeout: Duration) -> Result<Vec<ListedTool>, String> {
        let progress = if self.announce_compile {
            cache::Progress::Always
        } else {
            cache::Progress::IfSlow
        };
        let pre = self.pre_or_load(progress)?;
        // No capabilities: a tool list is a description, and listing happens before anyone chose
        // to run the plugin (install, a workspace plugin's first load).
        let (mut store, out, err) = self.new_store(&Capabilities::default(), workspace, timeout)?;
        let result = within_deadline(timeout, async {
            let inst = pre.instantiate_async(&mut store).await?;
            inst.cst_plugin_tool().call_list_tools(&mut store).await
        })
        .await;
        self.log_output(&out, &err);
        self.log_dropped(&store);
        let list = result.map_err(|e| match self.classify(&store, &e, timeout) {
            Failure::Failed { message, .. } | Failure::TimedOut { message } => format!("list-tools: {message}"),
        })?;
        Ok(list
            .into_iter()
            .map(|t| ListedTool {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
                perm: match t.perm {
                    tool::Perm::Read => Perm::Read,
                    tool::Perm::Write => Perm::Write,
                    tool::Perm::Net => Perm::Net,
                    tool::Perm::Shell => Perm::Shell,
                },
            })
            .collect())
    }

    /// Call tool `name` with JSON `arguments` in a fresh store.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        workspace: &Path,
        timeout: Duration,
    ) -> Result<String, Failure> {
        // Loaded before (on the blocking pool, see [`WasmToolRunner`]); a compile here says so.
        let pre = self.pre_or_load(cache::Progress::Always).map_err(failed)?;
        let (mut store, out, err) = self.new_store(&self.caps, workspace, timeout).map_err(failed)?;
        let result = within_deadline(timeout, async {
            let inst = pre.instantiate_async(&mut store).await?;
            inst.cst_plugin_tool().call_call_tool(&mut store, name, arguments).await
        })
        .await;
        self.log_output(&out, &err);
        self.log_dropped(&store);
        match result {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(message)) => Err(failed(message)),
            Err(e) => Err(self.classify(&store, &e, timeout)),
        }
    }
}

/// Run a call's future until `timeout` has passed, whatever the guest is doing. The epoch ticker
/// stops a guest that computes; a guest blocked in a host call (a WASI `sleep`, a poll) gets no
/// tick, so the future itself is dropped at the deadline (plus a few ms of slack, so the epoch
/// path reports first when it can). Dropping it abandons the store, which is never reused.
async fn within_deadline<T>(
    timeout: Duration,
    fut: impl std::future::Future<Output = wasmtime::Result<T>>,
) -> wasmtime::Result<T> {
    match tokio::time::timeout(timeout + Duration::from_millis(20), fut).await {
        Ok(r) => r,
        Err(_) => Err(wasmtime::Error::new(Trap::Interrupt)),
    }
}

fn failed(message: String) -> Failure {
    Failure::Failed {
        message,
        exit_code: None,
    }
}

/// The registry calls a wasm tool by its registered name, which is the name `list-tools` gave.
pub struct WasmToolRunner {
    pub plugin: Arc<WasmPlugin>,
}

impl ToolRunner for WasmToolRunner {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            match call.confinement {
                // Whatever the gate decided, a component reaches only what its capabilities
                // pre-open (at most the workspace); there is nothing more to confine.
                Confinement::None | Confinement::WorkspacePaths | Confinement::ProcessSandbox => {}
            }
            let args = serde_json::to_string(call.args).map_err(|e| failed(format!("cannot encode arguments: {e}")))?;
            // The first call may compile (a cold cache: seconds for a large component), which
            // must not block the async runtime: it runs on the blocking pool, with the
            // "compiling…" line (issue 14 item 15).
            if !self.plugin.is_loaded() {
                let plugin = self.plugin.clone();
                tokio::task::spawn_blocking(move || plugin.pre_or_load(cache::Progress::Always).map(|_| ()))
                    .await
                    .map_err(|e| failed(format!("loading the component failed: {e}")))?
                    .map_err(failed)?;
            }
            self.plugin
                .call(&call.spec.name, &args, &call.ctx.workspace, call.spec.timeout)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::component::Component;

    /// A component with two core instances, each with its own memory: each growth alone stays
    /// under the cap, together they pass it (issue 13 item 8: the cap is on the sum).
    const TWO_MEMORIES: &str = r#"
        (component
          (core module $m
            (memory 1)
            (func (export "grow") (param i32) (result i32) local.get 0 memory.grow))
          (core instance $a (instantiate $m))
          (core instance $b (instantiate $m))
          (func (export "grow-a") (param "pages" u32) (result s32) (canon lift (core func $a "grow")))
          (func (export "grow-b") (param "pages" u32) (result s32) (canon lift (core func $b "grow"))))
    "#;

    #[tokio::test]
    async fn the_memory_cap_is_on_the_sum_of_a_components_memories() {
        let engine = engine::engine().expect("engine");
        let bytes = wat::parse_str(TWO_MEMORIES).expect("wat");
        let component = Component::new(engine, &bytes).expect("component");
        let linker: Linker<MemoryCap> = Linker::new(engine);
        // 4 MiB: two 1-page memories, then 40 pages (2.5 MiB) each.
        let mut store = Store::new(
            engine,
            MemoryCap {
                bytes: 4 << 20,
                used: 0,
                exceeded: false,
            },
        );
        store.limiter(|s| s);
        store.set_fuel(u64::MAX).expect("fuel");
        store.set_epoch_deadline(u64::MAX / 2);
        let inst = linker
            .instantiate_async(&mut store, &component)
            .await
            .expect("instantiate");
        let grow_a = inst
            .get_typed_func::<(u32,), (i32,)>(&mut store, "grow-a")
            .expect("grow-a");
        let grow_b = inst
            .get_typed_func::<(u32,), (i32,)>(&mut store, "grow-b")
            .expect("grow-b");
        let (old,) = grow_a
            .call_async(&mut store, (40,))
            .await
            .expect("the first memory grows");
        assert_eq!(old, 1);
        assert!(!store.data().exceeded);
        let second = grow_b.call_async(&mut store, (40,)).await;
        assert!(
            second.is_err() || second.as_ref().is_ok_and(|(r,)| *r == -1),
            "the second memory must not grow past the cap: {second:?}"
        );
        assert!(store.data().exceeded, "the refusal is reported as the memory cap");
    }
}
