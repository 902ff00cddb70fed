//! MCP client (M1–M12): stdio servers from mcp.json files and plugins' `mcpServers`.
//!
//! - [`config`] parses [`McpSource`]s into server configs (M1–M6, E7).
//! - [`transport`] spawns a server in its own process group and does the handshake; a second
//!   transport (HTTP) slots in there.
//! - [`manager`] owns the servers: background start, states, tool registration in the shared
//!   [`Registry`], calls with timeout and cancellation, exit, reload, applying a changed
//!   server list and shutdown.
//!
//! Cancelling a call: cancel the `ToolContext::cancel` token of the turn (or drop the call
//! future); the runner drops the request and rmcp sends `notifications/cancelled` (M10).

pub mod config;
pub mod deployment_servers;
pub mod http;
pub mod manager;
pub mod result;
pub mod stderr;
pub mod transport;

use std::sync::Arc;

pub use config::{parse_sources, read_mcp_json, ParsedServer, ServerKind};
pub use manager::{McpChanges, McpManager, ServerInfo, ServerStatus};

use cst_config::McpSource;
use cst_protocol::Diagnostic;
use cst_registry::Registry;

/// Parse `sources` (in precedence order) with the current environment, and start every server
/// in the background. Config problems (E7 clashes, broken files) go to `warnings`.
pub fn start(registry: Arc<Registry>, sources: &[McpSource], warnings: &mut Vec<Diagnostic>) -> McpManager {
    let parsed = parse_sources(sources, &config::process_env, warnings);
    let manager = McpManager::new(registry, parsed);
    manager.start_all();
    manager
}

/// [`start`], with the deployment config's HTTP servers (D5) offered to `workspace`'s repository
/// (D11) ahead of the mcp.json servers. The deployment file is the installed one
/// ([`cst_config::deployment::load`]); an invalid one is a warning here (the binary refuses to
/// start a session under it before this).
pub fn start_session(
    registry: Arc<Registry>,
    sources: &[McpSource],
    workspace: &std::path::Path,
    warnings: &mut Vec<Diagnostic>,
) -> McpManager {
    let mut parsed = deployment(workspace, warnings);
    parsed.extend(parse_sources(sources, &config::process_env, warnings));
    let manager = McpManager::new(registry, parsed);
    manager.start_all();
    manager
}

/// The installed deployment config's servers offered to `workspace`.
pub fn deployment(workspace: &std::path::Path, warnings: &mut Vec<Diagnostic>) -> Vec<ParsedServer> {
    match cst_config::deployment::load() {
        Ok(installed) => {
            let identity = crate::repo_identity::workspace_identity(workspace);
            deployment_servers::parsed_servers(
                &installed.effective(),
                &installed.path,
                identity.as_deref(),
                &config::process_env,
            )
        }
        Err(e) => {
            warnings.push(Diagnostic::new(
                cst_protocol::DiagnosticKind::McpServer,
                format!("deployment MCP servers not started: {e}"),
            ));
            Vec::new()
        }
    }
}

/// Re-read `sources` (the mcp.json files and plugins' servers, in precedence order) and bring
/// `manager` in line with them (E8 `/mcp reload`): added servers start, removed ones stop,
/// changed ones restart and unchanged ones keep running. See [`McpManager::apply`].
pub async fn reload_sources(manager: &McpManager, sources: &[McpSource], warnings: &mut Vec<Diagnostic>) -> McpChanges {
    // Parsed to completion before the await: `parse_sources` borrows `warnings` only here.
    // The deployment servers stay as they are: workspace files do not change them.
    let mut parsed = manager.deployment_servers();
    parsed.extend(parse_sources(sources, &config::process_env, warnings));
    manager.apply(parsed).await
}
