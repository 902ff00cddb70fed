//! Session transcripts: `.agent/sessions/<session id>/main.jsonl` in the workspace. One JSON
//! object a line, written straight to the file (no user-space buffer) as things happen, so a
//! crash loses nothing already written. Secrets are redacted before anything is written.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// Replaces secrets in text and JSON: the values it was given (the API key...) anywhere, and the
/// values of object keys that name a secret (`api_key`, `token`, `password`...).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    values: Vec<String>,
}

pub const REDACTED: &str = "[REDACTED]";

impl Redactor {
    /// `values` shorter than 6 characters are ignored (they would mangle ordinary text).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        Self {
            values: values.into_iter().filter(|v| v.len() >= 6).collect(),
        }
    }

    pub fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), REDACTED);
            }
        }
        out
    }

    pub fn value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(x)).collect()),
            Value::Object(o) => {
                let mut m = Map::new();
                for (k, x) in o {
                    let x = if is_secret_key(k) && !x.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        self.value(x)
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

impl Transcript {
    /// Create `<workspace>/.agent/sessions/<session_id>/main.jsonl`.
    pub fn create(workspace: &Path, session_id: &str, redactor: Redactor) -> std::io::Result<Self> {
        let dir = crate::subagents::transcripts::session_dir(workspace, session_id);
        Self::create_in(&dir, "main.jsonl", redactor)
    }

    /// Create `dir/file_name` (a sub-agent's `sub-N.jsonl` beside `main.jsonl`).
    pub fn create_in(dir: &Path, file_name: &str, redactor: Redactor) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(file_name);
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Self {
            path,
            file: Mutex::new(Some(file)),
            redactor,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write one record: `{"type": kind, "time_ms": …, ...fields}`; redacted, one line.
    pub fn record(&self, kind: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("type".into(), Value::String(kind.into()));
        obj.insert("time_ms".into(), json!(now_ms()));
        if let Value::Object(f) = self.redactor.value(&fields) {
            obj.extend(f);
        }
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

    pub fn message(&self, role: &str, content: &str) {
        self.record("message", json!({"role": role, "content": content}));
    }

    #[allow(clippy::too_many_arguments)]
    pub fn tool_call(
        &self,
        call_id: &str,
        tool: &str,
        source: &str,
        args: &Value,
        result: &str,
        duration: Duration,
        outcome: &str,
        subagent_transcript: Option<&str>,
    ) {
        let mut fields = json!({
            "call_id": call_id, "tool": tool, "source": source, "args": args,
            "result": result, "duration_ms": duration.as_secs_f64() * 1000.0, "outcome": outcome,
        });
        if let Some(file) = subagent_transcript {
            fields["subagent_transcript"] = Value::String(file.into());
        }
        self.record("tool_call", fields);
    }

    pub fn error(&self, message: &str) {
        self.record("error", json!({"message": message}));
    }

    /// Write the closing record, sync and close. Later records are dropped.
    pub fn close(&self, reason: &str) {
        self.record("session_end", json!({"reason": reason}));
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = guard.take() {
            let _ = f.sync_all();
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
    }

    #[test]
    fn lines_are_written_at_once() {
        let ws = tempfile::tempdir().unwrap();
        let t = Transcript::create(ws.path(), "s1", Redactor::default()).unwrap();
        t.message("user", "hi");
        // Read while still open: the line is already in the file.
        let text = std::fs::read_to_string(t.path()).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["type"], "message");
        assert_eq!(first["content"], "hi");
        t.close("done");
        t.message("user", "dropped");
        let text = std::fs::read_to_string(t.path()).unwrap();
        assert_eq!(text.lines().count(), 2);
    }
}
