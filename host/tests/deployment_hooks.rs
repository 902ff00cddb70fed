//! The deployment config's hooks (D14–D18; docs/hooks.md): real deployment files, in-process
//! sessions against the scripted model server, and the real binary.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::{Event, Op, Outcome, SessionHandle, TurnEnd};
use cst_core::hooks::HookSettings;
use cst_test_support::session::{finished, session_with, turn, until};
use cst_test_support::{call, main_delegates, Reply, ScriptedServer};
use serde_json::{json, Value};

mod exec_support;
use exec_support::{text, Fixture, KEY};

/// A deployment file written to `dir/deployment.json`, loaded as the host loads one, with the
/// audit log at `dir/audit.jsonl`.
fn settings(dir: &Path, hooks: Value) -> HookSettings {
    let file = dir.join("deployment.json");
    std::fs::write(&file, json!({"version": 1, "hooks": hooks}).to_string()).unwrap();
    let config = cst_config::deployment::load_file(&file, false).unwrap().unwrap();
    let mut s = HookSettings::from_deployment(&config);
    s.audit_log = Some(dir.join("audit.jsonl"));
    s
}

fn session(server: &ScriptedServer, ws: &Path, mode: ApprovalMode, hooks: HookSettings) -> SessionHandle {
    session_with(server, ws, |c| {
        c.approval = mode;
        c.hooks = hooks;
    })
}

fn audit(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sh(script: &str) -> Value {
    json!(["sh", "-c", script])
}

/// D14, D15: an audit hook on every event records all eleven across a done turn (with a write),
/// a failed turn and a cancelled one; each line names the event, the session, the time and the
/// tool where one applies, and never an argument.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_hooks_record_all_eleven_events() {
    let dir = tempfile::tempdir().unwrap();
    let hooks: Vec<Value> = cst_config::deployment::HookEvent::ALL
        .iter()
        .map(|e| json!({"id": format!("audit-{}", e.as_str()), "event": e.as_str(), "kind": "audit"}))
        .collect();
    let s = settings(dir.path(), Value::Array(hooks));
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "a.txt", "content": "argument-value-5521"}),
        )]),
        Reply::text("done"),
        Reply::status(400, "bad request"),
        Reply::hang(),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Auto, s);
    let session_id = h.session_id.clone();
    assert_eq!(
        finished(&turn(&mut h, "write").await).0,
        TurnEnd::Done { answer: "done".into() }
    );
    assert!(matches!(
        finished(&turn(&mut h, "fail").await).0,
        TurnEnd::Failed { .. }
    ));
    h.ops.send(Op::UserTurn { text: "hang".into() }).unwrap();
    until(&mut h, |e| matches!(e, Event::TurnStarted)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.ops.send(Op::Cancel).unwrap();
    let rest = until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert_eq!(finished(&rest).0, TurnEnd::Cancelled);
    cst_test_support::session::close(h).await;
    server.finish_allow_unused();

    let lines = audit(dir.path());
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        [
            "session_start",
            "before_model",
            "after_model",
            "before_tool",
            "before_write",
            "after_write",
            "after_tool",
            "before_model",
            "after_model",
            "before_finish",
            "after_finish",
            "before_model",
            "task_failed",
            "before_model",
            "task_cancelled",
        ]
    );
    for l in &lines {
        assert_eq!(l["session_id"], session_id.as_str());
        assert!(l["time_ms"].as_u64().unwrap() > 0);
        assert_eq!(l["hook"], format!("audit-{}", l["event"].as_str().unwrap()));
    }
    let tool_lines: Vec<&Value> = lines.iter().filter(|l| l.get("tool").is_some()).collect();
    assert_eq!(tool_lines.len(), 4);
    assert!(tool_lines
        .iter()
        .all(|l| l["tool"] == "write_file" && l["perm"] == "write"));
    let raw = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    assert!(
        !raw.contains("argument-value-5521"),
        "an argument reached the audit log"
    );
}

/// D15, D16: through the real binary with a real deployment file, a command hook gets the event's
/// payload on stdin, `{workspace}` replaced, cwd the workspace, the secret argument redacted.
#[test]
fn command_hook_gets_the_payload_on_stdin() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "out.txt", "content": format!("key={KEY}")}),
        )]),
        Reply::text("ok"),
    ]);
    let f = Fixture::new(&server);
    let deployment = f.home.path().join("deployment.json");
    std::fs::write(
        &deployment,
        json!({"version": 1, "hooks": [{
            "id": "record",
            "event": "before_write",
            "kind": "command",
            "argv": ["sh", "-c", "cat > \"$1/payload.json\"; pwd > cwd.txt", "hook", "{workspace}"],
        }]})
        .to_string(),
    )
    .unwrap();
    let out = f
        .cmd(&["exec", "write it"])
        .env("CST_DEPLOYMENT_FILE", &deployment)
        .env("CST_AUDIT_LOG", f.home.path().join("audit.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ws = f.ws();
    let payload: Value = serde_json::from_str(&std::fs::read_to_string(ws.join("payload.json")).unwrap()).unwrap();
    assert_eq!(payload["event"], "before_write");
    assert_eq!(payload["hook"], "record");
    assert_eq!(payload["tool"], "write_file");
    assert_eq!(payload["perm"], "write");
    assert_eq!(payload["workspace"], ws.to_str().unwrap());
    assert_eq!(payload["arguments"]["path"], "out.txt");
    assert_eq!(payload["arguments"]["content"], "key=[REDACTED]");
    assert!(payload["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(
        std::fs::read_to_string(ws.join("cwd.txt")).unwrap().trim(),
        ws.to_str().unwrap()
    );
    // The hook passed, so the write ran.
    assert!(ws.join("out.txt").exists());
    server.finish();
}

/// D17: a failing required before_tool hook refuses the call; the model is told why, with the
/// hook's output as the evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_before_tool_failure_refuses_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "policy", "event": "before_tool", "kind": "command",
                "argv": sh("echo blocked-by-policy-77; exit 1"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("r1", "list", json!({}))]),
        Reply::text("gave up"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "list").await;
    assert!(events.iter().any(|e| matches!(e,
        Event::ToolCallFinished { call_id, outcome: Outcome::Denied, .. } if call_id == "r1")));
    let result = server.requests()[1].tool_result("r1").unwrap();
    assert!(result.contains("before_tool hook `policy` failed"), "{result}");
    assert!(result.contains("blocked-by-policy-77"), "{result}");
    server.finish();
}

/// D17: a failing required before_write hook leaves the file unwritten; a read still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_before_write_failure_leaves_the_file_unwritten() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "guard", "event": "before_write", "kind": "command",
                "argv": sh("echo no writes today; exit 2"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("w1", "write_file", json!({"path": "a.txt", "content": "x"})),
            call("r1", "read_file", json!({"path": "seen.txt"})),
        ]),
        Reply::text("done"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("seen.txt"), "visible").unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    turn(&mut h, "write").await;
    assert!(!ws.path().join("a.txt").exists(), "the write ran despite the hook");
    let reqs = server.requests();
    let refused = reqs[1].tool_result("w1").unwrap();
    assert!(
        refused.contains("no writes today") && refused.contains("exit code 2"),
        "{refused}"
    );
    assert_eq!(reqs[1].tool_result("r1").as_deref(), Some("visible"));
    server.finish();
}

const COUNTING_CHECK: &str =
    "n=$(cat .count 2>/dev/null || echo 0); n=$((n+1)); echo $n > .count; [ $n -ge 3 ] || { echo \"check run $n failed\"; exit 1; }";

/// D17: a required before_finish hook blocks completion twice, the model sees the evidence each
/// time, and the third answer passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_finish_blocks_until_the_check_passes() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "checks", "event": "before_finish", "kind": "command",
                "argv": sh(COUNTING_CHECK), "required": true}]),
    );
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two"), Reply::text("three")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "finish").await;
    assert_eq!(finished(&events).0, TurnEnd::Done { answer: "three".into() });
    let reqs = server.requests();
    for (i, run) in [(1, 1), (2, 2)] {
        let last = reqs[i].messages().last().unwrap().clone();
        assert_eq!(last["role"], "user");
        let content = last["content"].as_str().unwrap();
        assert!(content.starts_with("The before_finish check failed"), "{content}");
        assert!(content.contains(&format!("check run {run} failed")), "{content}");
    }
    server.finish();
}

/// D17: a before_finish hook that always fails ends the turn after three blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_finish_that_always_fails_ends_the_turn_after_three_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "checks", "event": "before_finish", "kind": "command",
                "argv": sh("echo still red; exit 1"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    match finished(&turn(&mut h, "finish").await).0 {
        TurnEnd::Failed { message } => {
            assert!(message.contains("blocked 3 times"), "{message}");
            assert!(message.contains("still red"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.request_count(), 3);
    server.finish();
}

/// D17: a failing hook that is not required is a warning (without its argv) and work goes on;
/// a disabled hook never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_required_failure_warns_and_work_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([
            {"id": "lint", "event": "before_tool", "kind": "command", "argv": sh("exit 1 # secret-argv-991")},
            {"id": "off", "event": "before_tool", "kind": "command", "enabled": false,
             "argv": ["touch", "disabled-ran"]},
        ]),
    );
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", "write_file", json!({"path": "a.txt", "content": "x"}))]),
        Reply::text("done"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "write").await;
    assert_eq!(finished(&events).0, TurnEnd::Done { answer: "done".into() });
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "x");
    let warning = events
        .iter()
        .find_map(|e| match e {
            Event::Warning { message } if message.contains("`lint`") => Some(message.clone()),
            _ => None,
        })
        .expect("no warning");
    assert!(
        warning.contains("exit code 1") && !warning.contains("secret-argv-991"),
        "{warning}"
    );
    assert!(!ws.path().join("disabled-ran").exists(), "a disabled hook ran");
    server.finish();
}

/// D15, D18: a sub-agent's tool calls run no command hook; only the main agent's `task` call does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagent_tool_calls_run_no_command_hooks() {
    let dir = tempfile::tempdir().unwrap();
    // In the workspace: a hook's process sees its own /tmp.
    let ws = tempfile::tempdir().unwrap();
    let log = ws.path().join("tools.log");
    let s = settings(
        dir.path(),
        json!([{"id": "trail", "event": "before_tool", "kind": "command",
                "argv": ["sh", "-c", "grep -o '\"tool\":\"[a-z_]*\"' >> \"$1/tools.log\"", "hook", "{workspace}"]}]),
    );
    let server = ScriptedServer::start_conversations(vec![
        main_delegates("look", "SUB: list the files", "general"),
        (
            "SUB:",
            vec![Reply::calls(vec![call("l1", "list", json!({}))]), Reply::text("listed")],
        ),
    ]);
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "MAIN: go").await;
    assert_eq!(finished(&events).0, TurnEnd::Done { answer: "done".into() });
    assert!(
        events.iter().any(|e| matches!(e, Event::SubAgent { .. })),
        "no sub-agent ran"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}: {events:#?}")),
        "\"tool\":\"task\"\n"
    );
    server.finish();
}

/// D16: hooks in the workspace (`.agent/deployment.json`, `.agent/hooks.json`) are never read.
#[test]
fn hooks_in_the_workspace_are_never_read() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("l1", "list", json!({}))]),
        Reply::text("ok"),
    ]);
    let f = Fixture::new(&server);
    let hook = json!({"version": 1, "hooks": [{"id": "evil", "event": "before_tool", "kind": "command",
        "argv": ["touch", "workspace-hook-ran"]}]});
    std::fs::create_dir_all(f.ws.path().join(".agent")).unwrap();
    for name in ["deployment.json", "hooks.json"] {
        std::fs::write(f.ws.path().join(".agent").join(name), hook.to_string()).unwrap();
    }
    let out = f
        .cmd(&["exec", "--approval", "full", "list"])
        .env("CST_DEPLOYMENT_FILE", f.home.path().join("no-deployment.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !f.ws.path().join("workspace-hook-ran").exists(),
        "a hook from the workspace ran"
    );
    server.finish();
}

/// The message of a failed turn.
fn failure_of(events: &[Event]) -> String {
    match finished(events).0 {
        TurnEnd::Failed { message } => message,
        other => panic!("the turn did not fail: {other:?}"),
    }
}

/// D17: a failing required session_start hook fails every turn of the session, each with the
/// hook's name, why and output; no model request is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_session_start_failure_fails_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "licence", "event": "session_start", "kind": "command",
                "argv": sh("echo no-licence-for-this-host-31; exit 4"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    for prompt in ["first", "second"] {
        let events = turn(&mut h, prompt).await;
        let message = failure_of(&events);
        assert!(
            message.contains("the required session_start hook `licence` failed (exit code 4)"),
            "{message}"
        );
        assert!(message.contains("no-licence-for-this-host-31"), "{message}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Error { message: m } if *m == message)),
            "no Error event: {events:#?}"
        );
    }
    assert_eq!(server.request_count(), 0);
    server.finish_allow_unused();
}

/// D17: a failing required before_model hook fails the turn before any model request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_before_model_failure_fails_the_turn_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "budget", "event": "before_model", "kind": "command",
                "argv": sh("echo budget-exhausted-12; exit 1"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![Reply::text("never asked")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let message = failure_of(&turn(&mut h, "go").await);
    assert!(
        message.contains("before_model hook `budget` failed (exit code 1)") && message.contains("budget-exhausted-12"),
        "{message}"
    );
    assert_eq!(server.request_count(), 0, "the model was asked");
    server.finish_allow_unused();
}

/// D17: a failing required after_model hook fails the turn; the reply's calls are not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_after_model_failure_fails_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "review", "event": "after_model", "kind": "command",
                "argv": sh("echo reply-rejected-64; exit 1"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", "write_file", json!({"path": "a.txt", "content": "x"}))]),
        Reply::text("done"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "write").await;
    let message = failure_of(&events);
    assert!(
        message.contains("after_model hook `review` failed (exit code 1)") && message.contains("reply-rejected-64"),
        "{message}"
    );
    assert!(!ws.path().join("a.txt").exists(), "the call ran after the hook failed");
    assert!(
        !events.iter().any(|e| matches!(e, Event::ToolCallFinished { .. })),
        "{events:#?}"
    );
    assert_eq!(server.request_count(), 1);
    server.finish_allow_unused();
}

/// D17: a failing required after_tool hook turns the call's result into an error that ends with
/// the hook's failure and output; the model reads it and the turn goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_after_tool_failure_makes_the_result_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([{"id": "scan", "event": "after_tool", "kind": "command",
                "argv": sh("echo leaked-path-found-88; exit 5"), "required": true}]),
    );
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("r1", "read_file", json!({"path": "seen.txt"}))]),
        Reply::text("noted"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("seen.txt"), "visible").unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "read").await;
    assert_eq!(finished(&events).0, TurnEnd::Done { answer: "noted".into() });
    assert!(
        events.iter().any(|e| matches!(e,
            Event::ToolCallFinished { call_id, outcome: Outcome::Error, .. } if call_id == "r1")),
        "{events:#?}"
    );
    let result = server.requests()[1].tool_result("r1").unwrap();
    assert!(result.starts_with("visible"), "{result}");
    assert!(
        result.contains("error: the required after_tool hook `scan` failed (exit code 5)")
            && result.contains("leaked-path-found-88"),
        "{result}"
    );
    server.finish();
}

/// D17: a failing required after_finish hook turns a done turn into a failed one with the hook's
/// message (an `Error` event); `task_failed` does not fire as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_after_finish_failure_fails_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(
        dir.path(),
        json!([
            {"id": "report", "event": "after_finish", "kind": "command",
             "argv": sh("echo report-upload-refused-27; exit 1"), "required": true},
            {"id": "failed-trail", "event": "task_failed", "kind": "audit"},
        ]),
    );
    let server = ScriptedServer::start(vec![Reply::text("all done")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let events = turn(&mut h, "finish").await;
    let message = failure_of(&events);
    assert!(
        message.contains("the required after_finish hook `report` failed (exit code 1)")
            && message.contains("report-upload-refused-27"),
        "{message}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Error { message: m } if *m == message)),
        "no Error event: {events:#?}"
    );
    assert!(audit(dir.path()).is_empty(), "task_failed fired too");
    server.finish();
}

/// D15, D17: a required command hook that outlives its time limit is killed and counts as a
/// failure (the limit shortened through `HookSettings::command_timeout`; the real one is 600 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_hook_past_its_time_limit_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(
        dir.path(),
        json!([{"id": "slow", "event": "before_model", "kind": "command",
                "argv": sh("echo started-slow-check; sleep 8; exit 0"), "required": true}]),
    );
    s.command_timeout = Some(Duration::from_secs(1));
    let server = ScriptedServer::start(vec![Reply::text("never asked")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Full, s);
    let started = std::time::Instant::now();
    let message = failure_of(&turn(&mut h, "go").await);
    assert!(
        message.contains("before_model hook `slow` failed (timed out after 1 s")
            && message.contains("started-slow-check"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(6), "{:?}", started.elapsed());
    assert_eq!(server.request_count(), 0);
    server.finish_allow_unused();
}
