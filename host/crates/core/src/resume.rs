//! Resuming a session from its transcript (`cst-agent --continue`, `--resume ID`): [`load`]
//! reads `<workspace>/.agent/sessions/<id>/main.jsonl` back into [`Resumed`], whose
//! [`Resumed::history`] is the conversation the model saw; `SessionBuilder::resume` starts a
//! new session from it (a new id, the old records copied into its transcript).
//!
//! The file is input from disk, perhaps from a repository: the id must be a plain name, no
//! folder on the way nor the file may be a symlink, the read is capped, and a line that does
//! not parse (a crash can leave half a line) is skipped and counted, never trusted.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::model::{ChatMessage, FunctionCall, ToolCall};
use crate::transcript::{session_dir, Record};
use serde_json::Value;

/// The most of a `main.jsonl` that is read; a larger file is refused, not cut (a cut history
/// would be a different conversation).
pub const MAX_TRANSCRIPT_BYTES: u64 = 64 * 1024 * 1024;

/// What the tool message of a call says when the transcript has no result for it: the session
/// stopped (crash, kill) while the call ran, or the turn hit its step limit before running it.
pub const UNFINISHED_CALL: &str = "error: this call did not finish (the session ended before its result was recorded)";

/// A session read back from its `main.jsonl`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed {
    /// The session that was read (the folder name under `.agent/sessions/`).
    pub session_id: String,
    /// The model it used last: its header's, or that of its last `model_changed` record.
    pub model: String,
    /// Its records after the header and after its last `clear` record, without `session`
    /// headers and `session_end` records (they describe the old file, not the conversation).
    pub records: Vec<Record>,
    /// Lines that were skipped because they did not parse (a torn last line, a record of a
    /// newer version); a front end may say so.
    pub skipped: usize,
}

/// The newest session of `workspace` that has a `main.jsonl`: by the start time its id begins
/// with (see [`crate::new_session_id`]), then by the file's modification time (two sessions in
/// one second), then by name. Symlinked folders and files are passed over.
pub fn last_session_id(workspace: &Path) -> Option<String> {
    let sessions = workspace.join(".agent").join("sessions");
    if !plain_dirs(&[workspace.join(".agent"), sessions.clone()]) {
        return None;
    }
    let entries = std::fs::read_dir(&sessions).ok()?;
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            check_id(&name).ok()?;
            // `DirEntry::file_type` does not follow symlinks.
            if !e.file_type().ok()?.is_dir() {
                return None;
            }
            let meta = std::fs::symlink_metadata(e.path().join("main.jsonl")).ok()?;
            if !meta.is_file() {
                return None;
            }
            let started: u64 = name.split('-').next().and_then(|s| s.parse().ok()).unwrap_or(0);
            Some(((started, meta.modified().ok(), name.clone()), name))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, name)| name)
}

/// Read session `session_id` of `workspace`. Errors name the file and what to do.
pub fn load(workspace: &Path, session_id: &str) -> Result<Resumed, String> {
    check_id(session_id)?;
    let sessions = workspace.join(".agent").join("sessions");
    let dir = session_dir(workspace, session_id);
    let path = dir.join("main.jsonl");
    let missing = || {
        format!(
            "no session {session_id} in {}; cst-agent --continue opens the last one",
            sessions.display()
        )
    };
    for d in [workspace.join(".agent"), sessions.clone(), dir] {
        match std::fs::symlink_metadata(&d) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symlink; sessions are not read through symlinks",
                    d.display()
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
            Err(e) => return Err(format!("cannot read {}: {e}", d.display())),
        }
    }
    let bytes = read_capped(&path).map_err(|e| match e {
        ReadError::NotFound => missing(),
        ReadError::Other(why) => format!("cannot resume from {}: {why}", path.display()),
    })?;
    parse(session_id, &bytes).map_err(|why| format!("cannot resume from {}: {why}", path.display()))
}

impl Resumed {
    /// The conversation as the model saw it, rebuilt in order: user messages, assistant
    /// messages with their tool calls, and right after each such message one tool message per
    /// call, in the order of the calls (parallel calls finish, and are recorded, in any order).
    /// A call without a recorded result gets [`UNFINISHED_CALL`], so the history is a valid Chat
    /// Completions conversation whatever the transcript lacks. Thinking is not recorded, so
    /// none is sent back.
    pub fn history(&self) -> Vec<ChatMessage> {
        let mut out = Vec::new();
        // The calls of the last assistant message and the results found so far.
        let mut open: Vec<String> = Vec::new();
        let mut results: HashMap<String, String> = HashMap::new();
        let flush = |out: &mut Vec<ChatMessage>, open: &mut Vec<String>, results: &mut HashMap<String, String>| {
            for id in open.drain(..) {
                let content = results.remove(&id).unwrap_or_else(|| UNFINISHED_CALL.to_string());
                out.push(ChatMessage::Tool {
                    tool_call_id: id,
                    content,
                });
            }
            results.clear();
        };
        for record in &self.records {
            match record {
                Record::Message {
                    role,
                    content,
                    tool_calls,
                } => {
                    flush(&mut out, &mut open, &mut results);
                    match role.as_str() {
                        "user" => out.push(ChatMessage::User {
                            content: content.clone(),
                        }),
                        "assistant" => {
                            let mut calls = Vec::new();
                            for c in tool_calls.iter().flatten() {
                                // A repeated id would need two answers to one call.
                                if open.contains(&c.id) {
                                    continue;
                                }
                                open.push(c.id.clone());
                                calls.push(ToolCall {
                                    id: c.id.clone(),
                                    kind: "function".into(),
                                    function: FunctionCall {
                                        name: c.tool.clone(),
                                        arguments: arguments_text(&c.args),
                                    },
                                });
                            }
                            // As the agent loop sends it: `null` content beside tool calls; an
                            // empty text with no calls stays a (empty) string.
                            let content = (!content.is_empty() || calls.is_empty()).then(|| content.clone());
                            out.push(ChatMessage::Assistant {
                                content,
                                tool_calls: calls,
                                reasoning_content: None,
                                reasoning: None,
                                native: None,
                            });
                        }
                        _ => {}
                    }
                }
                Record::ToolCall { call_id, result, .. } if open.contains(call_id) => {
                    results.entry(call_id.clone()).or_insert_with(|| result.clone());
                }
                _ => {}
            }
        }
        flush(&mut out, &mut open, &mut results);
        out
    }

    /// The records as a new session's transcript copies them: a `task` call's sub-agent
    /// transcript is named relative to the new session's folder (`../<old id>/sub-N.jsonl`),
    /// since the new session numbers its own sub-agents from 1 again.
    pub fn records_for_copy(&self) -> Vec<Record> {
        self.records
            .iter()
            .cloned()
            .map(|mut r| {
                if let Record::ToolCall {
                    subagent_transcript: Some(file),
                    ..
                } = &mut r
                {
                    // Already relative to another session (a resumed one resumed again): kept.
                    if !file.contains('/') {
                        *file = format!("../{}/{file}", self.session_id);
                    }
                }
                r
            })
            .collect()
    }
}

/// A session id must be one plain folder name: not empty, no separator, not `.` or `..`.
fn check_id(id: &str) -> Result<(), String> {
    let plain = !id.is_empty()
        && id != "."
        && id != ".."
        && !id.contains(['/', '\\', '\0'])
        && Path::new(id).components().count() == 1;
    if plain {
        Ok(())
    } else {
        Err(format!(
            "`{id}` is not a session id (a folder name under .agent/sessions, as `cst-agent --continue` \
             or the sessions list shows it)"
        ))
    }
}

/// Whether every folder of `dirs` exists and is not a symlink.
fn plain_dirs(dirs: &[PathBuf]) -> bool {
    dirs.iter()
        .all(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.file_type().is_dir()))
}

enum ReadError {
    NotFound,
    Other(String),
}

/// Read a regular file, never through a symlink, at most [`MAX_TRANSCRIPT_BYTES`].
fn read_capped(path: &Path) -> Result<Vec<u8>, ReadError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::NotFound),
        Err(e) => return Err(ReadError::Other(e.to_string())),
    };
    if meta.file_type().is_symlink() {
        return Err(ReadError::Other(
            "it is a symlink; sessions are not read through symlinks".into(),
        ));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // The check above can race a swap; O_NOFOLLOW cannot. O_NONBLOCK: a FIFO must not hang
        // the open (it is refused just below).
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(|e| ReadError::Other(e.to_string()))?;
    let meta = file.metadata().map_err(|e| ReadError::Other(e.to_string()))?;
    if !meta.is_file() {
        return Err(ReadError::Other("it is not a regular file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_TRANSCRIPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Other(e.to_string()))?;
    if bytes.len() as u64 > MAX_TRANSCRIPT_BYTES {
        return Err(ReadError::Other(format!(
            "it is larger than {} MiB, more than a session can resume; start a new session",
            MAX_TRANSCRIPT_BYTES / (1024 * 1024)
        )));
    }
    Ok(bytes)
}

/// The records of a `main.jsonl`'s bytes.
fn parse(session_id: &str, bytes: &[u8]) -> Result<Resumed, String> {
    let mut records = Vec::new();
    let mut skipped = 0;
    let mut lines = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let mut model = match lines.next().map(serde_json::from_slice::<Record>) {
        Some(Ok(Record::Session { model, .. })) => model,
        _ => {
            return Err(
                "it does not start with a session header, so it is not a cst-agent session transcript (or it was \
                 cut before its first line was written); start a new session"
                    .into(),
            )
        }
    };
    for line in lines {
        match serde_json::from_slice::<Record>(line) {
            Ok(Record::Session { .. } | Record::SessionEnd { .. }) => {}
            Ok(Record::Clear) => records.clear(),
            Ok(Record::ModelChanged { model: m }) => {
                model = m.clone();
                records.push(Record::ModelChanged { model: m });
            }
            Ok(r) => records.push(r),
            Err(_) => skipped += 1,
        }
    }
    Ok(Resumed {
        session_id: session_id.to_string(),
        model,
        records,
        skipped,
    })
}

/// Tool-call arguments as text for the model: the JSON the transcript parsed, or the raw text
/// it kept as a string when the model's arguments were not JSON.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header() -> String {
        json!({"type": "session", "session_id": "1-a", "model": "m1", "base_url": "http://x/v1",
               "workspace": "/w", "approval": "auto", "system_prompt": "old prompt", "time_ms": 1})
        .to_string()
    }

    fn write(ws: &Path, id: &str, lines: &[String]) -> PathBuf {
        let dir = session_dir(ws, id);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("main.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    fn user(text: &str) -> String {
        json!({"type": "message", "role": "user", "content": text, "time_ms": 2}).to_string()
    }

    fn assistant(text: &str, calls: Value) -> String {
        json!({"type": "message", "role": "assistant", "content": text, "tool_calls": calls}).to_string()
    }

    fn result(id: &str, text: &str) -> String {
        json!({"type": "tool_call", "call_id": id, "tool": "read_file", "source": "builtin:host",
               "args": {}, "result": text, "duration_ms": 1.5, "outcome": "ok"})
        .to_string()
    }

    #[test]
    fn history_answers_every_call_once_in_call_order() {
        let ws = tempfile::tempdir().unwrap();
        let calls = json!([
            {"id": "c1", "tool": "read_file", "args": {"path": "a"}},
            {"id": "c2", "tool": "grep", "args": "not json{"},
            {"id": "c3", "tool": "read_file", "args": {"path": "c"}}
        ]);
        write(
            ws.path(),
            "1-a",
            &[
                header(),
                user("hello"),
                assistant("", calls),
                // Recorded in finishing order; c3 never finished.
                result("c2", "two"),
                result("c1", "one"),
                result("zz", "an answer to nothing"),
                json!({"type": "turn_end", "reason": "cancelled", "steps": 1}).to_string(),
                user("again"),
                assistant("fine", json!([])),
                json!({"type": "session_end", "reason": "done"}).to_string(),
            ],
        );
        let r = load(ws.path(), "1-a").unwrap();
        assert_eq!((r.session_id.as_str(), r.model.as_str(), r.skipped), ("1-a", "m1", 0));
        let h = r.history();
        let roles: Vec<String> = h
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["role"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "tool", "tool", "user", "assistant"]
        );
        let tool = |i: usize| match &h[i] {
            ChatMessage::Tool { tool_call_id, content } => (tool_call_id.as_str(), content.as_str()),
            m => panic!("{m:?}"),
        };
        assert_eq!(tool(2), ("c1", "one"));
        assert_eq!(tool(3), ("c2", "two"));
        assert_eq!(tool(4), ("c3", UNFINISHED_CALL));
        match &h[1] {
            ChatMessage::Assistant {
                content, tool_calls, ..
            } => {
                assert_eq!(content, &None);
                assert_eq!(tool_calls[0].function.arguments, r#"{"path":"a"}"#);
                assert_eq!(tool_calls[1].function.arguments, "not json{");
            }
            m => panic!("{m:?}"),
        }
        assert!(!r.records.iter().any(|r| matches!(r, Record::SessionEnd { .. })));
    }

    #[test]
    fn torn_lines_are_skipped_and_clear_drops_what_came_before() {
        let ws = tempfile::tempdir().unwrap();
        let path = write(
            ws.path(),
            "2-b",
            &[
                header(),
                user("forgotten"),
                json!({"type": "model_changed", "model": "m2"}).to_string(),
                json!({"type": "clear"}).to_string(),
                user("kept"),
                "{\"type\":\"future_record\"}".to_string(),
            ],
        );
        // A crash mid-write: half a line, no newline.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(r#"{"type":"message","role":"assis"#);
        std::fs::write(&path, text).unwrap();
        let r = load(ws.path(), "2-b").unwrap();
        assert_eq!(r.skipped, 2);
        assert_eq!(r.model, "m2", "the model changed before the clear still counts");
        assert_eq!(r.history(), vec![ChatMessage::User { content: "kept".into() }]);
    }

    #[test]
    fn hostile_ids_and_files_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        for id in ["", ".", "..", "../x", "a/b", "/etc"] {
            let e = load(ws.path(), id).unwrap_err();
            assert!(e.contains("is not a session id"), "{id:?}: {e}");
        }
        let e = load(ws.path(), "9-none").unwrap_err();
        assert!(e.contains("no session 9-none in") && e.contains("--continue"), "{e}");
        write(ws.path(), "3-c", &["not json".into()]);
        let e = load(ws.path(), "3-c").unwrap_err();
        assert!(e.contains("main.jsonl") && e.contains("session header"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_and_passed_over() {
        let ws = tempfile::tempdir().unwrap();
        let real = write(ws.path(), "1-a", &[header(), user("hi")]);
        let linked = session_dir(ws.path(), "5-link");
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(&real, linked.join("main.jsonl")).unwrap();
        let e = load(ws.path(), "5-link").unwrap_err();
        assert!(e.contains("symlink"), "{e}");
        std::os::unix::fs::symlink(session_dir(ws.path(), "1-a"), session_dir(ws.path(), "6-dirlink")).unwrap();
        let e = load(ws.path(), "6-dirlink").unwrap_err();
        assert!(e.contains("symlink"), "{e}");
        // Neither link counts as the newest session.
        assert_eq!(last_session_id(ws.path()).as_deref(), Some("1-a"));
    }

    #[test]
    fn the_newest_session_by_start_time() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(last_session_id(ws.path()), None);
        write(ws.path(), "99-zzzz", &[header()]);
        write(ws.path(), "1700000100-aaaa", &[header()]);
        write(ws.path(), "1700000000-ffff", &[header()]);
        // Newer, but no main.jsonl.
        std::fs::create_dir_all(session_dir(ws.path(), "1800000000-eeee")).unwrap();
        assert_eq!(last_session_id(ws.path()).as_deref(), Some("1700000100-aaaa"));
    }

    #[test]
    fn copied_records_name_the_old_sub_agent_transcripts() {
        let ws = tempfile::tempdir().unwrap();
        let task = json!({"type": "tool_call", "call_id": "t1", "tool": "task", "source": "builtin:host",
                          "args": {}, "result": "r", "duration_ms": 1.0, "outcome": "ok",
                          "subagent_transcript": "sub-1.jsonl"});
        let again = json!({"type": "tool_call", "call_id": "t2", "tool": "task", "source": "builtin:host",
                           "args": {}, "result": "r", "duration_ms": 1.0, "outcome": "ok",
                           "subagent_transcript": "../0-z/sub-1.jsonl"});
        write(ws.path(), "1-a", &[header(), task.to_string(), again.to_string()]);
        let files: Vec<Option<String>> = load(ws.path(), "1-a")
            .unwrap()
            .records_for_copy()
            .into_iter()
            .map(|r| match r {
                Record::ToolCall {
                    subagent_transcript, ..
                } => subagent_transcript,
                _ => None,
            })
            .collect();
        assert_eq!(
            files,
            [
                Some("../1-a/sub-1.jsonl".to_string()),
                Some("../0-z/sub-1.jsonl".to_string())
            ]
        );
    }
}
