//! `cst-mcp-test-server`: a stdio MCP server that the cst-agent tests drive.
//!
//! Modes (first argument):
//! - (none) / `serve`: a normal server.
//! - `garbage`: prints lines that are not JSON-RPC on stdout before the handshake.
//! - `never-init`: reads stdin but never answers `initialize`, and ignores EOF (start timeout).
//! - `idle`: does nothing until killed (the grandchild on Windows, which has no `sleep`).
//! - `http`: the same server over streamable HTTP on `127.0.0.1:<free port>` at `/mcp`; prints
//!   `listening http://127.0.0.1:PORT/mcp` on stdout, then only logs on stderr. Answers both the
//!   modern `server/discover` and the legacy `initialize`.
//! - `http-ignore-discover`: as `http`, but a `server/discover` request is never answered (a
//!   legacy server that ignores unknown methods: the client's probe must time out and fall back).
//!
//! Environment:
//! - `CST_TEST_TOOLS`: number of `filler_NN` tools (default 11: 23 tools in all, so the list needs 3 pages of 10).
//! - `CST_TEST_CANCEL_MARKER`: file the `slow` tool writes when it sees `notifications/cancelled`.
//! - `CST_TEST_VARIANT_FILE`: file whose trimmed content `X` adds a tool `variant_X` (reload tests).
//! - `CST_TEST_STDERR`: a line printed on stderr at start.
//! - `CST_TEST_START_MARKER`: a file the server appends its pid to at start, before anything else,
//!   so a test can tell afterwards that it was started (its process is gone by then).
//! - `CST_TEST_GRANDCHILD_MARKER`: at start, the server starts a grandchild (as the
//!   `grandchild` tool does) and writes `SERVER_PID GRANDCHILD_PID` to this file.
//!
//! - `CST_TEST_HEADERS_FILE` (HTTP modes): every request's headers are appended there, one
//!   `name: value` a line, and its JSON-RPC method as `method: NAME`, so a test can see what the
//!   client sent.
//!
//! Only JSON-RPC goes to stdout (except in `garbage` mode); logs go to stderr.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

const PAGE: usize = 10;
/// Base64 of 12 bytes (a PNG signature and the start of an IHDR length).
const IMAGE_B64: &str = "iVBORw0KGgoAAAAN";
/// Base64 of 16 bytes (the start of a RIFF/WAVE header).
const AUDIO_B64: &str = "UklGRiQAAABXQVZFZm10IA==";

#[derive(Clone)]
struct TestServer {
    tools: Arc<Vec<Tool>>,
}

fn schema(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn tool(name: &str, desc: &str, input: Value) -> Tool {
    Tool::new(name.to_string(), desc.to_string(), Arc::new(schema(input)))
}

fn build_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let mut tools = vec![
        tool(
            "echo",
            "Echo the text back",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        tool(
            "add",
            "Add two integers; the result is structured content only",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}),
        ),
        tool("image", "Return a small PNG image", empty.clone()),
        tool("fail", "Always fails with isError", empty.clone()),
        tool(
            "slow",
            "Sleep `secs` seconds; records cancellation",
            json!({"type": "object", "properties": {"secs": {"type": "number"}}, "required": ["secs"]}),
        ),
        tool("crash", "Exit the process in the middle of the call", empty.clone()),
        tool("pid", "Return the server's process id", empty.clone()),
        tool("cwd", "Return the server's working directory", empty.clone()),
        tool("audio", "Return a short WAV clip", empty.clone()),
        tool(
            "grandchild",
            "Start a `sleep 300` child and return its pid",
            empty.clone(),
        ),
        tool("dotted.name", "A tool name with a dot", empty.clone()),
        tool(
            "a_tool_name_that_is_long_enough_to_overflow_sixty_three_bytes_with_prefix",
            "A long tool name",
            empty.clone(),
        ),
    ];
    // Only when asked, so the tool counts other tests expect stay as they are.
    if std::env::var_os("CST_TEST_ENV_TOOL").is_some() {
        tools.push(tool(
            "env",
            "Return the server's environment, `NAME=value` a line",
            empty.clone(),
        ));
    }
    let fillers: usize = std::env::var("CST_TEST_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    for i in 0..fillers {
        tools.push(tool(&format!("filler_{i:02}"), "A filler tool", empty.clone()));
    }
    if let Ok(path) = std::env::var("CST_TEST_VARIANT_FILE") {
        if let Ok(text) = std::fs::read_to_string(path) {
            let v = text.trim();
            if !v.is_empty() {
                tools.push(tool(&format!("variant_{v}"), "Present for one variant", empty));
            }
        }
    }
    tools
}

fn text_result(text: impl Into<String>) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cst-mcp-test-server", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // Pagination by hand: the cursor is the index of the first tool of the page.
        let start: usize = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(c) => c
                .parse()
                .map_err(|_| McpError::invalid_params(format!("bad cursor {c}"), None))?,
        };
        let end = (start + PAGE).min(self.tools.len());
        let page = self.tools.get(start..end).unwrap_or_default().to_vec();
        let mut result = ListToolsResult::with_all_items(page);
        if end < self.tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => text_result(format!(
                "echo: {}",
                args.get("text").and_then(Value::as_str).unwrap_or("")
            )),
            "add" => {
                let a = args.get("a").and_then(Value::as_i64).unwrap_or(0);
                let b = args.get("b").and_then(Value::as_i64).unwrap_or(0);
                let mut r = CallToolResult::success(vec![]);
                r.structured_content = Some(json!({"sum": a + b}));
                Ok(r.into())
            }
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::text("here is an image"),
                ContentBlock::image(IMAGE_B64, "image/png"),
            ])
            .into()),
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]).into()),
            "slow" => {
                let secs = args.get("secs").and_then(Value::as_f64).unwrap_or(10.0);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => text_result(format!("slept {secs} s")),
                    _ = cx.ct.cancelled() => {
                        if let Ok(marker) = std::env::var("CST_TEST_CANCEL_MARKER") {
                            let _ = std::fs::write(marker, "cancelled");
                        }
                        eprintln!("slow: cancelled by the client");
                        text_result("cancelled")
                    }
                }
            }
            "progress" => {
                let secs = args.get("secs").and_then(Value::as_f64).unwrap_or(3.0);
                let end = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
                let mut step = 0u32;
                while tokio::time::Instant::now() < end {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    step += 1;
                    if let Some(token) = cx.meta.get_progress_token() {
                        let p = rmcp::model::ProgressNotificationParam::new(token, f64::from(step));
                        let _ = cx.peer.notify_progress(p).await;
                    }
                }
                text_result(format!("progressed {step} steps"))
            }
            "crash" => {
                eprintln!("crashing on purpose in the middle of a call");
                std::process::exit(3);
            }
            "pid" => text_result(std::process::id().to_string()),
            "cwd" => match std::env::current_dir() {
                Ok(d) => text_result(d.display().to_string()),
                Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!("cwd: {e}"))]).into()),
            },
            "env" => {
                let mut vars: Vec<String> = std::env::vars_os()
                    .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                    .collect();
                vars.sort();
                text_result(vars.join("\n"))
            }
            "audio" => Ok(CallToolResult::success(vec![ContentBlock::audio(AUDIO_B64, "audio/wav")]).into()),
            "grandchild" => match spawn_grandchild() {
                // Not waited for: it must die with the process group.
                Ok(child) => text_result(child.id().to_string()),
                Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!("spawn sleep: {e}"))]).into()),
            },
            other => {
                if self.tools.iter().any(|t| t.name == other) {
                    text_result(format!("{other} ok"))
                } else {
                    Err(McpError::invalid_params(format!("unknown tool {other}"), None))
                }
            }
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if let Ok(marker) = std::env::var("CST_TEST_START_MARKER") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(marker)?;
        writeln!(f, "{}", std::process::id())?;
    }
    let mode = std::env::args().nth(1).unwrap_or_else(|| "serve".into());
    if let (Ok(marker), "serve") = (std::env::var("CST_TEST_GRANDCHILD_MARKER"), mode.as_str()) {
        let child = spawn_grandchild()?;
        std::fs::write(marker, format!("{} {}", std::process::id(), child.id()))?;
    }
    if let Ok(line) = std::env::var("CST_TEST_STDERR") {
        eprintln!("{line}");
    }
    match mode.as_str() {
        "never-init" => {
            eprintln!("never-init: reading stdin, never answering");
            // Drain stdin without answering, and stay alive after EOF: only a kill stops us.
            std::thread::spawn(|| {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            });
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        "idle" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "garbage" => {
            let mut out = std::io::stdout();
            writeln!(out, "Starting the test server... this line is not JSON-RPC")?;
            writeln!(out)?;
            writeln!(out, "== banner ==")?;
            out.flush()?;
        }
        "serve" => {}
        "http" => return serve_http(false).await,
        "http-ignore-discover" => return serve_http(true).await,
        other => anyhow::bail!("unknown mode {other}"),
    }
    let server = TestServer {
        tools: Arc::new(build_tools()),
    };
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    eprintln!("stdin closed, bye");
    Ok(())
}

/// A process that lives until killed, not waited for: it must die with the server's process
/// group (Unix) or Job Object (Windows, which has no `sleep`: this server again, idle, with no
/// stdio of the server's).
fn spawn_grandchild() -> std::io::Result<std::process::Child> {
    #[cfg(windows)]
    {
        use std::process::Stdio;
        std::process::Command::new(std::env::current_exe()?)
            .arg("idle")
            // Or the idle copy would start a grandchild of its own, and so on.
            .env_remove("CST_TEST_GRANDCHILD_MARKER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
    }
    #[cfg(not(windows))]
    std::process::Command::new("sleep").arg("300").spawn()
}

/// The server over streamable HTTP on a free loopback port (the `http*` modes).
async fn serve_http(ignore_discover: bool) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    // `progress` only over HTTP, so the stdio tests' tool counts stay as they are.
    let mut tools = build_tools();
    tools.push(tool(
        "progress",
        "Send a progress notification every 200 ms for `secs` seconds, then answer",
        json!({"type": "object", "properties": {"secs": {"type": "number"}}, "required": ["secs"]}),
    ));
    let tools = Arc::new(tools);
    let service = StreamableHttpService::new(
        move || Ok(TestServer { tools: tools.clone() }),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |req, next| {
            observe(req, next, ignore_discover)
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut out = std::io::stdout();
    writeln!(out, "listening http://{}/mcp", listener.local_addr()?)?;
    out.flush()?;
    axum::serve(listener, app).await?;
    Ok(())
}

/// Record the request's headers; in `http-ignore-discover` mode, hold a `server/discover`
/// request forever.
async fn observe(
    req: axum::extract::Request,
    next: axum::middleware::Next,
    ignore_discover: bool,
) -> axum::response::Response {
    if let Ok(path) = std::env::var("CST_TEST_HEADERS_FILE") {
        let mut text = String::new();
        for (name, value) in req.headers() {
            text.push_str(&format!("{}: {}\n", name, String::from_utf8_lossy(value.as_bytes())));
        }
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(text.as_bytes());
        }
    }
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 4 << 20).await.unwrap_or_default();
    if let Ok(path) = std::env::var("CST_TEST_HEADERS_FILE") {
        // And the JSON-RPC method, `method: NAME`, so a test can tell the handshake used.
        let method = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string));
        if let (Some(m), Ok(mut f)) = (method, std::fs::OpenOptions::new().create(true).append(true).open(path)) {
            let _ = writeln!(f, "method: {m}");
        }
    }
    if ignore_discover && String::from_utf8_lossy(&bytes).contains("\"server/discover\"") {
        eprintln!("ignoring server/discover");
        std::future::pending::<()>().await;
    }
    let req = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
    next.run(req).await
}
