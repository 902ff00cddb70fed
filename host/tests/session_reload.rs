//! Sessions built by the core's `SessionBuilder` from a real workspace, reloaded while they run
//! (E8, M11, T2): skills, plugins, `mcp.json` files and trust, with real MCP server processes
//! (our test server). The model is the scripted server; tool results are read from its records.
#![cfg(target_os = "linux")]

mod mcp_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::{Event, Op, ReloadTarget, SessionBuilder, SessionHandle};
use cst_agent::protocol::{Changed, Diagnostic, ExtensionKind, ReloadSummary};
use cst_test_support::session::{close, config_home, model, set_trust, turn, until};
use cst_test_support::{call, Reply, ScriptedServer};
use mcp_support::{running, test_server};
use serde_json::{json, Value};

fn workspace() -> tempfile::TempDir {
    config_home();
    tempfile::tempdir().unwrap()
}

fn canonical(ws: &tempfile::TempDir) -> PathBuf {
    std::fs::canonicalize(ws.path()).unwrap()
}

async fn build(server: &ScriptedServer, ws: &Path) -> SessionHandle {
    let session = SessionBuilder::new(ws.to_path_buf(), model(server, "m"))
        .approval(ApprovalMode::Full)
        .mcp_wait(Some(Duration::from_secs(30)))
        .build()
        .await;
    session.handle
}

async fn reload(h: &mut SessionHandle, what: ReloadTarget) -> (ReloadSummary, Vec<Diagnostic>) {
    h.ops.send(Op::Reload { what }).unwrap();
    let events = until(h, |e| matches!(e, Event::Reloaded { .. })).await;
    match events.into_iter().last() {
        Some(Event::Reloaded { summary, warnings, .. }) => (summary, warnings),
        other => panic!("{other:?}"),
    }
}

fn names(kind: ExtensionKind, list: &[&str]) -> Vec<Changed> {
    list.iter()
        .map(|n| Changed {
            kind,
            name: n.to_string(),
        })
        .collect()
}

fn server_entry(extra: Value) -> Value {
    let mut v = json!({"command": test_server().to_string_lossy()});
    if let (Value::Object(base), Value::Object(more)) = (&mut v, extra) {
        base.extend(more);
    }
    v
}

fn write_mcp_json(ws: &Path, servers: Value) {
    std::fs::create_dir_all(ws.join(".agent")).unwrap();
    std::fs::write(ws.join(".agent/mcp.json"), json!({ "mcpServers": servers }).to_string()).unwrap();
}

/// The `pid` tool of each server, called in one reply; the answers by server name.
fn pid_calls(turn: &str, servers: &[&str]) -> Reply {
    Reply::calls(
        servers
            .iter()
            .map(|s| call(&format!("{turn}-{s}"), &format!("mcp__{s}__pid"), json!({})))
            .collect(),
    )
}

fn pid_of(server: &ScriptedServer, call_id: &str) -> Option<u32> {
    server
        .requests()
        .iter()
        .find_map(|r| r.tool_result(call_id))
        .and_then(|t| t.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_json_reload_starts_stops_restarts_and_keeps() {
    let ws = workspace();
    let root = canonical(&ws);
    write_mcp_json(
        &root,
        json!({"a": server_entry(json!({})), "b": server_entry(json!({"env": {"X": "1"}})), "d": server_entry(json!({}))}),
    );
    set_trust(&root, true);
    let server = ScriptedServer::start(vec![
        pid_calls("t1", &["a", "b", "d"]),
        Reply::text("one"),
        pid_calls("t2", &["a", "b", "c", "d"]),
        Reply::text("two"),
    ]);
    let mut h = build(&server, &root).await;
    turn(&mut h, "first").await;
    let (a1, b1, d1) = (
        pid_of(&server, "t1-a"),
        pid_of(&server, "t1-b"),
        pid_of(&server, "t1-d"),
    );
    let (a1, b1, d1) = (a1.expect("a"), b1.expect("b"), d1.expect("d"));

    // a unchanged, b changed (env), c added, d removed.
    write_mcp_json(
        &root,
        json!({"a": server_entry(json!({})), "b": server_entry(json!({"env": {"X": "2"}})), "c": server_entry(json!({}))}),
    );
    set_trust(&root, true); // a changed mcp.json needs trust again (issue 13 item 5)
    let (summary, warnings) = reload(&mut h, ReloadTarget::Mcp { server: None }).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(summary.added, names(ExtensionKind::McpServer, &["c"]));
    assert_eq!(summary.removed, names(ExtensionKind::McpServer, &["d"]));
    assert_eq!(summary.changed, names(ExtensionKind::McpServer, &["b"]));
    assert!(
        mcp_support::eventually(10, || !running(d1)),
        "removed server d still runs"
    );
    assert!(!running(b1), "changed server b was not stopped");

    turn(&mut h, "second").await;
    assert_eq!(pid_of(&server, "t2-a"), Some(a1), "unchanged server a was restarted");
    let b2 = pid_of(&server, "t2-b").expect("b answers after its restart");
    assert_ne!(b2, b1);
    assert!(pid_of(&server, "t2-c").is_some(), "added server c has no tools");
    let d2 = server.requests().iter().find_map(|r| r.tool_result("t2-d")).unwrap();
    assert!(d2.contains("unknown tool"), "{d2}");

    // The same files again: nothing changes, nothing restarts.
    let (summary, _) = reload(&mut h, ReloadTarget::Mcp { server: None }).await;
    assert!(summary.is_empty(), "{summary:?}");
    assert!(running(a1) && running(b2));

    close(h).await;
    // The session stops its servers before it closes.
    assert!(!running(a1) && !running(b2));
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_starts_workspace_servers_in_the_running_session() {
    let ws = workspace();
    let root = canonical(&ws);
    write_mcp_json(&root, json!({"t": server_entry(json!({}))}));
    let server = ScriptedServer::start(vec![
        pid_calls("before", &["t"]),
        Reply::text("one"),
        pid_calls("after", &["t"]),
        Reply::text("two"),
    ]);
    let mut h = build(&server, &root).await;
    turn(&mut h, "first").await;
    let before = server
        .requests()
        .iter()
        .find_map(|r| r.tool_result("before-t"))
        .unwrap();
    assert!(
        before.contains("unknown tool"),
        "untrusted workspace server ran: {before}"
    );

    set_trust(&root, true);
    let (summary, _) = reload(&mut h, ReloadTarget::Trust).await;
    assert_eq!(summary.added, names(ExtensionKind::McpServer, &["t"]));
    turn(&mut h, "second").await;
    let pid = pid_of(&server, "after-t").expect("the trusted server answers");

    set_trust(&root, false);
    let (summary, _) = reload(&mut h, ReloadTarget::Trust).await;
    assert_eq!(summary.removed, names(ExtensionKind::McpServer, &["t"]));
    assert!(mcp_support::eventually(10, || !running(pid)));
    close(h).await;
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_servers_come_and_go_with_the_plugin_and_exited_ones_restart() {
    let ws = workspace();
    let root = canonical(&ws);
    let plugin = root.join(".agent/plugins/p");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("plugin.json"),
        json!({"name": "p", "description": "test", "tools": [], "mcpServers": {"ps": server_entry(json!({}))}})
            .to_string(),
    )
    .unwrap();
    write_mcp_json(&root, json!({"e": server_entry(json!({}))}));
    set_trust(&root, true);
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("1-ps", "mcp__ps__pid", json!({})),
            call("1-e", "mcp__e__pid", json!({})),
        ]),
        Reply::calls(vec![call("crash", "mcp__e__crash", json!({}))]),
        Reply::text("one"),
        Reply::calls(vec![call("2-e", "mcp__e__pid", json!({}))]),
        Reply::text("two"),
    ]);
    let mut h = build(&server, &root).await;
    turn(&mut h, "first").await;
    let ps = pid_of(&server, "1-ps").expect("the plugin's server answers");
    let e1 = pid_of(&server, "1-e").expect("e answers");
    assert!(mcp_support::eventually(10, || !running(e1)), "e did not exit");

    // M11: an exited server restarts on reload though its config did not change.
    let (summary, _) = reload(&mut h, ReloadTarget::Mcp { server: None }).await;
    assert_eq!(summary.restarted, names(ExtensionKind::McpServer, &["e"]));
    turn(&mut h, "second").await;
    assert!(pid_of(&server, "2-e").is_some_and(|p| p != e1));

    std::fs::remove_dir_all(&plugin).unwrap();
    set_trust(&root, true); // the changed .agent/plugins needs trust again (issue 13 item 5)
    let (summary, _) = reload(&mut h, ReloadTarget::Plugins).await;
    assert_eq!(summary.removed, {
        let mut r = names(ExtensionKind::Plugin, &["p"]);
        r.extend(names(ExtensionKind::McpServer, &["ps"]));
        r
    });
    assert!(
        mcp_support::eventually(10, || !running(ps)),
        "the plugin's server outlived it"
    );
    close(h).await;
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_reload_rebuilds_the_prompt_index() {
    let ws = workspace();
    let root = canonical(&ws);
    let skill = |name: &str, desc: &str| {
        let dir = root.join(".agent/skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {desc}\n---\nBody\n"),
        )
        .unwrap();
    };
    skill("alpha", "First skill");
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")]);
    let mut h = build(&server, &root).await;
    turn(&mut h, "first").await;
    skill("beta", "Second skill");
    let (summary, _) = reload(&mut h, ReloadTarget::Skills).await;
    assert_eq!(summary.added, names(ExtensionKind::Skill, &["beta"]));
    turn(&mut h, "second").await;
    let system = |i: usize| {
        server.requests()[i].messages()[0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(system(0).contains("alpha: First skill") && !system(0).contains("beta"));
    assert!(system(1).contains("beta: Second skill"), "{}", system(1));
    close(h).await;
    server.finish();
}
