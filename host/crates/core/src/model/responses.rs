//! The OpenAI Responses API (`POST {base_url}/responses`, streamed): the request body from the
//! history, and the stream of semantic events read into a turn.
//!
//! Requests are stateless (`store: false`): the whole conversation goes in `input` every time.
//! Reasoning models then need their reasoning items back, with the `encrypted_content` asked for
//! in `include`, right before the output they led to; the reader keeps them in
//! [`AssistantTurn::native`] as `{"responses": [items…]}` and [`request_body`] puts them back.
//! A reasoning item without its encrypted content is not kept: under `store: false` the server
//! cannot look it up by id and refuses the request ("Items are not persisted when `store` is set
//! to false").

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::{AssistantTurn, ChatMessage, Delta, FunctionCall, ModelConfig, Reasoning, StreamReader, ToolCall, ToolDef};

/// The key of [`ChatMessage::Assistant::native`] this API keeps its reasoning items under.
const NATIVE_KEY: &str = "responses";

/// The request body for `messages` and `tools` (streaming on, nothing stored on the server).
pub fn request_body(config: &ModelConfig, messages: &[ChatMessage], tools: &[ToolDef]) -> Value {
    let mut instructions: Option<&str> = None;
    let mut input = Vec::with_capacity(messages.len() + 1);
    for m in messages {
        match m {
            // The first system message is the instructions; later ones (a mode change, a
            // reminder) stay where they are, as developer messages.
            ChatMessage::System { content } if instructions.is_none() => instructions = Some(content),
            ChatMessage::System { content } => input.push(message("developer", "input_text", content)),
            ChatMessage::User { content } => input.push(message("user", "input_text", content)),
            ChatMessage::Assistant {
                content,
                tool_calls,
                native,
                ..
            } => {
                let text = content.as_deref().filter(|t| !t.is_empty());
                // A reasoning item must be followed by the output it led to: none without one.
                if text.is_some() || !tool_calls.is_empty() {
                    input.extend(reasoning_items(native.as_ref()).cloned());
                }
                if let Some(text) = text {
                    input.push(message("assistant", "output_text", text));
                }
                for c in tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.function.name,
                        "arguments": c.function.arguments,
                    }));
                }
            }
            ChatMessage::Tool { tool_call_id, content } => input.push(json!({
                "type": "function_call_output",
                "call_id": tool_call_id,
                "output": content,
            })),
        }
    }
    let mut body = json!({
        "model": config.name,
        "input": input,
        "stream": true,
        "store": false,
    });
    if encrypted_reasoning(&config.name) {
        // Reasoning models' thinking, encrypted, to send back on the next request.
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(instructions) = instructions {
        body["instructions"] = json!(instructions);
    }
    if let Some(max) = config.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    // Left out, `strict` means true on this API (every property required, the
                    // schema rewritten or refused); our schemas are written for loose calling.
                    "strict": false,
                })
            })
            .collect();
        body["tool_choice"] = json!("auto");
        body["parallel_tool_calls"] = json!(true);
    }
    body
}

/// Whether to ask for encrypted reasoning: OpenAI answers HTTP 400 "Encrypted content is not
/// supported with this model" (param `include`) for its models that do not reason. Those are
/// the GPT-4 and GPT-3.5 families and the ChatGPT aliases; every other model is asked (a model
/// that reasons without it would lose its thinking between the steps of a tool loop).
fn encrypted_reasoning(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    !["gpt-4", "gpt-3.5", "chatgpt-", "gpt-5-chat"]
        .iter()
        .any(|p| name.starts_with(p))
}

fn message(role: &str, kind: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
}

/// The reasoning items an assistant message carries for this API (with their encrypted content).
fn reasoning_items(native: Option<&Value>) -> impl Iterator<Item = &Value> {
    native
        .and_then(|n| n.get(NATIVE_KEY))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| is_replayable_reasoning(item))
}

fn is_replayable_reasoning(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("reasoning")
        && item
            .get("encrypted_content")
            .and_then(Value::as_str)
            .is_some_and(|c| !c.is_empty())
}

/// Keys of [`Reader::streamed`] for deltas that name no item (not valid item ids).
const ANY_TEXT: &str = "\u{0}text";
const ANY_REASONING: &str = "\u{0}reasoning";

/// Most function calls one answer may hold.
const MAX_CALLS: usize = 128;
/// Most reasoning items one answer may hold.
const MAX_REASONING_ITEMS: usize = 128;
/// Most bytes of text, thinking, call arguments and reasoning items one answer may hold in all
/// (each event is bounded on its own by the SSE reader; this bounds their sum).
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// A function call being streamed.
#[derive(Default)]
struct PartialCall {
    /// The output item's id (`fc_…`), which the argument deltas name.
    item_id: String,
    /// The id the result must answer (`call_…`).
    call_id: String,
    name: String,
    arguments: String,
    /// Its `output_item.done` (or `function_call_arguments.done`) came.
    done: bool,
}

/// Folds Responses API stream events into an [`AssistantTurn`].
#[derive(Default)]
pub struct Reader {
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    /// Reasoning items as the server sent them, in order, with their encrypted content.
    reasoning_items: Vec<Value>,
    /// Output items (message, reasoning) whose text came as deltas, so their `done` events do
    /// not add it again; [`ANY_TEXT`] / [`ANY_REASONING`] when a delta named no item.
    streamed: HashSet<String>,
    /// Function calls by output index, for deltas that name no item.
    by_index: HashMap<u64, usize>,
    bytes: usize,
    usage: Option<cst_protocol::TokenUsage>,
    /// Set by `response.incomplete` ("length" when the output limit cut the answer).
    incomplete: Option<String>,
    /// `response.completed` or `response.incomplete` came.
    ended: bool,
    /// Output items announced (`output_item.added`/`.done`) or text streamed.
    items_seen: usize,
}

impl Reader {
    fn grow(&mut self, n: usize) -> Result<(), String> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > MAX_ANSWER_BYTES {
            return Err(format!("the answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20));
        }
        Ok(())
    }

    fn push_text(&mut self, text: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<(), String> {
        if text.is_empty() {
            return Ok(());
        }
        self.grow(text.len())?;
        self.text.push_str(text);
        on_delta(Delta::Text(text));
        Ok(())
    }

    fn push_reasoning(&mut self, text: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<(), String> {
        if text.is_empty() {
            return Ok(());
        }
        self.grow(text.len())?;
        self.reasoning.push_str(text);
        on_delta(Delta::Reasoning(text));
        Ok(())
    }

    /// Notes that the item a delta names streams its text (`any` when it names none).
    fn mark_streamed(&mut self, event: &Value, any: &str) -> Result<(), String> {
        let id = event.get("item_id").and_then(Value::as_str).unwrap_or(any);
        if !self.streamed.contains(id) {
            self.grow(id.len())?;
            self.streamed.insert(id.to_string());
        }
        Ok(())
    }

    /// The call an event names: by item id, else by output index, else the only open one.
    fn call_for(&self, event: &Value) -> Option<usize> {
        if let Some(id) = event.get("item_id").and_then(Value::as_str) {
            if let Some(i) = self.calls.iter().position(|c| c.item_id == id) {
                return Some(i);
            }
        }
        if let Some(i) = event
            .get("output_index")
            .and_then(Value::as_u64)
            .and_then(|x| self.by_index.get(&x))
        {
            return Some(*i);
        }
        let mut open = self.calls.iter().enumerate().filter(|(_, c)| !c.done);
        match (open.next(), open.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }

    fn new_call(&mut self, output_index: Option<u64>) -> Result<usize, String> {
        if self.calls.len() >= MAX_CALLS {
            return Err(format!("more than {MAX_CALLS} function calls in one answer"));
        }
        self.calls.push(PartialCall::default());
        let at = self.calls.len() - 1;
        if let Some(x) = output_index {
            self.by_index.insert(x, at);
        }
        Ok(at)
    }

    /// `response.output_item.added`: a function call starts (its name and ids come here).
    fn item_added(&mut self, event: &Value) -> Result<(), String> {
        self.items_seen += 1;
        let Some(item) = event.get("item") else {
            return Err(format!(
                "`response.output_item.added` without an `item`: {}",
                cut(event)
            ));
        };
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            return Ok(());
        }
        let index = event.get("output_index").and_then(Value::as_u64);
        let at = self.new_call(index)?;
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let (item_id, call_id, name, arguments) = (s("id"), s("call_id"), s("name"), s("arguments"));
        self.grow(arguments.len() + name.len())?;
        let call = &mut self.calls[at];
        call.item_id = item_id;
        call.call_id = call_id;
        call.name = name;
        call.arguments = arguments;
        Ok(())
    }

    /// `response.output_item.done`: the item whole. For a function call its final name, ids and
    /// arguments win; a reasoning item is kept for the next request; a message's text counts
    /// only when it was not streamed (servers that send whole items).
    fn item_done(
        &mut self,
        item: &Value,
        output_index: Option<u64>,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<(), String> {
        self.items_seen += 1;
        let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
        let streamed = |any: &str| self.streamed.contains(any) || (!id.is_empty() && self.streamed.contains(id));
        let (text_streamed, reasoning_streamed) = (streamed(ANY_TEXT), streamed(ANY_REASONING));
        match item.get("type").and_then(Value::as_str).unwrap_or_default() {
            "function_call" => {
                let s = |k: &str| item.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
                let call_id = s("call_id");
                let known = self
                    .calls
                    .iter()
                    .position(|c| (!id.is_empty() && c.item_id == id) || call_id.is_some_and(|cid| c.call_id == cid));
                let at = match known {
                    Some(at) => at,
                    None => self.new_call(output_index)?,
                };
                if let Some(a) = s("arguments") {
                    self.grow(a.len())?;
                }
                let call = &mut self.calls[at];
                if !id.is_empty() {
                    call.item_id = id.to_string();
                }
                if let Some(v) = call_id {
                    call.call_id = v.to_string();
                }
                if let Some(v) = s("name") {
                    call.name = v.to_string();
                }
                if let Some(v) = s("arguments") {
                    call.arguments = v.to_string();
                }
                call.done = true;
            }
            "reasoning" => {
                if !reasoning_streamed {
                    let summary = texts(item.get("summary"), "summary_text");
                    let raw = texts(item.get("content"), "reasoning_text");
                    self.push_reasoning(if summary.is_empty() { &raw } else { &summary }, on_delta)?;
                }
                if is_replayable_reasoning(item) {
                    if self.reasoning_items.len() >= MAX_REASONING_ITEMS {
                        return Err(format!("more than {MAX_REASONING_ITEMS} reasoning items in one answer"));
                    }
                    self.grow(item.to_string().len())?;
                    self.reasoning_items.push(item.clone());
                }
            }
            "message" if !text_streamed => {
                let mut text = texts(item.get("content"), "output_text");
                if text.is_empty() {
                    text = texts(item.get("content"), "refusal");
                }
                self.push_text(&text, on_delta)?;
            }
            // Other items (web search calls, …) are not ours to run.
            _ => {}
        }
        Ok(())
    }

    /// `response.completed` / `response.incomplete`: usage, and the output of a server that
    /// streamed no items at all (only the final response).
    fn ended(&mut self, response: Option<&Value>, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<(), String> {
        self.ended = true;
        let Some(response) = response else { return Ok(()) };
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(cst_protocol::TokenUsage {
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
            });
        }
        if self.items_seen == 0 {
            if let Some(output) = response.get("output").and_then(Value::as_array) {
                for (i, item) in output.iter().enumerate() {
                    self.item_done(item, Some(i as u64), on_delta)?;
                }
            }
        }
        Ok(())
    }

    /// Feed one event's JSON; `Ok(true)` when the response is complete.
    fn feed_event(
        &mut self,
        name: &str,
        data: &str,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<bool, String> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        // Not part of this API, but some proxies end every stream with it.
        if data == "[DONE]" {
            return Ok(true);
        }
        let event: Value =
            serde_json::from_str(data).map_err(|e| format!("an event's data is not JSON ({e}): {}", cut_str(data)))?;
        if !event.is_object() {
            return Err(format!("an event's data is not a JSON object: {}", cut_str(data)));
        }
        // The data's `type` names the event (the `event:` line repeats it, when there is one).
        let kind = event.get("type").and_then(Value::as_str).unwrap_or(name);
        let delta = || event.get("delta").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.mark_streamed(&event, ANY_TEXT)?;
                self.items_seen += 1;
                self.push_text(delta(), on_delta)?;
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.mark_streamed(&event, ANY_REASONING)?;
                self.push_reasoning(delta(), on_delta)?;
            }
            // Summary parts after the first are paragraphs of their own.
            "response.reasoning_summary_part.added"
                if event.get("summary_index").and_then(Value::as_u64).unwrap_or(0) > 0
                    && !self.reasoning.is_empty() =>
            {
                self.push_reasoning("\n\n", on_delta)?;
            }
            "response.output_item.added" => self.item_added(&event)?,
            "response.output_item.done" => {
                let Some(item) = event.get("item") else {
                    return Err(format!(
                        "`response.output_item.done` without an `item`: {}",
                        cut(&event)
                    ));
                };
                let index = event.get("output_index").and_then(Value::as_u64);
                self.item_done(item, index, on_delta)?;
            }
            "response.function_call_arguments.delta" => {
                let Some(at) = self.call_for(&event) else {
                    return Err(format!(
                        "arguments for a function call that was never announced: {}",
                        cut(&event)
                    ));
                };
                let d = delta();
                self.grow(d.len())?;
                self.calls[at].arguments.push_str(d);
            }
            "response.function_call_arguments.done" => {
                let Some(at) = self.call_for(&event) else {
                    return Err(format!(
                        "arguments for a function call that was never announced: {}",
                        cut(&event)
                    ));
                };
                if let Some(a) = event.get("arguments").and_then(Value::as_str) {
                    self.grow(a.len())?;
                    self.calls[at].arguments = a.to_string();
                }
                self.calls[at].done = true;
            }
            "response.completed" => {
                self.ended(event.get("response"), on_delta)?;
                return Ok(true);
            }
            "response.incomplete" => {
                let response = event.get("response");
                let reason = response
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                self.incomplete = Some(match reason {
                    "max_output_tokens" => "length".to_string(),
                    other => other.to_string(),
                });
                self.ended(response, on_delta)?;
                return Ok(true);
            }
            "response.failed" => {
                let err = event.get("response").and_then(|r| r.get("error"));
                return Err(format!("the server reports the response failed: {}", describe(err)));
            }
            "error" => {
                // The reference puts `message` and `code` on the event; servers also nest them.
                let err = event.get("error").filter(|e| e.is_object()).unwrap_or(&event);
                return Err(format!("the server sent an error: {}", describe(Some(err))));
            }
            _ => {}
        }
        Ok(false)
    }

    fn into_turn(self) -> Result<AssistantTurn, String> {
        if !self.ended {
            return Err("the stream ended before `response.completed`".into());
        }
        let truncated = self.incomplete.is_some();
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, c) in self.calls.into_iter().enumerate() {
            // A call the output limit cut off is no call: its arguments are half a JSON text.
            if truncated && !c.done {
                continue;
            }
            if c.name.is_empty() {
                return Err(format!("function call #{i} (`{}`) has no name", c.call_id));
            }
            let id = [c.call_id, c.item_id]
                .into_iter()
                .find(|s| !s.is_empty())
                .unwrap_or_else(|| format!("call_{i}"));
            tool_calls.push(ToolCall {
                id,
                kind: "function".into(),
                function: FunctionCall {
                    name: c.name,
                    arguments: c.arguments,
                },
            });
        }
        let finish_reason = match self.incomplete {
            Some(reason) => reason,
            None if tool_calls.is_empty() => "stop".into(),
            None => "tool_calls".into(),
        };
        let reasoning = (!self.reasoning.is_empty()).then(|| Reasoning {
            // Not a field Chat Completions sends back: the text is for showing only; what goes
            // back is the reasoning items in `native`.
            field: "summary".into(),
            text: self.reasoning,
        });
        let native = (!self.reasoning_items.is_empty()).then(|| {
            let mut m = Map::new();
            m.insert(NATIVE_KEY.into(), Value::Array(self.reasoning_items));
            Value::Object(m)
        });
        Ok(AssistantTurn {
            text: self.text,
            tool_calls,
            finish_reason: Some(finish_reason),
            reasoning,
            usage: self.usage,
            native,
        })
    }
}

impl StreamReader for Reader {
    fn feed(&mut self, event: &str, data: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<bool, String> {
        self.feed_event(event, data, on_delta)
    }

    /// Only `response.completed` (or `.incomplete`) says the answer is whole.
    fn finished(&self) -> bool {
        self.ended
    }

    fn finish(self: Box<Self>) -> Result<AssistantTurn, String> {
        self.into_turn()
    }
}

/// The texts of the parts of `kind` in a content or summary array, joined.
fn texts(parts: Option<&Value>, kind: &str) -> String {
    let field = if kind == "refusal" { "refusal" } else { "text" };
    parts
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some(kind))
        .filter_map(|p| p.get(field).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(if kind == "summary_text" { "\n\n" } else { "" })
}

/// An error object as a person reads it: its message, and its code when there is one.
fn describe(err: Option<&Value>) -> String {
    let Some(err) = err.filter(|e| !e.is_null()) else {
        return "no reason given".into();
    };
    let message = err.get("message").and_then(Value::as_str).filter(|m| !m.is_empty());
    let code = err.get("code").and_then(|c| {
        c.as_str()
            .map(str::to_string)
            .or_else(|| c.as_i64().map(|n| n.to_string()))
    });
    match (message, code) {
        (Some(m), Some(c)) => format!("{} ({c})", cut_str(m)),
        (Some(m), None) => cut_str(m),
        (None, Some(c)) => c,
        (None, None) => cut(err),
    }
}

fn cut(v: &Value) -> String {
    cut_str(&v.to_string())
}

fn cut_str(s: &str) -> String {
    super::cut_chars(s, 300)
}

#[cfg(test)]
mod tests {
    use super::super::sse::{EventAssembler, LineSplitter};
    use super::*;

    fn config() -> ModelConfig {
        ModelConfig {
            name: "gpt-5".into(),
            ..ModelConfig::default()
        }
    }

    fn tool(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: format!("{name} things"),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: name.into(),
                arguments: args.into(),
            },
        }
    }

    const REASONING: &str = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Look first."}],"encrypted_content":"gAAAA-secret"}"#;

    #[test]
    fn body_maps_the_history_to_input_items() {
        let reasoning: Value = serde_json::from_str(REASONING).unwrap();
        let history = vec![
            ChatMessage::System {
                content: "be brief".into(),
            },
            ChatMessage::User {
                content: "read a".into(),
            },
            ChatMessage::Assistant {
                content: Some("Reading.".into()),
                tool_calls: vec![call("call_1", "read_file", r#"{"path":"a"}"#)],
                reasoning_content: None,
                reasoning: None,
                // A reasoning item without encrypted content cannot be replayed statelessly.
                native: Some(json!({"responses": [
                    reasoning.clone(),
                    {"id": "rs_0", "type": "reasoning", "summary": []},
                ]})),
            },
            ChatMessage::Tool {
                tool_call_id: "call_1".into(),
                content: "A".into(),
            },
            ChatMessage::System {
                content: "plan mode is off".into(),
            },
        ];
        let body = request_body(&config(), &history, &[tool("read_file")]);
        assert_eq!(body["model"], "gpt-5");
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(body["stream"], true);
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["parallel_tool_calls"], true);
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "name": "read_file", "description": "read_file things",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                    "strict": false}])
        );
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a"}]},
                reasoning,
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "A"},
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "plan mode is off"}]},
            ])
        );
    }

    /// Non-reasoning OpenAI models refuse the `include` with HTTP 400.
    #[test]
    fn encrypted_reasoning_is_asked_of_models_that_reason() {
        for (model, asked) in [
            ("gpt-5", true),
            ("o4-mini", true),
            ("gpt-5.1-codex", true),
            ("openai/o3", true),
            ("gpt-4o-mini", false),
            ("gpt-4.1", false),
            ("GPT-3.5-turbo", false),
            ("chatgpt-4o-latest", false),
            ("gpt-5-chat-latest", false),
        ] {
            let body = request_body(
                &ModelConfig {
                    name: model.into(),
                    ..ModelConfig::default()
                },
                &[ChatMessage::User { content: "hi".into() }],
                &[],
            );
            assert_eq!(body.get("include").is_some(), asked, "{model}");
        }
    }

    #[test]
    fn no_tools_no_tool_fields_and_no_empty_assistant_text() {
        let history = vec![
            ChatMessage::User { content: "hi".into() },
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![call("c", "list", "{}")],
                reasoning_content: None,
                reasoning: None,
                native: None,
            },
            ChatMessage::Tool {
                tool_call_id: "c".into(),
                content: "x".into(),
            },
        ];
        let body = request_body(&config(), &history, &[]);
        for k in ["tools", "tool_choice", "parallel_tool_calls", "instructions"] {
            assert!(body.get(k).is_none(), "{k}: {body}");
        }
        let types: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["message", "function_call", "function_call_output"]);
    }

    /// Feeds `stream` (SSE text) through the real line splitter and event assembler in awkward
    /// pieces; the turn, or the first error, and the deltas seen.
    fn read(stream: &str) -> (Result<AssistantTurn, String>, String, String) {
        let mut lines = LineSplitter::default();
        let mut events = EventAssembler::default();
        let mut reader: Box<dyn StreamReader> = Box::new(Reader::default());
        let (mut text, mut thinking) = (String::new(), String::new());
        let mut on_delta = |d: Delta<'_>| match d {
            Delta::Text(t) => text.push_str(t),
            Delta::Reasoning(t) => thinking.push_str(t),
        };
        let mut result = None;
        let mut done = false;
        'outer: for piece in stream.as_bytes().chunks(11) {
            for line in lines.push(piece) {
                let event = match events.push_line(&line) {
                    Ok(Some(e)) => e,
                    Ok(None) => continue,
                    Err(e) => {
                        result = Some(Err(e));
                        break 'outer;
                    }
                };
                match reader.feed(&event.0, &event.1, &mut on_delta) {
                    Ok(false) => {}
                    Ok(true) => {
                        done = true;
                        break 'outer;
                    }
                    Err(e) => {
                        result = Some(Err(e));
                        break 'outer;
                    }
                }
            }
        }
        // The end of the stream ends the last line and the last event, as the client does.
        if result.is_none() && !done {
            if let Some(line) = lines.rest() {
                let _ = events.push_line(&line);
            }
            if let Some((name, data)) = events.take() {
                if let Err(e) = reader.feed(&name, &data, &mut on_delta) {
                    result = Some(Err(e));
                }
            }
        }
        let result = result.unwrap_or_else(|| reader.finish());
        (result, text, thinking)
    }

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("message")))
            .collect()
    }

    /// Shaped like OpenAI's stream for a reasoning model: a reasoning item with its summary and
    /// encrypted content, text, a function call with its arguments in pieces, usage at the end.
    fn fixture() -> Vec<Value> {
        let reasoning: Value = serde_json::from_str(REASONING).unwrap();
        vec![
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": [], "usage": null}}),
            json!({"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "sequence_number": 3, "item_id": "rs_1", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 4, "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Look "}),
            json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 5, "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "first."}),
            json!({"type": "response.output_item.done", "sequence_number": 6, "output_index": 0, "item": reasoning}),
            json!({"type": "response.output_item.added", "sequence_number": 7, "output_index": 1, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
            json!({"type": "response.content_part.added", "sequence_number": 8, "item_id": "msg_1", "output_index": 1, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
            json!({"type": "response.output_text.delta", "sequence_number": 9, "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Let me "}),
            json!({"type": "response.output_text.delta", "sequence_number": 10, "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "look."}),
            json!({"type": "response.output_text.done", "sequence_number": 11, "item_id": "msg_1", "output_index": 1, "content_index": 0, "text": "Let me look."}),
            json!({"type": "response.output_item.done", "sequence_number": 12, "output_index": 1, "item": {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]}}),
            json!({"type": "response.output_item.added", "sequence_number": 13, "output_index": 2, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1", "name": "read_file"}}),
            json!({"type": "response.function_call_arguments.delta", "sequence_number": 14, "item_id": "fc_1", "output_index": 2, "delta": "{\"path\""}),
            json!({"type": "response.function_call_arguments.delta", "sequence_number": 15, "item_id": "fc_1", "output_index": 2, "delta": ":\"a.txt\"}"}),
            json!({"type": "response.function_call_arguments.done", "sequence_number": 16, "item_id": "fc_1", "output_index": 2, "arguments": "{\"path\":\"a.txt\"}"}),
            json!({"type": "response.output_item.done", "sequence_number": 17, "output_index": 2, "item": {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": "{\"path\":\"a.txt\"}", "call_id": "call_1", "name": "read_file"}}),
            json!({"type": "response.completed", "sequence_number": 18, "response": {"id": "resp_1", "status": "completed",
                "usage": {"input_tokens": 78, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 719, "output_tokens_details": {"reasoning_tokens": 704}, "total_tokens": 797}}}),
        ]
    }

    #[test]
    fn reads_reasoning_text_calls_and_usage() {
        let (turn, text, thinking) = read(&sse(&fixture()));
        let turn = turn.unwrap();
        assert_eq!(turn.text, "Let me look.");
        assert_eq!(text, "Let me look.", "text streamed once, not again at its done event");
        assert_eq!(thinking, "Look first.");
        assert_eq!(turn.reasoning.as_ref().map(|r| r.text.as_str()), Some("Look first."));
        assert_eq!(turn.tool_calls, [call("call_1", "read_file", r#"{"path":"a.txt"}"#)]);
        assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            turn.usage,
            Some(cst_protocol::TokenUsage {
                input_tokens: 78,
                output_tokens: 719
            })
        );
        let reasoning: Value = serde_json::from_str(REASONING).unwrap();
        assert_eq!(turn.native, Some(json!({"responses": [reasoning]})));
        // And the turn goes back as the API wants it: reasoning, text, call.
        let history = vec![ChatMessage::User { content: "go".into() }, turn.to_message()];
        let input = request_body(&config(), &history, &[])["input"].clone();
        assert_eq!(input[1], reasoning);
        assert_eq!(input[2]["role"], "assistant");
        assert_eq!(input[3]["call_id"], "call_1");
    }

    #[test]
    fn plain_text_ends_with_stop_and_data_type_wins_over_a_missing_event_name() {
        let stream = [
            r#"data: {"type":"response.output_text.delta","item_id":"m","delta":"Hi"}"#,
            "",
            r#"data: {"type":"response.completed","response":{"status":"completed"}}"#,
            "",
        ]
        .join("\n");
        let (turn, _, _) = read(&stream);
        let turn = turn.unwrap();
        assert_eq!(
            (turn.text.as_str(), turn.finish_reason.as_deref()),
            ("Hi", Some("stop"))
        );
        assert_eq!(turn.native, None);
        assert_eq!(turn.usage, None);
    }

    #[test]
    fn incomplete_at_the_output_limit_is_length_and_drops_a_cut_call() {
        let mut events = fixture();
        events.truncate(15); // the call's first argument piece, no more
        events.push(
            json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 5, "output_tokens": 9}}}),
        );
        let turn = read(&sse(&events)).0.unwrap();
        assert_eq!(turn.finish_reason.as_deref(), Some("length"));
        assert!(turn.tool_calls.is_empty(), "{:?}", turn.tool_calls);
        assert_eq!(turn.text, "Let me look.");
        assert_eq!(turn.usage.map(|u| u.output_tokens), Some(9));
    }

    #[test]
    fn whole_items_without_deltas_still_count() {
        // A server that sends finished items only.
        let events = [
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "m", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"id": "f", "type": "function_call", "call_id": "c9", "name": "list", "arguments": "{}"}}),
            json!({"type": "response.completed", "response": {}}),
        ];
        let (turn, text, _) = read(&sse(&events));
        let turn = turn.unwrap();
        assert_eq!((turn.text.as_str(), text.as_str()), ("Done.", "Done."));
        assert_eq!(turn.tool_calls, [call("c9", "list", "{}")]);
        // Deltas that name no item, then the whole item: the text once.
        let events = [
            json!({"type": "response.output_text.delta", "delta": "Once."}),
            json!({"type": "response.output_item.done", "item": {"id": "m", "type": "message", "content": [{"type": "output_text", "text": "Once."}]}}),
            json!({"type": "response.completed", "response": {}}),
        ];
        assert_eq!(read(&sse(&events)).0.unwrap().text, "Once.");
        // And one that sends only the final response.
        let events = [json!({"type": "response.completed", "response": {"output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Only this."}]}]}})];
        assert_eq!(read(&sse(&events)).0.unwrap().text, "Only this.");
    }

    #[test]
    fn server_errors_are_named() {
        // As the API reference has it, and nested as servers also send it.
        for e in [
            json!({"type": "error", "code": "server_error", "message": "The server had an error", "param": null}),
            json!({"type": "error", "error": {"code": "server_error", "message": "The server had an error"}}),
        ] {
            let err = read(&sse(&[e])).0.unwrap_err();
            assert_eq!(err, "the server sent an error: The server had an error (server_error)");
        }
        let failed = json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "rate_limit_exceeded", "message": "Request too large for gpt-5"}}});
        let err = read(&sse(&[failed])).0.unwrap_err();
        assert!(
            err.contains("Request too large for gpt-5") && err.contains("failed"),
            "{err}"
        );
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        let err = read("event: response.output_text.delta\ndata: {not json\n\n")
            .0
            .unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
        let err = read("data: [1,2]\n\n").0.unwrap_err();
        assert!(err.contains("not a JSON object"), "{err}");
        let stray = json!({"type": "response.function_call_arguments.delta", "item_id": "fc_x", "delta": "{"});
        let err = read(&sse(&[stray])).0.unwrap_err();
        assert!(err.contains("never announced"), "{err}");
        let err = read(&sse(&[json!({"type": "response.output_item.added"})]))
            .0
            .unwrap_err();
        assert!(err.contains("without an `item`"), "{err}");
        // The stream stops before `response.completed`.
        let mut events = fixture();
        events.pop();
        let err = read(&sse(&events)).0.unwrap_err();
        assert!(err.contains("before `response.completed`"), "{err}");
        // A call with no name.
        let nameless = [
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "f", "type": "function_call", "call_id": "c"}}),
            json!({"type": "response.completed", "response": {}}),
        ];
        let err = read(&sse(&nameless)).0.unwrap_err();
        assert!(err.contains("no name"), "{err}");
        // Wrong types where strings belong are ignored, not unwrapped.
        let odd = [
            json!({"type": "response.output_text.delta", "delta": 5}),
            json!({"type": "response.output_item.done", "item": {"type": 7}}),
            json!({"type": "response.completed", "response": {"usage": {"input_tokens": "many"}}}),
        ];
        let turn = read(&sse(&odd)).0.unwrap();
        assert_eq!(turn.usage.map(|u| u.input_tokens), Some(0));
    }

    #[test]
    fn the_number_of_calls_is_bounded() {
        let mut events: Vec<Value> = (0..=MAX_CALLS)
            .map(|i| json!({"type": "response.output_item.added", "output_index": i,
                "item": {"id": format!("fc_{i}"), "type": "function_call", "call_id": format!("c{i}"), "name": "list", "arguments": ""}}))
            .collect();
        events.push(json!({"type": "response.completed", "response": {}}));
        let err = read(&sse(&events)).0.unwrap_err();
        assert!(err.contains("more than 128 function calls"), "{err}");
    }
}
