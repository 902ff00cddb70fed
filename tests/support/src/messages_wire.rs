//! The scripted server speaking the Anthropic Messages API: which conversation a request belongs to, the
//! invariants every request must keep, and a [`crate::Reply`] written as that API streams it.
//!
//! The stream is the one Anthropic's streaming docs show: `message_start` (with usage),
//! a `ping`, per content block `content_block_start`, `content_block_delta`s and
//! `content_block_stop`, then `message_delta` (stop reason, output tokens) and `message_stop`,
//! each as `event: NAME` + `data: JSON`.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use crate::Body_;

/// Input tokens `message_start` reports for a scripted [`crate::Reply::text_and_calls`] reply.
pub(crate) const SCRIPTED_INPUT_TOKENS: u64 = 100;
/// Output tokens its `message_delta` reports.
pub(crate) const SCRIPTED_OUTPUT_TOKENS: u64 = 20;

/// The first user message's text (picks the conversation).
pub(crate) fn first_user(body: &Value) -> String {
    let Some(first) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
    else {
        return String::new();
    };
    match &first["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .find(|b| b["type"] == "text")
            .and_then(|b| b["text"].as_str())
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

/// The content blocks of a message (a string is one text block).
fn blocks(m: &Value) -> Vec<Value> {
    match &m["content"] {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    }
}

/// What is wrong with a request; `issued`: tool call ids handed out before.
pub(crate) fn check_request(body: &Value, issued: &[String]) -> Vec<String> {
    let mut v = Vec::new();
    if body["model"].as_str().is_none_or(str::is_empty) {
        v.push("`model` is missing or empty".to_string());
    }
    if body["max_tokens"].as_u64().is_none_or(|n| n == 0) {
        v.push("`max_tokens` is missing or not a positive integer (the API requires it)".to_string());
    }
    if body["stream"] != json!(true) {
        v.push("`stream` is not true".to_string());
    }
    // The API allows at most four cache breakpoints in a request.
    let mut breakpoints = 0;
    let mut cache_control = |where_: &str, b: &Value, v: &mut Vec<String>| {
        if let Some(c) = b.get("cache_control") {
            breakpoints += 1;
            if c["type"] != "ephemeral" {
                v.push(format!("{where_}: `cache_control` is not of type `ephemeral`: {c}"));
            }
        }
    };
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(a)) => {
            for (i, b) in a.iter().enumerate() {
                if b["type"] != "text" || b["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
                    v.push(format!("system block {i} is not a non-empty text block: {b}"));
                }
                cache_control(&format!("system block {i}"), b, &mut v);
            }
        }
        Some(other) => v.push(format!("`system` is neither text nor a list of blocks: {other}")),
    }
    if let Some(tools) = body.get("tools") {
        match tools.as_array() {
            Some(a) if !a.is_empty() => {
                let mut names = HashSet::new();
                for t in a {
                    let name = t["name"].as_str().unwrap_or_default();
                    let ok = !name.is_empty()
                        && name.len() <= 64
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                        && t["input_schema"]["type"] == "object";
                    if !ok {
                        v.push(format!("malformed tool definition: {t}"));
                    }
                    if !names.insert(name.to_string()) {
                        v.push(format!("tool `{name}` offered twice"));
                    }
                    cache_control(&format!("tool `{name}`"), t, &mut v);
                }
            }
            _ => v.push("`tools` must be a non-empty array when present".to_string()),
        }
    }
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        v.push("`messages` is missing or empty".to_string());
        return v;
    };
    let mut asked: HashSet<String> = HashSet::new();
    let mut answered: HashMap<String, usize> = HashMap::new();
    // Calls of the assistant message just before, still waiting for their results.
    let mut pending: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        if role != want {
            v.push(format!(
                "message {i} is `{role}`, not `{want}`: roles must alternate, starting with user"
            ));
        }
        let content = blocks(m);
        if content.is_empty() {
            v.push(format!("message {i} ({role}) has no content"));
        }
        for (j, b) in content.iter().enumerate() {
            cache_control(&format!("message {i} block {j}"), b, &mut v);
            if b["type"] == "text" && b["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
                v.push(format!("message {i} block {j}: an empty text block"));
            }
        }
        let waiting = std::mem::take(&mut pending);
        match role {
            "assistant" => {
                let mut seen_other = false;
                for (j, b) in content.iter().enumerate() {
                    match b["type"].as_str().unwrap_or_default() {
                        "thinking" | "redacted_thinking" => {
                            if seen_other {
                                v.push(format!("message {i}: thinking block {j} is not first"));
                            }
                            if b["type"] == "thinking" && b["signature"].as_str().is_none_or(str::is_empty) {
                                v.push(format!("message {i}: thinking block {j} has no signature"));
                            }
                        }
                        "text" => seen_other = true,
                        "tool_use" => {
                            seen_other = true;
                            let id = b["id"].as_str().unwrap_or_default().to_string();
                            if id.is_empty() || b["name"].as_str().is_none_or(str::is_empty) {
                                v.push(format!("message {i}: malformed tool_use block {b}"));
                            }
                            if !b["input"].is_object() {
                                v.push(format!("message {i}: tool_use `{id}` input is not an object"));
                            }
                            if !asked.insert(id.clone()) {
                                v.push(format!("tool_use id `{id}` used twice"));
                            }
                            pending.push(id);
                        }
                        other => v.push(format!("message {i}: block type `{other}` in an assistant message")),
                    }
                }
            }
            "user" => {
                let mut seen_text = false;
                let mut here = waiting.clone();
                for (j, b) in content.iter().enumerate() {
                    match b["type"].as_str().unwrap_or_default() {
                        "tool_result" => {
                            if seen_text {
                                v.push(format!("message {i}: tool_result block {j} comes after text"));
                            }
                            let id = b["tool_use_id"].as_str().unwrap_or_default().to_string();
                            if let Some(c) = b.get("content") {
                                if !c.is_string() && !c.is_array() {
                                    v.push(format!("message {i}: tool_result `{id}` content is {c}"));
                                }
                            }
                            *answered.entry(id.clone()).or_default() += 1;
                            if let Some(at) = here.iter().position(|p| *p == id) {
                                here.remove(at);
                            } else if asked.contains(&id) {
                                v.push(format!(
                                    "tool_use `{id}` answered more than once or not right after the message that asked"
                                ));
                            } else {
                                v.push(format!("message {i}: tool_result answers unknown tool_use `{id}`"));
                            }
                        }
                        "text" | "image" | "document" => seen_text = true,
                        other => v.push(format!("message {i}: block type `{other}` in a user message")),
                    }
                }
                if !here.is_empty() {
                    v.push(format!(
                        "message {i}: no tool_result for {here:?} of the assistant message before it"
                    ));
                }
            }
            _ => {}
        }
        if role != "user" && !waiting.is_empty() {
            v.push(format!("tool_use {waiting:?} never answered"));
        }
    }
    if !pending.is_empty() {
        v.push(format!("tool_use {pending:?} never answered"));
    }
    for (id, n) in &answered {
        if *n > 1 {
            v.push(format!("tool_use `{id}` answered {n} times"));
        }
    }
    if breakpoints > 4 {
        v.push(format!("{breakpoints} cache_control breakpoints (the API allows 4)"));
    }
    // A compacted history starts with the summary instead of the older replies and their calls.
    let compacted = first_user(body).starts_with(cst_protocol::COMPACTED_SUMMARY_PREFIX);
    for id in issued.iter().filter(|_| !compacted) {
        if !asked.contains(id) {
            v.push(format!(
                "tool_use `{id}` handed out earlier is missing from the history"
            ));
        }
    }
    if messages.last().is_some_and(|m| m["role"] != "user") {
        v.push("the last message is not a user message".to_string());
    }
    v
}

/// One SSE event, named by its `type`.
fn event(data: Value) -> String {
    match data["type"].as_str() {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

fn message_start(model: &str) -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_scripted", "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": SCRIPTED_INPUT_TOKENS, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 1}}}))
}

fn block_start(index: usize, block: Value) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn block_delta(index: usize, delta: Value) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn block_stop(index: usize) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

/// The SSE events (each ending in a blank line) of one reply.
pub(crate) fn render(body: &Body_, model: &str) -> Vec<String> {
    match body {
        Body_::Stream { text, calls } => {
            let mut out = vec![message_start(model), event(json!({"type": "ping"}))];
            let mut index = 0;
            if !text.is_empty() {
                // Text in three pieces, tool input in two, to exercise reassembly.
                out.push(block_start(index, json!({"type": "text", "text": ""})));
                let chars: Vec<char> = text.chars().collect();
                for piece in chars.chunks(chars.len().div_ceil(3).max(1)) {
                    let s: String = piece.iter().collect();
                    out.push(block_delta(index, json!({"type": "text_delta", "text": s})));
                }
                out.push(block_stop(index));
                index += 1;
            }
            for c in calls {
                out.push(block_start(
                    index,
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}),
                ));
                let mut cut = c.arguments.len() / 2;
                while !c.arguments.is_char_boundary(cut) {
                    cut -= 1;
                }
                for piece in [&c.arguments[..cut], &c.arguments[cut..]] {
                    out.push(block_delta(
                        index,
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
                out.push(block_stop(index));
                index += 1;
            }
            let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
            out.push(event(json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": SCRIPTED_OUTPUT_TOKENS}})));
            out.push(event(json!({"type": "message_stop"})));
            out
        }
        // Exactly these events, nothing added: a test scripts the whole stream.
        Body_::Raw { chunks, .. } => chunks.iter().cloned().map(event).collect(),
        Body_::Malformed => vec!["event: message_start\ndata: {this is not json\n\n".to_string()],
        // Answered before a stream is written.
        Body_::Status { .. } | Body_::Hang => Vec::new(),
    }
}

/// The first events of a stream that then never ends.
pub(crate) fn hang(model: &str) -> Vec<String> {
    vec![
        message_start(model),
        block_start(0, json!({"type": "text", "text": ""})),
        block_delta(0, json!({"type": "text_delta", "text": "thinking"})),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(messages: Value) -> Value {
        json!({"model": "m", "max_tokens": 8192, "stream": true,
               "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
               "messages": messages})
    }

    fn ok_messages() -> Value {
        json!([
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "a", "name": "t", "input": {}},
                {"type": "tool_use", "id": "b", "name": "t", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "b", "content": "x"},
                {"type": "tool_result", "tool_use_id": "a", "content": "x"},
                {"type": "text", "text": "more"}]},
        ])
    }

    #[test]
    fn invariants_catch_broken_histories() {
        let ok = body(ok_messages());
        assert_eq!(check_request(&ok, &["a".into(), "b".into()]), Vec::<String>::new());
        assert_eq!(first_user(&ok), "u");

        let mut missing = ok.clone();
        missing["messages"][2]["content"].as_array_mut().unwrap().remove(1);
        assert!(check_request(&missing, &[])
            .iter()
            .any(|v| v.contains("no tool_result for [\"a\"]")));

        let mut twice = ok.clone();
        twice["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"type": "tool_result", "tool_use_id": "a", "content": "x"}));
        assert!(check_request(&twice, &[]).iter().any(|v| v.contains("more than once")));

        let mut after_text = ok.clone();
        after_text["messages"][2]["content"].as_array_mut().unwrap().swap(1, 2);
        assert!(check_request(&after_text, &[]).iter().any(|v| v.contains("after text")));

        let mut two_users = ok.clone();
        two_users["messages"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"role": "user", "content": "first"}));
        assert!(check_request(&two_users, &[]).iter().any(|v| v.contains("alternate")));

        let mut late_thinking = ok.clone();
        late_thinking["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .swap(0, 1);
        assert!(check_request(&late_thinking, &[])
            .iter()
            .any(|v| v.contains("not first")));

        let mut no_max = ok.clone();
        no_max.as_object_mut().unwrap().remove("max_tokens");
        assert!(check_request(&no_max, &[]).iter().any(|v| v.contains("max_tokens")));

        assert!(check_request(&ok, &["zzz".into()])
            .iter()
            .any(|v| v.contains("missing")));

        let mut ends_with_assistant = ok.clone();
        ends_with_assistant["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]}));
        assert!(!check_request(&ends_with_assistant, &[]).is_empty());
    }

    /// What `render` writes reads back as the events it meant (names match the `type`s).
    #[test]
    fn a_rendered_stream_is_well_formed() {
        let events = render(
            &Body_::Stream {
                text: "héllo".into(),
                calls: vec![crate::call("toolu_1", "read_file", json!({"path": "ä"}))],
            },
            "m",
        );
        let mut args = String::new();
        for e in &events {
            let (name, data) = e
                .trim_end()
                .split_once('\n')
                .map(|(n, d)| (n.strip_prefix("event: ").unwrap(), d.strip_prefix("data: ").unwrap()))
                .unwrap();
            let v: Value = serde_json::from_str(data).unwrap();
            assert_eq!(v["type"], name);
            if let Some(p) = v["delta"]["partial_json"].as_str() {
                args.push_str(p);
            }
        }
        assert_eq!(args, r#"{"path":"ä"}"#);
        assert!(events.last().unwrap().contains("message_stop"));
    }
}
