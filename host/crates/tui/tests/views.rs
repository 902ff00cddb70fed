//! Each view of the TUI rendered on ratatui's TestBackend and kept as an insta snapshot
//! (`host/crates/tui/tests/snapshots/`): a visible change shows up as a snapshot diff. The app
//! is driven with the session's real event types, as the session sends them.

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use cst_protocol::{
    ApprovalDecision, Event, McpServerState, Op, Outcome, Perm, ReloadSummary, ReloadTarget, TokenUsage, TurnEnd,
};
use cst_tui::app::{App, Startup};
use cst_tui::view;

fn startup() -> Startup {
    Startup {
        workspace: PathBuf::from("/work/repo"),
        model: "gpt-test".into(),
        approval: "auto".into(),
        sandbox: "bubblewrap + seccomp".into(),
        summary: "2 skills · 1 plugin (3 tools) · 2 MCP servers".into(),
        untrusted_hint: None,
        warnings: Vec::new(),
        completions: vec!["skill:review".into(), "command:deploy".into()],
        redact: |s| s.replace("sk-secret-123", "[REDACTED]"),
    }
}

fn app() -> App {
    let mut app = App::new(startup(), None);
    app.on_event(Event::SessionStarted {
        session_id: "1-abc".into(),
        model: "gpt-test".into(),
        transcript: None,
    });
    app
}

fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view::draw(f, app)).expect("draw");
    t.backend().to_string()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn type_text(app: &mut App, text: &str) -> Vec<Op> {
    let mut ops = Vec::new();
    for c in text.chars() {
        ops.extend(app.on_key(key(KeyCode::Char(c))));
    }
    ops
}

fn server(name: &str, status: &str, tools: usize, detail: Option<&str>) -> McpServerState {
    McpServerState {
        name: name.into(),
        origin: "workspace".into(),
        file: PathBuf::from("/work/repo/.agent/mcp.json"),
        status: status.into(),
        detail: detail.map(str::to_string),
        tools,
    }
}

fn tool(app: &mut App, id: &str, tool: &str, source: &str, args: serde_json::Value, outcome: Outcome, output: &str) {
    app.on_event(Event::ToolCallStarted {
        call_id: id.into(),
        tool: tool.into(),
        source: source.into(),
        args,
    });
    app.on_event(Event::ToolCallFinished {
        call_id: id.into(),
        tool: tool.into(),
        outcome,
        output: output.into(),
        duration: Duration::from_millis(42),
    });
}

#[test]
fn home() {
    let mut s = startup();
    s.untrusted_hint = Some("this workspace has 1 plugin and 1 MCP server that load only when trusted".into());
    s.warnings = vec!["/work/repo/.agent/skills/bad/SKILL.md: no `name` in the front matter".into()];
    let mut app = App::new(s, None);
    insta::assert_snapshot!(render(&mut app, 100, 16));
}

#[test]
fn chat_with_tool_cells_and_a_diff() {
    let mut app = app();
    let ops = type_text(&mut app, "fix the greeting");
    assert!(ops.is_empty());
    assert!(
        matches!(app.on_key(key(KeyCode::Enter)).as_slice(), [Op::UserTurn { text }] if text == "fix the greeting")
    );
    app.on_event(Event::TurnStarted);
    app.on_event(Event::MessageDelta {
        text: "Looking at ".into(),
    });
    app.on_event(Event::MessageDelta {
        text: "`main.rs`.".into(),
    });
    app.on_event(Event::Message {
        text: "Looking at `main.rs`.".into(),
        tool_calls: vec![],
    });
    tool(
        &mut app,
        "c1",
        "read_file",
        "builtin:builtin",
        json!({"path": "src/main.rs"}),
        Outcome::Ok,
        "fn main() {\n    println!(\"helo\");\n}\nline 4\nline 5\nline 6",
    );
    tool(
        &mut app,
        "c2",
        "edit_file",
        "builtin:builtin",
        json!({"path": "src/main.rs", "old_text": "    println!(\"helo\");", "new_text": "    println!(\"hello\");"}),
        Outcome::Ok,
        "edited src/main.rs",
    );
    tool(
        &mut app,
        "c3",
        "word_count",
        "wasm:text-stats",
        json!({"text": "a b c"}),
        Outcome::Ok,
        "3",
    );
    tool(
        &mut app,
        "c4",
        "mcp__gh__issues",
        "mcp:gh",
        json!({"repo": "o/r"}),
        Outcome::Error,
        "HTTP 401",
    );
    app.on_event(Event::Message {
        text: "Fixed:\n\n```rust\nfn main() {\n    println!(\"hello\");\n}\n```".into(),
        tool_calls: vec![],
    });
    app.on_event(Event::TurnFinished {
        end: TurnEnd::Done { answer: "Fixed".into() },
        steps: 3,
        usage: Some(TokenUsage {
            input_tokens: 12_345,
            output_tokens: 678,
        }),
    });
    insta::assert_snapshot!(render(&mut app, 100, 40));
}

#[test]
fn approval_prompt_and_its_keys() {
    let mut app = app();
    app.on_event(Event::TurnStarted);
    app.on_event(Event::ToolCallStarted {
        call_id: "c1".into(),
        tool: "write_file".into(),
        source: "builtin:builtin".into(),
        args: json!({"path": "notes.txt", "content": "hi\n"}),
    });
    app.on_event(Event::ApprovalRequested {
        request_id: 7,
        tool: "write_file".into(),
        perm: Perm::Write,
        args: json!({"path": "notes.txt", "content": "hi\n"}),
        reason: "approval mode ask: write tools ask".into(),
        subagent: None,
    });
    insta::assert_snapshot!(render(&mut app, 90, 16));
    // A stray Enter does not approve; `a` approves for the session.
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    let ops = app.on_key(key(KeyCode::Char('a')));
    assert!(matches!(
        ops.as_slice(),
        [Op::Approval {
            request_id: 7,
            decision: ApprovalDecision::Always
        }]
    ));
    assert!(app.approvals.is_empty());
}

#[test]
fn refusing_with_a_reason_sends_it() {
    let mut app = app();
    app.on_event(Event::TurnStarted);
    app.on_event(Event::ApprovalRequested {
        request_id: 3,
        tool: "run_shell".into(),
        perm: Perm::Shell,
        args: json!({"command": "rm -rf build"}),
        reason: String::new(),
        subagent: None,
    });
    assert!(app.on_key(key(KeyCode::Char('n'))).is_empty());
    type_text(&mut app, "use cargo clean");
    let ops = app.on_key(key(KeyCode::Enter));
    assert!(matches!(ops.as_slice(), [Op::Refuse { request_id: 3, reason }] if reason == "use cargo clean"));
    // `n` then Enter: a plain no.
    app.on_event(Event::ApprovalRequested {
        request_id: 4,
        tool: "run_shell".into(),
        perm: Perm::Shell,
        args: json!({"command": "ls"}),
        reason: String::new(),
        subagent: None,
    });
    app.on_key(key(KeyCode::Char('n')));
    let ops = app.on_key(key(KeyCode::Enter));
    assert!(matches!(
        ops.as_slice(),
        [Op::Approval {
            request_id: 4,
            decision: ApprovalDecision::No
        }]
    ));
}

#[test]
fn question_from_a_subagent() {
    let mut app = app();
    app.on_event(Event::TurnStarted);
    app.on_event(Event::SubAgentStarted {
        n: 1,
        call_id: "t1".into(),
        role: "explore".into(),
        description: "find the config loader".into(),
        model: "gpt-test".into(),
        transcript: None,
    });
    app.on_event(Event::SubAgent {
        n: 1,
        event: Box::new(Event::ToolCallStarted {
            call_id: "s1".into(),
            tool: "grep".into(),
            source: "builtin:builtin".into(),
            args: json!({"pattern": "fn load"}),
        }),
    });
    app.on_event(Event::QuestionAsked {
        request_id: 9,
        question: "Which crate: config or core?".into(),
        subagent: Some(1),
    });
    insta::assert_snapshot!(render(&mut app, 90, 14));
    type_text(&mut app, "config");
    let ops = app.on_key(key(KeyCode::Enter));
    assert!(matches!(ops.as_slice(), [Op::Answer { request_id: 9, answer: Some(a) }] if a == "config"));
}

fn all_states(app: &mut App) {
    app.on_event(Event::McpServers {
        servers: vec![
            server("github", "ready", 12, None),
            server("jira", "starting", 0, None),
            server("broken", "failed", 0, Some("spawn `nope`: No such file or directory")),
            server("flaky", "exited", 0, Some("Error: token expired")),
            server("off", "disabled", 0, None),
        ],
    });
}

#[test]
fn sidebar_in_every_server_state() {
    let mut app = app();
    all_states(&mut app);
    insta::assert_snapshot!(render(&mut app, 110, 12));
}

#[test]
fn sidebar_follows_servers_as_they_become_ready() {
    let mut app = app();
    app.on_event(Event::McpServers {
        servers: vec![server("github", "starting", 0, None)],
    });
    assert!(render(&mut app, 110, 10).contains("MCP 0/1"));
    app.on_event(Event::McpServers {
        servers: vec![server("github", "ready", 12, None)],
    });
    let screen = render(&mut app, 110, 10);
    assert!(screen.contains("MCP 1/1") && screen.contains("12 tools"), "{screen}");
}

#[test]
fn mcp_overlay() {
    let mut app = app();
    all_states(&mut app);
    type_text(&mut app, "/mcp");
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    insta::assert_snapshot!(render(&mut app, 110, 14));
    app.on_key(key(KeyCode::Esc));
    assert!(app.overlay.is_none());
}

#[test]
fn agents_overlay_and_one_transcript() {
    let ws = tempfile::tempdir().expect("tempdir");
    let dir = ws.path().join(".agent/sessions/1-abc");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let lines = [
        json!({"type": "subagent", "n": 1, "role": "explore", "description": "find the config loader",
               "prompt": "Find where settings.json is read.", "model": "gpt-test", "readonly": true,
               "max_steps": 20, "tools": null, "role_file": null, "parent_call_id": "t1", "system_prompt": "…"}),
        json!({"type": "tool_call", "call_id": "s1", "tool": "grep", "source": "builtin:builtin",
               "args": {"pattern": "settings.json"}, "result": "host/crates/config/src/settings.rs:12", "duration_ms": 3.0, "outcome": "ok"}),
        json!({"type": "report", "report": "It is read in config/src/settings.rs.", "end": "done", "steps": 2}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("sub-1.jsonl"), text).expect("write");
    let mut app = app();
    app.workspace = ws.path().to_path_buf();
    type_text(&mut app, "/agents");
    app.on_key(key(KeyCode::Enter));
    insta::assert_snapshot!("agents_list", render(&mut app, 100, 12));
    app.on_key(key(KeyCode::Enter));
    insta::assert_snapshot!("agents_one", render(&mut app, 100, 24));
}

#[test]
fn tiny_terminal() {
    let mut app = app();
    all_states(&mut app);
    app.on_event(Event::TurnStarted);
    app.on_event(Event::MessageDelta {
        text: "a long streaming answer that wraps".into(),
    });
    insta::assert_snapshot!(render(&mut app, 20, 6));
    // Smaller still, and zero-sized: no panic.
    for (w, h) in [(1, 1), (5, 2), (1, 20), (20, 1)] {
        render(&mut app, w, h);
    }
}

#[test]
fn slash_completion_popup() {
    let mut app = app();
    type_text(&mut app, "/pl");
    insta::assert_snapshot!(render(&mut app, 80, 12));
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.input.lines()[0], "/plugins reload");
}

#[test]
fn escape_sequences_in_tool_output_and_names_never_reach_the_terminal() {
    let mut app = app();
    let evil = "\x1b]0;pwned\x07\x1b[2J\x1b[6n\u{9b}31mred\x1bP+q\x1b\\ok\u{202e}txt.exe";
    tool(
        &mut app,
        "c1",
        &format!("evil{evil}"),
        "mcp:evil",
        json!({"path": evil}),
        Outcome::Ok,
        evil,
    );
    app.on_event(Event::Message {
        text: format!("```\n{evil}\n```"),
        tool_calls: vec![],
    });
    app.on_event(Event::McpServers {
        servers: vec![server(&format!("s{evil}"), "exited", 0, Some(evil))],
    });
    let screen = render(&mut app, 120, 30);
    for bad in ['\x1b', '\x07', '\u{9b}', '\u{202e}'] {
        assert!(!screen.contains(bad), "{bad:?} reached the screen:\n{screen}");
    }
}

#[test]
fn secrets_are_redacted_on_screen() {
    let mut app = app();
    tool(
        &mut app,
        "c1",
        "run_shell",
        "builtin:builtin",
        json!({"command": "env"}),
        Outcome::Ok,
        "KEY=sk-secret-123",
    );
    let screen = render(&mut app, 100, 12);
    assert!(
        !screen.contains("sk-secret-123") && screen.contains("[REDACTED]"),
        "{screen}"
    );
}

#[test]
fn a_ten_megabyte_result_and_non_utf8_text_stay_usable() {
    let mut app = app();
    let big = "x".repeat(100) + "\n";
    let big = big.repeat(100_000);
    tool(
        &mut app,
        "c1",
        "run_shell",
        "builtin:builtin",
        json!({"command": "yes"}),
        Outcome::Ok,
        &big,
    );
    let lossy = String::from_utf8_lossy(b"caf\xe9 \xff\xfe done").into_owned();
    tool(
        &mut app,
        "c2",
        "run_shell",
        "builtin:builtin",
        json!({"command": "cat bin"}),
        Outcome::Ok,
        &lossy,
    );
    let screen = render(&mut app, 100, 20);
    assert!(screen.contains("more lines"), "{screen}");
    assert!(screen.contains("done"), "{screen}");
}

#[test]
fn a_stream_that_stops_half_way_leaves_the_ui_usable() {
    let mut app = app();
    app.on_event(Event::TurnStarted);
    app.on_event(Event::MessageDelta {
        text: "```rust\nfn half(".into(),
    });
    app.on_event(Event::Error {
        message: "the model stream ended early".into(),
    });
    app.on_event(Event::TurnFinished {
        end: TurnEnd::Failed {
            message: "the model stream ended early".into(),
        },
        steps: 1,
        usage: None,
    });
    assert!(app.running.is_none());
    let screen = render(&mut app, 80, 16);
    assert!(
        screen.contains("fn half(") && screen.contains("ended early"),
        "{screen}"
    );
    // The next message goes through.
    type_text(&mut app, "again");
    assert!(matches!(
        app.on_key(key(KeyCode::Enter)).as_slice(),
        [Op::UserTurn { .. }]
    ));
}

#[test]
fn esc_cancels_and_says_what_was_stopped() {
    let mut app = app();
    app.on_event(Event::TurnStarted);
    app.on_event(Event::ToolCallStarted {
        call_id: "c1".into(),
        tool: "run_shell".into(),
        source: "builtin:builtin".into(),
        args: json!({"command": "sleep 100"}),
    });
    assert!(matches!(app.on_key(key(KeyCode::Esc)).as_slice(), [Op::Cancel]));
    // A second Esc while cancelling sends nothing more.
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    app.on_event(Event::ToolCallFinished {
        call_id: "c1".into(),
        tool: "run_shell".into(),
        outcome: Outcome::Cancelled,
        output: "cancelled".into(),
        duration: Duration::from_millis(1500),
    });
    app.on_event(Event::TurnFinished {
        end: TurnEnd::Cancelled,
        steps: 1,
        usage: None,
    });
    let screen = render(&mut app, 90, 12);
    assert!(screen.contains("cancelled"), "{screen}");
}

#[test]
fn reloads_say_what_changed_and_ctrl_c_twice_quits() {
    let mut app = app();
    app.on_event(Event::Reloaded {
        what: ReloadTarget::Plugins,
        summary: ReloadSummary {
            added: vec![cst_protocol::Changed {
                kind: cst_protocol::ExtensionKind::Plugin,
                name: "jira".into(),
            }],
            ..Default::default()
        },
        warnings: vec![],
    });
    assert!(render(&mut app, 90, 10).contains("reloaded plugins: added plugin jira"));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(app.on_key(ctrl_c).is_empty());
    assert!(!app.quit);
    assert!(matches!(app.on_key(ctrl_c).as_slice(), [Op::Shutdown]));
    assert!(app.quit);
}

#[test]
fn history_comes_back_with_up() {
    let mut app = app();
    type_text(&mut app, "first");
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "second");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.input.lines()[0], "second");
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.input.lines()[0], "first");
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.input.lines()[0], "second");
}

#[test]
fn slash_commands_send_their_ops() {
    let mut app = app();
    let run = |app: &mut App, line: &str| {
        type_text(app, line);
        app.on_key(key(KeyCode::Enter))
    };
    // E8: reloads; M11: one server; S6: /skill goes to the session, which expands it.
    assert!(matches!(
        run(&mut app, "/skills reload").as_slice(),
        [Op::Reload {
            what: ReloadTarget::Skills
        }]
    ));
    assert!(matches!(
        run(&mut app, "/plugins reload").as_slice(),
        [Op::Reload {
            what: ReloadTarget::Plugins
        }]
    ));
    assert!(matches!(
        run(&mut app, "/mcp reload").as_slice(),
        [Op::Reload {
            what: ReloadTarget::Mcp { server: None }
        }]
    ));
    assert!(
        matches!(run(&mut app, "/mcp reload gh").as_slice(), [Op::Reload { what: ReloadTarget::Mcp { server: Some(s) } }] if s == "gh")
    );
    assert!(
        matches!(run(&mut app, "/skill review main.rs").as_slice(), [Op::UserTurn { text }] if text == "/skill review main.rs")
    );
    assert!(matches!(run(&mut app, "/model gpt-5").as_slice(), [Op::SetModel { model }] if model == "gpt-5"));
    assert!(matches!(run(&mut app, "/approval ask").as_slice(), [Op::SetApproval { mode }] if mode == "ask"));
    assert!(matches!(run(&mut app, "/clear").as_slice(), [Op::Clear]));
    // Without a trust function (tests), trust says it cannot and sends nothing.
    assert!(run(&mut app, "/plugins trust").is_empty());
    assert!(run(&mut app, "/help").is_empty());
    assert!(matches!(app.overlay, Some(cst_tui::app::Overlay::Help)));
    app.on_key(key(KeyCode::Esc));
    assert!(matches!(run(&mut app, "/quit").as_slice(), [Op::Shutdown]));
}

#[test]
fn trust_writes_through_the_binary_then_reloads() {
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    let trust: cst_tui::app::TrustFn = Box::new(move |t| {
        seen.lock().expect("lock").push(t);
        Ok(if t {
            "trusted workspace: /work/repo".into()
        } else {
            "workspace no longer trusted".into()
        })
    });
    let mut app = App::new(startup(), Some(trust));
    type_text(&mut app, "/plugins trust");
    assert!(matches!(
        app.on_key(key(KeyCode::Enter)).as_slice(),
        [Op::Reload {
            what: ReloadTarget::Trust
        }]
    ));
    type_text(&mut app, "/plugins untrust");
    assert!(matches!(
        app.on_key(key(KeyCode::Enter)).as_slice(),
        [Op::Reload {
            what: ReloadTarget::Trust
        }]
    ));
    assert_eq!(*calls.lock().expect("lock"), vec![true, false]);
    assert!(render(&mut app, 90, 14).contains("trusted workspace: /work/repo"));
}

#[test]
fn resizing_rewraps_and_keeps_everything() {
    let mut app = app();
    app.on_event(Event::Message {
        text: "A paragraph long enough to wrap differently at each of the widths this test draws it at.".into(),
        tool_calls: vec![],
    });
    let wide = render(&mut app, 120, 20);
    let narrow = render(&mut app, 40, 20);
    assert!(narrow.contains("A paragraph long enough"), "{narrow}");
    assert_eq!(
        render(&mut app, 120, 20),
        wide,
        "back to the first size, the same screen"
    );
}

#[test]
fn a_paste_keeps_its_newlines_and_is_not_sent() {
    let mut app = app();
    app.on_paste("line one\r\nline two\nline three");
    assert_eq!(app.input.lines(), ["line one", "line two", "line three"]);
    assert!(
        matches!(app.on_key(key(KeyCode::Enter)).as_slice(), [Op::UserTurn { text }] if text == "line one\nline two\nline three")
    );
}
