//! The model servers people already use, with streams in their own shapes (issue 14 items 1, 2,
//! 3, 5): `OPENAI_BASE_URL`, DeepSeek's `reasoning_content` (and vLLM/OpenRouter's `reasoning`)
//! sent back within a tool loop, parallel calls streamed at one index, a Responses-only model.

mod exec_support;

use cst_test_support::{Reply, ScriptedServer};
use exec_support::*;
use serde_json::{json, Value};

/// One `chat.completion.chunk` as DeepSeek streams it (`content: null` beside thinking).
fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "0f6c", "object": "chat.completion.chunk", "created": 1764547200,
           "model": "deepseek-reasoner", "system_fingerprint": "fp_ds",
           "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
}

/// A thinking model's tool step: thinking in `field`, then one `list` call.
fn thinking_then_call(field: &str) -> Reply {
    Reply::raw(
        vec![
            chunk(
                json!({"role": "assistant", "content": null, field: "The user wants "}),
                None,
            ),
            chunk(json!({"content": null, field: "the files."}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_00_ds", "type": "function",
                        "function": {"name": "list", "arguments": "{}"}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
        ],
        &["call_00_ds"],
    )
}

fn assistant_messages(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").cloned().collect())
        .unwrap_or_default()
}

#[test]
fn thinking_is_sent_back_within_the_tool_loop_and_shown() {
    for field in ["reasoning_content", "reasoning"] {
        let server = ScriptedServer::start(vec![thinking_then_call(field), Reply::text("Two files.")]);
        let f = Fixture::new(&server);
        let out = f.run(&["exec", "--approval", "full", "what is here?"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{field}: {stderr}");
        assert_eq!(text(&out.stdout), "Two files.\n");
        assert!(
            stderr.contains("thinking…"),
            "{field}: text mode says the model thinks: {stderr}"
        );
        let reqs = server.requests();
        let sent = assistant_messages(&reqs[1].body);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0][field], "The user wants the files.", "{field}: {}", sent[0]);
        assert_eq!(sent[0]["tool_calls"][0]["id"], "call_00_ds");
        server.finish();
    }
}

/// Older Ollama and litellm stream two parallel calls at index 0 with different ids: both run.
#[test]
fn parallel_calls_streamed_at_one_index_both_run() {
    let ollama = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1764547200,
               "model": "qwen3:8b", "system_fingerprint": "fp_ollama",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let server = ScriptedServer::start(vec![
        Reply::raw(
            vec![
                ollama(
                    json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_a", "index": 0,
                        "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}]}),
                    None,
                ),
                ollama(
                    json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_b", "index": 0,
                        "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b.txt\"}"}}]}),
                    None,
                ),
                ollama(json!({"role": "assistant", "content": ""}), Some("tool_calls")),
            ],
            &["call_a", "call_b"],
        ),
        Reply::text("Read both."),
    ]);
    let f = Fixture::new(&server);
    std::fs::write(f.ws().join("a.txt"), "alpha").unwrap();
    std::fs::write(f.ws().join("b.txt"), "beta").unwrap();
    let out = f.run(&["exec", "read a and b"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = server.requests();
    assert!(reqs[1].tool_result("call_a").is_some_and(|t| t.contains("alpha")));
    assert!(reqs[1].tool_result("call_b").is_some_and(|t| t.contains("beta")));
    server.finish();
}

/// `OPENAI_BASE_URL` is where the request (and the key) goes when nothing of ours names a URL.
#[test]
fn openai_base_url_is_honoured() {
    let server = ScriptedServer::start(vec![Reply::text("Hello from the proxy.")]);
    let f = Fixture::new(&server);
    std::fs::write(
        f.config_dir().join("settings.json"),
        json!({"model": {"name": "gpt-test"}}).to_string(),
    )
    .unwrap();
    let out = f
        .cmd(&["exec", "hi"])
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-proxy-key-123456")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello from the proxy.\n");
    assert_eq!(
        server.requests()[0].authorization.as_deref(),
        Some("Bearer sk-proxy-key-123456")
    );
    server.finish();
}

/// OpenAI's answer to a Responses-only model on `/chat/completions`: the error names the cause.
#[test]
fn a_responses_only_model_is_named_as_the_cause() {
    let server = ScriptedServer::start(vec![Reply::status(
        404,
        "This model is only supported in v1/responses and not in v1/chat/completions.",
    )]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("only speaks the Responses API") && stderr.contains("test-model"),
        "{stderr}"
    );
    assert_eq!(server.request_count(), 1, "a 404 is not retried");
    server.finish();
}

/// Issue 14 item 4: usage is asked for and reported (stream, transcript, stderr); an answer cut
/// at the output limit is a warning and a status of its own, not a silent success.
#[test]
fn usage_is_reported_and_a_cut_answer_is_not_a_success() {
    let openai = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1764547200,
               "model": "gpt-4.1-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let usage = |input: u64, output: u64| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1764547200,
               "model": "gpt-4.1-mini", "choices": [],
               "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}})
    };
    let server = ScriptedServer::start(vec![
        Reply::raw(
            vec![
                openai(
                    json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "list", "arguments": "{}"}}]}),
                    None,
                ),
                openai(json!({}), Some("tool_calls")),
                usage(1000, 20),
            ],
            &["call_1"],
        ),
        Reply::raw(
            vec![
                openai(json!({"role": "assistant", "content": "The files are a, b and"}), None),
                openai(json!({}), Some("length")),
                usage(1100, 4096),
            ],
            &[],
        ),
    ]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "--json", "list the files"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(server.requests()[0].body["stream_options"]["include_usage"] == json!(true));
    assert!(stderr.contains("tokens: 2100 in · 4116 out"), "{stderr}");
    let stdout = text(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(last["type"], "turn.finished");
    assert_eq!(last["status"], "length");
    assert_eq!(last["answer"], "The files are a, b and");
    assert_eq!(last["usage"], json!({"input_tokens": 2100, "output_tokens": 4116}));
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("\"type\":\"warning\"") && l.contains("output limit")),
        "{stdout}"
    );
    let end = f
        .transcript()
        .into_iter()
        .find(|r| r["type"] == "turn_end")
        .expect("turn_end record");
    assert_eq!(end["reason"], "length");
    assert_eq!(end["usage"]["output_tokens"], 4116);
    server.finish();
}
