//! Context management: how big each model's window is, tool results cut to a budget with head
//! and tail kept (as Codex does), and compaction — before a request would overflow the window,
//! the older history is summarised by the model into one message. The transcript keeps the full
//! history; only what the model is sent shrinks.

use crate::model::{ChatMessage, ModelConfig, ToolDef};

/// The window of a model no table entry and no setting knows (tokens): small enough for the
/// local servers people run (Ollama, llama.cpp) with their usual context sizes.
pub const DEFAULT_WINDOW: u64 = 32_000;

/// A request is compacted before it grows past this share of the window, leaving room for the
/// answer.
pub const COMPACT_AT: f64 = 0.75;

/// After compaction the kept recent history takes at most this share of the window.
const KEEP_SHARE: f64 = 0.4;

/// Bytes per token of the estimate: about four for English text and code (it over-counts
/// rather than under-counts for most tokenizers).
const BYTES_PER_TOKEN: u64 = 4;

/// The start of the message that carries a summary (the scripted test server knows it).
pub use cst_protocol::COMPACTED_SUMMARY_PREFIX as SUMMARY_PREFIX;

/// The first line of the request that asks for a summary.
pub const SUMMARY_REQUEST: &str = "Summarize this coding-agent conversation for its own continuation.";

/// Context windows of known model families, by name prefix (a provider prefix such as
/// `openai/` or `anthropic/` is ignored). Longest prefix first.
const KNOWN: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("codex", 400_000),
    ("claude", 200_000),
    ("deepseek", 128_000),
    ("gemini", 1_048_576),
    ("qwen3-coder", 262_144),
    ("qwen", 32_768),
    ("llama3.1", 128_000),
    ("llama-3.1", 128_000),
    ("mistral", 32_000),
];

/// The window of `config`'s model: the setting (`context_window` of the provider or `model`),
/// else the table, else [`DEFAULT_WINDOW`].
pub fn window_of(config: &ModelConfig) -> u64 {
    config.context_window.unwrap_or_else(|| known_window(&config.name))
}

fn known_window(name: &str) -> u64 {
    let name = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    KNOWN
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(DEFAULT_WINDOW, |(_, w)| *w)
}

/// Bytes one tool result may take in the history: a tenth of the window, at least 2 KB, at most
/// 64 KB.
pub fn result_budget(window: u64) -> usize {
    (window.saturating_mul(BYTES_PER_TOKEN) / 10).clamp(2_000, 64_000) as usize
}

/// `text` cut to `budget` bytes with its head and tail kept and a marker saying how much of the
/// middle was left out; unchanged when it fits.
pub fn cut_result(text: &str, budget: usize) -> String {
    if text.len() <= budget {
        return text.to_string();
    }
    let half = budget.saturating_sub(120) / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let cut = tail - head;
    format!(
        "{}\n…[{cut} bytes cut from the middle of this tool result to fit the context window]…\n{}",
        &text[..head],
        &text[tail..]
    )
}

/// Estimated tokens of a request with these messages and tools.
pub fn estimate(messages: &[ChatMessage], tools: &[ToolDef]) -> u64 {
    let m: usize = messages.iter().map(message_bytes).sum();
    let t: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len() + 40)
        .sum();
    (m + t) as u64 / BYTES_PER_TOKEN
}

fn message_bytes(m: &ChatMessage) -> usize {
    match m {
        ChatMessage::System { content } | ChatMessage::User { content } => content.len() + 16,
        ChatMessage::Tool { content, tool_call_id } => content.len() + tool_call_id.len() + 32,
        ChatMessage::Assistant {
            content,
            tool_calls,
            reasoning_content,
            reasoning,
            native,
        } => {
            content.as_deref().map_or(0, str::len)
                + tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.function.name.len() + c.function.arguments.len() + 48)
                    .sum::<usize>()
                + reasoning_content.as_deref().map_or(0, str::len)
                + reasoning.as_deref().map_or(0, str::len)
                + native.as_ref().map_or(0, |n| n.to_string().len())
                + 16
        }
    }
}

/// Whether a request of `messages` and `tools` should be compacted first.
pub fn needs_compaction(messages: &[ChatMessage], tools: &[ToolDef], window: u64) -> bool {
    estimate(messages, tools) as f64 > window as f64 * COMPACT_AT
}

/// Where the kept recent part of `history` starts: the earliest user or assistant message from
/// which the rest fits in [`KEEP_SHARE`] of the window (never before index 2: something is
/// summarised), always at a boundary that keeps tool calls with their results. `None` when
/// there is nothing older to summarise.
pub fn keep_from(history: &[ChatMessage], tools: &[ToolDef], window: u64) -> Option<usize> {
    let budget = (window as f64 * KEEP_SHARE) as u64;
    let base = estimate(&history[..history.len().min(1)], tools);
    let mut best = None;
    // From the end backwards: the candidate starts while the tail still fits.
    let mut tail_bytes = 0usize;
    for i in (1..history.len()).rev() {
        tail_bytes += message_bytes(&history[i]);
        let boundary = matches!(history[i], ChatMessage::User { .. } | ChatMessage::Assistant { .. });
        if base + tail_bytes as u64 / BYTES_PER_TOKEN > budget {
            break;
        }
        if boundary && i >= 2 {
            best = Some(i);
        }
    }
    // Even the last exchange does not fit: keep from the last assistant or user message, the
    // smallest valid tail (its tool results are cut again by the caller).
    best.or_else(|| {
        (2..history.len())
            .rev()
            .find(|&i| matches!(history[i], ChatMessage::User { .. } | ChatMessage::Assistant { .. }))
    })
}

/// The request that asks the model to summarise `older` (the history before the kept part,
/// without the system prompt), each message cut so the whole fits in half the window.
pub fn summary_request(older: &[ChatMessage], window: u64) -> Vec<ChatMessage> {
    let budget = (window * BYTES_PER_TOKEN / 2) as usize;
    let per = (budget / older.len().max(1)).max(200);
    let mut text = String::from(SUMMARY_REQUEST);
    text.push_str(
        " Keep what the continuation needs: the user's goals and instructions, decisions made, \
         files read or changed and what was found in them, commands run and their outcomes, and \
         what is still to do. Be concise; write it as notes, not as a reply to the user.\n\n",
    );
    for m in older {
        let (role, body) = match m {
            ChatMessage::System { content } => ("system", content.clone()),
            ChatMessage::User { content } => ("user", content.clone()),
            ChatMessage::Assistant {
                content, tool_calls, ..
            } => {
                let mut s = content.clone().unwrap_or_default();
                for c in tool_calls {
                    s.push_str(&format!("\n[called {} with {}]", c.function.name, c.function.arguments));
                }
                ("assistant", s)
            }
            ChatMessage::Tool { content, .. } => ("tool result", content.clone()),
        };
        text.push_str(&format!("## {role}\n{}\n\n", cut_result(&body, per)));
        if text.len() > budget {
            break;
        }
    }
    vec![
        ChatMessage::System {
            content: "You write summaries of coding sessions so they can continue without the full history.".into(),
        },
        ChatMessage::User { content: text },
    ]
}

/// `history` with everything between the system prompt and `keep` replaced by `summary`: put
/// into the first kept user message, or as a user message of its own before a kept assistant
/// message, so roles still alternate for every wire API.
pub fn compacted(history: &[ChatMessage], keep: usize, summary: &str) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(history.len() - keep + 2);
    if let Some(system @ ChatMessage::System { .. }) = history.first() {
        out.push(system.clone());
    }
    let note = format!("{SUMMARY_PREFIX}\n{}", summary.trim());
    match history.get(keep) {
        Some(ChatMessage::User { content }) => {
            out.push(ChatMessage::User {
                content: format!("{note}\n\n---\n\n{content}"),
            });
            out.extend(history[keep + 1..].iter().cloned());
        }
        _ => {
            out.push(ChatMessage::User { content: note });
            out.extend(history[keep..].iter().cloned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FunctionCall, ToolCall};

    fn call(id: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: id.into(),
                kind: "function".into(),
                function: FunctionCall {
                    name: "read_file".into(),
                    arguments: "{}".into(),
                },
            }],
            reasoning_content: None,
            reasoning: None,
            native: None,
        }
    }

    fn result(id: &str, n: usize) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            content: "x".repeat(n),
        }
    }

    #[test]
    fn windows_by_setting_table_and_default() {
        let mut c = ModelConfig {
            name: "anthropic/claude-sonnet-4-5".into(),
            ..ModelConfig::default()
        };
        assert_eq!(window_of(&c), 200_000);
        c.name = "qwen3-coder:30b".into();
        assert_eq!(window_of(&c), 262_144);
        c.name = "my-local-model".into();
        assert_eq!(window_of(&c), DEFAULT_WINDOW);
        c.context_window = Some(8_192);
        assert_eq!(window_of(&c), 8_192);
    }

    #[test]
    fn a_long_result_keeps_head_and_tail() {
        let text = format!("HEAD{}TAIL", "é".repeat(10_000));
        let cut = cut_result(&text, 2_000);
        assert!(cut.len() <= 2_000, "{}", cut.len());
        assert!(cut.starts_with("HEAD") && cut.ends_with("TAIL"));
        assert!(cut.contains("bytes cut from the middle"));
        assert_eq!(cut_result("short", 2_000), "short");
    }

    #[test]
    fn compaction_keeps_calls_with_their_results_and_alternation() {
        let mut h = vec![ChatMessage::System { content: "sys".into() }];
        for i in 0..20 {
            h.push(ChatMessage::User {
                content: format!("turn {i}"),
            });
            h.push(call(&format!("c{i}")));
            h.push(result(&format!("c{i}"), 2_000));
            h.push(ChatMessage::Assistant {
                content: Some(format!("answer {i}")),
                tool_calls: vec![],
                reasoning_content: None,
                reasoning: None,
                native: None,
            });
        }
        let window = 4_000;
        assert!(needs_compaction(&h, &[], window));
        let keep = keep_from(&h, &[], window).expect("something to compact");
        assert!(keep >= 2);
        assert!(
            !matches!(h[keep], ChatMessage::Tool { .. }),
            "a kept tool result lost its call"
        );
        let c = compacted(&h, keep, "the summary");
        assert!(matches!(&c[0], ChatMessage::System { .. }));
        let ChatMessage::User { content } = &c[1] else {
            panic!("the summary is a user message")
        };
        assert!(content.starts_with(SUMMARY_PREFIX) && content.contains("the summary"));
        assert!(!needs_compaction(&c, &[], window));
        // No two user messages in a row.
        for w in c.windows(2) {
            assert!(!matches!(
                (&w[0], &w[1]),
                (ChatMessage::User { .. }, ChatMessage::User { .. })
            ));
        }
    }

    #[test]
    fn the_summary_request_fits_half_the_window() {
        let older: Vec<ChatMessage> = (0..50).map(|i| result(&format!("c{i}"), 50_000)).collect();
        let req = summary_request(&older, 8_000);
        assert!(estimate(&req, &[]) <= 8_000 / 2 + 200, "{}", estimate(&req, &[]));
    }
}
