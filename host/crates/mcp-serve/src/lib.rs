//! `cst-agent mcp serve`: the registry's plugin tools (wasm components, plugin.json commands)
//! and the `skill` tool, offered to any MCP client over stdio or streamable HTTP. Both protocol
//! eras are answered (the `initialize` handshake and 2026-07-28's `server/discover`); rmcp does
//! the protocol. Every call goes through `Registry::call` — schema validation, time limit,
//! output cap, the wasm sandbox and capabilities, the process sandbox — with [`gate::ServePolicy`]
//! as its permission gate, since no person can approve here. Only JSON-RPC goes to stdout.
//!
//! - [`gate`]: `--allow` and the deployment's profile: what is offered and what may run.
//! - [`offer`]: the offered tools, their annotations, the plugin-folder watch.
//! - [`handler`]: the rmcp handler.

pub mod gate;
pub mod handler;
pub mod offer;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cst_config::deployment::PermissionProfile;
use cst_extensions::discovery::{self, LoadOptions};
use cst_protocol::Diagnostic;
use cst_registry::Perm;
use rmcp::ServiceExt;

pub use gate::{parse_allow, ServePolicy};
pub use handler::ServeHandler;
pub use offer::Offer;

/// Tools per `tools/list` page unless told otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// How often the plugin folders are looked at for installs and removals.
pub const PLUGIN_POLL: Duration = Duration::from_secs(1);

pub struct ServeOptions {
    pub load: LoadOptions,
    pub allow: BTreeSet<Perm>,
    pub profile: PermissionProfile,
    /// The deployment's hooks: calls served here fire the tool events as the agent's do.
    pub hooks: cst_core::hooks::HookSettings,
    pub page_size: usize,
}

/// Discover the extensions (compiling components as a session does) and build what is offered.
/// Returns the load problems too, each naming its file.
pub async fn load(opts: ServeOptions) -> (Arc<Offer>, Vec<Diagnostic>) {
    let load_opts = opts.load.clone();
    let loaded = match tokio::task::spawn_blocking(move || discovery::load(&load_opts)).await {
        Ok(l) => l,
        Err(_) => discovery::load(&opts.load),
    };
    let warnings = loaded.warnings.clone();
    let policy = ServePolicy {
        allow: opts.allow,
        profile: opts.profile,
    };
    let offer = Arc::new(Offer::new(opts.load, loaded, policy, opts.hooks, opts.page_size));
    (offer, warnings)
}

/// Serve one client on stdin/stdout until stdin closes.
pub async fn serve_stdio(offer: Arc<Offer>) -> Result<(), String> {
    let watch = tokio::spawn(offer.clone().watch_plugins(PLUGIN_POLL));
    let result = async {
        let handler = ServeHandler { offer };
        let running = match handler.serve(rmcp::transport::stdio()).await {
            Ok(r) => r,
            // stdin closed before a client said anything: nothing to serve, not an error.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(format!("MCP handshake on stdin/stdout failed: {e}")),
        };
        running
            .waiting()
            .await
            .map_err(|e| format!("serving on stdin/stdout: {e}"))?;
        Ok(())
    }
    .await;
    watch.abort();
    tracing::info!("stdin closed; stopping");
    result
}

/// Serve streamable HTTP at `http://ADDR/mcp` until SIGINT or SIGTERM. Only loopback addresses:
/// there is no authentication, so nothing beyond this machine may reach the tools. `ready` is
/// told the address bound (port 0 picks a free one).
pub async fn serve_http(offer: Arc<Offer>, addr: SocketAddr, ready: impl FnOnce(SocketAddr)) -> Result<(), String> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    if !addr.ip().is_loopback() {
        return Err(format!(
            "--http {addr}: only a loopback address (127.0.0.1, [::1]) may be served; the server has no authentication"
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--http {addr}: cannot listen: {e}"))?;
    let bound = listener.local_addr().map_err(|e| format!("--http {addr}: {e}"))?;
    let ct = tokio_util::sync::CancellationToken::new();
    let factory_offer = offer.clone();
    // rmcp's default config keeps the Host check to loopback names (DNS rebinding); any
    // request carrying an `Origin` (a web page's) is refused too: MCP clients send none.
    let service = StreamableHttpService::new(
        move || {
            Ok(ServeHandler {
                offer: factory_offer.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .enforce_origin_validation()
            .with_cancellation_token(ct.child_token()),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let watch = tokio::spawn(offer.watch_plugins(PLUGIN_POLL));
    ready(bound);
    let stop = ct.clone();
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            stop.cancel();
        })
        .await
        .map_err(|e| format!("serving HTTP on {bound}: {e}"));
    watch.abort();
    result
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
