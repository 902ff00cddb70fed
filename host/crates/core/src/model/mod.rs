//! The model client: one client, three wire APIs chosen per provider (never guessed from the
//! model name) — OpenAI-compatible Chat Completions (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp's
//! server), OpenAI Responses ([`responses`]) and Anthropic Messages ([`messages`]) — each
//! streamed over SSE with tool calls. The history is kept in the Chat Completions shape
//! ([`ChatMessage`]); each wire writes its own request from it and reads its own stream into an
//! [`AssistantTurn`]. Configured by `settings.json` (`model`, `providers`) and overridden by env
//! (`CST_MODEL`, `CST_BASE_URL`) and flags (`--provider`, `--model`, `--base-url`).

pub mod config;
pub mod messages;
pub mod responses;
mod sse;

use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub use config::{ModelConfig, ModelOverrides, WireApi};

/// One message of the conversation, in the Chat Completions shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        /// `null` when the message only carries tool calls (as the API expects).
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The model's thinking, sent back in the field it came in: DeepSeek's thinking models
        /// answer HTTP 400 to the next step of a tool loop without it (issue 14 item 2). Only
        /// servers that sent one ever get one back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// What the Responses or Messages API needs back verbatim on the next request (reasoning
        /// items with their encrypted content, thinking blocks with their signatures); never
        /// sent on Chat Completions.
        #[serde(skip)]
        native: Option<Value>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, exactly as the model produced it.
    pub arguments: String,
}

/// A tool as offered to the model.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// What the model answered in one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    /// Thinking text, when the server streamed any.
    pub reasoning: Option<Reasoning>,
    /// Tokens of this call, when the server reported them.
    pub usage: Option<cst_protocol::TokenUsage>,
    /// Kept for the next request of the same wire API ([`ChatMessage::Assistant::native`]).
    pub native: Option<Value>,
}

/// Thinking text and the delta field it came in (`reasoning_content` or `reasoning`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reasoning {
    pub field: String,
    pub text: String,
}

impl AssistantTurn {
    /// The turn as a history message, its thinking in the field the server used.
    pub fn to_message(&self) -> ChatMessage {
        let thinking = |field: &str| {
            self.reasoning
                .as_ref()
                .filter(|r| r.field == field)
                .map(|r| r.text.clone())
        };
        ChatMessage::Assistant {
            content: (!self.text.is_empty()).then(|| self.text.clone()),
            tool_calls: self.tool_calls.clone(),
            reasoning_content: thinking("reasoning_content"),
            reasoning: thinking("reasoning"),
            native: self.native.clone(),
        }
    }
}

/// Reads one wire API's response stream, one SSE event at a time, into an [`AssistantTurn`].
pub trait StreamReader: Send {
    /// One event: its `event:` name (`message` when the server sent none) and its `data:`
    /// lines joined. `Ok(true)` when the stream is complete (Chat's `[DONE]`, Responses'
    /// `response.completed`, Messages' `message_stop`).
    fn feed(&mut self, event: &str, data: &str, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) -> Result<bool, String>;
    /// Whether what was read is a finished answer though the stream ended without its last
    /// event (a server that closes right after the finish reason).
    fn finished(&self) -> bool;
    fn finish(self: Box<Self>) -> Result<AssistantTurn, String>;
}

/// A streamed fragment: answer text, or thinking.
#[derive(Debug, Clone, Copy)]
pub enum Delta<'a> {
    Text(&'a str),
    Reasoning(&'a str),
}

/// Why a model call failed; the messages are meant for a person.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    #[error("the model server at {url} refused the request (401 Unauthorized): check the API key in the env variable {key_env} (settings.json `model.api_key_env`){detail}")]
    Unauthorized {
        url: String,
        key_env: String,
        detail: String,
    },
    #[error("cannot reach the model server at {url}: {reason} (is it running? check `model.base_url` in settings.json, CST_BASE_URL or --base-url)")]
    Unreachable { url: String, reason: String },
    #[error("the model server at {url} answered 404 Not Found{detail}: {body}")]
    NotFound { url: String, detail: String, body: String },
    #[error("the model server at {url} answered HTTP {status}: {body}")]
    Http { url: String, status: u16, body: String },
    #[error("malformed response stream from {url}: {detail}")]
    MalformedStream { url: String, detail: String },
    #[error("model call cancelled")]
    Cancelled,
}

/// Retry policy for 429, 5xx and connection failures.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts after the first one.
    pub retries: u32,
    /// First backoff; doubled each time (a `Retry-After` of at most 30 s wins when larger).
    pub base: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            retries: 4,
            base: Duration::from_millis(250),
        }
    }
}

/// A Chat Completions client.
#[derive(Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    config: ModelConfig,
    url: String,
    pub retry: RetryPolicy,
}

impl ModelClient {
    pub fn new(config: ModelConfig) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // An idle stream for this long is a dead server, not a slow model.
            .read_timeout(Duration::from_secs(300))
            .build()?;
        let url = endpoint(&config);
        Ok(Self {
            http,
            config,
            url,
            retry: RetryPolicy::default(),
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The same provider (URL, key, HTTP client) with another model name (a role's `model`).
    pub fn with_model(&self, name: &str) -> Self {
        let mut c = self.clone();
        c.config.name = name.to_string();
        c
    }

    /// The request body for `messages` and `tools` (streaming on), in this provider's API.
    pub fn request_body(&self, messages: &[ChatMessage], tools: &[ToolDef]) -> Value {
        match self.config.api {
            WireApi::Chat => chat_body(&self.config, messages, tools),
            WireApi::Responses => responses::request_body(&self.config, messages, tools),
            WireApi::Messages => messages::request_body(&self.config, messages, tools),
        }
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        match self.config.api {
            WireApi::Chat => Box::new(sse::Accumulator::default()),
            WireApi::Responses => Box::new(responses::Reader::default()),
            WireApi::Messages => Box::new(messages::Reader::default()),
        }
    }

    /// One model call, streamed: `on_delta` gets each text fragment as it arrives. Retries on
    /// 429/5xx/connection failures before any byte was streamed.
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDef],
        cancel: &CancellationToken,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<AssistantTurn, ModelError> {
        let body = self.request_body(messages, tools);
        let mut attempt = 0u32;
        loop {
            let res = tokio::select! {
                r = self.send(&body) => r,
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            let (err, retry_after) = match res {
                Ok(resp) => {
                    return tokio::select! {
                        r = self.read_stream(resp, on_delta) => r,
                        _ = cancel.cancelled() => Err(ModelError::Cancelled),
                    }
                }
                Err(e) => e,
            };
            let retryable = match &err {
                ModelError::Unreachable { .. } => true,
                ModelError::Http { status, .. } => *status == 429 || *status >= 500,
                _ => false,
            };
            if !retryable || attempt >= self.retry.retries {
                return Err(err);
            }
            let backoff = self.retry.base * 2u32.saturating_pow(attempt);
            let wait = retry_after
                .filter(|d| *d <= Duration::from_secs(30))
                .map_or(backoff, |d| d.max(backoff));
            tracing::warn!("model call failed ({err}); retrying in {} ms", wait.as_millis());
            attempt += 1;
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            }
        }
    }

    async fn send(&self, body: &Value) -> Result<reqwest::Response, (ModelError, Option<Duration>)> {
        let mut req = self.http.post(&self.url).json(body);
        req = match (self.config.api, &self.config.api_key) {
            // Anthropic's own header and its required API version.
            (WireApi::Messages, key) => {
                let req = req.header("anthropic-version", messages::API_VERSION);
                match key {
                    Some(k) => req.header("x-api-key", k),
                    None => req,
                }
            }
            (_, Some(key)) => req.bearer_auth(key),
            (_, None) => req,
        };
        // The provider's extra headers (OpenRouter's, Azure's `api-key`) come last and win.
        for (name, value) in &self.config.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let resp = req.send().await.map_err(|e| {
            (
                ModelError::Unreachable {
                    url: self.url.clone(),
                    reason: error_chain(&e),
                },
                None,
            )
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = resp.text().await.unwrap_or_default();
        let body = short(&text);
        let err = if status.as_u16() == 401 {
            ModelError::Unauthorized {
                url: self.url.clone(),
                key_env: self.config.api_key_env.clone(),
                detail: if self.config.api_key.is_none() {
                    " (it is not set)".into()
                } else if body.is_empty() {
                    String::new()
                } else {
                    format!("; server said: {body}")
                },
            }
        } else if status.as_u16() == 404 {
            ModelError::NotFound {
                url: self.url.clone(),
                detail: not_found_cause(&self.config, &body),
                body,
            }
        } else {
            ModelError::Http {
                url: self.url.clone(),
                status: status.as_u16(),
                body,
            }
        };
        Err((err, retry_after))
    }

    async fn read_stream(
        &self,
        resp: reqwest::Response,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<AssistantTurn, ModelError> {
        let malformed = |detail: String| ModelError::MalformedStream {
            url: self.url.clone(),
            detail,
        };
        let mut reader = self.reader();
        let mut lines = sse::LineSplitter::default();
        let mut events = sse::EventAssembler::default();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| malformed(format!("the connection broke: {}", error_chain(&e))))?;
            for line in lines.push(&chunk) {
                if let Some((event, data)) = events.push_line(&line).map_err(malformed)? {
                    if reader.feed(&event, &data, on_delta).map_err(malformed)? {
                        return reader.finish().map_err(malformed);
                    }
                }
            }
        }
        // The end of the stream ends the last line and the last event.
        if let Some(line) = lines.rest() {
            events.push_line(&line).map_err(malformed)?;
        }
        if let Some((event, data)) = events.take() {
            if reader.feed(&event, &data, on_delta).map_err(malformed)? {
                return reader.finish().map_err(malformed);
            }
        }
        // No end event: accept the message only if the model said it had finished.
        if reader.finished() {
            reader.finish().map_err(malformed)
        } else {
            Err(malformed(
                "the stream ended before the model finished (no finish reason, no end event)".into(),
            ))
        }
    }
}

/// The Chat Completions request body (streaming on).
fn chat_body(config: &ModelConfig, messages: &[ChatMessage], tools: &[ToolDef]) -> Value {
    let mut body = json!({
        "model": config.name,
        "messages": messages,
        "stream": true,
        // Token counts in a last chunk (OpenAI, vLLM, Ollama, llama.cpp's server; others
        // ignore it).
        "stream_options": {"include_usage": true},
    });
    // Thinking goes back only within the current turn (after the last user message), as
    // DeepSeek asks; older turns' thinking is dropped to keep requests small.
    if let Some(list) = body["messages"].as_array_mut() {
        let last_user = list.iter().rposition(|m| m["role"] == "user").unwrap_or(0);
        for m in &mut list[..last_user] {
            if let Some(o) = m.as_object_mut() {
                o.remove("reasoning_content");
                o.remove("reasoning");
            }
        }
    }
    // Some servers reject an empty `tools` array, so it is left out when there are none.
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
    }
    body
}

/// The URL of a provider's endpoint: the base URL, the API's path, the provider's query
/// parameters (Azure's `api-version`).
fn endpoint(config: &ModelConfig) -> String {
    let path = match config.api {
        WireApi::Chat => "/chat/completions",
        WireApi::Responses => "/responses",
        WireApi::Messages => "/messages",
    };
    let joined = format!("{}{path}", config.base_url.trim_end_matches('/'));
    if config.query_params.is_empty() {
        return joined;
    }
    // The URL crate (reqwest's) encodes the parameters; the base URL was checked to be http(s).
    match reqwest::Url::parse(&joined) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(&config.query_params);
            url.into()
        }
        Err(_) => joined,
    }
}

/// What a 404 from `/chat/completions` most likely means, for the error message (issue 14 item
/// 5): a model that only speaks the Responses API (OpenAI's codex-line and pro models say so in
/// the body), an unknown model, or a base URL without its `/v1`.
fn not_found_cause(config: &ModelConfig, body: &str) -> String {
    let model = &config.name;
    let b = body.to_ascii_lowercase();
    if config.api == WireApi::Chat && b.contains("responses") {
        format!(
            " (model `{model}` only speaks the Responses API, `/v1/responses`: use a provider with \
             `\"api\": \"responses\"` (docs/models.md), or choose a chat model with --model)"
        )
    } else if config.api != WireApi::Chat && !b.contains("model") {
        format!(
            " (does this server speak the {} API? check the provider's `api` and `base_url` in settings.json)",
            config.api.as_str()
        )
    } else if b.contains("model") {
        format!(" (is `{model}` a model this server has? check --model or `model.name`)")
    } else {
        " (does `model.base_url` end in the API's version, such as `/v1`?)".to_string()
    }
}

fn short(s: &str) -> String {
    cut_chars(s.trim(), 300)
}

/// The first `n` characters of `s`, with `…` when there was more: how every wire quotes a
/// server's text in an error.
pub(crate) fn cut_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ModelClient {
        ModelClient::new(ModelConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            name: "deepseek-reasoner".into(),
            api_key_env: "K".into(),
            api_key: None,
            ..ModelConfig::default()
        })
        .expect("client")
    }

    fn assistant(text: &str, thinking: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: Some(text.into()),
            tool_calls: vec![],
            reasoning_content: Some(thinking.into()),
            reasoning: None,
            native: None,
        }
    }

    /// Issue 14 item 2: thinking goes back within the current turn only.
    #[test]
    fn thinking_of_earlier_turns_is_not_sent() {
        let history = vec![
            ChatMessage::User { content: "one".into() },
            assistant("first", "old thoughts"),
            ChatMessage::User { content: "two".into() },
            assistant("second", "new thoughts"),
        ];
        let body = client().request_body(&history, &[]);
        let messages = body["messages"].as_array().expect("messages");
        assert!(messages[1].get("reasoning_content").is_none(), "{body}");
        assert_eq!(messages[3]["reasoning_content"], "new thoughts");
    }

    /// A server that never sent thinking never gets the fields (OpenAI rejects unknown ones).
    #[test]
    fn no_thinking_no_field() {
        let turn = AssistantTurn {
            text: "hi".into(),
            ..AssistantTurn::default()
        };
        let v = serde_json::to_value(turn.to_message()).expect("json");
        assert_eq!(v, json!({"role": "assistant", "content": "hi"}));
    }

    /// A provider's query parameters are encoded and added after the API's path.
    #[test]
    fn endpoint_adds_the_path_then_the_encoded_query() {
        let mut c = ModelConfig {
            base_url: "https://x.example/openai/deployments/gpt/".into(),
            ..ModelConfig::default()
        };
        assert_eq!(
            endpoint(&c),
            "https://x.example/openai/deployments/gpt/chat/completions"
        );
        c.query_params = vec![
            ("api-version".into(), "2025-04-01-preview".into()),
            ("a b".into(), "c&d".into()),
        ];
        c.api = WireApi::Responses;
        assert_eq!(
            endpoint(&c),
            "https://x.example/openai/deployments/gpt/responses?api-version=2025-04-01-preview&a+b=c%26d"
        );
    }
}
