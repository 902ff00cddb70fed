//! The scripted server speaking the OpenAI Responses API: which conversation a request belongs to, the
//! invariants every request must keep, and a [`crate::Reply`] written as that API streams it.
//!
//! The stream is the one OpenAI sends (`event: NAME` + `data: JSON` with the same `type`, a
//! `sequence_number` on each): `response.created`, `response.in_progress`, a message item with
//! its text in pieces, one function-call item per call with its arguments in two pieces, each
//! item's `done` events, and `response.completed` with the output and the usage.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use crate::Body_;

/// Usage every scripted stream reports (100 in, 20 out): tests can add them up per step.
const INPUT_TOKENS: u64 = 100;
const OUTPUT_TOKENS: u64 = 20;

/// The text of an input message's content: a string, or its text parts joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The first user message's text (picks the conversation).
pub(crate) fn first_user(body: &Value) -> String {
    body["input"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["role"] == "user" && i.get("type").is_none_or(|t| t == "message"))
        })
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
}

fn valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What is wrong with a request; `issued`: tool call ids handed out before.
pub(crate) fn check_request(body: &Value, issued: &[String]) -> Vec<String> {
    let mut v = Vec::new();
    if body["model"].as_str().is_none_or(str::is_empty) {
        v.push("`model` is missing or empty".to_string());
    }
    if body["stream"] != json!(true) {
        v.push("`stream` is not true".to_string());
    }
    if body.get("messages").is_some() {
        v.push("`messages` is a Chat Completions field; the Responses API takes `input`".to_string());
    }
    if let Some(i) = body.get("instructions") {
        if !i.is_string() {
            v.push(format!("`instructions` is not a string: {i}"));
        }
    }
    let stateless = body["store"] == json!(false);
    match body.get("tools") {
        Some(tools) => match tools.as_array() {
            Some(a) if !a.is_empty() => {
                let mut names = HashSet::new();
                for t in a {
                    let name = t["name"].as_str().unwrap_or_default();
                    // Flat: `name` and `parameters` on the tool itself, not under `function`.
                    let ok = t["type"] == "function"
                        && t.get("function").is_none()
                        && valid_tool_name(name)
                        && t["parameters"].is_object();
                    if !ok {
                        v.push(format!("malformed tool definition: {t}"));
                    }
                    if !names.insert(name.to_string()) {
                        v.push(format!("tool `{name}` offered twice"));
                    }
                }
            }
            _ => v.push("`tools` must be a non-empty array when present".to_string()),
        },
        None => {
            if body.get("tool_choice").is_some() {
                v.push("`tool_choice` without `tools`".to_string());
            }
        }
    }
    let Some(items) = body["input"].as_array().filter(|a| !a.is_empty()) else {
        v.push("`input` is missing, not an array, or empty".to_string());
        return v;
    };
    // Call ids asked for so far, and how often each was answered.
    let mut asked: HashSet<String> = HashSet::new();
    let mut answered: HashMap<String, usize> = HashMap::new();
    // Calls still waiting for their output, in order.
    let mut pending: Vec<String> = Vec::new();
    let mut last = "";
    for (i, item) in items.iter().enumerate() {
        let kind = item["type"].as_str().unwrap_or("message");
        // What comes right after a reasoning item must be the output it led to.
        if last == "reasoning" && !matches!(kind, "reasoning" | "function_call") && item["role"] != "assistant" {
            v.push(format!(
                "input item {i} ({kind}) follows a reasoning item, which must be followed by its output"
            ));
        }
        match kind {
            "message" => {
                let role = item["role"].as_str().unwrap_or_default();
                let part = match role {
                    "user" | "system" | "developer" => "input_text",
                    "assistant" => "output_text",
                    other => {
                        v.push(format!("input item {i}: message with invalid role `{other}`"));
                        ""
                    }
                };
                match &item["content"] {
                    Value::String(_) => {}
                    Value::Array(parts) if !parts.is_empty() => {
                        for p in parts {
                            let t = p["type"].as_str().unwrap_or_default();
                            let fits = t == part
                                || (part == "input_text" && t.starts_with("input_"))
                                || (part == "output_text" && t == "refusal");
                            if !fits || (t.ends_with("_text") && !p["text"].is_string()) {
                                v.push(format!("input item {i} ({role}): content part {p} is not {part}"));
                            }
                        }
                    }
                    other => v.push(format!("input item {i} ({role}) has no content: {other}")),
                }
                if role == "user" && !pending.is_empty() {
                    v.push(format!(
                        "input item {i} (user message) comes before the outputs of calls {pending:?}"
                    ));
                    pending.clear();
                }
                last = match role {
                    "user" => "user",
                    "assistant" => "assistant",
                    _ => "message",
                };
                continue;
            }
            "function_call" => {
                let id = item["call_id"].as_str().unwrap_or_default().to_string();
                if id.is_empty() || !valid_tool_name(item["name"].as_str().unwrap_or_default()) {
                    v.push(format!("input item {i}: malformed function_call {item}"));
                }
                if !item["arguments"].is_string() {
                    v.push(format!(
                        "input item {i}: function_call `{id}` arguments are not a string"
                    ));
                }
                if !asked.insert(id.clone()) {
                    v.push(format!("function_call id `{id}` used twice"));
                }
                pending.push(id);
            }
            "function_call_output" => {
                let id = item["call_id"].as_str().unwrap_or_default().to_string();
                if !item["output"].is_string() && !item["output"].is_array() {
                    v.push(format!(
                        "input item {i}: function_call_output `{id}` output is not a string"
                    ));
                }
                *answered.entry(id.clone()).or_default() += 1;
                if let Some(pos) = pending.iter().position(|p| *p == id) {
                    pending.remove(pos);
                } else if asked.contains(&id) {
                    v.push(format!("function_call `{id}` answered more than once"));
                } else {
                    v.push(format!(
                        "input item {i}: function_call_output answers `{id}`, which no earlier function_call asked for"
                    ));
                }
            }
            "reasoning" => {
                // Without `store`, the server cannot look the item up by its id.
                let encrypted = item["encrypted_content"].as_str().is_some_and(|c| !c.is_empty());
                if stateless && !encrypted {
                    v.push(format!(
                        "input item {i}: reasoning item without encrypted_content while `store` is false"
                    ));
                }
                if !item["summary"].is_array() {
                    v.push(format!("input item {i}: reasoning item without a `summary` array"));
                }
            }
            other => v.push(format!("input item {i} has unknown type `{other}`")),
        }
        last = kind;
    }
    if last == "reasoning" {
        v.push("the input ends with a reasoning item, which must be followed by its output".to_string());
    }
    if !pending.is_empty() {
        v.push(format!("function calls {pending:?} were never answered"));
    }
    for (id, n) in &answered {
        if *n > 1 {
            v.push(format!("function_call `{id}` answered {n} times"));
        }
    }
    for id in issued {
        if !asked.contains(id) {
            v.push(format!(
                "function call `{id}` handed out earlier is missing from the input"
            ));
        }
    }
    if !matches!(last, "user" | "function_call_output" | "message") {
        v.push(format!(
            "the input ends with `{last}`, not a user message or a function_call_output"
        ));
    }
    v
}

/// Writes one event per `data` object, named by its `type`, numbered in order.
struct Events {
    out: Vec<String>,
    seq: u64,
}

impl Events {
    fn new() -> Self {
        Self {
            out: Vec::new(),
            seq: 0,
        }
    }

    fn push(&mut self, mut data: Value) {
        if let Some(o) = data.as_object_mut() {
            o.insert("sequence_number".into(), json!(self.seq));
        }
        self.seq += 1;
        self.raw(&data);
    }

    fn raw(&mut self, data: &Value) {
        let name = data["type"].as_str().unwrap_or("message");
        self.out.push(format!("event: {name}\ndata: {data}\n\n"));
    }
}

fn response(model: &str, status: &str, output: Vec<Value>, usage: Value) -> Value {
    json!({
        "id": "resp_scripted", "object": "response", "created_at": 1764547200, "status": status,
        "error": null, "incomplete_details": null, "model": model, "output": output,
        "parallel_tool_calls": true, "store": false, "tool_choice": "auto", "usage": usage,
    })
}

fn start(ev: &mut Events, model: &str) {
    ev.push(json!({"type": "response.created", "response": response(model, "in_progress", vec![], Value::Null)}));
    ev.push(json!({"type": "response.in_progress", "response": response(model, "in_progress", vec![], Value::Null)}));
}

/// Splits `s` in about `n` pieces on char boundaries.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars
        .chunks(chars.len().div_ceil(n).max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The SSE events (each ending in a blank line) of one reply.
pub(crate) fn render(body: &Body_, model: &str) -> Vec<String> {
    let mut ev = Events::new();
    match body {
        Body_::Stream { text, calls } => {
            start(&mut ev, model);
            let mut output = Vec::new();
            if !text.is_empty() {
                let index = output.len();
                let id = "msg_scripted";
                ev.push(json!({"type": "response.output_item.added", "output_index": index,
                    "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}));
                ev.push(
                    json!({"type": "response.content_part.added", "item_id": id, "output_index": index,
                    "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}),
                );
                for p in pieces(text, 3) {
                    ev.push(
                        json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                        "content_index": 0, "delta": p, "logprobs": []}),
                    );
                }
                ev.push(
                    json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
                    "content_index": 0, "text": text, "logprobs": []}),
                );
                let part = json!({"type": "output_text", "annotations": [], "text": text});
                ev.push(
                    json!({"type": "response.content_part.done", "item_id": id, "output_index": index,
                    "content_index": 0, "part": part}),
                );
                let item =
                    json!({"id": id, "type": "message", "status": "completed", "role": "assistant", "content": [part]});
                ev.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
                output.push(item);
            }
            for c in calls {
                let index = output.len();
                let id = format!("fc_{}", c.id);
                ev.push(json!({"type": "response.output_item.added", "output_index": index,
                    "item": {"id": id, "type": "function_call", "status": "in_progress", "arguments": "",
                             "call_id": c.id, "name": c.name}}));
                let mut cut = c.arguments.len() / 2;
                while !c.arguments.is_char_boundary(cut) {
                    cut -= 1;
                }
                for p in [&c.arguments[..cut], &c.arguments[cut..]] {
                    ev.push(json!({"type": "response.function_call_arguments.delta", "item_id": id,
                        "output_index": index, "delta": p}));
                }
                ev.push(json!({"type": "response.function_call_arguments.done", "item_id": id,
                    "output_index": index, "arguments": c.arguments}));
                let item = json!({"id": id, "type": "function_call", "status": "completed",
                    "arguments": c.arguments, "call_id": c.id, "name": c.name});
                ev.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
                output.push(item);
            }
            let usage = json!({"input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS});
            ev.push(json!({"type": "response.completed", "response": response(model, "completed", output, usage)}));
        }
        // Fixtures in the server's own shape, each object one event named by its `type`.
        Body_::Raw { chunks, .. } => {
            for c in chunks {
                ev.raw(c);
            }
        }
        Body_::Malformed => {
            start(&mut ev, model);
            ev.out
                .push("event: response.output_text.delta\ndata: {this is not json\n\n".to_string());
        }
        // Status and Hang are answered by the caller; an empty stream otherwise.
        Body_::Status { .. } | Body_::Hang => {}
    }
    ev.out
}

/// The first events of a stream that then never ends.
pub(crate) fn hang(model: &str) -> Vec<String> {
    let mut ev = Events::new();
    start(&mut ev, model);
    let id = "msg_scripted";
    ev.push(json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}));
    ev.push(
        json!({"type": "response.output_text.delta", "item_id": id, "output_index": 0,
        "content_index": 0, "delta": "thinking"}),
    );
    ev.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScriptedCall;

    fn ok_body() -> Value {
        json!({"model": "m", "stream": true, "store": false, "instructions": "s",
        "tools": [{"type": "function", "name": "t", "description": "", "parameters": {"type": "object"}, "strict": false}],
        "tool_choice": "auto",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "KEY: go"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "a", "name": "t", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "t", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "b", "output": "x"},
            {"type": "function_call_output", "call_id": "a", "output": "x"},
        ]})
    }

    fn input(body: &mut Value) -> &mut Vec<Value> {
        body["input"].as_array_mut().unwrap()
    }

    #[test]
    fn invariants_catch_broken_inputs() {
        let ok = ok_body();
        assert_eq!(check_request(&ok, &["a".into(), "b".into()]), Vec::<String>::new());
        assert_eq!(first_user(&ok), "KEY: go");

        let mut unanswered = ok.clone();
        input(&mut unanswered).pop();
        assert!(check_request(&unanswered, &[])
            .iter()
            .any(|v| v.contains("never answered")));

        let mut twice = ok.clone();
        input(&mut twice).push(json!({"type": "function_call_output", "call_id": "a", "output": "x"}));
        assert!(check_request(&twice, &[]).iter().any(|v| v.contains("more than once")));

        let mut early = ok.clone();
        input(&mut early).swap(3, 4); // b's output before b's call
        assert!(check_request(&early, &[])
            .iter()
            .any(|v| v.contains("no earlier function_call")));

        let mut interrupted = ok.clone();
        input(&mut interrupted).insert(
            4,
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "?"}]}),
        );
        assert!(!check_request(&interrupted, &[]).is_empty());

        let mut opaque = ok.clone();
        input(&mut opaque)[1] = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        assert!(check_request(&opaque, &[])
            .iter()
            .any(|v| v.contains("encrypted_content")));

        let mut nested = ok.clone();
        nested["tools"] = json!([{"type": "function", "function": {"name": "t", "parameters": {}}}]);
        assert!(check_request(&nested, &[]).iter().any(|v| v.contains("malformed tool")));

        let mut wrong_part = ok.clone();
        input(&mut wrong_part).insert(
            1,
            json!({"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "hi"}]}),
        );
        assert!(check_request(&wrong_part, &[])
            .iter()
            .any(|v| v.contains("is not output_text")));

        assert!(check_request(&ok, &["zzz".into()])
            .iter()
            .any(|v| v.contains("missing")));
        assert!(!check_request(&json!({"model": "m", "stream": false, "input": "hi"}), &[]).is_empty());
    }

    #[test]
    fn a_stream_reply_is_written_as_the_api_streams_it() {
        let body = Body_::Stream {
            text: "Hello there".into(),
            calls: vec![ScriptedCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"é.txt"}"#.into(),
            }],
        };
        let events = render(&body, "gpt-test");
        let parsed: Vec<(String, Value)> = events
            .iter()
            .map(|e| {
                let (head, data) = e.trim_end().split_once('\n').unwrap();
                let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                (head.strip_prefix("event: ").unwrap().to_string(), data)
            })
            .collect();
        for (i, (name, data)) in parsed.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], i);
        }
        let names: Vec<&str> = parsed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.first(), Some(&"response.created"));
        assert_eq!(names.last(), Some(&"response.completed"));
        let text: String = parsed
            .iter()
            .filter(|(n, _)| n == "response.output_text.delta")
            .map(|(_, d)| d["delta"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Hello there");
        let args: Vec<&str> = parsed
            .iter()
            .filter(|(n, _)| n == "response.function_call_arguments.delta")
            .map(|(_, d)| d["delta"].as_str().unwrap())
            .collect();
        assert_eq!(args.len(), 2);
        assert_eq!(args.concat(), r#"{"path":"é.txt"}"#);
        let done = &parsed.last().unwrap().1["response"];
        assert_eq!(done["usage"]["output_tokens"], OUTPUT_TOKENS);
        assert_eq!(done["output"][1]["call_id"], "call_1");
    }
}
