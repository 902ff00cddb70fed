//! The TUI: `cst-agent` with no subcommand. A client of the session layer only — it builds a
//! session with `cst_core::SessionBuilder`, sends `Op`s and draws `Event`s; no agent logic here.
//!
//! - [`app`]: the state, and what events and keys do to it (no terminal; tests drive it).
//! - [`view`]: drawing the state; [`cells`]: the chat history and its cached lines.
//! - [`slash`]: the slash commands; [`markdown`], [`diff`], [`wrap`], [`sanitize`]: text.
//! - [`terminal`]: raw mode and the alternate screen, restored on exit and on panic.

pub mod app;
pub mod cells;
pub mod diff;
pub mod markdown;
pub mod sanitize;
pub mod slash;
pub mod terminal;
pub mod view;
pub mod wrap;

use std::time::Duration;

use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;

use app::{App, Startup, TrustFn};
use cst_core::{Event, Op, Session};

/// Redraws while a turn runs (spinner, elapsed times) at most this often.
const TICK: Duration = Duration::from_millis(100);
/// How long quitting waits for the session to stop its MCP servers.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// Run the TUI on this terminal until the person quits; the process exit code.
pub async fn run(session: Session, startup: Startup, trust: Option<TrustFn>, replay: Vec<Replay>) -> i32 {
    let mut app = App::new(startup, trust);
    let reopened = !replay.is_empty();
    for r in replay {
        r.apply(&mut app);
    }
    if reopened {
        app.notice(
            cells::Level::Info,
            "reopened the conversation above from its transcript; new turns go on from it",
        );
    }
    let mut terminal = match terminal::enter() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot open the terminal: {e}");
            return 1;
        }
    };
    let code = event_loop(&mut terminal, session, &mut app).await;
    terminal::leave();
    code
}

/// A message or tool call of a resumed conversation, shown before the new turns.
pub enum Replay {
    Message {
        role: String,
        text: String,
    },
    Tool {
        call_id: String,
        tool: String,
        source: String,
        args: serde_json::Value,
        output: String,
        outcome: cst_protocol::Outcome,
        duration: Duration,
    },
}

impl Replay {
    fn apply(self, app: &mut App) {
        match self {
            Replay::Message { role, text } => app.replay_message(&role, &text),
            Replay::Tool {
                call_id,
                tool,
                source,
                args,
                output,
                outcome,
                duration,
            } => app.replay_tool(&call_id, &tool, &source, args, &output, (outcome, duration)),
        }
    }
}

async fn event_loop(terminal: &mut terminal::Term, mut session: Session, app: &mut App) -> i32 {
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    let mut dirty = true;
    loop {
        if dirty {
            if let Err(e) = terminal.draw(|f| view::draw(f, app)) {
                terminal::leave();
                eprintln!("error: cannot draw: {e}");
                return 1;
            }
        }
        if app.closed {
            return 0;
        }
        tokio::select! {
            event = session.handle.events.recv() => {
                let Some(event) = event else { return 0 };
                app.on_event(event);
                // Apply whatever else is queued before drawing once (a fast stream).
                while let Ok(event) = session.handle.events.try_recv() {
                    app.on_event(event);
                }
                dirty = true;
            }
            key = keys.next() => {
                match key {
                    Some(Ok(TermEvent::Key(k))) => {
                        for op in app.on_key(k) {
                            let _ = session.handle.ops.send(op);
                        }
                    }
                    Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                    Some(Ok(_)) => {}
                    // The terminal is gone: end the session.
                    Some(Err(_)) | None => app.quit = true,
                }
                dirty = true;
            }
            _ = tick.tick() => {
                app.tick = app.tick.wrapping_add(1);
                dirty = app.running.is_some() || app.flash.is_some();
            }
        }
        if app.quit {
            let _ = session.handle.ops.send(Op::Shutdown);
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, async {
                while let Some(e) = session.handle.events.recv().await {
                    if matches!(e, Event::SessionClosed) {
                        break;
                    }
                }
            })
            .await;
            return 0;
        }
    }
}
