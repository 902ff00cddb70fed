//! The core driven in-process through its Op/Event contract, as the TUI will drive it:
//! approval requests go out as events and answers come back as ops; cancel stops a turn.

use std::time::Duration;

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::{ApprovalDecision, Event, Op, Outcome, SessionHandle, TurnEnd};
use cst_test_support::session::{builtin_session, next};
use cst_test_support::{call, main_delegates, Reply, ScriptedServer};
use serde_json::json;

fn session(server: &ScriptedServer, ws: &std::path::Path, mode: ApprovalMode) -> SessionHandle {
    builtin_session(server, ws, mode)
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
            Event::TurnFinished { end, steps, .. } => {
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
        main_delegates("write", "SUB-W: write b.txt", "general"),
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

/// `ask_user` round trip: the question goes out as an event with a request id, the answer comes
/// back as an op and is the tool's result; a declined question and a cancelled turn end the call
/// without an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_answered_declined_and_cancelled() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("q1", "ask_user", json!({"question": "Which colour?"}))]),
        Reply::calls(vec![call("q2", "ask_user", json!({"question": "And the size?"}))]),
        Reply::text("done"),
        Reply::calls(vec![call("q3", "ask_user", json!({"question": "Still there?"}))]),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path(), ApprovalMode::Auto);
    h.ops.send(Op::UserTurn { text: "ask".into() }).unwrap();
    let mut questions = Vec::new();
    loop {
        match next(&mut h).await {
            Event::QuestionAsked {
                request_id,
                question,
                subagent,
            } => {
                assert_eq!(subagent, None);
                let answer = (questions.is_empty()).then(|| "blue".to_string());
                questions.push(question);
                h.ops.send(Op::Answer { request_id, answer }).unwrap();
            }
            Event::TurnFinished { end, .. } => {
                assert_eq!(end, TurnEnd::Done { answer: "done".into() });
                break;
            }
            _ => {}
        }
    }
    assert_eq!(questions, ["Which colour?", "And the size?"]);
    assert_eq!(server.requests()[1].tool_result("q1").as_deref(), Some("blue"));
    let declined = server.requests()[2].tool_result("q2").unwrap();
    assert!(declined.contains("declined"), "{declined}");

    // Cancelled while the question is open: the call ends as cancelled, the turn too.
    h.ops.send(Op::UserTurn { text: "again".into() }).unwrap();
    loop {
        match next(&mut h).await {
            Event::QuestionAsked { .. } => h.ops.send(Op::Cancel).unwrap(),
            Event::ToolCallFinished { call_id, outcome, .. } => {
                assert_eq!((call_id.as_str(), outcome), ("q3", Outcome::Cancelled));
            }
            Event::TurnFinished { end, .. } => {
                assert_eq!(end, TurnEnd::Cancelled);
                break;
            }
            _ => {}
        }
    }
    h.ops.send(Op::Shutdown).unwrap();
    while !matches!(next(&mut h).await, Event::SessionClosed) {}
    server.finish();
}

/// Every event goes through the bus: a sink added by the builder's hook slot sees the same
/// events, in the same order, as the front end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extra_sink_sees_what_the_front_end_sees() {
    use cst_agent::core::EventSink;
    use std::sync::{Arc, Mutex};

    struct Names(Mutex<Vec<String>>);
    impl EventSink for Names {
        fn on_event(&self, event: &Event) {
            self.0.lock().unwrap().push(format!("{event:?}"));
        }
    }
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("r1", "read_file", json!({"path": "a.txt"}))]),
        Reply::text("done"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "hi").unwrap();
    let sink = Arc::new(Names(Mutex::new(Vec::new())));
    let sink2 = sink.clone();
    let mut h = cst_test_support::session::session_with(&server, ws.path(), move |c| c.sinks.push(sink2));
    let mut seen = Vec::new();
    h.ops.send(Op::UserTurn { text: "read".into() }).unwrap();
    loop {
        let ev = next(&mut h).await;
        seen.push(format!("{ev:?}"));
        match ev {
            Event::TurnFinished { .. } => h.ops.send(Op::Shutdown).unwrap(),
            Event::SessionClosed => break,
            _ => {}
        }
    }
    assert_eq!(*sink.0.lock().unwrap(), seen);
    assert!(seen.iter().any(|e| e.starts_with("ToolCallFinished")));
    server.finish();
}
