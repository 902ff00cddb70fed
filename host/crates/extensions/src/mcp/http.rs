//! The HTTP transport: the deployment config's servers over rmcp's streamable HTTP client (D5–D8,
//! D10).
//!
//! - **Headers** (D8): static `headers` and the `credential_headers` resolved from their
//!   `CST_MCP_*` variables are sent on every request; each value is a remembered secret, so the
//!   host's redaction hides it everywhere.
//! - **Negotiation** (D7): a `server/discover` probe (rmcp's `Discover` lifecycle on its own
//!   transport) with a 10 s deadline; on any error or when the deadline passes, a fresh transport
//!   and the legacy `initialize` handshake. rmcp's own `Auto` mode is not used: it fails instead of
//!   falling back when a late discover answer arrives after its `initialize` (research §2.4), and
//!   it treats an HTTP error answer to the probe (the TypeScript SDK's 400) as fatal. The deadline
//!   covers the probe only, never a running call.
//! - **Idle timeout** (D6): `timeout_seconds` is reqwest's per-read timeout, which every byte
//!   received resets (progress notifications, SSE keep-alives): a long call that keeps sending
//!   is never cut, a silent server is cut after the timeout. There is no total cap on a call.
//! - **No URL, header or credential in messages** (D10): every error text goes through [`scrub`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::RunningService;
use rmcp::transport::common::client_side_sse::NeverRetry;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};

use super::stderr::StderrTail;
use super::transport::{list_all_tools, Connection, StartError};
use cst_config::deployment::ToolPolicy;

/// How long the `server/discover` probe may take before the legacy handshake is tried (D7).
pub const DISCOVER_DEADLINE: Duration = Duration::from_secs(10);

/// Tests only: the probe deadline in milliseconds, instead of [`DISCOVER_DEADLINE`]. Read from
/// the host's own environment when a deployment server is prepared.
pub const ENV_DISCOVER_DEADLINE_MS: &str = "CST_MCP_DISCOVER_DEADLINE_MS";

/// A deployment server has no cap on a running call (D6): its idle timeout does the cutting.
/// The registry wants a number; this one is never reached in practice.
pub const NO_CALL_CAP: Duration = Duration::from_secs(30 * 24 * 3600);

/// One HTTP server, ready to connect. `Debug` shows neither the URL's path nor any header value.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// The deployment id, for messages.
    pub id: String,
    pub url: String,
    /// Header name → value: the static `headers` and the resolved `credential_headers`.
    pub headers: BTreeMap<String, String>,
    /// `timeout_seconds` (D6).
    pub idle_timeout: Duration,
    pub discover_deadline: Duration,
    /// Which remote tools are registered, and which are `read` (D12).
    pub default_policy: ToolPolicy,
    pub tools: BTreeMap<String, ToolPolicy>,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("id", &self.id)
            .field("url", &host_only(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// The policy of the remote tool `name`: its `tools` entry, else `default_policy`.
    pub fn policy_of(&self, name: &str) -> ToolPolicy {
        self.tools.get(name).copied().unwrap_or(self.default_policy)
    }
}

/// Which era the connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `server/discover` answered (2026-07-28).
    Modern,
    /// `initialize` handshake.
    Legacy,
}

/// Connect (probe, else handshake) and list every tool, within `start_timeout` for the
/// handshake and the list (the probe has its own deadline before that).
pub async fn connect(http: &HttpConfig, start_timeout: Duration) -> Result<(Connection, Vec<Tool>, Era), StartError> {
    let fail = |what: String| StartError {
        reason: scrub(&what, &http.url),
    };
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(http.idle_timeout)
        .pool_max_idle_per_host(0)
        // Credentials go to the configured origin only.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
    let mut headers = HashMap::new();
    for (name, value) in &http.headers {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| fail(format!("bad header name `{name}`")))?;
        let mut v =
            HeaderValue::from_str(value).map_err(|_| fail(format!("the value of header `{name}` is not valid")))?;
        v.set_sensitive(true);
        headers.insert(n, v);
    }
    let transport = || {
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(http.url.as_str()).custom_headers(headers.clone());
        // A broken response stream is not resumed: an idle cut must fail the call, not retry it.
        config.retry_config = Arc::new(NeverRetry::default());
        StreamableHttpClientTransport::with_client(client.clone(), config)
    };

    let modern = tokio::time::timeout(
        http.discover_deadline,
        client_config(ProtocolVersion::V_2026_07_28).serve_with_lifecycle(
            transport(),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await;
    let started = tokio::time::timeout(start_timeout, async {
        let (service, era) = match modern {
            Ok(Ok(service)) => (service, Era::Modern),
            // Unsupported (any error answer) or expired: the legacy handshake, on a new transport.
            _ => {
                let service = client_config(ProtocolVersion::LATEST_WITH_INITIALIZE)
                    .serve(transport())
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                (service, Era::Legacy)
            }
        };
        let tools = list_all_tools(service.peer())
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok::<_, String>((service, tools, era))
    })
    .await;
    let (service, tools, era): (RunningService<RoleClient, ClientConfig>, _, _) = match started {
        Ok(Ok(ok)) => ok,
        Ok(Err(e)) => return Err(fail(e)),
        Err(_) => {
            return Err(fail(format!(
                "no answer to the handshake and tools/list within {} s",
                start_timeout.as_secs_f64()
            )))
        }
    };
    let conn = Connection {
        peer: service.peer().clone(),
        service: Mutex::new(Some(service)),
        process: None,
        stderr: StderrTail::empty(),
    };
    Ok((conn, tools, era))
}

fn client_config(version: ProtocolVersion) -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("cst-agent", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(version)
}

/// Whether a call's error is the idle timeout cutting a silent server (D6): somewhere in its
/// chain, a read of the HTTP client that timed out.
pub fn is_idle_cut(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        let timed_out = if let Some(r) = e.downcast_ref::<reqwest::Error>() {
            r.is_timeout()
        } else if let Some(StreamableHttpError::Client(r)) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            // rmcp's `Client` variant does not give its error as the source.
            r.is_timeout()
        } else if let Some(io) = e.downcast_ref::<std::io::Error>() {
            io.kind() == std::io::ErrorKind::TimedOut
        } else {
            false
        };
        if timed_out {
            return true;
        }
        current = e.source();
    }
    false
}

/// What a call cut by the idle timeout says: what happened, without the URL (D6, D10).
pub fn idle_cut_message(server: &str, idle_timeout: Duration) -> String {
    format!(
        "MCP server `{server}` sent no data for {} s (its idle timeout, `timeout_seconds`); the call was cut",
        idle_timeout.as_secs_f64()
    )
}

/// `scheme://host[:port]` of `url`, without path, userinfo or query.
pub fn host_only(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

/// `text` with every URL cut to its scheme and host, `url` itself removed wherever it appears,
/// and every remembered secret (header values) redacted (D10).
pub fn scrub(text: &str, url: &str) -> String {
    let mut out = if url.is_empty() {
        text.to_string()
    } else {
        text.replace(url, &host_only(url))
    };
    out = scrub_urls(&out);
    cst_config::secrets::redact(&out)
}

/// Every `http://…` or `https://…` in `text` cut to its scheme and host.
pub fn scrub_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = ["http://", "https://"].iter().filter_map(|p| rest.find(p)).min() {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '<' | '>' | ','))
            .unwrap_or(tail.len());
        out.push_str(&host_only(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d10_urls_are_cut_to_their_host() {
        assert_eq!(
            host_only("https://u:p@mcp.example.com:8443/a/b?x=1"),
            "https://mcp.example.com:8443"
        );
        let t = "error sending request for url (http://127.0.0.1:5/secret/path?q=1): refused";
        assert_eq!(
            scrub_urls(t),
            "error sending request for url (http://127.0.0.1:5): refused"
        );
        assert_eq!(scrub("x https://h/p/q y", "https://h/p/q"), "x https://h y");
    }

    #[test]
    fn d6_idle_cut_message_says_what_happened() {
        assert_eq!(
            idle_cut_message("dep", Duration::from_secs(1)),
            "MCP server `dep` sent no data for 1 s (its idle timeout, `timeout_seconds`); the call was cut"
        );
        let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "read timed out");
        assert!(is_idle_cut(&timed_out));
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(!is_idle_cut(&refused));
    }

    #[test]
    fn d10_debug_hides_path_and_header_values() {
        let c = HttpConfig {
            id: "docs".into(),
            url: "https://h.example/tenant-42/mcp".into(),
            headers: [("Authorization".to_string(), "Bearer s3cr3t-value".to_string())].into(),
            idle_timeout: Duration::from_secs(1),
            discover_deadline: DISCOVER_DEADLINE,
            default_policy: ToolPolicy::default(),
            tools: BTreeMap::new(),
        };
        let d = format!("{c:?}");
        assert!(
            !d.contains("tenant-42") && !d.contains("s3cr3t") && d.contains("Authorization"),
            "{d}"
        );
    }
}
