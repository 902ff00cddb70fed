//! The core driven in-process through its Op/Event contract, as the TUI will drive it:
//! approval requests go out as events and answers come back as ops; cancel stops a turn.

use std::sync::Arc;
use std::time::Duration;

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::{self, ApprovalDecision, Event, Op, Outcome, SessionConfig, SessionHandle, TurnEnd};
use cst_agent::discovery::ToolsProfile;
use cst_agent::model::{ModelClient, ModelConfig};
use cst_agent::tools::Registry;
use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::json;

fn session(server: &ScriptedServer, ws: &std::path::Path, mode: ApprovalMode) -> SessionHandle {
    let registry = Arc::new(Registry::new());
    let mut warnings = Vec::new();
    cst_agent::builtin_tools::register_builtins(&registry, ToolsProfile::Default, &mut warnings);
    let model = ModelClient::new(ModelConfig {
        base_url: server.url(),
        name: "m".into(),
        api_key_env: "NONE".into(),
        api_key: None,
    })
    .unwrap();
    core::spawn(SessionConfig {
        workspace: std::fs::canonicalize(ws).unwrap(),
        registry,
        model,
        approval: mode,
        headless: false,
        max_steps: 10,
        system_prompt: "test".into(),
        transcript: true,
        reload: None,
        secrets: Vec::new(),
        roles: Default::default(),
        subagent_context: String::new(),
    })
}

async fn next(h: &mut SessionHandle) -> Event {
    tokio::time::timeout(Duration::from_secs(30), h.events.recv())
        .await
        .expect("no event within 30 s")
        .expect("event stream ended")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_round_trip_and_always() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", "write_file", json!({"path": "a.txt", "content": "1"}))]),
        Reply::calls(vec![call("w2", "write_file", json!({"path": "b.txt", "content": "2"}))]),
        Reply::calls(vec![call("n1", "run_shell", json!({"command": "true"}))]),
        Reply::text("done"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Ask);
    h.ops.send(Op::UserTurn { text: "write".into() }).unwrap();
    let mut requests = Vec::new();
    let mut outcomes = Vec::new();
    loop {
        match next(&mut h).await {
            Event::ApprovalRequested { request_id, tool, .. } => {
                // `a` for write_file; `n` for the shell command.
                let decision = if tool == "write_file" {
                    ApprovalDecision::Always
                } else {
                    ApprovalDecision::No
                };
                requests.push(tool);
                h.ops.send(Op::Approval { request_id, decision }).unwrap();
            }
            Event::ToolCallFinished { call_id, outcome, .. } => outcomes.push((call_id, outcome)),
            Event::TurnFinished { end, steps } => {
                assert_eq!(end, TurnEnd::Done { answer: "done".into() });
                assert_eq!(steps, 4);
                break;
            }
            _ => {}
        }
    }
    // The second write_file was not asked about: "always" is remembered for the session.
    assert_eq!(requests, ["write_file", "run_shell"]);
    assert_eq!(
        outcomes,
        [
            ("w1".to_string(), Outcome::Ok),
            ("w2".to_string(), Outcome::Ok),
            ("n1".to_string(), Outcome::Denied)
        ]
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "2");
    assert!(server.requests()[3].tool_result("n1").unwrap().contains("declined"));
    h.ops.send(Op::Shutdown).unwrap();
    while !matches!(next(&mut h).await, Event::SessionClosed) {}
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_hanging_model_stream_then_another_turn() {
    let server = ScriptedServer::start(vec![Reply::hang(), Reply::text("second answer")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Auto);
    h.ops.send(Op::UserTurn { text: "one".into() }).unwrap();
    loop {
        if let Event::MessageDelta { .. } = next(&mut h).await {
            break;
        }
    }
    h.ops.send(Op::Cancel).unwrap();
    loop {
        if let Event::TurnFinished { end, .. } = next(&mut h).await {
            assert_eq!(end, TurnEnd::Cancelled);
            break;
        }
    }
    // The session survives a cancelled turn; the next request is still a valid conversation.
    h.ops.send(Op::UserTurn { text: "two".into() }).unwrap();
    loop {
        if let Event::TurnFinished { end, .. } = next(&mut h).await {
            assert_eq!(
                end,
                TurnEnd::Done {
                    answer: "second answer".into()
                }
            );
            break;
        }
    }
    drop(h);
    server.finish();
}

/// In-process, as the TUI will drive it: a sub-agent's approval request reaches the parent's
/// front end as an ordinary ApprovalRequested, and the answer lets the call run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagent_approval_reaches_the_parent_front_end() {
    let server = ScriptedServer::start_conversations(vec![
        (
            "MAIN:",
            vec![
                Reply::calls(vec![call(
                    "t1",
                    "task",
                    json!({"description": "write", "prompt": "SUB-W: write b.txt", "agent": "general"}),
                )]),
                Reply::text("done"),
            ],
        ),
        (
            "SUB-W:",
            vec![
                Reply::calls(vec![call("w1", "write_file", json!({"path": "b.txt", "content": "x"}))]),
                Reply::text("written"),
            ],
        ),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let ws_path = std::fs::canonicalize(ws.path()).unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Ask);
    h.ops
        .send(Op::UserTurn {
            text: "MAIN: go".into(),
        })
        .unwrap();
    let (mut asked, mut started, mut sub_tool_ok) = (Vec::new(), false, false);
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), h.events.recv())
            .await
            .expect("no event within 30 s")
            .expect("event stream ended");
        match ev {
            Event::ApprovalRequested {
                request_id,
                tool,
                subagent,
                ..
            } => {
                asked.push((tool, subagent));
                h.ops
                    .send(Op::Approval {
                        request_id,
                        decision: ApprovalDecision::Yes,
                    })
                    .unwrap();
            }
            Event::SubAgentStarted { n, role, .. } => started = n == 1 && role == "general",
            Event::SubAgent { n: 1, event } => {
                if let Event::ToolCallFinished { tool, outcome, .. } = *event {
                    sub_tool_ok = tool == "write_file" && outcome == Outcome::Ok;
                }
            }
            Event::TurnFinished { end, .. } => {
                assert_eq!(end, TurnEnd::Done { answer: "done".into() });
                break;
            }
            _ => {}
        }
    }
    assert_eq!(
        asked,
        [("write_file".to_string(), Some(1))],
        "the sub-agent's request reached the front end, naming it"
    );
    assert!(started && sub_tool_ok);
    assert_eq!(std::fs::read_to_string(ws_path.join("b.txt")).unwrap(), "x");
    h.ops.send(Op::Shutdown).unwrap();
    server.finish();
}
