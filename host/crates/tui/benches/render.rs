//! Render cost of the TUI, printed as a table (docs/performance.md records it):
//! - a frame of a 1,000-message session (target ≤ 2 ms);
//! - keystroke to screen while a tool runs and the model streams: apply the stream's events
//!   that arrived, apply the key, draw the frame (target p99 ≤ 16 ms).
//!
//! `cargo bench -p cst-tui --bench render`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use cst_protocol::{Event, Outcome};
use cst_tui::app::{App, Startup};
use cst_tui::view;

fn app() -> App {
    App::new(
        Startup {
            workspace: PathBuf::from("/work/repo"),
            model: "bench".into(),
            approval: "auto".into(),
            sandbox: "bubblewrap + seccomp".into(),
            summary: "3 skills · 2 plugins (5 tools) · 2 MCP servers".into(),
            untrusted_hint: None,
            warnings: Vec::new(),
            completions: Vec::new(),
            redact: |s| s.to_string(),
        },
        None,
    )
}

const ANSWER: &str = "Here is the change:\n\n```rust\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n```\n\n- first point with **bold** text\n- second point with `code`\n\nAnd a closing paragraph that is long enough to wrap across more than one line of the chat view.";

/// 1,000 messages: users, answers with markdown and code, tool calls with output and a diff.
fn long_session(app: &mut App) {
    for i in 0..250 {
        app.on_event(Event::Message {
            text: ANSWER.into(),
            tool_calls: vec![],
        });
        let id = format!("c{i}");
        app.on_event(Event::ToolCallStarted {
            call_id: id.clone(),
            tool: "edit_file".into(),
            source: "builtin:builtin".into(),
            args: json!({"path": "src/main.rs", "old_text": "let x = 1;\nlet y = 2;", "new_text": "let x = 2;\nlet y = 2;"}),
        });
        app.on_event(Event::ToolCallFinished {
            call_id: id,
            tool: "edit_file".into(),
            outcome: Outcome::Ok,
            output: "edited src/main.rs\n".repeat(8),
            duration: Duration::from_millis(3),
        });
        app.on_event(Event::Message {
            text: format!("step {i} done"),
            tool_calls: vec![],
        });
        app.on_event(Event::Warning {
            message: format!("note {i}"),
        });
    }
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let mut app = app();
    long_session(&mut app);

    // First frame renders every cell once (then cached per width).
    let start = Instant::now();
    term.draw(|f| view::draw(f, &mut app)).expect("draw");
    let first = start.elapsed();

    let mut frames = Vec::new();
    for _ in 0..300 {
        let start = Instant::now();
        term.draw(|f| view::draw(f, &mut app)).expect("draw");
        frames.push(start.elapsed());
    }

    // A tool runs, the model streams 20 deltas between keystrokes.
    app.on_event(Event::TurnStarted);
    app.on_event(Event::ToolCallStarted {
        call_id: "slow".into(),
        tool: "run_shell".into(),
        source: "builtin:builtin".into(),
        args: json!({"command": "cargo build"}),
    });
    let mut keys = Vec::new();
    for i in 0..300 {
        let start = Instant::now();
        for _ in 0..20 {
            app.on_event(Event::MessageDelta {
                text: format!("word{i} "),
            });
        }
        let c = char::from(b'a' + (i % 26) as u8);
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        term.draw(|f| view::draw(f, &mut app)).expect("draw");
        keys.push(start.elapsed());
    }

    println!("| measure (120×40, 1,000 messages) | p50 | p99 | target |");
    println!("|---|---|---|---|");
    println!("| first frame (renders every cell once) | {first:.2?} | – | – |");
    println!(
        "| frame | {:.3?} | {:.3?} | ≤ 2 ms |",
        percentile(&mut frames, 0.5),
        percentile(&mut frames, 0.99)
    );
    println!(
        "| keystroke to screen, streaming + running tool | {:.3?} | {:.3?} | p99 ≤ 16 ms |",
        percentile(&mut keys, 0.5),
        percentile(&mut keys, 0.99)
    );
}
