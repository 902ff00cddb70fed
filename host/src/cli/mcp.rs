//! `cst-agent mcp list [--json]`, and the MCP start-up shared by `tools list|call`.

use clap::Subcommand;
use serde_json::{json, Value};

use super::{exit, Cli};
use cst_extensions::discovery::Loaded;
use cst_extensions::mcp::{self, McpManager};

#[derive(Debug, Subcommand)]
pub enum McpCmd {
    // M7
    /// Every MCP server: status and tool count (waits up to 30 s for servers still starting).
    List {
        #[arg(long)]
        json: bool,
    },
}

/// Start the session's MCP servers into `loaded.registry` and wait for them as every headless
/// run does, up to [`mcp::manager::HEADLESS_WAIT`] (M7). Warnings go to stderr.
/// What a headless run prints when MCP servers keep it waiting (after 2 s).
pub fn print_waiting(names: &[String]) {
    eprintln!("waiting for MCP servers: {}", super::terminal_safe(&names.join(", ")));
}

/// With `report_failures`, servers that failed or exited are warnings too (`tools`; `mcp list`
/// shows them in its list).
pub async fn start_and_wait(loaded: &Loaded, workspace: &std::path::Path, report_failures: bool) -> McpManager {
    let mut warnings = Vec::new();
    // With the deployment config's HTTP servers (D5).
    let manager = mcp::start_session(loaded.registry.clone(), &loaded.mcp_sources, workspace, &mut warnings);
    let wait = mcp::manager::HEADLESS_WAIT;
    manager.wait_ready_with_notice(wait, &print_waiting).await;
    warnings.extend(manager.warnings());
    warnings.extend(manager.still_starting(wait));
    if report_failures {
        warnings.extend(manager.failures());
    }
    super::print_warnings(&warnings);
    manager
}

pub async fn run(cli: &Cli, cmd: &McpCmd) -> i32 {
    let loaded = cli.load();
    super::print_warnings(&loaded.warnings);
    let manager = start_and_wait(&loaded, &cli.workspace_dir(), false).await;
    let servers = manager.servers();
    match cmd {
        McpCmd::List { json } => {
            if *json {
                let list: Vec<Value> = servers
                    .iter()
                    .map(|s| {
                        let reason = match &s.status {
                            mcp::ServerStatus::Failed(r) | mcp::ServerStatus::Exited(r) => Some(r.clone()),
                            _ => None,
                        };
                        json!({
                            "name": s.name, "status": s.status.label(), "reason": reason,
                            "tool_count": s.tools.len(), "tools": s.tools, "file": s.file,
                            "origin": s.origin, "pid": s.pid,
                        })
                    })
                    .collect();
                println!(
                    "{}",
                    super::redact(&serde_json::to_string_pretty(&list).unwrap_or_default())
                );
            } else if servers.is_empty() {
                println!("no MCP servers");
            } else {
                for s in &servers {
                    // Names come from mcp.json files, reasons from a server's stderr: escaped.
                    println!(
                        "{:<24} {:<9} {:>3} tools  {}",
                        super::terminal_safe(&s.name),
                        s.status.label(),
                        s.tools.len(),
                        super::terminal_safe(&s.origin)
                    );
                    if let mcp::ServerStatus::Failed(r) | mcp::ServerStatus::Exited(r) = &s.status {
                        println!("    {}", super::terminal_safe(&super::redact(r)));
                    }
                }
            }
        }
    }
    manager.shutdown().await;
    exit::OK
}
