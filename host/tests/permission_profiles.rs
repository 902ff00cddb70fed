//! D2, D19: the deployment's permission profile is a ceiling above the approval mode. What it
//! refuses is refused outright (no person asked, `--approval full` or not), and the restricting
//! profiles (`read_only`, `workspace_write`) do not allow the unconfined mode `full`. A chosen
//! profile (the deployment file's, else settings.json's) makes `auto` ask nobody; with none
//! chosen the approval mode alone decides. The whole mode × profile × category matrix is the
//! unit test `approvals::tests::d19_every_mode_under_every_profile`.

use cst_core::approvals::ApprovalMode;
use cst_core::{Event, Op};
use cst_test_support::session::{close, session_with, until};
use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::{json, Value};

mod exec_support;
#[cfg(unix)]
mod mcp_support;
use exec_support::*;

fn set_profile(f: &Fixture, server: &ScriptedServer, profile: &str) {
    std::fs::write(
        f.config_dir().join("settings.json"),
        json!({"model": {"base_url": server.url(), "name": "test-model", "api_key_env": "CST_TEST_KEY"},
               "permission_profile": profile})
        .to_string(),
    )
    .expect("settings.json");
}

#[test]
fn d2_read_only_refuses_a_write_even_in_full_mode() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "c1",
            "write_file",
            json!({"path": "out.txt", "content": "x"}),
        )]),
        Reply::text("could not write"),
    ]);
    let f = Fixture::new(&server);
    set_profile(&f, &server, "read_only");
    let out = f.run(&["exec", "--approval", "full", "write out.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !f.ws.path().join("out.txt").exists(),
        "the read_only profile let a write through"
    );
    let result = server.requests()[1].tool_result("c1").expect("a result");
    assert!(result.contains("permission profile `read_only`"), "{result}");
    server.finish();
}

#[test]
fn d2_full_mode_is_refused_by_the_restricting_profiles() {
    for (profile, capped) in [
        ("autonomous", false),
        ("read_only", true),
        ("workspace_write", true),
        ("full_access", false),
    ] {
        let server = ScriptedServer::start(vec![Reply::text("ok")]);
        let f = Fixture::new(&server);
        set_profile(&f, &server, profile);
        let out = f.run(&["exec", "--approval", "full", "hi"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(
            stderr.contains("does not allow approval mode `full`"),
            capped,
            "{profile}: {stderr}"
        );
        server.finish();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d2_approval_full_is_refused_mid_session_by_a_restricting_profile() {
    let server = ScriptedServer::start(vec![]);
    let ws = tempfile::tempdir().expect("ws");
    let mut h = session_with(&server, ws.path(), |c| {
        c.approval = ApprovalMode::Auto;
        c.permission_profile = Some(cst_config::deployment::PermissionProfile::WorkspaceWrite);
    });
    h.ops.send(Op::SetApproval { mode: "full".into() }).expect("op");
    let events = until(&mut h, |e| {
        matches!(e, Event::Warning { .. } | Event::ApprovalModeChanged { .. })
    })
    .await;
    match events.last() {
        Some(Event::Warning { message }) => assert!(message.contains("it stays `auto`"), "{message}"),
        other => panic!("the mode changed: {other:?}"),
    }
    close(h).await;
    server.finish_allow_unused();
}

/// An `exec` run whose model calls the MCP test server's `echo` (a `net` tool, M8) once; returns
/// the tool result the model saw and the run's stderr. `deployment`: the installed file's JSON.
#[cfg(unix)]
fn echo_run(deployment: Option<Value>, settings_profile: Option<&str>, extra: &[&str]) -> (String, String) {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("e1", "mcp__t__echo", json!({"text": "hello"}))]),
        Reply::text("done"),
    ]);
    let f = Fixture::new(&server);
    if let Some(p) = settings_profile {
        set_profile(&f, &server, p);
    }
    std::fs::write(
        f.config_dir().join("mcp.json"),
        json!({"mcpServers": {"t": {"command": mcp_support::test_server()}}}).to_string(),
    )
    .expect("mcp.json");
    let file = f.home.path().join("deployment.json");
    if let Some(d) = deployment {
        std::fs::write(&file, d.to_string()).expect("deployment.json");
    }
    let mut args = vec!["exec"];
    args.extend_from_slice(extra);
    args.push("go");
    let out = f.cmd(&args).env("CST_DEPLOYMENT_FILE", &file).output().expect("run");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let echo = server.requests()[1].tool_result("e1").expect("a result");
    server.finish();
    (echo, stderr)
}

/// D19: under an administrator's deployment (no profile named: `autonomous`), ordinary execution
/// asks nobody — the headless run calls the `net` tool that `auto` alone would have refused. The
/// same when the user's settings choose `autonomous`; with no profile chosen it is refused as
/// before (P11); a user who asks to be asked (`--approval ask`) still is.
#[cfg(unix)]
#[test]
fn d19_a_chosen_autonomous_profile_runs_net_tools_without_asking() {
    let ran = |echo: &str| echo.contains("hello") && !echo.contains("approval");
    let (echo, stderr) = echo_run(Some(json!({"version": 1})), None, &[]);
    assert!(ran(&echo), "deployment: {echo}\n{stderr}");
    let (echo, _) = echo_run(None, Some("autonomous"), &[]);
    assert!(ran(&echo), "settings: {echo}");
    let (echo, _) = echo_run(None, None, &[]);
    assert!(echo.contains("needs a person's approval"), "nobody chose: {echo}");
    let (echo, _) = echo_run(Some(json!({"version": 1})), None, &["--approval", "ask"]);
    assert!(echo.contains("needs a person's approval"), "ask mode: {echo}");
}

/// D1, D2: the deployment file's profile is the administrator's; a user's settings.json cannot
/// loosen it (`full_access` there changes nothing under a `read_only` deployment).
#[cfg(unix)]
#[test]
fn d2_settings_cannot_loosen_the_deployments_profile() {
    let (echo, _) = echo_run(
        Some(json!({"version": 1, "permission_profile": "read_only"})),
        Some("full_access"),
        &["--approval", "full"],
    );
    assert!(echo.contains("permission profile `read_only`"), "{echo}");
}

/// `status` says which profile is in force and who chose it.
#[test]
fn status_names_the_profile_and_who_chose_it() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    let file = f.home.path().join("deployment.json");
    let status = |f: &Fixture| {
        let out = f
            .cmd(&["status"])
            .env("CST_DEPLOYMENT_FILE", &file)
            .output()
            .expect("status");
        text(&out.stdout)
    };
    assert!(status(&f).contains("permission profile: autonomous (default; the approval mode decides)"));
    set_profile(&f, &server, "workspace_write");
    assert!(status(&f).contains("permission profile: workspace_write (settings.json)"));
    std::fs::write(&file, r#"{"version": 1, "permission_profile": "read_only"}"#).expect("write");
    assert!(
        status(&f).contains("permission profile: read_only (deployment file)"),
        "{}",
        status(&f)
    );
    server.finish_allow_unused();
}
