//! Reloading the mcp.json files by diff (E8): added servers start, removed ones stop, changed
//! ones restart and unchanged ones keep running — as real processes of our test server.
#![cfg(target_os = "linux")]

mod mcp_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cst_agent::discovery::{McpSource, Origin};
use cst_agent::mcp::config::process_env;
use cst_agent::mcp::{parse_sources, reload_sources, McpChanges, McpManager, ParsedServer, ServerStatus};
use cst_agent::tools::{Perm, Registry, ToolContext};
use mcp_support::*;
use serde_json::{json, Value};

fn source(servers: Value, ws: &Path) -> McpSource {
    McpSource {
        file: ws.join("mcp.json"),
        servers,
        cwd_base: ws.to_path_buf(),
        default_cwd: ws.to_path_buf(),
        workspace: ws.to_path_buf(),
        contained: false,
        origin: Origin::ConfigDir,
    }
}

fn parse(servers: Value, ws: &Path) -> Vec<ParsedServer> {
    parse_sources(&[source(servers, ws)], &process_env, &mut Vec::new())
}

fn start(servers: Value, ws: &Path, registry: Arc<Registry>) -> McpManager {
    let m = McpManager::new(registry, parse(servers, ws));
    m.start_all();
    m
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

fn pid_of(m: &McpManager, name: &str) -> Option<u32> {
    m.servers().into_iter().find(|s| s.name == name).unwrap().pid
}

/// The pid the server reports through its `pid` tool (so the call path works too).
async fn called_pid(reg: &Registry, server: &str) -> u32 {
    reg.call(
        &format!("mcp__{server}__pid"),
        json!({}),
        &ToolContext::new(std::env::temp_dir()),
    )
    .await
    .unwrap()
    .parse()
    .unwrap()
}

fn tools_of(reg: &Registry, server: &str) -> Vec<String> {
    let prefix = format!("mcp__{server}__");
    reg.specs()
        .into_iter()
        .map(|s| s.name)
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The server `pid` is dead and reaped (at once: stopping waits for that), and its process
/// group empties (a killed grandchild takes a moment to go).
fn gone(pid: u32) -> bool {
    !running(pid) && !our_zombie(pid) && eventually(5, || group_members(pid).is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_starts_added_stops_removed_restarts_changed_and_keeps_the_rest() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let m = start(
        json!({"a": server(json!({})), "b": server(json!({})), "c": server(json!({}))}),
        ws.path(),
        reg.clone(),
    );
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let a_pid = called_pid(&reg, "a").await;
    let b_pid = called_pid(&reg, "b").await;
    let c_pid = called_pid(&reg, "c").await;
    assert_eq!(pid_of(&m, "a"), Some(a_pid));
    // c's process group has a grandchild: removing c must kill the whole group.
    let c_grandchild: u32 = reg
        .call(
            "mcp__c__grandchild",
            json!({}),
            &ToolContext::new(ws.path().to_path_buf()),
        )
        .await
        .unwrap()
        .parse()
        .unwrap();
    // 12 named tools + 11 fillers by default.
    assert!(reg.contains("mcp__b__filler_10"));
    assert_eq!(tools_of(&reg, "b").len(), 23);

    // a unchanged, b with 3 fillers and its tools auto-approved, c gone, d new; listed in a
    // new order (not the sorted one a JSON object gives).
    let mut next = parse(
        json!({
            "a": server(json!({})),
            "b": server(json!({"env": {"CST_TEST_TOOLS": "3"}, "autoApprove": true})),
            "d": server(json!({})),
        }),
        ws.path(),
    );
    next.reverse();
    let mut rx = m.subscribe();
    rx.mark_unchanged();
    let changes = m.apply(next).await;
    assert_eq!(
        changes,
        McpChanges {
            added: names(&["d"]),
            removed: names(&["c"]),
            changed: names(&["b"]),
        }
    );
    assert!(rx.has_changed().unwrap(), "subscribers are told");
    let order: Vec<String> = m.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(order, names(&["d", "b", "a"]), "servers() follows the new list");

    // Removed and changed servers are stopped (killed and reaped) by the time apply returns.
    assert!(gone(c_pid), "removed server {c_pid} still there");
    assert!(gone(b_pid), "changed server's old process {b_pid} still there");
    assert!(
        eventually(5, || !running(c_grandchild)),
        "grandchild {c_grandchild} orphaned"
    );
    assert!(tools_of(&reg, "c").is_empty(), "{:?}", tools_of(&reg, "c"));

    // The unchanged server was not touched: same process, its tools still answer.
    assert!(running(a_pid));
    assert_eq!(pid_of(&m, "a"), Some(a_pid));
    assert_eq!(status(&m, "a"), ServerStatus::Ready);
    assert_eq!(called_pid(&reg, "a").await, a_pid);
    assert_eq!(tools_of(&reg, "a").len(), 23);

    assert!(m.wait_ready(Duration::from_secs(30)).await);
    // b runs again, as a new process with the new config.
    assert_eq!(status(&m, "b"), ServerStatus::Ready);
    let new_b = called_pid(&reg, "b").await;
    assert_ne!(new_b, b_pid);
    assert_eq!(pid_of(&m, "b"), Some(new_b));
    assert_eq!(tools_of(&reg, "b").len(), 15);
    assert!(!reg.contains("mcp__b__filler_10"), "old tool list removed");
    assert_eq!(reg.spec("mcp__b__fail").unwrap().perm, Perm::Read, "new autoApprove");
    assert_eq!(reg.spec("mcp__a__fail").unwrap().perm, Perm::Net);
    // d's tools appear once it is ready.
    assert_eq!(status(&m, "d"), ServerStatus::Ready);
    assert_eq!(tools_of(&reg, "d").len(), 23);
    let d_pid = called_pid(&reg, "d").await;
    assert!(![a_pid, b_pid, c_pid, new_b].contains(&d_pid));
    // c is no longer listed at all.
    assert!(m.servers().iter().all(|s| s.name != "c"));

    m.shutdown().await;
    for p in [a_pid, new_b, d_pid] {
        assert!(gone(p), "server {p} left after shutdown");
    }
    assert!(reg.specs().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloading_the_same_sources_changes_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let servers = json!({
        "a": server(json!({"env": {"CST_TEST_TOOLS": "2"}, "args": ["serve"], "autoApprove": ["echo"]})),
        "b": server(json!({"callTimeout": 5})),
        "off": server(json!({"disabled": true})),
        "web": {"url": "http://127.0.0.1:1/mcp"},
    });
    let sources = [source(servers, ws.path())];
    let mut warnings = Vec::new();
    let m = cst_agent::mcp::start(reg.clone(), &sources, &mut warnings);
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let pids: Vec<u32> = vec![called_pid(&reg, "a").await, called_pid(&reg, "b").await];
    let tools_before = reg.specs().len();

    for _ in 0..2 {
        let reload = reload_sources(&m, &sources, &mut warnings);
        assert_send(&reload);
        assert_eq!(reload.await, McpChanges::default());
        assert!(!m.servers().iter().any(|s| s.status == ServerStatus::Starting));
        assert_eq!(called_pid(&reg, "a").await, pids[0], "a was restarted");
        assert_eq!(called_pid(&reg, "b").await, pids[1], "b was restarted");
        assert_eq!(pid_of(&m, "a"), Some(pids[0]));
        assert_eq!(pid_of(&m, "b"), Some(pids[1]));
    }
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(reg.specs().len(), tools_before);
    assert_eq!(status(&m, "off"), ServerStatus::Disabled);
    assert!(matches!(status(&m, "web"), ServerStatus::Failed(_)));
    m.shutdown().await;
}

/// The reload is awaited by the core's session task, so it must be `Send`.
fn assert_send<T: Send>(_: &T) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_changed_to_disabled_is_stopped_and_comes_back_when_enabled() {
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
    let on = json!({"t": server(json!({})), "u": server(json!({}))});
    let m = start(on.clone(), ws.path(), reg.clone());
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    let t_pid = called_pid(&reg, "t").await;
    let u_pid = called_pid(&reg, "u").await;

    let changes = m
        .apply(parse(
            json!({"t": server(json!({"disabled": true})), "u": server(json!({}))}),
            ws.path(),
        ))
        .await;
    assert_eq!(
        changes,
        McpChanges {
            changed: names(&["t"]),
            ..McpChanges::default()
        }
    );
    assert_eq!(status(&m, "t"), ServerStatus::Disabled);
    assert_eq!(pid_of(&m, "t"), None);
    assert!(gone(t_pid), "disabled server {t_pid} still running");
    assert!(tools_of(&reg, "t").is_empty());
    // Nothing starts for a disabled server.
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(status(&m, "t"), ServerStatus::Disabled);
    assert_eq!(called_pid(&reg, "u").await, u_pid);

    // Enabled again: a new process.
    let changes = m.apply(parse(on, ws.path())).await;
    assert_eq!(changes.changed, names(&["t"]));
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(status(&m, "t"), ServerStatus::Ready);
    assert_ne!(called_pid(&reg, "t").await, t_pid);
    assert_eq!(called_pid(&reg, "u").await, u_pid);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clash_warnings_are_not_repeated_by_reload_and_go_with_the_server() {
    struct Builtin;
    impl cst_agent::tools::ToolRunner for Builtin {
        fn run<'a>(
            &'a self,
            _c: cst_agent::tools::Invocation<'a>,
        ) -> futures::future::BoxFuture<'a, Result<String, cst_agent::tools::Failure>> {
            Box::pin(async { Ok("builtin".into()) })
        }
    }
    let ws = tempfile::tempdir().unwrap();
    let reg = Arc::new(Registry::new());
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
        Arc::new(Builtin),
    )
    .unwrap();
    let m = start(json!({"t": server(json!({}))}), ws.path(), reg.clone());
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(m.warnings().len(), 1, "{:?}", m.warnings());

    m.reload(Some("t")).await.unwrap();
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(m.warnings().len(), 1, "{:?}", m.warnings());

    let changes = m.apply(Vec::new()).await;
    assert_eq!(changes.removed, names(&["t"]));
    assert!(m.warnings().is_empty(), "{:?}", m.warnings());
    assert!(m.servers().is_empty());
    // Only the server's own tools are unregistered.
    assert_eq!(reg.specs().len(), 1);
    assert!(reg.contains("mcp__t__echo"));
}
