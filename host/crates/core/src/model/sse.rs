//! Server-sent events: split a byte stream into lines and the lines into events (every wire
//! API), and fold a Chat Completion's `data:` chunks into one assistant turn. Our own small
//! parser rather than a client crate: a reconnecting SSE client would resend a completion, and
//! the end of a stream without its blank line must still count (servers that just close).

use serde_json::Value;

use super::{AssistantTurn, Delta, FunctionCall, ToolCall};

/// Splits a byte stream into lines (LF or CRLF), keeping a partial line between chunks.
#[derive(Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
}

impl LineSplitter {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            out.push(String::from_utf8_lossy(&line).into_owned());
        }
        out
    }

    /// The last line when the stream ended without a newline.
    pub fn rest(&mut self) -> Option<String> {
        if self.buf.is_empty() {
            None
        } else {
            let line = String::from_utf8_lossy(&self.buf).trim_end().to_string();
            self.buf.clear();
            Some(line)
        }
    }
}

/// Assembles SSE lines into events: `event:` names it, `data:` lines are joined with `\n`, a
/// blank line dispatches; comments and `id:`/`retry:` are ignored.
#[derive(Default)]
pub struct EventAssembler {
    event: String,
    data: Vec<String>,
}

/// Most bytes of one event's data: a server cannot grow one event without bound.
const MAX_EVENT_BYTES: usize = 16 << 20;

impl EventAssembler {
    /// Feed one line; the event it completes, as (name, data). The name is `message` when the
    /// server gave none, as the SSE standard says.
    pub fn push_line(&mut self, line: &str) -> Result<Option<(String, String)>, String> {
        if line.is_empty() {
            return Ok(self.take());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                let size: usize = self.data.iter().map(|d| d.len() + 1).sum();
                if size + value.len() > MAX_EVENT_BYTES {
                    return Err(format!("an event is larger than {} MiB", MAX_EVENT_BYTES >> 20));
                }
                self.data.push(value.to_string());
            }
            _ => {}
        }
        Ok(None)
    }

    /// The event still open when the stream ended without its blank line.
    pub fn take(&mut self) -> Option<(String, String)> {
        if self.data.is_empty() {
            self.event.clear();
            return None;
        }
        let name = match std::mem::take(&mut self.event) {
            e if e.is_empty() => "message".to_string(),
            e => e,
        };
        Some((name, std::mem::take(&mut self.data).join("\n")))
    }
}

/// Most tool calls one answer may hold.
const MAX_CALLS: usize = 128;

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Folds `chat.completion.chunk` objects into an [`AssistantTurn`].
#[derive(Default)]
pub struct Accumulator {
    text: String,
    /// Thinking text (`reasoning_content` as DeepSeek sends it, `reasoning` as vLLM and
    /// OpenRouter do) and the field it came in, to send it back the same way.
    reasoning: String,
    reasoning_field: Option<&'static str>,
    usage: Option<cst_protocol::TokenUsage>,
    calls: Vec<PartialCall>,
    /// The call each stream `index` currently fills. Older Ollama and litellm stream parallel
    /// calls all with index 0, each with its own `id`: a new id at a known index starts a call.
    slot_of: std::collections::HashMap<usize, usize>,
    finish_reason: Option<String>,
    chunks: usize,
}

impl Accumulator {
    /// Feed one line; returns `Ok(true)` at `data: [DONE]` (the unit tests feed lines).
    #[cfg(test)]
    pub fn feed_line(&mut self, line: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<bool, String> {
        match line.strip_prefix("data:") {
            Some(data) => self.feed_data(data, on_delta),
            // Comments (`: keep-alive`), `event:`/`id:` fields and blank separators carry nothing.
            None => Ok(false),
        }
    }

    /// Feed one event's data; returns `Ok(true)` at `[DONE]`.
    pub fn feed_data(&mut self, data: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<bool, String> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| format!("a data line is not JSON ({e}): {}", cut(data)))?;
        if let Some(err) = chunk.get("error") {
            let msg = err.get("message").and_then(Value::as_str).map(str::to_string);
            return Err(format!(
                "the server sent an error: {}",
                msg.unwrap_or_else(|| err.to_string())
            ));
        }
        // With `stream_options.include_usage` the counts come in a chunk of their own (empty
        // `choices`); some servers put them on the last chunk instead.
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(cst_protocol::TokenUsage {
                input_tokens: n("prompt_tokens"),
                output_tokens: n("completion_tokens"),
            });
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Err(format!("a chunk has no `choices` array: {}", cut(data)));
        };
        self.chunks += 1;
        // Only the first choice is used (we never ask for n > 1); a usage-only chunk has none.
        let Some(choice) = choices.first() else {
            return Ok(false);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(false);
        };
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                self.reasoning.push_str(text);
                self.reasoning_field.get_or_insert(field);
                on_delta(Delta::Reasoning(text));
            }
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text.push_str(text);
                on_delta(Delta::Text(text));
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, call) in calls.iter().enumerate() {
                // `index` is required by the API; servers that omit it send whole calls in order.
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(self.calls.len() + pos, |i| usize::try_from(i).unwrap_or(usize::MAX));
                let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
                let known = self.slot_of.get(&index).copied();
                let slot = match known {
                    Some(at) if id.is_none_or(|id| self.calls[at].id.as_deref().is_none_or(|old| old == id)) => at,
                    _ => {
                        if self.calls.len() >= MAX_CALLS {
                            return Err(format!("more than {MAX_CALLS} tool calls in one answer"));
                        }
                        self.calls.push(PartialCall::default());
                        self.slot_of.insert(index, self.calls.len() - 1);
                        self.calls.len() - 1
                    }
                };
                let slot = &mut self.calls[slot];
                if let Some(id) = id {
                    slot.id = Some(id.to_string());
                }
                if let Some(f) = call.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        slot.name.push_str(n);
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.arguments.push_str(a);
                    }
                }
            }
        }
        Ok(false)
    }

    pub fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }

    pub fn finish(self) -> Result<AssistantTurn, String> {
        if self.chunks == 0 {
            return Err("the stream held no completion chunk".into());
        }
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, c) in self.calls.into_iter().enumerate() {
            if c.name.is_empty() {
                return Err(format!("tool call #{i} has no function name"));
            }
            tool_calls.push(ToolCall {
                // Some local servers leave the id out; the conversation still needs one.
                id: c.id.unwrap_or_else(|| format!("call_{i}")),
                kind: "function".into(),
                function: FunctionCall {
                    name: c.name,
                    arguments: c.arguments,
                },
            });
        }
        let reasoning = self.reasoning_field.map(|field| super::Reasoning {
            field: field.to_string(),
            text: self.reasoning,
        });
        Ok(AssistantTurn {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason,
            reasoning,
            usage: self.usage,
            native: None,
        })
    }
}

fn cut(s: &str) -> String {
    super::cut_chars(s, 200)
}

impl super::StreamReader for Accumulator {
    fn feed(&mut self, _event: &str, data: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<bool, String> {
        // Several JSON chunks in one event (servers that omit the blank lines) are fed one by one.
        for line in data.split('\n') {
            if self.feed_data(line, on_delta)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.saw_finish()
    }

    fn finish(self: Box<Self>) -> Result<AssistantTurn, String> {
        Accumulator::finish(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_text_and_split_tool_calls() {
        let mut lines = LineSplitter::default();
        let mut acc = Accumulator::default();
        let mut seen = String::new();
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n",
            ": keep-alive\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n"
        );
        let mut done = false;
        // Feed in awkward pieces to exercise the partial-line buffer.
        for piece in stream.as_bytes().chunks(7) {
            for line in lines.push(piece) {
                done |= acc
                    .feed_line(&line, &mut |d| {
                        if let Delta::Text(t) = d {
                            seen.push_str(t)
                        }
                    })
                    .unwrap();
            }
        }
        assert!(done);
        let turn = acc.finish().unwrap();
        assert_eq!(turn.text, "Hello");
        assert_eq!(seen, "Hello");
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].id, "c1");
        assert_eq!(turn.tool_calls[0].function.arguments, "{\"path\":1}");
    }

    fn fold(stream: &str) -> AssistantTurn {
        let mut acc = Accumulator::default();
        for line in LineSplitter::default().push(stream.as_bytes()) {
            acc.feed_line(&line, &mut |_| {}).unwrap();
        }
        acc.finish().unwrap()
    }

    /// Issue 14 item 3: older Ollama and litellm stream parallel calls all at index 0, each with
    /// its own id: two calls, not one `read_fileread_file`.
    #[test]
    fn parallel_calls_at_the_same_index_with_new_ids_are_two_calls() {
        let turn = fold(concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        ));
        let calls: Vec<(&str, &str, &str)> = turn
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.function.name.as_str(), c.function.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_a", "read_file", r#"{"path":"a"}"#),
                ("call_b", "read_file", r#"{"path":"b"}"#)
            ]
        );
    }

    /// The id repeated on every fragment (some servers do) is still one call.
    #[test]
    fn an_id_repeated_on_each_fragment_is_one_call() {
        let turn = fold(concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"list\",\"arguments\":\"{\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        ));
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].function.arguments, "{}");
    }

    /// Issue 14 item 2: thinking text is kept with the field it came in.
    #[test]
    fn reasoning_is_kept_with_its_field() {
        for field in ["reasoning_content", "reasoning"] {
            let turn = fold(&format!(
                "data: {{\"choices\":[{{\"delta\":{{\"{field}\":\"Let me \"}}}}]}}\n\ndata: {{\"choices\":[{{\"delta\":{{\"{field}\":\"think.\"}}}}]}}\n\ndata: {{\"choices\":[{{\"delta\":{{\"content\":\"Hi\"}},\"finish_reason\":\"stop\"}}]}}\n\n"
            ));
            let r = turn.reasoning.expect("reasoning kept");
            assert_eq!((r.field.as_str(), r.text.as_str()), (field, "Let me think."));
            assert_eq!(turn.text, "Hi");
        }
    }

    /// Issue 14 item 4: the usage chunk (empty `choices`) is read.
    #[test]
    fn usage_is_read_from_its_own_chunk() {
        let turn = fold(concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":34,\"total_tokens\":1234}}\n\n",
        ));
        assert_eq!(
            turn.usage,
            Some(cst_protocol::TokenUsage {
                input_tokens: 1200,
                output_tokens: 34
            })
        );
    }

    #[test]
    fn rejects_garbage() {
        let mut acc = Accumulator::default();
        let err = acc.feed_line("data: {not json", &mut |_| {}).unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
        let err = acc
            .feed_line("data: {\"error\":{\"message\":\"boom\"}}", &mut |_| {})
            .unwrap_err();
        assert!(err.contains("boom"), "{err}");
    }

    fn events_of(text: &str) -> Vec<(String, String)> {
        let mut lines = LineSplitter::default();
        let mut asm = EventAssembler::default();
        let mut out = Vec::new();
        for line in lines.push(text.as_bytes()) {
            out.extend(asm.push_line(&line).unwrap());
        }
        if let Some(line) = lines.rest() {
            asm.push_line(&line).unwrap();
        }
        out.extend(asm.take());
        out
    }

    /// The SSE rules the three wire APIs rely on: names, joined data lines, comments, CRLF, and
    /// a last event that the server closed without its blank line.
    #[test]
    fn sse_lines_become_events() {
        let evs = events_of(
            ": keep-alive\r\nevent: response.created\r\ndata: {\"a\":1}\r\n\r\ndata: one\ndata: two\nid: 7\n\nevent: message_stop\ndata:{}",
        );
        assert_eq!(
            evs,
            vec![
                ("response.created".to_string(), "{\"a\":1}".to_string()),
                ("message".to_string(), "one\ntwo".to_string()),
                ("message_stop".to_string(), "{}".to_string()),
            ]
        );
        // A name without data dispatches nothing, and does not stick to the next event.
        assert_eq!(
            events_of("event: ping\n\ndata: x\n\n"),
            vec![("message".to_string(), "x".to_string())]
        );
    }

    #[test]
    fn an_event_cannot_grow_without_bound() {
        let mut asm = EventAssembler::default();
        let line = format!("data: {}", "x".repeat(1 << 20));
        let mut failed = false;
        for _ in 0..20 {
            if asm.push_line(&line).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "20 MiB in one event was accepted");
    }
}
