//! The ops a front end sends besides turns and answers — refuse with a reason, `/model`,
//! `/approval`, `/clear` — the MCP server states a session reports, and resuming a session from
//! its transcript. In-process sessions against the scripted model server, as the TUI drives them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::resume::{self, Resumed};
use cst_agent::core::{Event, Op, Outcome, SessionBuilder, SessionHandle, TurnEnd};
use cst_test_support::session::{builtin_session, close, config_home, model, next, session_with, turn, until};
use cst_test_support::{call, main_delegates, Reply, ScriptedServer};
use serde_json::{json, Value};

/// The session's id and transcript path, from its first event.
async fn started(h: &mut SessionHandle) -> (String, PathBuf) {
    match next(h).await {
        Event::SessionStarted {
            session_id,
            transcript: Some(path),
            ..
        } => (session_id, path),
        other => panic!("expected SessionStarted with a transcript, got {other:?}"),
    }
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn contents(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// `n` with a reason: the call is denied and the model reads the person's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_with_a_reason_reaches_the_model() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", "write_file", json!({"path": "a.txt", "content": "1"}))]),
        Reply::text("understood"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = builtin_session(&server, ws.path(), ApprovalMode::Ask);
    h.ops.send(Op::UserTurn { text: "write".into() }).unwrap();
    let mut outcome = None;
    loop {
        match next(&mut h).await {
            Event::ApprovalRequested { request_id, .. } => h
                .ops
                .send(Op::Refuse {
                    request_id,
                    reason: "write it to notes/a.txt instead".into(),
                })
                .unwrap(),
            Event::ToolCallFinished { outcome: o, .. } => outcome = Some(o),
            Event::TurnFinished { end, .. } => {
                assert_eq!(
                    end,
                    TurnEnd::Done {
                        answer: "understood".into()
                    }
                );
                break;
            }
            _ => {}
        }
    }
    assert_eq!(outcome, Some(Outcome::Denied));
    assert!(!ws.path().join("a.txt").exists());
    let result = server.requests()[1].tool_result("w1").unwrap();
    assert!(
        result.contains("the user declined this call: write it to notes/a.txt instead"),
        "{result}"
    );
    close(h).await;
    server.finish();
}

/// `/model NAME` is queued in order with turns: the turn before it keeps the old model, the
/// next request names the new one, and the transcript says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_model_changes_the_model_of_the_next_request() {
    let server = ScriptedServer::start(vec![Reply::text("a"), Reply::text("b")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = builtin_session(&server, ws.path(), ApprovalMode::Auto);
    let (_, transcript) = started(&mut h).await;
    // Sent together: the change waits for the first turn.
    h.ops.send(Op::UserTurn { text: "one".into() }).unwrap();
    h.ops
        .send(Op::SetModel {
            model: " other-model ".into(),
        })
        .unwrap();
    h.ops.send(Op::SetModel { model: "  ".into() }).unwrap();
    h.ops.send(Op::UserTurn { text: "two".into() }).unwrap();
    let before = until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(!before.iter().any(|e| matches!(e, Event::ModelChanged { .. })));
    let after = until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;
    let changed: Vec<&String> = after
        .iter()
        .filter_map(|e| match e {
            Event::ModelChanged { model } => Some(model),
            _ => None,
        })
        .collect();
    assert_eq!(changed, ["other-model"]);
    // An empty name changes nothing and says why (at once, so maybe during the first turn).
    assert!(before
        .iter()
        .chain(&after)
        .any(|e| matches!(e, Event::Warning { message } if message.contains("needs a model name"))));
    let models: Vec<String> = server.requests().iter().map(|r| r.model().to_string()).collect();
    assert_eq!(models, ["m", "other-model"]);
    close(h).await;
    let lines = records(&transcript);
    assert!(
        lines
            .iter()
            .any(|r| r["type"] == "model_changed" && r["model"] == "other-model"),
        "{lines:?}"
    );
    server.finish();
}

/// Sub-agents started after `/model` use the new model too (a role without its own `model`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_model_reaches_later_sub_agents() {
    let server = ScriptedServer::start_conversations(vec![
        main_delegates("look", "SUB: look around", "general"),
        ("SUB:", vec![Reply::text("nothing here")]),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = builtin_session(&server, ws.path(), ApprovalMode::Full);
    h.ops.send(Op::SetModel { model: "big".into() }).unwrap();
    until(&mut h, |e| matches!(e, Event::ModelChanged { .. })).await;
    let events = turn(&mut h, "MAIN: go").await;
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::SubAgentStarted { model, .. } if model == "big")));
    let models: Vec<(usize, String)> = server
        .requests()
        .iter()
        .map(|r| (r.conversation, r.model().to_string()))
        .collect();
    assert_eq!(
        models,
        [(0, "big".to_string()), (1, "big".to_string()), (0, "big".to_string())]
    );
    close(h).await;
    server.finish();
}

/// `/approval ask` acts at once: a write that `auto` runs now asks. An unknown mode warns with
/// the modes and changes nothing (P6's table by mode).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_approval_changes_the_mode_at_once_and_unknown_modes_warn() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", "write_file", json!({"path": "a.txt", "content": "1"}))]),
        Reply::text("written"),
    ]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = builtin_session(&server, ws.path(), ApprovalMode::Auto);
    h.ops.send(Op::SetApproval { mode: "yolo".into() }).unwrap();
    let events = until(&mut h, |e| matches!(e, Event::Warning { .. })).await;
    match events.last() {
        Some(Event::Warning { message }) => {
            assert!(
                message.contains("`yolo`") && message.contains("ask, auto, full"),
                "{message}"
            );
            assert!(message.contains("stays `auto`"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    h.ops.send(Op::SetApproval { mode: "ask".into() }).unwrap();
    let events = until(&mut h, |e| matches!(e, Event::ApprovalModeChanged { .. })).await;
    assert!(matches!(events.last(), Some(Event::ApprovalModeChanged { mode }) if mode == "ask"));
    h.ops.send(Op::UserTurn { text: "write".into() }).unwrap();
    let mut asked = Vec::new();
    loop {
        match next(&mut h).await {
            Event::ApprovalRequested { request_id, tool, .. } => {
                asked.push(tool);
                h.ops
                    .send(Op::Approval {
                        request_id,
                        decision: cst_agent::core::ApprovalDecision::Yes,
                    })
                    .unwrap();
            }
            Event::TurnFinished { end, .. } => {
                assert_eq!(
                    end,
                    TurnEnd::Done {
                        answer: "written".into()
                    }
                );
                break;
            }
            _ => {}
        }
    }
    assert_eq!(asked, ["write_file"]);
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "1");
    close(h).await;
    server.finish();
}

/// `/clear` between two queued turns: the second request holds only the system prompt and the
/// new message; the transcript marks where the conversation started again. A session with no
/// extensions reports no MCP servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_starts_the_next_turn_from_the_system_prompt() {
    let server = ScriptedServer::start(vec![Reply::text("first answer"), Reply::text("second answer")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session_with(&server, ws.path(), |c| c.system_prompt = "SYSTEM".into());
    let (_, transcript) = started(&mut h).await;
    h.ops.send(Op::UserTurn { text: "first".into() }).unwrap();
    h.ops.send(Op::Clear).unwrap();
    h.ops.send(Op::UserTurn { text: "second".into() }).unwrap();
    let mut events = until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;
    events.extend(until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await);
    let cleared = events.iter().position(|e| matches!(e, Event::Cleared));
    let first_end = events.iter().position(|e| matches!(e, Event::TurnFinished { .. }));
    assert!(cleared.is_some() && cleared > first_end, "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, Event::McpServers { .. })));
    let requests = server.requests();
    assert_eq!(
        contents(&requests[1].messages()),
        [
            ("system".to_string(), "SYSTEM".to_string()),
            ("user".to_string(), "second".to_string())
        ]
    );
    close(h).await;
    let types: Vec<String> = records(&transcript)
        .iter()
        .map(|r| r["type"].as_str().unwrap_or_default().to_string())
        .collect();
    let clear = types.iter().position(|t| t == "clear").expect("a clear record");
    assert_eq!(types[clear - 1], "turn_end");
    server.finish();
}

#[cfg(target_os = "linux")]
mod mcp_support;

/// M11, M12: the servers' states right after SessionStarted (starting), then ready with their
/// tool count, then exited with the last line the server wrote on stderr.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_states_arrive_as_they_change() {
    use cst_agent::protocol::McpServerState;
    use cst_test_support::session::set_trust;

    config_home();
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    // A second of delay before the server runs, so the first report finds it starting.
    let command = format!("sleep 1; exec '{}'", mcp_support::test_server().display());
    std::fs::create_dir_all(root.join(".agent")).unwrap();
    std::fs::write(
        root.join(".agent/mcp.json"),
        json!({"mcpServers": {"t": {"command": "sh", "args": ["-c", command]}}}).to_string(),
    )
    .unwrap();
    set_trust(&root, true);
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("c1", "mcp__t__crash", json!({}))]),
        Reply::text("it crashed"),
    ]);
    let mut session = SessionBuilder::new(root.clone(), model(&server, "m"))
        .approval(ApprovalMode::Full)
        .mcp_wait(None)
        .build()
        .await;
    let h = &mut session.handle;
    assert!(matches!(next(h).await, Event::SessionStarted { .. }));
    let first = loop {
        match next(h).await {
            Event::Warning { .. } => continue,
            Event::McpServers { servers } => break servers,
            other => panic!("expected McpServers right after SessionStarted, got {other:?}"),
        }
    };
    let t = |servers: &[McpServerState]| servers.iter().find(|s| s.name == "t").cloned().unwrap();
    let first = t(&first);
    assert_eq!((first.status.as_str(), first.tools), ("starting", 0));
    assert_eq!(first.origin, "workspace");
    assert_eq!(first.file, root.join(".agent/mcp.json"));
    let ready = loop {
        if let Event::McpServers { servers } = next(h).await {
            let s = t(&servers);
            if s.status == "ready" {
                break s;
            }
        }
    };
    assert!(ready.tools > 0 && ready.detail.is_none(), "{ready:?}");

    h.ops
        .send(Op::UserTurn {
            text: "crash it".into(),
        })
        .unwrap();
    let mut exited = None;
    let mut finished = false;
    while !(finished && exited.is_some()) {
        match next(h).await {
            Event::McpServers { servers } if t(&servers).status == "exited" => exited = Some(t(&servers)),
            Event::TurnFinished { .. } => finished = true,
            _ => {}
        }
    }
    let exited = exited.unwrap();
    assert_eq!(
        exited.detail.as_deref(),
        Some("crashing on purpose in the middle of a call")
    );
    let _ = h.ops.send(Op::Shutdown);
    let rest = until(h, |e| matches!(e, Event::SessionClosed)).await;
    // The watcher stops before the servers are stopped: no "stopped by the host" news.
    assert!(!rest.iter().any(|e| matches!(e, Event::McpServers { .. })), "{rest:?}");
    set_trust(&root, false);
    server.finish();
}

async fn resumed_session(server: &ScriptedServer, ws: &Path, resumed: Resumed) -> SessionHandle {
    SessionBuilder::new(ws.to_path_buf(), model(server, "m"))
        .approval(ApprovalMode::Auto)
        .resume(resumed)
        .build()
        .await
        .handle
}

/// Issue 15 item 8: a session resumed from its transcript sends the old conversation (user
/// message, assistant tool call, tool result, answer) before the new message; its transcript
/// copies the old records after a header naming the old session, so it resumes in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_carries_the_old_conversation() {
    config_home();
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    std::fs::write(root.join("a.txt"), "apple").unwrap();
    let first = ScriptedServer::start(vec![
        Reply::calls(vec![call("r1", "read_file", json!({"path": "a.txt"}))]),
        Reply::text("it says apple"),
    ]);
    let mut h = builtin_session(&first, &root, ApprovalMode::Auto);
    let (old_id, _) = started(&mut h).await;
    turn(&mut h, "what is in a.txt?").await;
    close(h).await;
    first.finish();

    assert_eq!(resume::last_session_id(&root).as_deref(), Some(old_id.as_str()));
    let resumed = resume::load(&root, &old_id).unwrap();
    assert_eq!((resumed.model.as_str(), resumed.skipped), ("m", 0));
    let second = ScriptedServer::start(vec![Reply::text("still apple")]);
    let mut h = resumed_session(&second, &root, resumed).await;
    let (new_id, transcript) = started(&mut h).await;
    assert_ne!(new_id, old_id);
    turn(&mut h, "and now?").await;
    close(h).await;

    let messages = second.requests()[0].messages();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1], json!({"role": "user", "content": "what is in a.txt?"}));
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "r1");
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "read_file");
    let args: Value =
        serde_json::from_str(messages[2]["tool_calls"][0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"path": "a.txt"}));
    assert_eq!(messages[3]["role"], "tool");
    assert!(second.requests()[0].tool_result("r1").unwrap().contains("apple"));
    assert_eq!(messages[4], json!({"role": "assistant", "content": "it says apple"}));
    assert_eq!(messages[5], json!({"role": "user", "content": "and now?"}));
    assert_eq!(messages.len(), 6);
    second.finish();

    let lines = records(&transcript);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["resumed_from"], old_id.as_str());
    assert_eq!(lines[1]["content"], "what is in a.txt?");
    // Resuming the resumed session: both conversations, in order.
    assert_eq!(resume::last_session_id(&root).as_deref(), Some(new_id.as_str()));
    let again = resume::load(&root, &new_id).unwrap();
    let users: Vec<String> = again
        .history()
        .iter()
        .filter_map(|m| match m {
            cst_agent::model::ChatMessage::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["what is in a.txt?", "and now?"]);
}

/// A session cut mid-turn (a call started, no result, half a line at the end): it loads, and
/// the resumed request is still a valid conversation (the scripted server checks that every
/// call is answered once), the unfinished call answered as not finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cut_mid_turn_resumes_as_a_valid_conversation() {
    config_home();
    let ws = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    let dir = root.join(".agent/sessions/1700000000-abcdef12");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        json!({"type": "session", "session_id": "1700000000-abcdef12", "model": "old-model",
               "base_url": "http://127.0.0.1:1/v1", "workspace": root, "approval": "auto",
               "system_prompt": "old", "time_ms": 1}),
        json!({"type": "message", "role": "user", "content": "run the tests", "time_ms": 2}),
        json!({"type": "message", "role": "assistant", "content": "running them",
               "tool_calls": [{"id": "s1", "tool": "run_shell", "args": {"command": "make test"}}], "time_ms": 3}),
    ];
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(r#"{"type":"tool_call","call_id":"s1","tool":"run_sh"#);
    std::fs::write(dir.join("main.jsonl"), text).unwrap();

    let resumed = resume::load(&root, "1700000000-abcdef12").unwrap();
    assert_eq!((resumed.model.as_str(), resumed.skipped), ("old-model", 1));
    let server = ScriptedServer::start(vec![Reply::text("let me run them again")]);
    let mut h = resumed_session(&server, &root, resumed).await;
    turn(&mut h, "well?").await;
    close(h).await;
    let result = server.requests()[0].tool_result("s1").unwrap();
    assert!(result.contains("did not finish"), "{result}");
    server.finish();
}

/// Hostile input: a path for an id, a symlinked main.jsonl (issue 13 item 8's rule for
/// transcripts, read side).
#[test]
fn load_refuses_paths_and_symlinks() {
    let ws = tempfile::tempdir().unwrap();
    let e = resume::load(ws.path(), "../x").unwrap_err();
    assert!(e.contains("not a session id"), "{e}");
    let e = resume::load(ws.path(), "1-nothing").unwrap_err();
    assert!(e.contains("no session 1-nothing") && e.contains("--continue"), "{e}");
    #[cfg(unix)]
    {
        let outside = ws.path().join("elsewhere.jsonl");
        std::fs::write(
            &outside,
            json!({"type": "session", "session_id": "x", "model": "m", "base_url": "",
                                        "workspace": "/", "approval": "auto", "system_prompt": ""})
            .to_string(),
        )
        .unwrap();
        let dir = ws.path().join(".agent/sessions/2-link");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("main.jsonl")).unwrap();
        let e = resume::load(ws.path(), "2-link").unwrap_err();
        assert!(e.contains("symlink") && e.contains("main.jsonl"), "{e}");
        assert_eq!(resume::last_session_id(ws.path()), None);
    }
}

/// The newest session by its start time, not by the text of its id.
#[test]
fn last_session_id_picks_the_newest() {
    let ws = tempfile::tempdir().unwrap();
    for id in ["999-aaaaaaaa", "1700000005-bbbbbbbb", "1700000001-ffffffff"] {
        let dir = ws.path().join(".agent/sessions").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.jsonl"), "{}\n").unwrap();
    }
    assert_eq!(
        resume::last_session_id(ws.path()).as_deref(),
        Some("1700000005-bbbbbbbb")
    );
    // Give it time to matter if anything sorted by modification time first.
    std::thread::sleep(Duration::from_millis(10));
    let dir = ws.path().join(".agent/sessions/1700000002-00000000");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.jsonl"), "{}\n").unwrap();
    assert_eq!(
        resume::last_session_id(ws.path()).as_deref(),
        Some("1700000005-bbbbbbbb")
    );
}
