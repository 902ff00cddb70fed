//! The Anthropic Messages API (`POST {base_url}/messages`, streamed): the request body from the
//! history, and the event stream read into an [`AssistantTurn`].
//!
//! The request: `system` as text blocks, the conversation as strictly alternating `user` /
//! `assistant` messages of content blocks (`text`, `thinking`, `tool_use`, `tool_result`), the
//! tools with an `input_schema`. Prompt caching: a `cache_control` breakpoint on the system
//! prompt's first block and on the last tool, so the prefix (tools, then system) is read from
//! the cache on every step of a session instead of billed again.
//!
//! The stream: `message_start` (input tokens), per content block `content_block_start`,
//! `content_block_delta`s (`text_delta`, `input_json_delta`, `thinking_delta`,
//! `signature_delta`) and `content_block_stop`, then `message_delta` (stop reason, output
//! tokens) and `message_stop`; `ping`s anywhere, an `error` event when the server gives up
//! mid-stream (`overloaded_error`). Event types this client does not know are skipped, as the
//! API's versioning policy asks.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{AssistantTurn, ChatMessage, Delta, FunctionCall, ModelConfig, Reasoning, StreamReader, ToolCall, ToolDef};

/// The `anthropic-version` header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` of every request. The Messages API has no default and requires the field; 8192
/// is accepted by every Claude model since Claude 3.5 (the Claude 3 models stop at 4096) and
/// leaves room for a long file written in one call. An answer cut there ends the turn as
/// `length` ([`cst_protocol::TurnEnd::Truncated`]).
pub const MAX_TOKENS: u32 = 8192;

/// The key of [`AssistantTurn::native`] under which this API's thinking blocks are kept.
const NATIVE_KEY: &str = "messages";

/// Put in place of a user message with no text (the API refuses empty text blocks).
const EMPTY_USER_TEXT: &str = "(empty message)";

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The request body for `messages` and `tools` (streaming on).
pub fn request_body(config: &ModelConfig, messages: &[ChatMessage], tools: &[ToolDef]) -> Value {
    let mut system: Vec<Value> = Vec::new();
    let mut conv = Conversation::default();
    for m in messages {
        match m {
            // Later system messages go after the first, keeping the cached prefix stable.
            ChatMessage::System { content } => {
                if !content.trim().is_empty() {
                    system.push(json!({"type": "text", "text": content}));
                }
            }
            ChatMessage::User { content } => conv.user_text(content),
            ChatMessage::Assistant {
                content,
                tool_calls,
                native,
                ..
            } => conv.assistant(content.as_deref(), tool_calls, native.as_ref()),
            ChatMessage::Tool { tool_call_id, content } => conv.tool_result(tool_call_id, content),
        }
    }
    let mut body = json!({
        "model": config.name,
        "max_tokens": config.max_output_tokens.unwrap_or(u64::from(MAX_TOKENS)),
        "stream": true,
    });
    if let Some(first) = system.first_mut() {
        first["cache_control"] = ephemeral();
    }
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    body["messages"] = Value::Array(conv.finish());
    // The API refuses an empty `tools` array less politely than none.
    if !tools.is_empty() {
        let mut list: Vec<Value> = tools.iter().map(tool_def).collect();
        if let Some(last) = list.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = Value::Array(list);
    }
    body
}

fn tool_def(t: &ToolDef) -> Value {
    // `input_schema` must be an object schema (`"type": "object"`).
    let schema = match &t.parameters {
        Value::Object(o) => {
            let mut o = o.clone();
            o.entry("type").or_insert_with(|| json!("object"));
            Value::Object(o)
        }
        _ => json!({"type": "object", "properties": {}}),
    };
    let mut def = json!({"name": t.name, "input_schema": schema});
    if !t.description.is_empty() {
        def["description"] = json!(t.description);
    }
    def
}

/// One message being written: a user message keeps its `tool_result` blocks apart, because the
/// API wants them before any text of the same message.
struct Message {
    role: &'static str,
    results: Vec<Value>,
    blocks: Vec<Value>,
}

/// The history as the API wants it: user and assistant strictly alternating, starting with a
/// user message; every `tool_use` answered by a `tool_result` in the very next user message.
#[derive(Default)]
struct Conversation {
    messages: Vec<Message>,
    /// Calls of the last assistant message not answered yet.
    pending: Vec<String>,
}

impl Conversation {
    /// The open message of `role`: the last one when it has that role (consecutive messages
    /// of one role are merged), else a new one.
    fn open(&mut self, role: &'static str) -> &mut Message {
        if self.messages.last().is_none_or(|m| m.role != role) {
            self.messages.push(Message {
                role,
                results: Vec::new(),
                blocks: Vec::new(),
            });
        }
        let last = self.messages.len() - 1;
        &mut self.messages[last]
    }

    /// Calls the history never answered (a turn cut short) get an error result, so that the
    /// request stays valid.
    fn answer_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let user = self.open("user");
        for id in pending {
            user.results.push(json!({
                "type": "tool_result", "tool_use_id": id, "is_error": true,
                "content": "error: the call was not run (no result was recorded)",
            }));
        }
    }

    fn user_text(&mut self, text: &str) {
        self.answer_pending();
        let user = self.open("user");
        if !text.trim().is_empty() {
            user.blocks.push(json!({"type": "text", "text": text}));
        }
    }

    fn tool_result(&mut self, id: &str, content: &str) {
        let answers = self.pending.iter().position(|p| p == id);
        let user = match answers {
            Some(at) => {
                self.pending.remove(at);
                self.open("user")
            }
            // A result for a call not in the message before (a cut history): kept as text, since
            // a `tool_result` the API cannot pair with its `tool_use` fails the request.
            None => {
                self.answer_pending();
                let user = self.open("user");
                user.blocks.push(json!({
                    "type": "text", "text": format!("(result of tool call {id})\n{content}"),
                }));
                return;
            }
        };
        let mut block = json!({"type": "tool_result", "tool_use_id": id});
        if !content.is_empty() {
            block["content"] = json!(content);
        }
        // The core writes a failed call's result as `error: …`; the API has a flag for it.
        if content.starts_with("error:") {
            block["is_error"] = json!(true);
        }
        user.results.push(block);
    }

    fn assistant(&mut self, text: Option<&str>, calls: &[ToolCall], native: Option<&Value>) {
        // Thinking blocks first, verbatim with their signatures: during a tool loop the API
        // refuses an assistant message whose thinking was dropped or changed.
        let mut blocks: Vec<Value> = native
            .and_then(|n| n.get(NATIVE_KEY))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
            blocks.push(json!({"type": "text", "text": t}));
        }
        let mut ids = Vec::with_capacity(calls.len());
        for c in calls {
            // `input` is an object; arguments the model garbled go back as `{}`.
            let input = serde_json::from_str::<Value>(&c.function.arguments)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.function.name, "input": input}));
            ids.push(c.id.clone());
        }
        if blocks.is_empty() {
            // An empty answer: the API refuses empty messages, and nothing is lost.
            return;
        }
        self.answer_pending();
        if self.messages.is_empty() {
            // The API wants a user message first.
            self.open("user");
        }
        self.open("assistant").blocks.extend(blocks);
        self.pending = ids;
    }

    fn finish(self) -> Vec<Value> {
        self.messages
            .into_iter()
            .map(|m| {
                let mut content = m.results;
                content.extend(m.blocks);
                if content.is_empty() {
                    content.push(json!({"type": "text", "text": EMPTY_USER_TEXT}));
                }
                json!({"role": m.role, "content": content})
            })
            .collect()
    }
}

/// Most content blocks one answer may hold.
const MAX_BLOCKS: usize = 1024;
/// Most tool calls one answer may hold.
const MAX_CALLS: usize = 128;
/// Most bytes of text, thinking and tool input one answer may hold: a server cannot fill memory
/// with an endless stream of small events.
const MAX_ANSWER_BYTES: usize = 64 << 20;

enum Block {
    Text,
    ToolUse {
        call: usize,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Kept whole (its `data` is encrypted thinking).
    Redacted(Value),
    /// A block this client does not use (a server tool's result, a newer type): its deltas are
    /// skipped.
    Other,
}

impl Block {
    fn kind(&self) -> &'static str {
        match self {
            Block::Text => "text",
            Block::ToolUse { .. } => "tool_use",
            Block::Thinking { .. } => "thinking",
            Block::Redacted(_) => "redacted_thinking",
            Block::Other => "other",
        }
    }
}

struct Call {
    id: String,
    name: String,
    arguments: String,
    /// `input` of `content_block_start`, used when no `input_json_delta` follows (proxies that
    /// send the whole input at once).
    start_input: Option<Value>,
}

/// Token counts as the API reports them; input is split into uncached, written to the cache
/// and read from it.
#[derive(Default)]
struct Usage {
    seen: bool,
    input: u64,
    cache_creation: u64,
    cache_read: u64,
    output: u64,
}

impl Usage {
    /// A `usage` object of `message_start` or `message_delta`: the counts it has replace the old
    /// ones (`message_delta`'s are cumulative).
    fn update(&mut self, u: &Value) {
        for (key, field) in [
            ("input_tokens", &mut self.input),
            ("cache_creation_input_tokens", &mut self.cache_creation),
            ("cache_read_input_tokens", &mut self.cache_read),
            ("output_tokens", &mut self.output),
        ] {
            if let Some(n) = u.get(key).and_then(Value::as_u64) {
                *field = n;
                self.seen = true;
            }
        }
    }
}

/// Reads a Messages stream into an [`AssistantTurn`].
#[derive(Default)]
pub struct Reader {
    started: bool,
    text: String,
    /// Thinking text of every thinking block, for the front end.
    reasoning: String,
    blocks: Vec<Block>,
    /// The block each stream `index` fills.
    slot_of: HashMap<u64, usize>,
    calls: Vec<Call>,
    bytes: usize,
    usage: Usage,
    stop_reason: Option<String>,
}

impl Reader {
    fn grow(&mut self, by: usize) -> Result<(), String> {
        self.bytes = self.bytes.saturating_add(by);
        if self.bytes > MAX_ANSWER_BYTES {
            return Err(format!("the answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20));
        }
        Ok(())
    }

    fn block_start(&mut self, ev: &Value, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<(), String> {
        let index = index_of(ev)?;
        let Some(block) = ev.get("content_block").filter(|b| b.is_object()) else {
            return Err(format!("`content_block_start` {index} has no `content_block`"));
        };
        if self.slot_of.contains_key(&index) {
            return Err(format!("content block {index} started twice"));
        }
        if self.blocks.len() >= MAX_BLOCKS {
            return Err(format!("more than {MAX_BLOCKS} content blocks in one answer"));
        }
        let str_of = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        let b = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = str_of("text");
                self.grow(text.len())?;
                if !text.is_empty() {
                    self.text.push_str(text);
                    on_delta(Delta::Text(text));
                }
                Block::Text
            }
            Some("tool_use") => {
                if self.calls.len() >= MAX_CALLS {
                    return Err(format!("more than {MAX_CALLS} tool calls in one answer"));
                }
                let (id, name) = (str_of("id"), str_of("name"));
                let start_input = block
                    .get("input")
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()));
                self.grow(id.len() + name.len() + start_input.map_or(0, |i| i.to_string().len()))?;
                self.calls.push(Call {
                    // The conversation needs an id; a proxy that drops it gets one made up.
                    id: if id.is_empty() {
                        format!("toolu_{}", self.calls.len())
                    } else {
                        id.to_string()
                    },
                    name: name.to_string(),
                    arguments: String::new(),
                    start_input: start_input.cloned(),
                });
                Block::ToolUse {
                    call: self.calls.len() - 1,
                }
            }
            Some("thinking") => {
                let (thinking, signature) = (str_of("thinking"), str_of("signature"));
                self.grow(thinking.len() + signature.len())?;
                if !thinking.is_empty() {
                    self.reasoning.push_str(thinking);
                    on_delta(Delta::Reasoning(thinking));
                }
                Block::Thinking {
                    thinking: thinking.to_string(),
                    signature: signature.to_string(),
                }
            }
            Some("redacted_thinking") => {
                self.grow(block.to_string().len())?;
                Block::Redacted(block.clone())
            }
            _ => Block::Other,
        };
        self.blocks.push(b);
        self.slot_of.insert(index, self.blocks.len() - 1);
        Ok(())
    }

    fn block_delta(&mut self, ev: &Value, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<(), String> {
        let index = index_of(ev)?;
        let Some(&slot) = self.slot_of.get(&index) else {
            return Err(format!("a delta for content block {index}, which never started"));
        };
        let delta = ev.get("delta").unwrap_or(&Value::Null);
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or_default();
        let field = match kind {
            "text_delta" => "text",
            "input_json_delta" => "partial_json",
            "thinking_delta" => "thinking",
            "signature_delta" => "signature",
            // `citations_delta` and newer kinds carry nothing this client keeps.
            _ => return Ok(()),
        };
        let Some(piece) = delta.get(field).and_then(Value::as_str) else {
            return Err(format!("a `{kind}` for content block {index} has no `{field}` string"));
        };
        self.grow(piece.len())?;
        match (&mut self.blocks[slot], kind) {
            (Block::Other, _) => {}
            (Block::Text, "text_delta") => {
                if !piece.is_empty() {
                    self.text.push_str(piece);
                    on_delta(Delta::Text(piece));
                }
            }
            (Block::ToolUse { call }, "input_json_delta") => self.calls[*call].arguments.push_str(piece),
            (Block::Thinking { thinking, .. }, "thinking_delta") => {
                if !piece.is_empty() {
                    thinking.push_str(piece);
                    self.reasoning.push_str(piece);
                    on_delta(Delta::Reasoning(piece));
                }
            }
            // The signature arrives whole, just before the block ends (the SDKs assign it).
            (Block::Thinking { signature, .. }, "signature_delta") => *signature = piece.to_string(),
            (b, _) => {
                return Err(format!(
                    "a `{kind}` for content block {index}, which is a `{}` block",
                    b.kind()
                ))
            }
        }
        Ok(())
    }
}

fn index_of(ev: &Value) -> Result<u64, String> {
    ev.get("index").and_then(Value::as_u64).ok_or_else(|| {
        format!(
            "a `{}` event has no `index`",
            ev.get("type").and_then(Value::as_str).unwrap_or_default()
        )
    })
}

impl StreamReader for Reader {
    fn feed(&mut self, event: &str, data: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<bool, String> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        let ev: Value = serde_json::from_str(data)
            .map_err(|e| format!("the data of a `{event}` event is not JSON ({e}): {}", cut(data)))?;
        // Every event names its type in its data (and in `event:`, which proxies drop).
        let kind = match ev.get("type").and_then(Value::as_str) {
            Some(k) => k,
            None if event != "message" => event,
            None => {
                return Err(format!(
                    "an event without a `type` (is this server speaking the Anthropic Messages API?): {}",
                    cut(data)
                ))
            }
        };
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(u) = ev.get("message").and_then(|m| m.get("usage")) {
                    self.usage.update(u);
                }
            }
            "content_block_start" => self.block_start(&ev, on_delta)?,
            "content_block_delta" => self.block_delta(&ev, on_delta)?,
            "message_delta" => {
                if let Some(r) = ev
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = ev.get("usage") {
                    self.usage.update(u);
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let err = ev.get("error").unwrap_or(&Value::Null);
                let s = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or_default();
                let what = match (s("type"), s("message")) {
                    ("", "") => cut(data),
                    (t, "") => t.to_string(),
                    ("", m) => m.to_string(),
                    (t, m) => format!("{t}: {m}"),
                };
                return Err(format!("the server sent an error: {what}"));
            }
            // `content_block_stop`, `ping`, and types added after this was written.
            _ => {}
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn finish(self: Box<Self>) -> Result<AssistantTurn, String> {
        let r = *self;
        if !r.started {
            return Err(
                "the stream held no `message_start` event (is this server speaking the Anthropic Messages API?)".into(),
            );
        }
        let mut tool_calls = Vec::with_capacity(r.calls.len());
        for (i, c) in r.calls.into_iter().enumerate() {
            if c.name.is_empty() {
                return Err(format!("tool call #{i} (`{}`) has no name", c.id));
            }
            let arguments = if !c.arguments.trim().is_empty() {
                c.arguments
            } else {
                c.start_input.map_or_else(|| "{}".to_string(), |v| v.to_string())
            };
            tool_calls.push(ToolCall {
                id: c.id,
                kind: "function".into(),
                function: FunctionCall {
                    name: c.name,
                    arguments,
                },
            });
        }
        // Thinking blocks in their stream order, for the next request of the tool loop. One
        // without a signature could not be verified by the API, so it is not sent back.
        let mut order: Vec<(u64, usize)> = r.slot_of.into_iter().collect();
        order.sort_unstable();
        let mut blocks = r.blocks;
        let thinking: Vec<Value> = order
            .into_iter()
            .filter_map(|(_, slot)| match std::mem::replace(&mut blocks[slot], Block::Other) {
                Block::Thinking { thinking, signature } if !signature.is_empty() => {
                    Some(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
                }
                Block::Redacted(v) => Some(v),
                _ => None,
            })
            .collect();
        let usage = r.usage.seen.then(|| cst_protocol::TokenUsage {
            input_tokens: r
                .usage
                .input
                .saturating_add(r.usage.cache_creation)
                .saturating_add(r.usage.cache_read),
            output_tokens: r.usage.output,
        });
        let finish_reason = r.stop_reason.map(|s| {
            match s.as_str() {
                // `model_context_window_exceeded`: cut as well, by the context window.
                "max_tokens" | "model_context_window_exceeded" => "length",
                "tool_use" => "tool_calls",
                _ => "stop",
            }
            .to_string()
        });
        Ok(AssistantTurn {
            text: r.text,
            tool_calls,
            finish_reason,
            reasoning: (!r.reasoning.is_empty()).then(|| Reasoning {
                field: "thinking".into(),
                text: r.reasoning,
            }),
            usage,
            native: (!thinking.is_empty()).then(|| json!({ NATIVE_KEY: thinking })),
        })
    }
}

fn cut(s: &str) -> String {
    super::cut_chars(s, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ModelConfig {
        ModelConfig {
            name: "claude-sonnet-4-5".into(),
            api: super::super::WireApi::Messages,
            ..ModelConfig::default()
        }
    }

    fn tool(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: format!("the {name} tool"),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }
    }

    fn user(t: &str) -> ChatMessage {
        ChatMessage::User { content: t.into() }
    }

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "read_file".into(),
                arguments: args.into(),
            },
        }
    }

    fn assistant(text: Option<&str>, calls: Vec<ToolCall>, native: Option<Value>) -> ChatMessage {
        ChatMessage::Assistant {
            content: text.map(str::to_string),
            tool_calls: calls,
            reasoning_content: None,
            reasoning: None,
            native,
        }
    }

    fn result(id: &str, content: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            content: content.into(),
        }
    }

    #[test]
    fn body_caches_system_and_the_last_tool() {
        let body = request_body(
            &config(),
            &[
                ChatMessage::System {
                    content: "be brief".into(),
                },
                user("hi"),
            ],
            &[tool("read_file"), tool("list")],
        );
        assert_eq!(body["model"], "claude-sonnet-4-5");
        assert_eq!(body["max_tokens"], MAX_TOKENS);
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
        );
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2);
        assert!(tools[0].get("cache_control").is_none(), "{body}");
        assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(tools[1]["name"], "list");
        assert_eq!(tools[1]["description"], "the list tool");
        assert_eq!(tools[1]["input_schema"]["properties"]["path"]["type"], "string");
        // Nothing in the Chat shape leaks through.
        assert!(tools[0].get("function").is_none() && tools[0].get("parameters").is_none());

        let bare = request_body(&config(), &[user("hi")], &[]);
        assert!(bare.get("tools").is_none() && bare.get("system").is_none(), "{bare}");
    }

    #[test]
    fn a_tool_loop_alternates_with_results_merged_and_thinking_first() {
        let thinking = json!({"type": "thinking", "thinking": "Let me look.", "signature": "sig=="});
        let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgB"});
        let history = vec![
            ChatMessage::System { content: "sys".into() },
            user("read a and b"),
            assistant(
                Some("Reading."),
                vec![
                    call("toolu_a", r#"{"path":"a"}"#),
                    call("toolu_b", "{not json"),
                    call("toolu_c", "[1]"),
                ],
                Some(json!({"messages": [thinking, redacted]})),
            ),
            result("toolu_a", "A"),
            result("toolu_b", ""),
            result("toolu_c", "error: no such file"),
            user("and now?"),
            assistant(Some("Done."), vec![], None),
            ChatMessage::System {
                content: "a later note".into(),
            },
            user("thanks"),
        ];
        let body = request_body(&config(), &history, &[tool("read_file")]);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "a later note"}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
                {"role": "assistant", "content": [
                    thinking, redacted,
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}},
                    {"type": "tool_use", "id": "toolu_c", "name": "read_file", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "toolu_b"},
                    {"type": "tool_result", "tool_use_id": "toolu_c", "content": "error: no such file", "is_error": true},
                    {"type": "text", "text": "and now?"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
            ])
        );
    }

    /// Histories the API would refuse as they are: consecutive user messages, an empty answer,
    /// calls left unanswered, a result whose call is gone, an empty user message.
    #[test]
    fn odd_histories_still_alternate() {
        let history = vec![
            assistant(Some("hello from before"), vec![], None),
            user("one"),
            user("   "),
            user("two"),
            assistant(None, vec![], None),
            user("three"),
            assistant(None, vec![call("c1", "{}")], None),
            user("interrupted"),
            result("gone", "late"),
            assistant(Some(""), vec![], None),
        ];
        let body = request_body(&config(), &history, &[]);
        let msgs = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"], "{body:#}");
        assert_eq!(msgs[0]["content"], json!([{"type": "text", "text": EMPTY_USER_TEXT}]));
        let texts = |m: &Value| -> Vec<String> {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect()
        };
        assert_eq!(texts(&msgs[2]), ["one", "two", "three"]);
        let last = msgs[4]["content"].as_array().unwrap();
        assert_eq!(last[0]["type"], "tool_result");
        assert_eq!(last[0]["tool_use_id"], "c1");
        assert_eq!(last[0]["is_error"], true);
        assert_eq!(last[1]["text"], "interrupted");
        assert_eq!(last[2]["text"], "(result of tool call gone)\nlate");
    }

    fn event(kind: &str, data: Value) -> (String, String) {
        (kind.to_string(), data.to_string())
    }

    /// A stream as the API sends it (shapes from Anthropic's streaming docs).
    fn fixture() -> Vec<(String, String)> {
        vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {
                "id": "msg_01", "type": "message", "role": "assistant", "content": [],
                "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 25, "cache_creation_input_tokens": 100,
                          "cache_read_input_tokens": 2000, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "I should "}}),
            ),
            event("ping", json!({"type": "ping"})),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "read it."}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
            ),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "redacted_thinking", "data": "EmwKAhgB"}}),
            ),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 2,
                "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "text_delta", "text": "Let me "}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2,
                "delta": {"type": "text_delta", "text": "check."}}),
            ),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 2})),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 3,
                "content_block": {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a"}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": ".txt\"}"}}),
            ),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 3})),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 4,
                "content_block": {"type": "tool_use", "id": "toolu_02", "name": "list", "input": {}}}),
            ),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 4})),
            event(
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 89}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]
    }

    fn read(events: &[(String, String)]) -> (Result<AssistantTurn, String>, Vec<String>) {
        let mut reader: Box<dyn StreamReader> = Box::new(Reader::default());
        let mut seen = Vec::new();
        for (name, data) in events {
            let mut on = |d: Delta<'_>| {
                seen.push(match d {
                    Delta::Text(t) => format!("text:{t}"),
                    Delta::Reasoning(t) => format!("thinking:{t}"),
                })
            };
            match reader.feed(name, data, &mut on) {
                Ok(true) => return (reader.finish(), seen),
                Ok(false) => {}
                Err(e) => return (Err(e), seen),
            }
        }
        let turn = if reader.finished() {
            reader.finish()
        } else {
            Err("unfinished".into())
        };
        (turn, seen)
    }

    #[test]
    fn reads_thinking_text_calls_and_usage() {
        let (turn, seen) = read(&fixture());
        let turn = turn.unwrap();
        assert_eq!(
            seen,
            ["thinking:I should ", "thinking:read it.", "text:Let me ", "text:check."]
        );
        assert_eq!(turn.text, "Let me check.");
        assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
        let calls: Vec<(&str, &str, &str)> = turn
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.function.name.as_str(), c.function.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("toolu_01", "read_file", r#"{"path": "a.txt"}"#),
                ("toolu_02", "list", "{}")
            ]
        );
        let r = turn.reasoning.clone().unwrap();
        assert_eq!((r.field.as_str(), r.text.as_str()), ("thinking", "I should read it."));
        assert_eq!(
            turn.native,
            Some(json!({"messages": [
                {"type": "thinking", "thinking": "I should read it.", "signature": "EqQBCgIYAhIM"},
                {"type": "redacted_thinking", "data": "EmwKAhgB"}]}))
        );
        // Cache writes and reads are input too.
        assert_eq!(
            turn.usage,
            Some(cst_protocol::TokenUsage {
                input_tokens: 2125,
                output_tokens: 89
            })
        );
        // The thinking goes back, first, in the next request; never in Chat's fields.
        let msg = turn.to_message();
        let body = request_body(&config(), &[user("go"), msg.clone()], &[]);
        let content = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(content[0]["signature"], "EqQBCgIYAhIM");
        assert_eq!(content[1]["type"], "redacted_thinking");
        assert_eq!(content[2]["type"], "text");
        let chat = serde_json::to_value(&msg).unwrap();
        assert!(
            chat.get("reasoning").is_none() && chat.get("reasoning_content").is_none(),
            "{chat}"
        );
    }

    #[test]
    fn stop_reasons() {
        for (stop, want) in [
            ("end_turn", "stop"),
            ("max_tokens", "length"),
            ("tool_use", "tool_calls"),
            ("stop_sequence", "stop"),
            ("refusal", "stop"),
        ] {
            let (turn, _) = read(&[
                event(
                    "message_start",
                    json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
                ),
                event(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": stop}}),
                ),
                event("message_stop", json!({"type": "message_stop"})),
            ]);
            assert_eq!(turn.unwrap().finish_reason.as_deref(), Some(want), "{stop}");
        }
        // A stream cut after the stop reason is a finished answer; one cut before is not.
        let mut events = fixture();
        events.pop();
        assert!(read(&events).0.is_ok());
        events.truncate(5);
        assert!(read(&events).0.is_err());
    }

    /// Proxies that drop `event:` lines, or the `type` field, still read.
    #[test]
    fn the_type_comes_from_the_data_or_the_event_name() {
        let events: Vec<(String, String)> = fixture()
            .into_iter()
            .enumerate()
            .map(|(i, (name, data))| {
                if i % 2 == 0 {
                    ("message".to_string(), data)
                } else {
                    let mut v: Value = serde_json::from_str(&data).unwrap();
                    v.as_object_mut().unwrap().remove("type");
                    (name, v.to_string())
                }
            })
            .collect();
        let turn = read(&events).0.unwrap();
        assert_eq!(turn.text, "Let me check.");
        assert_eq!(turn.tool_calls.len(), 2);
    }

    fn error_of(events: &[(String, String)]) -> String {
        read(events).0.unwrap_err()
    }

    #[test]
    fn hostile_or_broken_streams_fail_with_a_reason() {
        let start = event("message_start", json!({"type": "message_start", "message": {}}));
        let err = error_of(&[
            start.clone(),
            event(
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        ]);
        assert_eq!(err, "the server sent an error: overloaded_error: Overloaded");

        let err = error_of(&[("message_start".into(), "{not json".into())]);
        assert!(err.contains("not JSON") && err.contains("{not json"), "{err}");

        let err = error_of(&[("message".into(), r#"{"choices":[]}"#.into())]);
        assert!(err.contains("Anthropic Messages API"), "{err}");

        let err = error_of(&[event("message_stop", json!({"type": "message_stop"}))]);
        assert!(err.contains("message_start"), "{err}");

        let delta = |index: Value, delta: Value| {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        let block = |index: u64, b: Value| {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": b}),
            )
        };
        let err = error_of(&[
            start.clone(),
            delta(json!(7), json!({"type": "text_delta", "text": "x"})),
        ]);
        assert!(err.contains("block 7, which never started"), "{err}");

        let err = error_of(&[
            start.clone(),
            block(0, json!({"type": "text", "text": ""})),
            delta(json!(0), json!({"type": "input_json_delta", "partial_json": "{"})),
        ]);
        assert!(
            err.contains("`input_json_delta` for content block 0, which is a `text` block"),
            "{err}"
        );

        let err = error_of(&[
            start.clone(),
            block(0, json!({"type": "text", "text": ""})),
            delta(json!(0), json!({"type": "text_delta", "text": 5})),
        ]);
        assert!(err.contains("no `text` string"), "{err}");

        let err = error_of(&[
            start.clone(),
            delta(json!(-1), json!({"type": "text_delta", "text": "x"})),
        ]);
        assert!(err.contains("has no `index`"), "{err}");

        let err = error_of(&[
            start.clone(),
            block(0, json!({"type": "text", "text": ""})),
            block(0, json!({"type": "text", "text": ""})),
        ]);
        assert!(err.contains("started twice"), "{err}");

        let mut many = vec![start.clone()];
        for i in 0..=MAX_CALLS as u64 {
            many.push(block(
                i,
                json!({"type": "tool_use", "id": format!("t{i}"), "name": "list", "input": {}}),
            ));
        }
        assert!(error_of(&many).contains("more than 128 tool calls"));

        let err = error_of(&[
            start.clone(),
            block(0, json!({"type": "tool_use", "id": "t", "input": {}})),
            event("message_stop", json!({"type": "message_stop"})),
        ]);
        assert!(err.contains("has no name"), "{err}");

        // Unknown events, blocks and deltas are skipped.
        let (turn, _) = read(&[
            start,
            event("future_event", json!({"type": "future_event"})),
            block(0, json!({"type": "server_tool_use", "id": "srv", "name": "web_search"})),
            delta(json!(0), json!({"type": "input_json_delta", "partial_json": "{}"})),
            block(1, json!({"type": "text", "text": "Hi"})),
            delta(json!(1), json!({"type": "citations_delta", "citation": {}})),
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]);
        let turn = turn.unwrap();
        assert_eq!((turn.text.as_str(), turn.tool_calls.len()), ("Hi", 0));
        assert_eq!(turn.usage, None);
    }

    /// A whole input in `content_block_start` (no deltas) is the call's arguments.
    #[test]
    fn input_given_at_the_start() {
        let (turn, _) = read(&[
            event("message_start", json!({"type": "message_start", "message": {}})),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "read_file", "input": {"path": "x"}}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]);
        assert_eq!(turn.unwrap().tool_calls[0].function.arguments, r#"{"path":"x"}"#);
    }
}
