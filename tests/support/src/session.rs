//! The in-process session kit: a session of the real core talking to a [`ScriptedServer`], for
//! the tests of every front end (the core's contract, `exec`, the TUI, `mcp serve`). Nothing is
//! mocked but the model's weights.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cst_config::ToolsProfile;
use cst_core::approvals::ApprovalMode;
use cst_core::model::{ModelClient, ModelConfig};
use cst_core::{Event, Op, SessionConfig, SessionHandle, TurnEnd};
use cst_protocol::TokenUsage;
use cst_registry::Registry;

use crate::ScriptedServer;

/// A model client for `server` (no API key).
pub fn model(server: &ScriptedServer, name: &str) -> ModelClient {
    ModelClient::new(ModelConfig {
        base_url: server.url(),
        name: name.into(),
        api_key_env: "NONE".into(),
        api_key: None,
        ..ModelConfig::default()
    })
    .expect("model client")
}

/// A session over the built-in tools of the `default` profile (no extensions), with a
/// transcript, as an interactive front end (not headless) would have it.
pub fn builtin_session(server: &ScriptedServer, ws: &Path, mode: ApprovalMode) -> SessionHandle {
    session_with(server, ws, |c| c.approval = mode)
}

/// Like [`builtin_session`], with the config adjusted by `adjust` before the session starts.
pub fn session_with(server: &ScriptedServer, ws: &Path, adjust: impl FnOnce(&mut SessionConfig)) -> SessionHandle {
    let registry = Arc::new(Registry::new());
    let mut warnings = Vec::new();
    cst_extensions::builtin_tools::register_builtins(&registry, ToolsProfile::Default, &mut warnings);
    assert!(warnings.is_empty(), "{warnings:?}");
    let ws = std::fs::canonicalize(ws).expect("workspace");
    let mut config = SessionConfig::new(ws, registry, model(server, "m"));
    config.max_steps = 10;
    config.system_prompt = "test".into();
    adjust(&mut config);
    cst_core::spawn(config)
}

/// The next event, failing the test when none comes within 30 s.
pub async fn next(h: &mut SessionHandle) -> Event {
    tokio::time::timeout(Duration::from_secs(30), h.events.recv())
        .await
        .expect("no event within 30 s")
        .expect("event stream ended")
}

/// Events until (and with) the first one `stop` accepts.
pub async fn until(h: &mut SessionHandle, stop: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut out = Vec::new();
    loop {
        let ev = next(h).await;
        let done = stop(&ev);
        out.push(ev);
        if done {
            return out;
        }
    }
}

/// Send `text` as a turn and collect its events up to `TurnFinished`.
pub async fn turn(h: &mut SessionHandle, text: &str) -> Vec<Event> {
    h.ops
        .send(Op::UserTurn { text: text.into() })
        .expect("session is running");
    until(h, |e| matches!(e, Event::TurnFinished { .. })).await
}

/// The `TurnFinished` of a turn's `events`: how it ended, its steps and its usage.
pub fn finished(events: &[Event]) -> (TurnEnd, u32, Option<TokenUsage>) {
    events
        .iter()
        .find_map(|e| match e {
            Event::TurnFinished { end, steps, usage } => Some((end.clone(), *steps, *usage)),
            _ => None,
        })
        .expect("no TurnFinished among the events")
}

/// The answer text the main agent streamed in `events`, joined.
pub fn streamed(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Shut the session down and wait for `SessionClosed`.
pub async fn close(mut h: SessionHandle) {
    let _ = h.ops.send(Op::Shutdown);
    until(&mut h, |e| matches!(e, Event::SessionClosed)).await;
}

/// One config and cache home for the in-process tests of a test binary: the config dir comes
/// from the environment, which the tests of one process share, so it is set once, before any
/// test reads it.
pub fn config_home() -> &'static Path {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("cst-test-home-{}", std::process::id()));
        std::env::set_var("XDG_CONFIG_HOME", dir.join("config"));
        std::env::set_var("XDG_CACHE_HOME", dir.join("cache"));
        dir
    })
}

/// Trust or untrust `ws` in [`config_home`]'s settings.json. The file is replaced atomically
/// but not locked, so the tests' trust changes take turns.
pub fn set_trust(ws: &Path, trusted: bool) {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    config_home();
    let result = if trusted {
        cst_config::trust::trust(ws).map(drop)
    } else {
        cst_config::trust::untrust(ws).map(drop)
    };
    if let Err(e) = result {
        panic!("cannot change the trust of {}: {e}", ws.display());
    }
}
