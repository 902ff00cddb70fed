//! MCP client against our own rmcp test server, as real processes (M6–M11).
#![cfg(target_os = "linux")]

mod mcp_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cst_agent::discovery::{McpSource, Origin};
use cst_agent::mcp::config::process_env;
use cst_agent::mcp::{parse_sources, McpManager, ServerStatus};
use cst_agent::protocol::Diagnostic;
use cst_agent::tools::{CallError, Perm, Registry, ToolContext};
use mcp_support::*;
use serde_json::{json, Value};

fn start(servers: Value, ws: &Path, registry: Arc<Registry>) -> (McpManager, Vec<Diagnostic>) {
    let source = McpSource {
        file: ws.join("mcp.json"),
        servers,
        cwd_base: ws.to_path_buf(),
        default_cwd: ws.to_path_buf(),
        workspace: ws.to_path_buf(),
        contained: false,
        origin: Origin::ConfigDir,
    };
    let mut warnings = Vec::new();
    let parsed = parse_sources(&[source], &process_env, &mut warnings);
    let m = McpManager::new(registry, parsed);
    m.start_all();
    (m, warnings)
}

fn server(extra: Value) -> Value {
    let mut v = json!({"command": test_server().to_string_lossy()});
    if let (Value::Object(base), Value::Object(more)) = (&mut v, extra) {
        base.extend(more);
    }
    v
}

fn status(m: &McpManager, name: &str) -> ServerStatus {
    m.servers().into_iter().find(|s| s.name == name).unwrap().status
}

async fn call(reg: &Registry, name: &str, args: Value) -> Result<String, CallError> {
    reg.call(name, args, &ToolContext::new(std::env::temp_dir())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_every_page_names_perms_and_schemas() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let (m, _) = start(
        json!({"t": server(json!({"env": {"CST_TEST_TOOLS": "25"}, "autoApprove": ["echo"]}))}),
        ws.path(),
        reg.clone(),
    );
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(status(&m, "t"), ServerStatus::Ready);
    // 12 named tools + 25 fillers = 37 tools in 4 pages of 10 (M7: every cursor followed).
    let info = m.servers().into_iter().find(|s| s.name == "t").unwrap();
    assert_eq!(info.tools.len(), 37, "{:?}", info.tools);
    assert!(reg.contains("mcp__t__filler_24"));
    // P2 sanitising and the 63-byte limit with a stable hash (M8).
    assert!(reg.contains("mcp__t__dotted_name"));
    let long: Vec<_> = info
        .tools
        .iter()
        .filter(|n| n.starts_with("mcp__t__a_tool_name"))
        .collect();
    assert_eq!(long.len(), 1);
    assert_eq!(long[0].len(), 63);
    // autoApprove list ⇒ read; others net (M6, M8).
    assert_eq!(reg.spec("mcp__t__echo").unwrap().perm, Perm::Read);
    assert_eq!(reg.spec("mcp__t__fail").unwrap().perm, Perm::Net);
    // The schema is the server's, unchanged.
    assert_eq!(
        reg.spec("mcp__t__echo").unwrap().input_schema,
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    m.shutdown().await;
    assert!(reg.specs().is_empty(), "shutdown removes the tools");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_results_text_image_structured_and_errors() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let (m, _) = start(json!({"t": server(json!({}))}), ws.path(), reg.clone());
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(
        call(&reg, "mcp__t__echo", json!({"text": "hi"})).await.unwrap(),
        "echo: hi"
    );
    // M9: images as type and size only.
    assert_eq!(
        call(&reg, "mcp__t__image", json!({})).await.unwrap(),
        "here is an image\n[image: image/png, 12 bytes]"
    );
    // M9: audio too, never its base64.
    assert_eq!(
        call(&reg, "mcp__t__audio", json!({})).await.unwrap(),
        "[audio: audio/wav, 16 bytes]"
    );
    // Structured content as JSON when there is no text.
    assert_eq!(
        call(&reg, "mcp__t__add", json!({"a": 2, "b": 3})).await.unwrap(),
        "{\"sum\":5}"
    );
    // isError ⇒ failure.
    match call(&reg, "mcp__t__fail", json!({})).await {
        Err(CallError::Failed { message, .. }) => assert_eq!(message, "it failed on purpose"),
        other => panic!("{other:?}"),
    }
    // The host validates against the server's schema before sending (M8).
    match call(&reg, "mcp__t__echo", json!({"text": 5})).await {
        Err(CallError::InvalidArguments { message, .. }) => assert!(message.contains("/text"), "{message}"),
        other => panic!("{other:?}"),
    }
    m.shutdown().await;
}

/// The slow tool writes the marker only when it receives `notifications/cancelled` (M10).
async fn expect_marker(marker: &Path) {
    let ok = eventually(10, || std::fs::read_to_string(marker).is_ok_and(|s| s == "cancelled"));
    assert!(
        ok,
        "the server never saw notifications/cancelled ({})",
        marker.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_timeout_and_dropped_call_send_notifications_cancelled() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let m1 = ws.path().join("m1");
    let m2 = ws.path().join("m2");
    let m3 = ws.path().join("m3");
    let (m, _) = start(
        json!({
            "c": server(json!({"env": {"CST_TEST_CANCEL_MARKER": m1.to_string_lossy()}})),
            "to": server(json!({"env": {"CST_TEST_CANCEL_MARKER": m2.to_string_lossy()}, "callTimeout": 1})),
            "d": server(json!({"env": {"CST_TEST_CANCEL_MARKER": m3.to_string_lossy()}})),
        }),
        ws.path(),
        reg.clone(),
    );
    assert!(m.wait_ready(Duration::from_secs(30)).await);

    // 1. The turn is cancelled (Esc / Ctrl-C): ToolContext::cancel.
    let ctx = ToolContext::new(ws.path().to_path_buf());
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let r = reg.call("mcp__c__slow", json!({"secs": 30}), &ctx).await;
    assert!(matches!(r, Err(CallError::Cancelled(_))), "{r:?}");
    expect_marker(&m1).await;

    // 2. The per-call timeout (callTimeout 1 s here, 60 s by default).
    match call(&reg, "mcp__to__slow", json!({"secs": 30})).await {
        Err(CallError::TimedOut { message }) => assert!(message.contains("timed out"), "{message}"),
        other => panic!("{other:?}"),
    }
    expect_marker(&m2).await;

    // 3. The caller drops the call future.
    let r = tokio::time::timeout(
        Duration::from_millis(300),
        call(&reg, "mcp__d__slow", json!({"secs": 30})),
    )
    .await;
    assert!(r.is_err());
    expect_marker(&m3).await;

    // The servers still answer afterwards.
    assert_eq!(
        call(&reg, "mcp__c__echo", json!({"text": "x"})).await.unwrap(),
        "echo: x"
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_call_then_calls_fail_at_once_and_nothing_is_left() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let (m, _) = start(json!({"t": server(json!({}))}), ws.path(), reg.clone());
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let pid: u32 = call(&reg, "mcp__t__pid", json!({})).await.unwrap().parse().unwrap();
    let grandchild: u32 = call(&reg, "mcp__t__grandchild", json!({}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert!(running(grandchild));
    assert_eq!(
        group_members(pid).len(),
        2,
        "server and its sleep share one process group"
    );

    let expected = "server t exited: crashing on purpose in the middle of a call";
    match call(&reg, "mcp__t__crash", json!({})).await {
        Err(CallError::Failed { message, .. }) => assert_eq!(message, expected),
        other => panic!("{other:?}"),
    }
    // M11: status exited with the last stderr line; later calls fail at once with it.
    assert!(eventually(5, || matches!(status(&m, "t"), ServerStatus::Exited(_))));
    assert_eq!(
        status(&m, "t"),
        ServerStatus::Exited("crashing on purpose in the middle of a call".into())
    );
    match call(&reg, "mcp__t__echo", json!({"text": "x"})).await {
        Err(CallError::Failed { message, .. }) => assert_eq!(message, expected),
        other => panic!("{other:?}"),
    }
    // No zombie, no orphan: the group is killed and the server reaped.
    assert!(
        eventually(5, || !running(pid) && !our_zombie(pid)),
        "server {pid} left behind"
    );
    assert!(
        eventually(5, || !running(grandchild)),
        "grandchild {grandchild} orphaned"
    );
    assert!(eventually(5, || group_members(pid).is_empty()));

    // reload brings it back (M11).
    m.reload(Some("t")).await.unwrap();
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(status(&m, "t"), ServerStatus::Ready);
    assert_eq!(
        call(&reg, "mcp__t__echo", json!({"text": "back"})).await.unwrap(),
        "echo: back"
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_refreshes_tools_and_leaves_no_processes() {
    let ws = tempfile::tempdir().unwrap();
    let variant = ws.path().join("variant");
    std::fs::write(&variant, "a").unwrap();
    let reg = Arc::new(Registry::new());
    // Behind `sh -c` so the server is a grandchild of the host: the group kill must reach it.
    let script = format!("exec {} serve", test_server().display());
    let (m, _) = start(
        json!({
            "t": {"command": "sh", "args": ["-c", script], "env": {"CST_TEST_VARIANT_FILE": variant.to_string_lossy()}},
            "other": server(json!({})),
        }),
        ws.path(),
        reg.clone(),
    );
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert!(reg.contains("mcp__t__variant_a"));
    let pid: u32 = call(&reg, "mcp__t__pid", json!({})).await.unwrap().parse().unwrap();
    let grandchild: u32 = call(&reg, "mcp__t__grandchild", json!({}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    let other_pid: u32 = call(&reg, "mcp__other__pid", json!({})).await.unwrap().parse().unwrap();

    std::fs::write(&variant, "b").unwrap();
    m.reload(Some("t")).await.unwrap();
    // The old process group is gone as soon as reload returns.
    assert!(!running(pid) && !our_zombie(pid), "old server {pid} still there");
    assert!(
        eventually(5, || !running(grandchild)),
        "grandchild {grandchild} orphaned"
    );
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert!(reg.contains("mcp__t__variant_b"), "new tool registered");
    assert!(!reg.contains("mcp__t__variant_a"), "old tool removed");
    let new_pid: u32 = call(&reg, "mcp__t__pid", json!({})).await.unwrap().parse().unwrap();
    assert_ne!(new_pid, pid);
    // Reloading one server leaves the others alone.
    assert!(running(other_pid));

    // reload all, then shutdown: nothing is left.
    m.reload(None).await.unwrap();
    assert!(!running(new_pid) && !running(other_pid));
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let pids: Vec<u32> = m.servers().iter().filter_map(|s| s.pid).collect();
    assert_eq!(pids.len(), 2);
    m.shutdown().await;
    for p in pids {
        assert!(!running(p) && !our_zombie(p), "server {p} left after shutdown");
        assert!(group_members(p).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_before_handshake_and_never_init() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let tag = format!("never-init-tag-{}", std::process::id());
    let (m, _) = start(
        json!({
            "garbage": server(json!({"args": ["garbage"]})),
            "silent": server(json!({"args": ["never-init", tag], "startTimeout": 1})),
            "missing": {"command": "cst-no-such-command-xyz"},
        }),
        ws.path(),
        reg.clone(),
    );
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    // Non-JSON lines on stdout before the handshake are skipped.
    assert_eq!(status(&m, "garbage"), ServerStatus::Ready);
    assert_eq!(
        call(&reg, "mcp__garbage__echo", json!({"text": "ok"})).await.unwrap(),
        "echo: ok"
    );
    // A server that never answers initialize fails at its start timeout and is killed.
    match status(&m, "silent") {
        ServerStatus::Failed(r) => {
            assert!(r.contains("start timeout"), "{r}");
            assert!(r.contains("never-init: reading stdin, never answering"), "{r}");
        }
        other => panic!("{other:?}"),
    }
    assert!(processes_with_arg(&tag).is_empty(), "the silent server was not killed");
    match status(&m, "missing") {
        ServerStatus::Failed(r) => assert!(r.contains("not found on PATH"), "{r}"),
        other => panic!("{other:?}"),
    }
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_name_clash_is_refused_with_a_warning() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    struct Never;
    impl cst_agent::tools::ToolRunner for Never {
        fn run<'a>(
            &'a self,
            _c: cst_agent::tools::Invocation<'a>,
        ) -> futures::future::BoxFuture<'a, Result<String, cst_agent::tools::Failure>> {
            Box::pin(async { Ok("builtin".into()) })
        }
    }
    reg.register(
        cst_agent::tools::ToolSpec {
            name: "mcp__t__echo".into(),
            description: "taken first".into(),
            input_schema: json!({"type": "object"}),
            perm: Perm::Read,
            source: cst_agent::tools::ToolSource::builtin(),
            timeout: Duration::from_secs(5),
            confine_with: cst_agent::tools::Confinement::None,
        },
        Arc::new(Never),
    )
    .unwrap();
    let (m, _) = start(json!({"t": server(json!({}))}), ws.path(), reg.clone());
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let warnings: Vec<String> = m.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("mcp__t__echo") && warnings[0].contains("`t`"),
        "{warnings:?}"
    );
    assert_eq!(call(&reg, "mcp__t__echo", json!({})).await.unwrap(), "builtin");
    let info = m.servers().into_iter().find(|s| s.name == "t").unwrap();
    assert!(!info.tools.contains(&"mcp__t__echo".to_string()));
    assert!(info.tools.contains(&"mcp__t__fail".to_string()));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_servers_run_in_the_plugin_folder() {
    // M4: a plugin's servers default to the plugin folder; a relative command with a `/` is
    // taken from there too.
    let plugin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(test_server(), plugin.path().join("server-bin")).unwrap();
    let source = McpSource {
        file: plugin.path().join("plugin.json"),
        servers: json!({"p": {"command": "./server-bin"}}),
        cwd_base: plugin.path().to_path_buf(),
        default_cwd: plugin.path().to_path_buf(),
        workspace: plugin.path().to_path_buf(),
        contained: false,
        origin: Origin::Plugin("demo".into()),
    };
    let reg = Arc::new(Registry::new());
    let m = McpManager::new(reg.clone(), parse_sources(&[source], &process_env, &mut Vec::new()));
    m.start_all();
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let info = m.servers().remove(0);
    assert_eq!(info.status, ServerStatus::Ready);
    assert_eq!(info.origin, "plugin demo");
    let pid = info.pid.unwrap();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(cwd, plugin.path().canonicalize().unwrap());
    m.shutdown().await;
}
