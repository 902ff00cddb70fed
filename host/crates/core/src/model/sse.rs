//! Server-sent events of a streamed Chat Completion: split into lines, fold the `data:` chunks
//! into one assistant turn.

use serde_json::Value;

use super::{AssistantTurn, FunctionCall, ToolCall};

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
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    chunks: usize,
}

impl Accumulator {
    /// Feed one line; returns `Ok(true)` at `data: [DONE]`.
    pub fn feed_line(&mut self, line: &str, on_delta: &mut (dyn FnMut(&str) + Send)) -> Result<bool, String> {
        let Some(data) = line.strip_prefix("data:") else {
            // Comments (`: keep-alive`), `event:`/`id:` fields and blank separators carry nothing.
            return Ok(false);
        };
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
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text.push_str(text);
                on_delta(text);
            }
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, call) in calls.iter().enumerate() {
                // `index` is required by the API; servers that omit it send whole calls in order.
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .map(|i| i as usize)
                    .unwrap_or(self.calls.len() + pos);
                if index > self.calls.len() + 64 {
                    return Err(format!("tool call index {index} is out of range"));
                }
                while self.calls.len() <= index {
                    self.calls.push(PartialCall::default());
                }
                let slot = &mut self.calls[index];
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    if !id.is_empty() {
                        slot.id = Some(id.to_string());
                    }
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
        Ok(AssistantTurn {
            text: self.text,
            tool_calls,
            finish_reason: self.finish_reason,
        })
    }
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
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
                done |= acc.feed_line(&line, &mut |d| seen.push_str(d)).unwrap();
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
}
