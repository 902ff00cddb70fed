//! The Anthropic Messages API end to end (issue 16): a session of the real core against a
//! scripted server speaking that API — its headers, prompt caching, thinking blocks sent back
//! within a tool loop, usage, a cut answer, HTTP errors and retries, an error event mid-stream.

use std::time::Duration;

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::{Event, Op, SessionHandle, TurnEnd};
use cst_agent::model::{ModelClient, ModelConfig, RetryPolicy, WireApi};
use cst_agent::protocol::TokenUsage;
use cst_test_support::session::{finished, next, session_with, streamed, turn};
use cst_test_support::{call, Api, Recorded, Reply, ScriptedServer};
use serde_json::{json, Value};

const KEY: &str = "sk-ant-test-key";

fn client(server: &ScriptedServer) -> ModelClient {
    let mut c = ModelClient::new(ModelConfig {
        base_url: server.url(),
        name: "claude-sonnet-4-5".into(),
        api_key_env: "ANTHROPIC_API_KEY".into(),
        api_key: Some(KEY.into()),
        api: WireApi::Messages,
        ..ModelConfig::default()
    })
    .expect("model client");
    c.retry = RetryPolicy {
        retries: 4,
        base: Duration::from_millis(5),
    };
    c
}

fn session(server: &ScriptedServer, ws: &std::path::Path) -> SessionHandle {
    session_with(server, ws, |c| {
        c.model = client(server);
        c.approval = ApprovalMode::Auto;
    })
}

fn header<'a>(r: &'a Recorded, name: &str) -> Option<&'a str> {
    r.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// One event of a raw Messages stream.
fn start(usage: Value) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null, "usage": usage}})
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
           "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_loop_runs_end_to_end_with_anthropic_headers_and_caching() {
    let server = ScriptedServer::start_api(
        Api::Messages,
        vec![
            Reply::text_and_calls(
                "Reading it.",
                vec![call("toolu_01", "read_file", json!({"path": "a.txt"}))],
            ),
            Reply::text("It says hello."),
            Reply::text("Bye."),
        ],
    );
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let mut h = session(&server, ws.path());

    let events = turn(&mut h, "what does a.txt say?").await;
    let (end, steps, usage) = finished(&events);
    assert_eq!(
        end,
        TurnEnd::Done {
            answer: "It says hello.".into()
        }
    );
    assert_eq!(steps, 2);
    // Two calls of the scripted server's 100 input and 20 output tokens.
    assert_eq!(
        usage,
        Some(TokenUsage {
            input_tokens: 200,
            output_tokens: 40
        })
    );
    let streamed = streamed(&events);
    assert_eq!(streamed, "Reading it.It says hello.");
    // A second turn: the history still alternates (the server checks every request).
    let (end, ..) = finished(&turn(&mut h, "thanks").await);
    assert_eq!(end, TurnEnd::Done { answer: "Bye.".into() });

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert!(r.path.ends_with("/v1/messages"), "{}", r.path);
        assert_eq!(header(r, "x-api-key"), Some(KEY));
        assert_eq!(header(r, "anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.authorization, None, "no bearer token on the Messages API");
    }
    let first = &reqs[0].body;
    assert_eq!(first["model"], "claude-sonnet-4-5");
    assert_eq!(first["stream"], true);
    assert_eq!(first["max_tokens"], 8192);
    // Prompt caching: the system prompt and the last tool are breakpoints, nothing else.
    assert_eq!(first["system"][0]["text"], "test");
    assert_eq!(first["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    let tools = first["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for builtin in [
        "read_file",
        "write_file",
        "edit_file",
        "list",
        "grep",
        "run_shell",
        "ask_user",
    ] {
        assert!(names.contains(&builtin), "{builtin} offered: {names:?}");
    }
    let cached: Vec<usize> = (0..tools.len())
        .filter(|i| tools[*i].get("cache_control").is_some())
        .collect();
    assert_eq!(cached, [tools.len() - 1]);
    assert_eq!(tools.last().unwrap()["cache_control"], json!({"type": "ephemeral"}));
    assert!(tools.iter().all(|t| t["input_schema"]["type"] == "object"), "{tools:?}");
    // The tool loop in Anthropic's shape.
    let second = reqs[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.txt"}}]})
    );
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01");
    assert!(result["content"].as_str().unwrap().contains("hello"), "{result}");
    let third = reqs[2].body["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = third.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);

    h.ops.send(Op::Shutdown).unwrap();
    while !matches!(next(&mut h).await, Event::SessionClosed) {}
    server.finish();
}

/// The whole first request, the seven built-in tools and `task` included, stays small: it is
/// sent on every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_is_under_8_kb() {
    let server = ScriptedServer::start_api(Api::Messages, vec![Reply::text("hi")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path());
    finished(&turn(&mut h, "hello").await);
    let body = &server.requests()[0].body;
    let size = serde_json::to_vec(body).unwrap().len();
    println!(
        "first Messages request: {size} bytes with {} tools",
        body["tools"].as_array().map_or(0, Vec::len)
    );
    assert!(size < 8 * 1024, "{size} bytes");
    drop(h);
    server.finish();
}

/// Thinking blocks, signatures and all, go back first in the next request of the tool loop;
/// cache reads and writes count as input tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_is_sent_back_verbatim_within_the_tool_loop() {
    let thinking = json!({"type": "thinking", "thinking": "The user wants the files.",
                          "signature": "EuYBCkQYAiJAgCs1le6/Pol5Z4/JMomVOouGrWdhYNsH3ukzUECbB6iWrSQtsQuRHJID6lWV"});
    let server = ScriptedServer::start_api(
        Api::Messages,
        vec![
            Reply::raw(
                vec![
                    start(json!({"input_tokens": 5, "cache_creation_input_tokens": 1000,
                                 "cache_read_input_tokens": 3000, "output_tokens": 1})),
                    block_start(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
                    delta(0, json!({"type": "thinking_delta", "thinking": "The user wants "})),
                    json!({"type": "ping"}),
                    delta(0, json!({"type": "thinking_delta", "thinking": "the files."})),
                    delta(
                        0,
                        json!({"type": "signature_delta", "signature": thinking["signature"]}),
                    ),
                    stop(0),
                    block_start(
                        1,
                        json!({"type": "tool_use", "id": "toolu_t", "name": "list", "input": {}}),
                    ),
                    delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
                    stop(1),
                    message_delta("tool_use", 50),
                    message_stop(),
                ],
                &["toolu_t"],
            ),
            Reply::text("Nothing here."),
        ],
    );
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path());
    let events = turn(&mut h, "what is here?").await;
    let (end, _, usage) = finished(&events);
    assert_eq!(
        end,
        TurnEnd::Done {
            answer: "Nothing here.".into()
        }
    );
    assert_eq!(
        usage,
        Some(TokenUsage {
            input_tokens: 5 + 1000 + 3000 + 100,
            output_tokens: 50 + 20
        })
    );
    let shown: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, "The user wants the files.");
    let reqs = server.requests();
    let assistant = &reqs[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"][0], thinking, "{assistant}");
    // An empty input is `{}`.
    assert_eq!(
        assistant["content"][1],
        json!({"type": "tool_use", "id": "toolu_t", "name": "list", "input": {}})
    );
    drop(h);
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_max_tokens_stop_is_a_truncated_turn() {
    let server = ScriptedServer::start_api(
        Api::Messages,
        vec![Reply::raw(
            vec![
                start(json!({"input_tokens": 10, "output_tokens": 1})),
                block_start(0, json!({"type": "text", "text": ""})),
                delta(0, json!({"type": "text_delta", "text": "Half an ans"})),
                stop(0),
                message_delta("max_tokens", 8192),
                message_stop(),
            ],
            &[],
        )],
    );
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path());
    let (end, _, usage) = finished(&turn(&mut h, "write a lot").await);
    assert_eq!(
        end,
        TurnEnd::Truncated {
            answer: "Half an ans".into()
        }
    );
    assert_eq!(
        usage,
        Some(TokenUsage {
            input_tokens: 10,
            output_tokens: 8192
        })
    );
    drop(h);
    server.finish();
}

async fn failed_turn(script: Vec<Reply>) -> (String, usize) {
    let server = ScriptedServer::start_api(Api::Messages, script);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path());
    let (end, ..) = finished(&turn(&mut h, "hello").await);
    let TurnEnd::Failed { message } = end else {
        panic!("the turn did not fail: {end:?}");
    };
    drop(h);
    let n = server.request_count();
    server.finish();
    (message, n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_names_the_key_and_is_not_retried() {
    let (message, requests) = failed_turn(vec![Reply::status(401, "invalid x-api-key")]).await;
    assert!(
        message.contains("401") && message.contains("ANTHROPIC_API_KEY"),
        "{message}"
    );
    assert!(message.contains("invalid x-api-key"), "{message}");
    assert_eq!(requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overloaded_529_is_retried() {
    let server = ScriptedServer::start_api(
        Api::Messages,
        vec![Reply::status(529, "Overloaded"), Reply::text("fine")],
    );
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path());
    let (end, ..) = finished(&turn(&mut h, "hello").await);
    assert_eq!(end, TurnEnd::Done { answer: "fine".into() });
    assert_eq!(server.request_count(), 2);
    drop(h);
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_500s_fail_the_turn() {
    let (message, requests) = failed_turn((0..5).map(|_| Reply::status(500, "internal")).collect()).await;
    assert!(
        message.contains("HTTP 500") && message.contains("internal"),
        "{message}"
    );
    assert_eq!(requests, 5, "the first attempt and four retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_fails_the_turn_with_its_message() {
    let (message, requests) = failed_turn(vec![Reply::raw(
        vec![
            start(json!({"input_tokens": 10, "output_tokens": 1})),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ],
        &[],
    )])
    .await;
    assert!(message.contains("overloaded_error: Overloaded"), "{message}");
    assert_eq!(requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_stream_fails_the_turn() {
    let (message, _) = failed_turn(vec![Reply::malformed()]).await;
    assert!(
        message.contains("malformed response stream") && message.contains("not JSON"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_hanging_stream_then_another_turn() {
    let server = ScriptedServer::start_api(Api::Messages, vec![Reply::hang(), Reply::text("second answer")]);
    let ws = tempfile::tempdir().unwrap();
    let mut h = session(&server, ws.path());
    h.ops.send(Op::UserTurn { text: "one".into() }).unwrap();
    while !matches!(next(&mut h).await, Event::MessageDelta { .. }) {}
    h.ops.send(Op::Cancel).unwrap();
    loop {
        if let Event::TurnFinished { end, .. } = next(&mut h).await {
            assert_eq!(end, TurnEnd::Cancelled);
            break;
        }
    }
    // Two user messages in a row in the history: sent as one.
    let (end, ..) = finished(&turn(&mut h, "two").await);
    assert_eq!(
        end,
        TurnEnd::Done {
            answer: "second answer".into()
        }
    );
    let messages = server.requests()[1].body["messages"].clone();
    assert_eq!(
        messages,
        json!([{"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}])
    );
    drop(h);
    server.finish();
}
