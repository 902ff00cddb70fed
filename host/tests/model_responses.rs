//! The OpenAI Responses API end to end (issue 16): in-process sessions of the real core against a
//! scripted server that streams as `/v1/responses` does and checks every request's `input` (each
//! function_call answered once, after it; reasoning items with their encrypted content).

use std::time::Duration;

use cst_core::approvals::ApprovalMode;
use cst_core::model::{ModelClient, ModelConfig, RetryPolicy, WireApi};
use cst_core::{Event, TurnEnd};
use cst_test_support::session::{close, finished, session_with, streamed, turn, until};
use cst_test_support::{call, Api, Reply, ScriptedServer};
use serde_json::{json, Value};

/// A Responses client for `server`, retrying quickly.
fn client(server: &ScriptedServer, key_env: &str, key: Option<&str>) -> ModelClient {
    let mut c = ModelClient::new(ModelConfig {
        base_url: server.url(),
        name: "gpt-test".into(),
        api_key_env: key_env.into(),
        api_key: key.map(str::to_string),
        api: WireApi::Responses,
        ..ModelConfig::default()
    })
    .expect("client");
    c.retry = RetryPolicy {
        retries: 4,
        base: Duration::from_millis(1),
    };
    c
}

/// One turn of a fresh session over the built-in tools; its events.
async fn one_turn(server: &ScriptedServer, ws: &std::path::Path, text: &str, key: Option<&str>) -> Vec<Event> {
    let model = client(server, "CST_RESPONSES_TEST_KEY", key);
    let mut h = session_with(server, ws, |c| {
        c.model = model;
        c.approval = ApprovalMode::Auto;
    });
    let events = turn(&mut h, text).await;
    close(h).await;
    events
}

fn input(body: &Value) -> Vec<Value> {
    body["input"].as_array().cloned().unwrap_or_default()
}

fn position(items: &[Value], pred: impl Fn(&Value) -> bool) -> Option<usize> {
    items.iter().position(pred)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_loop_runs_end_to_end_with_usage() {
    let server = ScriptedServer::start_api(
        Api::Responses,
        vec![
            Reply::calls(vec![call("call_r1", "read_file", json!({"path": "a.txt"}))]),
            Reply::text("It says hello."),
        ],
    );
    let ws = tempfile::tempdir().expect("ws");
    std::fs::write(ws.path().join("a.txt"), "hello from a\n").expect("write");
    let events = one_turn(&server, ws.path(), "what does a.txt say?", Some("sk-test")).await;
    let (end, steps, usage) = finished(&events);
    assert_eq!(
        end,
        TurnEnd::Done {
            answer: "It says hello.".into()
        }
    );
    assert_eq!(steps, 2);
    // Two calls of 100 in and 20 out each, as the scripted stream reports them.
    assert_eq!(
        usage,
        Some(cst_protocol::TokenUsage {
            input_tokens: 200,
            output_tokens: 40
        })
    );
    let streamed = streamed(&events);
    assert_eq!(streamed, "It says hello.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].path.ends_with("/v1/responses"), "{}", reqs[0].path);
    assert_eq!(reqs[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(reqs[0].body["instructions"], "test");
    assert_eq!(reqs[0].body["store"], false);
    let second = input(&reqs[1].body);
    let asked = position(&second, |i| i["type"] == "function_call" && i["call_id"] == "call_r1")
        .expect("the function_call goes back");
    assert_eq!(second[asked]["name"], "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(second[asked]["arguments"].as_str().unwrap()).unwrap(),
        json!({"path": "a.txt"})
    );
    let answered = position(&second, |i| {
        i["type"] == "function_call_output" && i["call_id"] == "call_r1"
    })
    .expect("the function_call_output goes back");
    assert!(answered > asked, "{second:?}");
    assert!(
        second[answered]["output"].as_str().unwrap().contains("hello from a"),
        "{}",
        second[answered]
    );
    server.finish();
}

/// A reasoning model's step as OpenAI streams it: a reasoning item (summary and encrypted
/// content), then a function call.
fn reasoning_then_call(reasoning: &Value) -> Reply {
    let fc = json!({"id": "fc_r", "type": "function_call", "status": "completed", "arguments": "{}",
                    "call_id": "call_list", "name": "list"});
    Reply::raw(
        vec![
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_r", "status": "in_progress", "output": []}}),
            json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                   "item": {"id": "rs_r", "type": "reasoning", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 2, "item_id": "rs_r",
                   "output_index": 0, "summary_index": 0, "delta": "List the files first."}),
            json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": reasoning}),
            json!({"type": "response.output_item.added", "sequence_number": 4, "output_index": 1,
                   "item": {"id": "fc_r", "type": "function_call", "status": "in_progress", "arguments": "",
                            "call_id": "call_list", "name": "list"}}),
            json!({"type": "response.function_call_arguments.delta", "sequence_number": 5, "item_id": "fc_r",
                   "output_index": 1, "delta": "{}"}),
            json!({"type": "response.output_item.done", "sequence_number": 6, "output_index": 1, "item": fc}),
            json!({"type": "response.completed", "sequence_number": 7, "response": {"id": "resp_r", "status": "completed",
                   "output": [reasoning, fc], "usage": {"input_tokens": 50, "output_tokens": 300,
                   "output_tokens_details": {"reasoning_tokens": 290}, "total_tokens": 350}}}),
        ],
        &["call_list"],
    )
}

/// Stateless requests (`store: false`) must carry the reasoning items back, encrypted content
/// and all, right before the call they led to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_items_go_back_verbatim_before_their_call() {
    let reasoning = json!({"id": "rs_r", "type": "reasoning", "status": "completed",
        "summary": [{"type": "summary_text", "text": "List the files first."}],
        "encrypted_content": "gAAAAABo-opaque-blob=="});
    let server = ScriptedServer::start_api(
        Api::Responses,
        vec![reasoning_then_call(&reasoning), Reply::text("Nothing here.")],
    );
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "what is here?", None).await;
    assert_eq!(
        finished(&events).0,
        TurnEnd::Done {
            answer: "Nothing here.".into()
        }
    );
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "List the files first.");
    let reqs = server.requests();
    assert_eq!(reqs[0].body["include"], json!(["reasoning.encrypted_content"]));
    let second = input(&reqs[1].body);
    let at = position(&second, |i| i["type"] == "reasoning").expect("the reasoning item goes back");
    assert_eq!(second[at], reasoning, "verbatim");
    assert_eq!(second[at + 1]["type"], "function_call");
    assert_eq!(second[at + 1]["call_id"], "call_list");
    assert_eq!(second[at + 2]["type"], "function_call_output");
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_at_the_output_limit_is_truncated() {
    let server = ScriptedServer::start_api(
        Api::Responses,
        vec![Reply::raw(
            vec![
                json!({"type": "response.created", "response": {"id": "resp_i", "status": "in_progress"}}),
                json!({"type": "response.output_item.added", "output_index": 0,
                       "item": {"id": "msg_i", "type": "message", "role": "assistant", "content": []}}),
                json!({"type": "response.output_text.delta", "item_id": "msg_i", "output_index": 0,
                       "content_index": 0, "delta": "The first half of"}),
                json!({"type": "response.incomplete", "response": {"id": "resp_i", "status": "incomplete",
                       "incomplete_details": {"reason": "max_output_tokens"},
                       "usage": {"input_tokens": 10, "output_tokens": 4096}}}),
            ],
            &[],
        )],
    );
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "write a lot", None).await;
    let (end, _, usage) = finished(&events);
    assert_eq!(
        end,
        TurnEnd::Truncated {
            answer: "The first half of".into()
        }
    );
    assert_eq!(usage.map(|u| u.output_tokens), Some(4096));
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_names_the_key_env_and_is_not_retried() {
    let server = ScriptedServer::start_api(Api::Responses, vec![Reply::status(401, "Incorrect API key provided")]);
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "hi", Some("sk-wrong")).await;
    let TurnEnd::Failed { message } = finished(&events).0 else {
        panic!("{events:?}")
    };
    assert!(message.contains("401"), "{message}");
    assert!(message.contains("CST_RESPONSES_TEST_KEY"), "{message}");
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert_eq!(server.request_count(), 1);
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_then_answered() {
    let server = ScriptedServer::start_api(
        Api::Responses,
        vec![Reply::status(429, "Rate limit reached"), Reply::text("ok")],
    );
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "hi", None).await;
    assert_eq!(finished(&events).0, TurnEnd::Done { answer: "ok".into() });
    assert_eq!(server.request_count(), 2);
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_fail_after_the_retries() {
    let server = ScriptedServer::start_api(Api::Responses, vec![Reply::status(500, "upstream exploded"); 5]);
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "hi", None).await;
    let TurnEnd::Failed { message } = finished(&events).0 else {
        panic!("{events:?}")
    };
    assert!(
        message.contains("500") && message.contains("upstream exploded"),
        "{message}"
    );
    // The first attempt and four retries.
    assert_eq!(server.request_count(), 5);
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_in_the_stream_fails_the_turn_with_the_servers_message() {
    let server = ScriptedServer::start_api(
        Api::Responses,
        vec![Reply::raw(
            vec![
                json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_e", "status": "in_progress"}}),
                json!({"type": "error", "sequence_number": 1, "code": "server_error",
                       "message": "The model is overloaded right now", "param": null}),
            ],
            &[],
        )],
    );
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "hi", None).await;
    let TurnEnd::Failed { message } = finished(&events).0 else {
        panic!("{events:?}")
    };
    assert!(message.contains("The model is overloaded right now"), "{message}");
    assert_eq!(server.request_count(), 1);
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_stream_fails_the_turn() {
    let server = ScriptedServer::start_api(Api::Responses, vec![Reply::malformed()]);
    let ws = tempfile::tempdir().expect("ws");
    let events = one_turn(&server, ws.path(), "hi", None).await;
    let TurnEnd::Failed { message } = finished(&events).0 else {
        panic!("{events:?}")
    };
    assert!(
        message.contains("malformed response stream") && message.contains("not JSON"),
        "{message}"
    );
    server.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_hanging_stream_then_another_turn() {
    let server = ScriptedServer::start_api(Api::Responses, vec![Reply::hang(), Reply::text("second answer")]);
    let ws = tempfile::tempdir().expect("ws");
    let model = client(&server, "NONE", None);
    let mut h = session_with(&server, ws.path(), |c| c.model = model);
    h.ops
        .send(cst_core::Op::UserTurn { text: "one".into() })
        .expect("running");
    until(&mut h, |e| matches!(e, Event::MessageDelta { .. })).await;
    h.ops.send(cst_core::Op::Cancel).expect("running");
    let events = until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert_eq!(finished(&events).0, TurnEnd::Cancelled);
    let events = turn(&mut h, "two").await;
    assert_eq!(
        finished(&events).0,
        TurnEnd::Done {
            answer: "second answer".into()
        }
    );
    close(h).await;
    server.finish();
}

/// The first request of a session with the built-in tools stays small (it is sent on every
/// step, so its size is paid on each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_is_under_8_kb() {
    let server = ScriptedServer::start_api(Api::Responses, vec![Reply::text("hi")]);
    let ws = tempfile::tempdir().expect("ws");
    let model = client(&server, "NONE", None);
    let mut h = session_with(&server, ws.path(), |c| {
        c.model = model;
        // The real system prompt: base instructions, workspace context, sub-agent roles.
        let context = cst_core::prompt::context(&c.workspace, &[]);
        c.system_prompt = cst_core::prompt::system_prompt(&context, &c.roles);
    });
    turn(&mut h, "hello").await;
    close(h).await;
    let body = &server.requests()[0].body;
    assert!(body["instructions"]
        .as_str()
        .unwrap_or_default()
        .starts_with("You are cst-agent"));
    let size = serde_json::to_vec(body).expect("json").len();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    println!(
        "first Responses request: {size} bytes with {} tools {tools:?}",
        tools.len()
    );
    assert!(tools.len() >= 7, "{tools:?}");
    assert!(size < 8 * 1024, "{size} bytes");
    server.finish();
}
