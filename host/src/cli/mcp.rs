//! `cst-agent mcp list [--json]`, `cst-agent mcp serve`, and the MCP start-up shared by
//! `tools list|call`.

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
    /// Offer the plugin tools (wasm and command) and the `skill` tool to an MCP client, on
    /// stdin/stdout or over HTTP (`--http 127.0.0.1:PORT`). Logs go to stderr.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Permission categories offered and allowed to run, comma-separated: read, write, net,
    /// shell, or all. Tools of other categories are not listed and their calls are refused.
    #[arg(long, default_value = "read", value_name = "CATEGORIES")]
    pub allow: String,
    /// Serve streamable HTTP at http://ADDR/mcp (a loopback address, e.g. 127.0.0.1:8765)
    /// instead of stdin/stdout; runs until interrupted.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Tools per `tools/list` page.
    #[arg(long, default_value_t = cst_mcp_serve::DEFAULT_PAGE_SIZE, value_name = "N")]
    pub page_size: usize,
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
    if let McpCmd::Serve(args) = cmd {
        return serve(cli, args).await;
    }
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
        McpCmd::Serve(_) => {}
    }
    manager.shutdown().await;
    exit::OK
}

/// `mcp serve`: the tools are reached by whoever runs the client, so the folder they work in
/// is chosen on purpose — `--workspace`, else the current project, but never `/` or the home
/// folder itself (a client such as Claude Desktop starts servers there).
async fn serve(cli: &Cli, args: &ServeArgs) -> i32 {
    let allow = match cst_mcp_serve::parse_allow(&args.allow) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let workspace = cli.workspace_dir();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    if cli.workspace.is_none() && (workspace.parent().is_none() || Some(&workspace) == home.as_ref()) {
        eprintln!(
            "error: the tools would reach all of {}; give the folder they may work in with --workspace DIR",
            super::terminal_safe(&workspace.display().to_string())
        );
        return exit::USAGE;
    }
    if !workspace.is_dir() {
        eprintln!(
            "error: --workspace {}: not a folder",
            super::terminal_safe(&workspace.display().to_string())
        );
        return exit::USAGE;
    }
    // The deployment's permission profile and hooks, as a session gets them (fails closed).
    let (hooks, profile) = match super::deployment::session_settings() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}", super::redact(&e));
            return exit::USAGE;
        }
    };
    let opts = cst_mcp_serve::ServeOptions {
        load: cst_extensions::discovery::LoadOptions {
            workspace,
            profile: cli.tools,
        },
        allow,
        profile: profile.profile,
        hooks,
        page_size: args.page_size,
    };
    let (offer, warnings) = cst_mcp_serve::load(opts).await;
    super::print_warnings(&warnings);
    let result = match args.http {
        None => cst_mcp_serve::serve_stdio(offer).await,
        Some(addr) => {
            cst_mcp_serve::serve_http(offer, addr, |bound| {
                eprintln!("serving MCP at http://{bound}/mcp");
            })
            .await
        }
    };
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {}", super::redact(&e));
            exit::FAILURE
        }
    }
}
