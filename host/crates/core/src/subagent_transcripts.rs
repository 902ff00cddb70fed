//! Reading sub-agent transcripts (A6): `.agent/sessions/<session id>/sub-N.jsonl`, written by the
//! core as the sub-agent runs. The TUI's `/agents` view lists them and shows one's prompt, tool
//! calls and report; these functions are what it calls (re-exported from `core`).
//!
//! Records of a sub-agent transcript, one JSON object a line (`type` first):
//! `subagent` (n, role, description, prompt, model, readonly, max_steps, tools, parent_call_id),
//! `message` (user / assistant), `tool_call` (as in main.jsonl), `report` (report, end, steps),
//! `session_end`.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::transcript::session_dir;

/// `sub-N.jsonl`.
pub fn file_name(n: u32) -> String {
    format!("sub-{n}.jsonl")
}

/// One sub-agent transcript, parsed.
#[derive(Debug, Clone, Default)]
pub struct SubAgentTranscript {
    pub n: u32,
    pub path: PathBuf,
    pub role: String,
    pub description: String,
    pub prompt: String,
    pub model: String,
    /// The id of the parent's `task` call.
    pub parent_call_id: String,
    /// The `tool_call` records, in order.
    pub tool_calls: Vec<Value>,
    /// The final report; `None` while it runs (or if it crashed).
    pub report: Option<String>,
    /// `done`, `max_steps`, `error`, `cancelled`; `None` while it runs.
    pub end: Option<String>,
    /// Every record, for views that want more.
    pub records: Vec<Value>,
}

/// Load one sub-agent transcript. Lines that are not JSON (a crash mid-line) are skipped.
pub fn load_subagent_transcript(path: &Path) -> std::io::Result<SubAgentTranscript> {
    let text = std::fs::read_to_string(path)?;
    let mut t = SubAgentTranscript {
        path: path.to_path_buf(),
        n: path.file_name().and_then(|n| n.to_str()).and_then(parse_n).unwrap_or(0),
        ..Default::default()
    };
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v["type"].as_str().unwrap_or_default() {
            "subagent" => {
                t.role = s(&v, "role");
                t.description = s(&v, "description");
                t.prompt = s(&v, "prompt");
                t.model = s(&v, "model");
                t.parent_call_id = s(&v, "parent_call_id");
            }
            "tool_call" => t.tool_calls.push(v.clone()),
            "report" => {
                t.report = Some(s(&v, "report"));
                t.end = Some(s(&v, "end"));
            }
            _ => {}
        }
        t.records.push(v);
    }
    Ok(t)
}

/// A session's sub-agent transcripts, ordered by N. A session without any (or without a
/// folder) has none.
pub fn subagent_transcripts(workspace: &Path, session_id: &str) -> Vec<SubAgentTranscript> {
    let Ok(entries) = std::fs::read_dir(session_dir(workspace, session_id)) else {
        return Vec::new();
    };
    let mut out: Vec<SubAgentTranscript> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).and_then(parse_n).is_some())
        .filter_map(|p| load_subagent_transcript(&p).ok())
        .collect();
    out.sort_by_key(|t| t.n);
    out
}

fn parse_n(file_name: &str) -> Option<u32> {
    file_name.strip_prefix("sub-")?.strip_suffix(".jsonl")?.parse().ok()
}
