//! D2, D19: the deployment's permission profile is a ceiling above the approval mode. What it
//! refuses is refused outright (no person asked, `--approval full` or not), and the restricting
//! profiles (`read_only`, `workspace_write`) do not allow the unconfined mode `full`.

use cst_core::approvals::ApprovalMode;
use cst_core::{Event, Op};
use cst_test_support::session::{close, session_with, until};
use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::json;

mod exec_support;
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
        c.permission_profile = cst_config::deployment::PermissionProfile::WorkspaceWrite;
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
