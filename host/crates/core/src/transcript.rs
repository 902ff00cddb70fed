//! Session transcripts: `.agent/sessions/<session id>/main.jsonl` in the workspace, and a
//! sub-agent's `sub-N.jsonl` beside it. One JSON object a line ([`Record`]), written straight to
//! the file (no user-space buffer) as things happen, so a crash loses nothing already written.
//! Secrets are redacted before anything is written.
//!
//! A [`TranscriptSink`] on the session's event bus writes them: nothing else writes records,
//! apart from the header a file starts with.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::events::EventSink;
use cst_protocol::{Event, ToolCallRequest};

/// Replaces secrets in text and JSON: the values it was given (the API key...) anywhere, and the
/// values of object keys that name a secret (`api_key`, `token`, `password`...).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

pub const REDACTED: &str = cst_config::secrets::REDACTED;

impl Redactor {
    /// `values` shorter than 6 characters are ignored (they would mangle ordinary text).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values.into_iter().filter(|v| v.len() >= 6).collect();
        values.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { values }
    }

    /// `s` with its values and every secret the host knows ([`cst_config::secrets`]: the API
    /// key, the `${NAME}` values expanded into MCP servers) replaced.
    pub fn text(&self, s: &str) -> String {
        let out = cst_config::secrets::redact_with(s, &self.values);
        cst_config::secrets::redact(&out)
    }

    pub fn value(&self, v: &Value) -> Value {
        self.value_with(v, &cst_config::secrets::values())
    }

    fn value_with(&self, v: &Value, known: &[String]) -> Value {
        match v {
            Value::String(s) => Value::String(cst_config::secrets::redact_with(
                &cst_config::secrets::redact_with(s, &self.values),
                known,
            )),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value_with(x, known)).collect()),
            Value::Object(o) => {
                let mut m = Map::new();
                for (k, x) in o {
                    let x = if is_secret_key(k) && !x.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        self.value_with(x, known)
                    };
                    m.insert(k.clone(), x);
                }
                Value::Object(m)
            }
            other => other.clone(),
        }
    }
}

/// Whether an argument name looks like it holds a credential.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_'], "");
    // Counts of tokens (`output_tokens`, `max_tokens`) are not credentials.
    if k.ends_with("tokens") {
        return false;
    }
    [
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "authorization",
        "credential",
        "privatekey",
    ]
    .iter()
    .any(|w| k.contains(w))
}

/// The folder of one session's transcripts: `<workspace>/.agent/sessions/<session id>/`.
pub fn session_dir(workspace: &Path, session_id: &str) -> PathBuf {
    workspace.join(".agent").join("sessions").join(session_id)
}

/// One line of a transcript. `type` names the variant. Read back by [`crate::resume`]; every
/// line also has `time_ms`, which reading ignores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The first line of `main.jsonl`.
    Session {
        session_id: String,
        model: String,
        base_url: String,
        workspace: PathBuf,
        approval: String,
        system_prompt: String,
        /// The session this one resumed: the records after this header, up to the first new
        /// one, are that session's, copied over.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resumed_from: Option<String>,
    },
    /// The first line of `sub-N.jsonl`.
    Subagent {
        n: u32,
        role: String,
        description: String,
        prompt: String,
        model: String,
        readonly: bool,
        max_steps: u32,
        tools: Option<Vec<String>>,
        role_file: Option<PathBuf>,
        parent_call_id: String,
        system_prompt: String,
    },
    Message {
        role: String,
        content: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<ToolCallRequest>>,
    },
    ToolCall {
        call_id: String,
        tool: String,
        source: String,
        args: Value,
        result: String,
        duration_ms: f64,
        outcome: String,
        /// The sub-agent transcript a `task` call started (A6).
        #[serde(skip_serializing_if = "Option::is_none")]
        subagent_transcript: Option<String>,
    },
    Error {
        message: String,
    },
    TurnEnd {
        reason: String,
        steps: u32,
        /// Tokens the server reported for the turn.
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<cst_protocol::TokenUsage>,
    },
    /// A sub-agent's last lines: what went back to its parent.
    Report {
        report: String,
        end: String,
        steps: u32,
    },
    /// The history sent to the model was compacted: `messages` older ones summarised (they
    /// stay above in this file).
    Compacted {
        messages: usize,
        summary: String,
    },
    SessionEnd {
        reason: String,
    },
    /// `/model NAME` took effect: later model calls use `model`.
    ModelChanged {
        model: String,
    },
    /// `/approval MODE` took effect.
    ApprovalChanged {
        mode: String,
    },
    /// `/clear` took effect: the conversation before this line is no longer the model's
    /// (resuming starts after the last one).
    Clear,
}

/// An open transcript.
pub struct Transcript {
    path: PathBuf,
    file: Mutex<Option<File>>,
    redactor: Redactor,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Open a transcript file for appending (issue 13 item 8): `.agent`, `.agent/sessions` and the
/// session folder must not be symlinks (a link out would put the transcript, and what it holds,
/// wherever it points); the folders are created 0700, the file 0600 and never through a symlink,
/// and `.agent/sessions/.gitignore` (`*`) keeps transcripts out of commits.
fn open_private(dir: &Path, path: &Path) -> std::io::Result<std::fs::File> {
    let sessions = dir.parent();
    let agent = sessions.and_then(Path::parent);
    for d in [agent, sessions, Some(dir)].into_iter().flatten() {
        match std::fs::symlink_metadata(d) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(std::io::Error::other(format!(
                    "{} is a symlink; transcripts are not written through symlinks",
                    d.display()
                )))
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                #[cfg_attr(not(unix), allow(unused_mut))]
                let mut b = std::fs::DirBuilder::new();
                #[cfg(unix)]
                {
                    use std::os::unix::fs::DirBuilderExt;
                    b.mode(0o700);
                }
                match b.create(d) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(sessions) = sessions {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(sessions.join(".gitignore"))
        {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(b"*\n")?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    opts.open(path)
}

impl Transcript {
    /// Create `<workspace>/.agent/sessions/<session_id>/main.jsonl`.
    pub fn create(workspace: &Path, session_id: &str, redactor: Redactor) -> std::io::Result<Self> {
        let dir = session_dir(workspace, session_id);
        Self::create_in(&dir, "main.jsonl", redactor)
    }

    /// Create `dir/file_name` (a sub-agent's `sub-N.jsonl` beside `main.jsonl`).
    pub fn create_in(dir: &Path, file_name: &str, redactor: Redactor) -> std::io::Result<Self> {
        let path = dir.join(file_name);
        let file = open_private(dir, &path)?;
        Ok(Self {
            path,
            file: Mutex::new(Some(file)),
            redactor,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write one record: `{"type": …, "time_ms": …, ...fields}`; redacted, one line.
    pub fn write(&self, record: &Record) {
        let mut obj = Map::new();
        if let Ok(Value::Object(fields)) = serde_json::to_value(record) {
            obj = fields;
        }
        obj.insert("time_ms".into(), json!(now_ms()));
        let Value::Object(obj) = self.redactor.value(&Value::Object(obj)) else {
            return;
        };
        let mut line = Value::Object(obj).to_string();
        line.push('\n');
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = guard.as_mut() {
            // One write per record; `File` has no buffer, so the line is in the OS once this returns.
            if let Err(e) = f.write_all(line.as_bytes()) {
                tracing::warn!("cannot write transcript {}: {e}", self.path.display());
            }
        }
    }

    /// Write the closing record, sync and close. Later records are dropped.
    pub fn close(&self, reason: &str) {
        self.write(&Record::SessionEnd { reason: reason.into() });
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = guard.take() {
            let _ = f.sync_all();
        }
    }
}

/// Which agent's events a [`TranscriptSink`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptOf {
    Main,
    SubAgent(u32),
}

/// Writes one transcript file from the events of one agent: the main agent's events, or the
/// events of sub-agent N (wrapped in `Event::SubAgent`) and its end. The file is closed by
/// `SessionClosed` (main) or `SubAgentFinished` (sub-agent N).
pub struct TranscriptSink {
    transcript: Arc<Transcript>,
    agent: TranscriptOf,
    state: Mutex<SinkState>,
}

#[derive(Default)]
struct SinkState {
    /// Call id → (source, args) of calls that started and have not finished.
    started: HashMap<String, (String, Value)>,
    /// `task` call id → the sub-agent transcript file it started.
    subagent_files: HashMap<String, String>,
    last_end: Option<String>,
}

impl TranscriptSink {
    pub fn new(transcript: Arc<Transcript>, agent: TranscriptOf) -> Self {
        Self {
            transcript,
            agent,
            state: Mutex::default(),
        }
    }

    fn record(&self, event: &Event) {
        let t = &self.transcript;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Event::UserMessage { text } => t.write(&Record::Message {
                role: "user".into(),
                content: text.clone(),
                tool_calls: None,
            }),
            Event::Message { text, tool_calls } => t.write(&Record::Message {
                role: "assistant".into(),
                content: text.clone(),
                tool_calls: Some(tool_calls.clone()),
            }),
            Event::ToolCallStarted {
                call_id, source, args, ..
            } => {
                st.started.insert(call_id.clone(), (source.clone(), args.clone()));
            }
            Event::ToolCallFinished {
                call_id,
                tool,
                outcome,
                output,
                duration,
            } => {
                let (source, args) = st.started.remove(call_id).unwrap_or_default();
                t.write(&Record::ToolCall {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    source,
                    args,
                    result: output.clone(),
                    duration_ms: duration.as_secs_f64() * 1000.0,
                    outcome: outcome.as_str().into(),
                    subagent_transcript: st.subagent_files.remove(call_id),
                });
            }
            Event::SubAgentStarted {
                call_id,
                transcript: Some(path),
                ..
            } => {
                if let Some(name) = path.file_name() {
                    st.subagent_files
                        .insert(call_id.clone(), name.to_string_lossy().into_owned());
                }
            }
            Event::Error { message } => t.write(&Record::Error {
                message: message.clone(),
            }),
            Event::TurnFinished { end, steps, usage } => {
                st.last_end = Some(end.as_str().into());
                t.write(&Record::TurnEnd {
                    reason: end.as_str().into(),
                    steps: *steps,
                    usage: *usage,
                });
            }
            Event::ModelChanged { model } => t.write(&Record::ModelChanged { model: model.clone() }),
            Event::ApprovalModeChanged { mode } => t.write(&Record::ApprovalChanged { mode: mode.clone() }),
            Event::Cleared => t.write(&Record::Clear),
            Event::Compacted { messages, summary, .. } => t.write(&Record::Compacted {
                messages: *messages,
                summary: summary.clone(),
            }),
            Event::SessionClosed => t.close(st.last_end.as_deref().unwrap_or("no turn")),
            _ => {}
        }
    }
}

impl EventSink for TranscriptSink {
    fn on_event(&self, event: &Event) {
        match (self.agent, event) {
            (TranscriptOf::Main, Event::SubAgent { .. }) => {}
            (TranscriptOf::Main, e) => self.record(e),
            (TranscriptOf::SubAgent(n), Event::SubAgent { n: m, event }) if n == *m => self.record(event),
            (
                TranscriptOf::SubAgent(n),
                Event::SubAgentFinished {
                    n: m,
                    end,
                    steps,
                    report,
                    ..
                },
            ) if n == *m => {
                self.transcript.write(&Record::Report {
                    report: report.clone(),
                    end: end.as_str().into(),
                    steps: *steps,
                });
                self.transcript.close(end.as_str());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_keys_and_values() {
        let r = Redactor::new(["sk-verysecret".to_string(), "abc".to_string()]);
        let v = r.value(&json!({"api_key": "x", "nested": {"Auth-Token": 5}, "cmd": "curl -H sk-verysecret abc"}));
        assert_eq!(v["api_key"], REDACTED);
        assert_eq!(v["nested"]["Auth-Token"], REDACTED);
        assert_eq!(v["cmd"], "curl -H [REDACTED] abc");
        let counts = r.value(&json!({"usage": {"input_tokens": 12, "output_tokens": 3}, "max_tokens": 9}));
        assert_eq!(
            counts,
            json!({"usage": {"input_tokens": 12, "output_tokens": 3}, "max_tokens": 9})
        );
    }

    #[test]
    fn lines_are_written_at_once() {
        let ws = tempfile::tempdir().unwrap();
        let t = Transcript::create(ws.path(), "s1", Redactor::default()).unwrap();
        let hi = |text: &str| Record::Message {
            role: "user".into(),
            content: text.into(),
            tool_calls: None,
        };
        t.write(&hi("hi"));
        // Read while still open: the line is already in the file.
        let text = std::fs::read_to_string(t.path()).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["type"], "message");
        assert_eq!(first["content"], "hi");
        t.close("done");
        t.write(&hi("dropped"));
        let text = std::fs::read_to_string(t.path()).unwrap();
        assert_eq!(text.lines().count(), 2);
    }
}
