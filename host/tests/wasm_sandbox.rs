//! The hostile test plugin against the sandbox (H2, D13): every escape is denied, every limit
//! stops the guest with a plain reason, and after every trap the next call of the same plugin
//! (same cached `InstancePre`, same process) works.

mod wasm_common;

use std::path::PathBuf;
use std::sync::{Arc, Once};
use std::time::Duration;

use cst_agent::plugins::{install, load_plugin_dir};
use cst_agent::tools::{CallError, Registry, ToolContext};
use serde_json::{json, Value};
use wasm_common::{wasm, Env};

static CACHE: Once = Once::new();

/// The library reads the cache dir from XDG_CACHE_HOME; set it once for this test binary.
fn init_cache() {
    CACHE.call_once(|| {
        let dir = tempfile::tempdir().expect("tempdir").keep();
        // The compile cache's checksum records go to the config dir: keep them out of $HOME.
        std::env::set_var("XDG_CONFIG_HOME", dir.join("config"));
        std::env::set_var("XDG_CACHE_HOME", dir);
    });
}

struct Loaded {
    env: Env,
    registry: Arc<Registry>,
}

impl Loaded {
    fn ctx(&self) -> ToolContext {
        ToolContext::new(std::fs::canonicalize(self.env.ws()).unwrap())
    }
    async fn call(&self, tool: &str, args: Value) -> Result<String, CallError> {
        self.registry.call(tool, args, &self.ctx()).await
    }
    async fn echo_works(&self, after: &str) {
        let r = self.call("hostile_echo", json!({"text": "still alive"})).await;
        assert_eq!(r, Ok("still alive".to_string()), "the call after {after} must work");
    }
}

/// Install the hostile component with `manifest` (name/wasm filled in) and load it.
async fn load(manifest: Value) -> Loaded {
    init_cache();
    let env = Env::new();
    let mut m = manifest;
    m["name"] = json!("hostile-test");
    m["wasm"] = json!("hostile-test.wasm");
    let src = env.plugin_dir("hostile-test", &wasm("hostile_test"), m);
    let ws = std::fs::canonicalize(env.ws()).unwrap();
    let done = install::install(&src, &env.plugins_dir(), &ws)
        .await
        .expect("install hostile-test");
    let registry = Arc::new(Registry::new());
    let mut warnings = Vec::new();
    load_plugin_dir(&done.dir, &registry, &mut warnings).expect("load");
    assert!(warnings.is_empty(), "{warnings:?}");
    Loaded { env, registry }
}

fn failed_message(r: Result<String, CallError>) -> String {
    match r {
        Err(CallError::Failed { message, .. }) => message,
        other => panic!("expected a tool failure, got {other:?}"),
    }
}

fn outside_secret(env: &Env) -> PathBuf {
    let p = env.tmp.path().join("secret.txt");
    std::fs::write(&p, "TOP SECRET").unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_are_denied() {
    let l = load(json!({"capabilities": ["workspace-read"]})).await;
    let ws = l.env.ws();
    std::fs::write(ws.join("inside.txt"), "inside").unwrap();
    let secret = outside_secret(&l.env);

    // Positive control: the granted workspace is readable, by relative and by /workspace path.
    assert_eq!(
        l.call("hostile_read", json!({"path": "inside.txt"})).await,
        Ok("inside".into())
    );
    assert_eq!(
        l.call("hostile_read", json!({"path": "/workspace/inside.txt"})).await,
        Ok("inside".into())
    );

    // An absolute host path is outside every preopen.
    let m = failed_message(l.call("hostile_read", json!({"path": secret.to_string_lossy()})).await);
    assert!(m.contains("No such file"), "{m}");
    // `..` out of the workspace.
    for p in ["../secret.txt", "/workspace/../secret.txt", "./../secret.txt"] {
        let m = failed_message(l.call("hostile_read", json!({"path": p})).await);
        assert!(m.contains("Operation not permitted"), "{p}: {m}");
    }
    // A symlink inside the workspace pointing outside it (absolute and relative).
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&secret, ws.join("abs-link")).unwrap();
        std::os::unix::fs::symlink("../secret.txt", ws.join("rel-link")).unwrap();
        for p in ["abs-link", "rel-link"] {
            let m = failed_message(l.call("hostile_read", json!({"path": p})).await);
            assert!(m.contains("Operation not permitted"), "{p}: {m}");
            assert!(!m.contains("TOP SECRET"));
        }
    }
    // A write with only workspace-read.
    let m = failed_message(
        l.call("hostile_write", json!({"path": "new.txt", "content": "x"}))
            .await,
    );
    assert!(m.contains("Operation not permitted"), "{m}");
    assert!(!ws.join("new.txt").exists());
    // An environment variable that was not granted; nothing of the host's env or args leaks.
    std::env::set_var("CST_HOSTILE_SECRET", "leaked");
    let m = failed_message(l.call("hostile_env", json!({"name": "CST_HOSTILE_SECRET"})).await);
    assert!(m.contains("not found") && m.contains("vars=0 args=0"), "{m}");
    l.echo_works("the denied calls").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_network_even_to_loopback() {
    // A listener of the host's own: the guest must not reach it (WASI sockets are denied).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let l = load(json!({"capabilities": ["workspace-read", "workspace-write"]})).await;
    let m = failed_message(l.call("hostile_connect", json!({"addr": addr})).await);
    assert!(m.starts_with(&format!("connect {addr}: Permission denied")), "{m}");
    assert!(listener.accept().is_err(), "the guest reached the listener");
    l.echo_works("the denied connect").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn granted_capabilities_work() {
    std::env::set_var("CST_TEST_GRANTED", "granted-value");
    std::env::set_var("CST_HOSTILE_SECRET", "leaked");
    let l = load(json!({"capabilities": ["workspace-write", "env:CST_TEST_GRANTED"]})).await;
    let r = l
        .call("hostile_write", json!({"path": "new.txt", "content": "written"}))
        .await;
    assert_eq!(r, Ok("wrote new.txt".into()));
    assert_eq!(std::fs::read_to_string(l.env.ws().join("new.txt")).unwrap(), "written");
    let r = l.call("hostile_env", json!({"name": "CST_TEST_GRANTED"})).await;
    assert_eq!(r, Ok("CST_TEST_GRANTED=granted-value (vars=1 args=0)".into()));
    let m = failed_message(l.call("hostile_env", json!({"name": "CST_HOSTILE_SECRET"})).await);
    assert!(m.contains("not found"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_capability_means_no_filesystem() {
    let l = load(json!({})).await;
    std::fs::write(l.env.ws().join("inside.txt"), "inside").unwrap();
    for p in ["inside.txt", "/workspace/inside.txt", "."] {
        let m = failed_message(l.call("hostile_read", json!({"path": p})).await);
        assert!(m.contains("No such file") || m.contains("not permitted"), "{p}: {m}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_stop_the_guest_and_the_next_call_works() {
    let l = load(json!({"capabilities": [], "timeout": 1, "limits": {"memory_mb": 64}})).await;

    match l.call("hostile_spin", json!({})).await {
        Err(CallError::TimedOut { message }) => assert_eq!(message, "timed out after 1 s"),
        other => panic!("spin: {other:?}"),
    }
    l.echo_works("a timeout").await;

    let m = failed_message(l.call("hostile_alloc", json!({"mib": 1024})).await);
    assert_eq!(m, "memory limit of 64 MiB exceeded");
    l.echo_works("the memory cap").await;
    // Under the cap is fine.
    let r = l
        .call("hostile_alloc", json!({"mib": 16}))
        .await
        .expect("16 MiB under a 64 MiB cap");
    assert!(r.starts_with("allocated 16 MiB"), "{r}");

    let m = failed_message(l.call("hostile_recurse", json!({"n": 100_000_000u64})).await);
    assert_eq!(m, "stack overflow");
    l.echo_works("a stack overflow").await;

    // Without a fuel budget a long but finite burn completes.
    let r = l.call("hostile_burn", json!({"n": 1000})).await.expect("short burn");
    assert!(r.starts_with("burned 1000"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuel_budget_is_enforced() {
    let l = load(json!({"limits": {"fuel": 100_000_000u64}})).await;
    let m = failed_message(l.call("hostile_burn", json!({"n": 1_000_000_000_000u64})).await);
    assert_eq!(m, "out of fuel");
    l.echo_works("fuel exhaustion").await;
    let r = l
        .call("hostile_burn", json!({"n": 1000}))
        .await
        .expect("a small burn fits the budget");
    assert!(r.starts_with("burned 1000"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_a_spinning_guest() {
    // The epoch callback yields to tokio every tick, so cancellation reaches a guest in a loop.
    let l = load(json!({"timeout": 600})).await;
    let ctx = l.ctx();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let r = l.registry.call("hostile_spin", json!({}), &ctx).await;
    assert_eq!(r, Err(CallError::Cancelled("hostile_spin".into())));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "cancel must not wait for the deadline"
    );
    l.echo_works("a cancellation").await;
}

#[test]
fn cli_timeout_exit_code_and_guest_output_goes_to_the_log() {
    let env = Env::new();
    env.install(&dir_with(&env, json!({"capabilities": [], "timeout": 1})));
    let (code, _, err) = env.run(&["tools", "call", "hostile_spin"]);
    assert_eq!(code, 124, "{err}");
    assert!(err.contains("timed out after 1 s"), "{err}");

    let out = env
        .cmd(&["tools", "call", "hostile_echo", "--args", r#"{"text":"alive"}"#])
        .env("CST_LOG", "info")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // The result is exactly the tool's return value: guest stdout/stderr never mix into it.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "alive\n");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("guest stdout: alive") && log.contains("guest stderr: alive"),
        "{log}"
    );
    assert!(
        log.contains("echo called with 5 bytes") && log.contains("hostile-test"),
        "{log}"
    );
}

/// Issue 14 item 15: a call that must compile (the compile cache was emptied) says so on stderr.
#[test]
fn a_compile_at_a_call_prints_its_progress_line() {
    let env = Env::new();
    env.install(&dir_with(&env, json!({"capabilities": []})));
    std::fs::remove_dir_all(env.cache()).unwrap();
    let out = env
        .cmd(&["tools", "call", "hostile_echo", "--args", r#"{"text":"warm"}"#])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("compiling ") && err.contains("hostile-test.wasm"), "{err}");
    // Cached now: the next call is quiet.
    let out = env
        .cmd(&["tools", "call", "hostile_echo", "--args", r#"{"text":"warm"}"#])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("compiling"));
}

fn dir_with(env: &Env, mut manifest: Value) -> PathBuf {
    manifest["name"] = json!("hostile-test");
    manifest["wasm"] = json!("hostile-test.wasm");
    env.plugin_dir("hostile-test", &wasm("hostile_test"), manifest)
}

/// Issue 13 item 8: a guest blocked in a host call (a WASI `sleep`) gets no epoch tick; it was
/// reported after 8 s for a 3 s timeout. The call now returns at its deadline whatever the guest
/// does (the 50 ms target, checked here with generous slack for a loaded CI machine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_sleeping_past_its_deadline_returns_at_the_deadline() {
    let l = load(json!({"capabilities": [], "timeout": 1})).await;
    let started = std::time::Instant::now();
    match l.call("hostile_sleep", json!({"n": 20_000})).await {
        Err(CallError::TimedOut { message }) => assert_eq!(message, "timed out after 1 s"),
        other => panic!("sleep: {other:?}"),
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(1900),
        "returned {took:?} after the start, deadline 1 s"
    );
    l.echo_works("a sleep past the deadline").await;
}

static LOGGED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct CountingWriter;
impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGGED.fetch_add(buf.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Issue 13 item 8: a plugin logged 100,000 lines of 1 KB to the user's terminal. One call's
/// `log` lines are capped; the rest are counted in one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_flood_is_capped() {
    let _ = tracing_subscriber::fmt()
        .with_writer(|| CountingWriter)
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .try_init();
    let l = load(json!({"capabilities": [], "timeout": 60})).await;
    let before = LOGGED.load(std::sync::atomic::Ordering::Relaxed);
    let r = l.call("hostile_log_flood", json!({"n": 20_000})).await;
    assert_eq!(r, Ok("logged 20000 lines".to_string()));
    let written = LOGGED.load(std::sync::atomic::Ordering::Relaxed) - before;
    // 200 lines of ~1.1 KB plus the summary (other tests of this binary may log a little too);
    // uncapped this is over 20 MB.
    assert!(written < 1_000_000, "{written} bytes of log for one call");
    assert!(written > 100_000, "the first lines are kept: {written}");
    l.echo_works("a log flood").await;
}

/// Issue 13 item 8: a `workspace-read` guest opening handles without end once held ~20,000 host
/// descriptors. The resource table of a call is capped; the guest gets an error (or a trap), the
/// host's descriptors are back after the call, and the next call works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_descriptor_flood_is_capped() {
    let fds = || std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0);
    let l = load(json!({"capabilities": ["workspace-read"], "timeout": 30})).await;
    let before = fds();
    let r = l.call("hostile_open_many", json!({"n": 20_000})).await;
    match &r {
        Ok(text) => {
            let opened: usize = text
                .trim_start_matches("opened ")
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(usize::MAX);
            assert!(
                opened <= cst_agent::wasm::runner::MAX_RESOURCES,
                "the guest held {opened} handles: {text}"
            );
        }
        Err(CallError::Failed { .. }) => {}
        Err(other) => panic!("unexpected {other:?}"),
    }
    assert!(
        fds() < before + 64,
        "the host's descriptors must be released after the call"
    );
    l.echo_works("a descriptor flood").await;
}

/// Issue 14 item 15: a call that finds no compiled component compiles it on the blocking pool,
/// so the async runtime keeps running meanwhile (here a single-threaded one: a blocked thread
/// would stop the ticker for the whole compile).
#[tokio::test(flavor = "current_thread")]
async fn a_cold_compile_at_a_call_does_not_block_the_runtime() {
    use cst_agent::tools::{SourceKind, ToolSource, ToolSpec};
    use cst_agent::wasm::{Capabilities, Limits, WasmPlugin, WasmToolRunner};
    init_cache();
    // The hostile component with a custom section of its own: content no test compiled before.
    let mut bytes = std::fs::read(wasm("hostile_test")).unwrap();
    let mut section = b"\x08cst-test".to_vec();
    section.extend(format!("{:?}", std::time::SystemTime::now()).as_bytes());
    assert!(section.len() < 128);
    bytes.push(0);
    bytes.push(section.len() as u8);
    bytes.extend(section);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cold.wasm");
    std::fs::write(&file, bytes).unwrap();
    let plugin = Arc::new(WasmPlugin::new(
        "cold",
        file.clone(),
        None,
        Capabilities::default(),
        Limits::default(),
    ));
    let registry = Registry::new();
    registry
        .register(
            ToolSpec {
                name: "hostile_echo".into(),
                description: "echo".into(),
                input_schema: json!({"type": "object"}),
                perm: cst_agent::tools::Perm::Read,
                source: ToolSource {
                    kind: SourceKind::Wasm,
                    owner: "cold".into(),
                    file: Some(file),
                },
                timeout: Duration::from_secs(60),
                confine_with: cst_agent::tools::Confinement::None,
            },
            Arc::new(WasmToolRunner { plugin: plugin.clone() }),
        )
        .unwrap();
    let ticks = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let started = std::time::Instant::now();
    let ws = tempfile::tempdir().unwrap();
    let r = registry
        .call(
            "hostile_echo",
            json!({"text": "cold"}),
            &ToolContext::new(ws.path().to_path_buf()),
        )
        .await;
    let took = started.elapsed();
    ticker.abort();
    assert_eq!(r, Ok("cold".to_string()));
    assert!(plugin.is_loaded());
    let n = ticks.load(std::sync::atomic::Ordering::Relaxed);
    // One tick per 5 ms while the runtime is free (fewer on a loaded machine); a runtime blocked
    // by the compile does not tick at all.
    assert!(
        n >= 3 || took < Duration::from_millis(30),
        "the runtime stalled during the compile: {n} ticks in {took:?}"
    );
}
