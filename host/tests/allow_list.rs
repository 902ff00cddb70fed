//! Issue 14 item 8: a headless run approves tools up front, as `claude -p --allowedTools` does:
//! `--allow-tool NAME|GLOB` and `--allow-server NAME`. Without them an MCP tool (`net`) is
//! refused in `exec`'s default `auto` mode.
#![cfg(unix)]

mod exec_support;
mod mcp_support;

use cst_test_support::{call, Reply, ScriptedServer};
use exec_support::*;
use serde_json::json;

fn run(extra: &[&str]) -> (std::process::Output, String) {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("e1", "mcp__t__echo", json!({"text": "hello"})),
            call("s1", "run_shell", json!({"command": "echo shell-ran"})),
        ]),
        Reply::text("done"),
    ]);
    let f = Fixture::new(&server);
    std::fs::write(
        f.config_dir().join("mcp.json"),
        json!({"mcpServers": {"t": {"command": mcp_support::test_server()}}}).to_string(),
    )
    .unwrap();
    let mut args = vec!["exec"];
    args.extend_from_slice(extra);
    args.push("go");
    let out = f.run(&args);
    let echo = server
        .requests()
        .get(1)
        .and_then(|r| r.tool_result("e1"))
        .unwrap_or_default();
    server.finish();
    (out, echo)
}

#[test]
fn allow_tool_and_allow_server_approve_for_the_run() {
    let (out, echo) = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        echo.contains("needs a person's approval"),
        "refused without the list: {echo}"
    );

    for allow in [
        &["--allow-tool", "mcp__t__*"][..],
        &["--allow-server", "t"][..],
        &["--allow-tool", "read_file,mcp__t__echo"][..],
    ] {
        let (out, echo) = run(allow);
        assert_eq!(out.status.code(), Some(0), "{allow:?}: {}", text(&out.stderr));
        assert!(
            echo.contains("hello") && !echo.contains("approval"),
            "{allow:?}: {echo}"
        );
    }
}

#[test]
fn a_bad_glob_is_a_usage_error() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "--allow-tool", "mcp__[", "go"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--allow-tool `mcp__[`"),
        "{}",
        text(&out.stderr)
    );
    server.finish_allow_unused();
}

/// The allow-list never lets the model write the host's own files: `write_file` allowed for the
/// run still cannot change `.agent/mcp.json` (that always asks, so headless it is refused).
#[test]
fn an_allowed_write_tool_still_cannot_write_host_files() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("w1", "write_file", json!({"path": ".agent/mcp.json", "content": "{}"})),
            call("w2", "write_file", json!({"path": "notes.txt", "content": "ok"})),
        ]),
        Reply::text("done"),
    ]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "--approval", "ask", "--allow-tool", "write_file", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = server.requests();
    let refused = reqs[1].tool_result("w1").unwrap_or_default();
    assert!(refused.contains("always needs a person's approval"), "{refused}");
    assert!(!f.ws().join(".agent/mcp.json").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws().join("notes.txt")).unwrap(),
        "ok",
        "allowed in `ask`"
    );
    server.finish();
}
