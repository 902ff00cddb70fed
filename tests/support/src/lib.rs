//! Test helpers shared by the host tests.
//!
//! [`ScriptedServer`] is a real HTTP server on loopback speaking the Chat Completions API with
//! SSE streaming. It answers each request with the next scripted [`Reply`] (text, tool calls,
//! an HTTP status, a malformed or slow stream) and checks every request it receives:
//! every tool call it handed out answered exactly once, roles in a valid order, tool results
//! right after the assistant message that asked for them. A broken invariant fails the test
//! (at [`ScriptedServer::finish`], or when the server is dropped).
//!
//! Several conversations (a main agent and its sub-agents) can share one server:
//! [`ScriptedServer::start_conversations`] gives each its own script, picked by a text its first
//! user message contains, and checks each conversation's invariants on its own.
//!
//! With the `session` feature, [`session`] runs the real core against such a server in-process.

mod messages_wire;
mod responses_wire;
#[cfg(feature = "session")]
pub mod session;

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::serve::ListenerExt;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

/// One tool call the scripted model makes.
#[derive(Debug, Clone)]
pub struct ScriptedCall {
    pub id: String,
    pub name: String,
    /// Sent as JSON text, split over two chunks.
    pub arguments: String,
}

/// A tool call with JSON arguments.
pub fn call(id: &str, name: &str, args: Value) -> ScriptedCall {
    ScriptedCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

/// The main agent's conversation of a sub-agent test, for [`ScriptedServer::start_conversations`]:
/// keyed `MAIN:`, it calls `task` once (id `t1`) with these arguments, then answers `done`.
pub fn main_delegates(description: &str, prompt: &str, agent: &str) -> (&'static str, Vec<Reply>) {
    (
        "MAIN:",
        vec![
            Reply::calls(vec![call(
                "t1",
                "task",
                serde_json::json!({"description": description, "prompt": prompt, "agent": agent}),
            )]),
            Reply::text("done"),
        ],
    )
}

#[derive(Debug, Clone)]
pub(crate) enum Body_ {
    Stream {
        text: String,
        calls: Vec<ScriptedCall>,
    },
    Status {
        code: u16,
        body: String,
    },
    Malformed,
    /// Send one text chunk, then nothing until the client goes away.
    Hang,
    /// These `chat.completion.chunk` objects as they are, then `[DONE]` (fixtures in a server's
    /// own shape: reasoning fields, usage chunks, odd tool-call indexes).
    Raw {
        chunks: Vec<Value>,
        issued: Vec<String>,
    },
}

/// What the scripted model answers to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    body: Body_,
    delay: Duration,
}

impl Reply {
    /// A final answer (no tool calls).
    pub fn text(text: &str) -> Self {
        Self::text_and_calls(text, Vec::new())
    }

    /// Tool calls (no text).
    pub fn calls(calls: Vec<ScriptedCall>) -> Self {
        Self::text_and_calls("", calls)
    }

    pub fn text_and_calls(text: &str, calls: Vec<ScriptedCall>) -> Self {
        Self {
            body: Body_::Stream {
                text: text.into(),
                calls,
            },
            delay: Duration::ZERO,
        }
    }

    /// An HTTP error status with a body.
    pub fn status(code: u16, body: &str) -> Self {
        Self {
            body: Body_::Status {
                code,
                body: body.into(),
            },
            delay: Duration::ZERO,
        }
    }

    /// A 200 stream whose data line is not JSON.
    pub fn malformed() -> Self {
        Self {
            body: Body_::Malformed,
            delay: Duration::ZERO,
        }
    }

    /// A stream that starts and never ends (for cancellation tests).
    pub fn hang() -> Self {
        Self {
            body: Body_::Hang,
            delay: Duration::ZERO,
        }
    }

    /// A stream of exactly these chunk objects (each sent as one `data:` line), then `[DONE]`.
    /// `issued`: the tool call ids it hands out, for the request checks of the next turn.
    pub fn raw(chunks: Vec<Value>, issued: &[&str]) -> Self {
        Self {
            body: Body_::Raw {
                chunks,
                issued: issued.iter().map(|s| s.to_string()).collect(),
            },
            delay: Duration::ZERO,
        }
    }

    /// Wait `delay` before each chunk.
    pub fn slow(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// The wire API a scripted server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// OpenAI Chat Completions (`/chat/completions`).
    #[default]
    Chat,
    /// OpenAI Responses (`/responses`).
    Responses,
    /// Anthropic Messages (`/messages`).
    Messages,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Responses => "/responses",
            Api::Messages => "/messages",
        }
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// The query string, if any (Azure's `api-version`).
    pub query: Option<String>,
    pub authorization: Option<String>,
    /// Every request header, names lower-case (`x-api-key`, `anthropic-version`, a provider's own).
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// When the request arrived.
    pub at: Instant,
    /// When the last byte of the answer was handed to the connection (streams only).
    pub finished: Option<Instant>,
    /// Index of the conversation that answered it (0 with a single script).
    pub conversation: usize,
}

impl Recorded {
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or_default()
    }

    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Names of the tools offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The content of the tool message answering `call_id`.
    pub fn tool_result(&self, call_id: &str) -> Option<String> {
        self.messages()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
            .and_then(|m| m["content"].as_str().map(str::to_string))
    }
}

/// One scripted conversation.
#[derive(Default)]
struct Conversation {
    /// Picks the requests whose first user message contains it; `None` takes every request.
    key: Option<String>,
    script: Vec<Reply>,
    next: usize,
    /// Tool call ids handed out so far in this conversation.
    issued: Vec<String>,
}

#[derive(Default)]
struct State {
    api: Api,
    conversations: Vec<Conversation>,
    /// Requests received, all conversations.
    next: usize,
    requests: Vec<Recorded>,
    violations: Vec<String>,
    /// Keep request bodies (off for long benchmarks).
    record: bool,
}

/// The scripted Chat Completions server. Runs on its own thread and runtime, so it works from
/// plain `#[test]`s that spawn `cst-agent`.
pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    checked: bool,
}

impl ScriptedServer {
    /// Start a server that answers requests with `script`, in order.
    pub fn start(script: Vec<Reply>) -> Self {
        Self::start_with(script, true)
    }

    /// A server of another wire API answering `script` in order (the same [`Reply`]s, written
    /// as that API streams them).
    pub fn start_api(api: Api, script: Vec<Reply>) -> Self {
        Self::start_state(State {
            api,
            conversations: vec![Conversation {
                key: None,
                script,
                ..Conversation::default()
            }],
            record: true,
            ..State::default()
        })
    }

    /// Same; `record` = false keeps no request bodies (invariants are still checked).
    pub fn start_with(script: Vec<Reply>, record: bool) -> Self {
        Self::start_state(State {
            conversations: vec![Conversation {
                key: None,
                script,
                ..Conversation::default()
            }],
            record,
            ..State::default()
        })
    }

    /// One script per conversation: a request goes to the first conversation whose `key` its
    /// first user message contains (a sub-agent's first user message is its `task` prompt).
    pub fn start_conversations(conversations: Vec<(&str, Vec<Reply>)>) -> Self {
        Self::start_state(State {
            conversations: conversations
                .into_iter()
                .map(|(key, script)| Conversation {
                    key: Some(key.to_string()),
                    script,
                    ..Conversation::default()
                })
                .collect(),
            record: true,
            ..State::default()
        })
    }

    fn start_state(state: State) -> Self {
        let state = Arc::new(Mutex::new(state));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let (tx, rx) = oneshot::channel::<()>();
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                // Without TCP_NODELAY each small SSE chunk waits for the peer's delayed ACK (~40 ms).
                let listener = tokio::net::TcpListener::from_std(listener)
                    .expect("listener")
                    .tap_io(|tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                    let st = st.clone();
                    async move { handle(st, method, uri, headers, body).await }
                });
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = rx => {}
                }
            });
            // Dropping the runtime ends hanging streams.
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        Self {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
            checked: false,
        }
    }

    /// Base URL to configure as the model's `base_url` (ends in `/v1`).
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.lock().next
    }

    pub fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fail the test if any request broke an invariant or if scripted replies were not used.
    pub fn finish(mut self) {
        self.checked = true;
        let st = self.lock();
        let mut problems = st.violations.clone();
        for (i, c) in st.conversations.iter().enumerate() {
            if c.next < c.script.len() {
                problems.push(format!(
                    "conversation {i}: only {} of {} scripted replies were requested",
                    c.next,
                    c.script.len()
                ));
            }
        }
        drop(st);
        assert!(problems.is_empty(), "scripted model server: {}", problems.join("\n"));
    }

    /// Like [`ScriptedServer::finish`] but unused replies are fine (a run that stopped early).
    pub fn finish_allow_unused(mut self) {
        self.checked = true;
        let v = self.violations();
        assert!(v.is_empty(), "scripted model server: {}", v.join("\n"));
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if !self.checked && !std::thread::panicking() {
            let v = self.violations();
            assert!(v.is_empty(), "scripted model server: {}", v.join("\n"));
        }
    }
}

async fn handle(st: Arc<Mutex<State>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let parsed: Result<Value, _> = serde_json::from_slice(&body);
    let reply = {
        let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
        let n = s.next;
        let api = s.api;
        if method != Method::POST || !path.ends_with(api.path()) {
            s.violations.push(format!("request #{n}: unexpected {method} {path}"));
            return status(404, "not found");
        }
        let body = match parsed {
            Ok(v) => v,
            Err(e) => {
                s.violations.push(format!("request #{n}: body is not JSON: {e}"));
                return status(400, "bad json");
            }
        };
        let first_user = match api {
            Api::Chat => body["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_string(),
            Api::Responses => responses_wire::first_user(&body),
            Api::Messages => messages_wire::first_user(&body),
        };
        let Some(ci) = s
            .conversations
            .iter()
            .position(|c| c.key.as_ref().is_none_or(|k| first_user.contains(k.as_str())))
        else {
            s.violations.push(format!(
                "request #{n}: no conversation matches the first user message {first_user:?}"
            ));
            return status(500, "no conversation");
        };
        let violations = match api {
            Api::Chat => check_request(&body, &s.conversations[ci].issued),
            Api::Responses => responses_wire::check_request(&body, &s.conversations[ci].issued),
            Api::Messages => messages_wire::check_request(&body, &s.conversations[ci].issued),
        };
        for v in violations {
            s.violations.push(format!("request #{n} (conversation {ci}): {v}"));
        }
        let rec = Recorded {
            query: uri.query().map(str::to_string),
            path,
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            headers: headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
                .collect(),
            body: if s.record { body.clone() } else { Value::Null },
            at: Instant::now(),
            finished: None,
            conversation: ci,
        };
        s.requests.push(rec);
        s.next += 1;
        let conv = &mut s.conversations[ci];
        let k = conv.next;
        conv.next += 1;
        match conv.script.get(k).cloned() {
            Some(r) => {
                if let Body_::Stream { calls, .. } = &r.body {
                    conv.issued.extend(calls.iter().map(|c| c.id.clone()));
                }
                if let Body_::Raw { issued, .. } = &r.body {
                    conv.issued.extend(issued.iter().cloned());
                }
                (r, body["model"].as_str().unwrap_or_default().to_string(), n)
            }
            None => {
                let m = conv.script.len();
                s.violations.push(format!(
                    "request #{n}: unexpected, conversation {ci} has only {m} replies"
                ));
                return status(500, "script exhausted");
            }
        }
    };
    let (reply, model, n) = reply;
    let done = Some((st.clone(), n));
    let api = st.lock().unwrap_or_else(|e| e.into_inner()).api;
    if api != Api::Chat {
        return match reply.body {
            Body_::Status { code, body } => status(code, &body),
            Body_::Hang => sse_response(
                match api {
                    Api::Responses => responses_wire::hang(&model),
                    _ => messages_wire::hang(&model),
                },
                reply.delay,
                true,
                done,
            ),
            other => {
                let events = match api {
                    Api::Responses => responses_wire::render(&other, &model),
                    _ => messages_wire::render(&other, &model),
                };
                sse_response(events, reply.delay, false, done)
            }
        };
    }
    match reply.body {
        Body_::Status { code, body } => status(code, &body),
        Body_::Malformed => sse_response(
            vec!["data: {this is not json\n\n".to_string()],
            reply.delay,
            false,
            done,
        ),
        Body_::Hang => sse_response(
            vec![chunk(&model, json!({"content": "thinking"}), None)],
            reply.delay,
            true,
            done,
        ),
        Body_::Raw { chunks, .. } => {
            let mut lines: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
            lines.push("data: [DONE]\n\n".into());
            sse_response(lines, reply.delay, false, done)
        }
        Body_::Stream { text, calls } => {
            let mut chunks = vec![chunk(&model, json!({"role": "assistant"}), None)];
            // Text in three pieces, tool arguments in two, to exercise reassembly.
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(chars.len().div_ceil(3).max(1)) {
                let s: String = piece.iter().collect();
                chunks.push(chunk(&model, json!({"content": s}), None));
            }
            for (i, c) in calls.iter().enumerate() {
                let mut cut = c.arguments.len() / 2;
                while !c.arguments.is_char_boundary(cut) {
                    cut -= 1;
                }
                chunks.push(chunk(
                    &model,
                    json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": &c.arguments[..cut]}}]}),
                    None,
                ));
                chunks.push(chunk(
                    &model,
                    json!({"tool_calls": [{"index": i, "function": {"arguments": &c.arguments[cut..]}}]}),
                    None,
                ));
            }
            let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
            chunks.push(chunk(&model, json!({}), Some(finish)));
            chunks.push("data: [DONE]\n\n".into());
            sse_response(chunks, reply.delay, false, done)
        }
    }
}

fn chunk(model: &str, delta: Value, finish: Option<&str>) -> String {
    let v = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {v}\n\n")
}

fn status(code: u16, body: &str) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"error": {"message": body, "code": code}}).to_string(),
        ))
        .unwrap_or_default()
}

fn sse_response(
    chunks: Vec<String>,
    delay: Duration,
    hang: bool,
    done: Option<(Arc<Mutex<State>>, usize)>,
) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    tokio::spawn(async move {
        for c in chunks {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if tx.send(Bytes::from(c)).await.is_err() {
                return;
            }
        }
        if let Some((st, n)) = done {
            let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = s.requests.get_mut(n) {
                r.finished = Some(Instant::now());
            }
        }
        if hang {
            // Hold the stream open until the client disconnects or the server stops.
            tx.closed().await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

/// The invariants every Chat Completions request must satisfy. `issued` = tool call ids the
/// server handed out in earlier replies.
pub fn check_request(body: &Value, issued: &[String]) -> Vec<String> {
    let mut v = Vec::new();
    if body["model"].as_str().is_none_or(str::is_empty) {
        v.push("`model` is missing or empty".to_string());
    }
    if body["stream"] != json!(true) {
        v.push("`stream` is not true".to_string());
    }
    if let Some(tools) = body.get("tools") {
        match tools.as_array() {
            Some(a) if !a.is_empty() => {
                let mut names = HashSet::new();
                for t in a {
                    let name = t["function"]["name"].as_str().unwrap_or_default();
                    let ok = t["type"] == "function"
                        && !name.is_empty()
                        && name.len() <= 64
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                        && t["function"]["parameters"].is_object();
                    if !ok {
                        v.push(format!("malformed tool definition: {t}"));
                    }
                    if !names.insert(name.to_string()) {
                        v.push(format!("tool `{name}` offered twice"));
                    }
                }
            }
            _ => v.push("`tools` must be a non-empty array when present".to_string()),
        }
    }
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        v.push("`messages` is missing or empty".to_string());
        return v;
    };
    let mut answered: HashMap<String, usize> = HashMap::new();
    let mut asked: HashSet<String> = HashSet::new();
    // Calls of the latest assistant message still waiting for their tool message.
    let mut pending: Vec<String> = Vec::new();
    let mut prev_role = "";
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "tool" && !pending.is_empty() {
            v.push(format!(
                "message {i} ({role}) comes before tool results for {pending:?} of the assistant message"
            ));
            pending.clear();
        }
        match role {
            "system" => {
                if i != 0 {
                    v.push(format!("system message at position {i}, not first"));
                }
                if !m["content"].is_string() {
                    v.push(format!("system message {i} has no text content"));
                }
            }
            "user" => {
                if m["content"].as_str().is_none() && !m["content"].is_array() {
                    v.push(format!("user message {i} has no content"));
                }
            }
            "assistant" => {
                if prev_role == "assistant" {
                    v.push(format!("assistant message {i} follows another assistant message"));
                }
                if i == 0 || (i == 1 && prev_role == "system") {
                    v.push(format!("assistant message {i} before any user message"));
                }
                let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
                if calls.is_empty() && m["content"].as_str().is_none_or(str::is_empty) {
                    v.push(format!("assistant message {i} has neither content nor tool calls"));
                }
                for c in calls {
                    let id = c["id"].as_str().unwrap_or_default().to_string();
                    if c["type"] != "function" || c["function"]["name"].as_str().is_none() {
                        v.push(format!("assistant message {i}: malformed tool call {c}"));
                    }
                    if c["function"]["arguments"].as_str().is_none() {
                        v.push(format!(
                            "assistant message {i}: tool call `{id}` arguments are not a string"
                        ));
                    }
                    if !asked.insert(id.clone()) {
                        v.push(format!("tool call id `{id}` used twice"));
                    }
                    pending.push(id);
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                if !m["content"].is_string() {
                    v.push(format!("tool message {i} content is not a string"));
                }
                *answered.entry(id.clone()).or_default() += 1;
                if let Some(pos) = pending.iter().position(|p| *p == id) {
                    pending.remove(pos);
                } else if asked.contains(&id) {
                    v.push(format!(
                        "tool call `{id}` answered more than once or not right after its request"
                    ));
                } else {
                    v.push(format!("tool message {i} answers unknown call `{id}`"));
                }
            }
            other => v.push(format!("message {i} has invalid role `{other}`")),
        }
        prev_role = role;
    }
    if !pending.is_empty() {
        v.push(format!("tool calls {pending:?} were never answered"));
    }
    for (id, n) in &answered {
        if *n > 1 {
            v.push(format!("tool call `{id}` answered {n} times"));
        }
    }
    // A compacted history starts with the summary instead of the older replies and their calls.
    let compacted = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .is_some_and(|t| t.starts_with(cst_protocol::COMPACTED_SUMMARY_PREFIX));
    for id in issued.iter().filter(|_| !compacted) {
        if !asked.contains(id) {
            v.push(format!(
                "tool call `{id}` handed out earlier is missing from the history"
            ));
        }
    }
    if !matches!(prev_role, "user" | "tool") {
        v.push(format!("the last message is `{prev_role}`, not user or tool"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invariants_catch_broken_histories() {
        let ok = json!({"model": "m", "stream": true, "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "x"},
            {"role": "tool", "tool_call_id": "a", "content": "x"}]});
        assert_eq!(check_request(&ok, &["a".into(), "b".into()]), Vec::<String>::new());

        let mut missing = ok.clone();
        missing["messages"].as_array_mut().unwrap().pop();
        assert!(!check_request(&missing, &[]).is_empty());

        let mut twice = ok.clone();
        twice["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "tool", "tool_call_id": "a", "content": "x"}));
        assert!(check_request(&twice, &[]).iter().any(|v| v.contains("more than once")));

        let mut misplaced = ok.clone();
        misplaced["messages"]
            .as_array_mut()
            .unwrap()
            .insert(3, json!({"role": "user", "content": "?"}));
        assert!(!check_request(&misplaced, &[]).is_empty());

        assert!(check_request(&ok, &["zzz".into()])
            .iter()
            .any(|v| v.contains("missing")));
    }
}
