//! `cst-agent tools list|call`.

use std::io::Read;

use clap::Subcommand;
use serde_json::{json, Value};

use super::{exit, Cli};
use cst_extensions::discovery;
use cst_registry::{CallError, ToolContext};

#[derive(Debug, Subcommand)]
pub enum ToolsCmd {
    /// Every tool: name, source, permission category and input schema.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Run one tool through the registry (validation, limits) and print its result.
    Call {
        name: String,
        /// Arguments as a JSON object; `-` reads them from stdin.
        #[arg(long, default_value = "{}")]
        args: String,
    },
}

pub async fn run(cli: &Cli, cmd: &ToolsCmd) -> i32 {
    let workspace = cli.workspace_dir();
    let loaded = cli.load();
    super::print_warnings(&loaded.warnings);
    // MCP servers are started (and waited for) only when MCP tools are wanted.
    let mcp = match cmd {
        ToolsCmd::List { .. } => Some(super::mcp::start_and_wait(&loaded, &workspace, true).await),
        ToolsCmd::Call { name, .. } if name.starts_with("mcp__") => {
            Some(super::mcp::start_and_wait(&loaded, &workspace, true).await)
        }
        ToolsCmd::Call { .. } => None,
    };
    let code = run_cmd(cmd, &loaded, workspace).await;
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
    code
}

async fn run_cmd(cmd: &ToolsCmd, loaded: &discovery::Loaded, workspace: std::path::PathBuf) -> i32 {
    match cmd {
        ToolsCmd::List { json } => {
            let specs = loaded.registry.specs();
            if *json {
                let list: Vec<Value> = specs
                    .iter()
                    .map(|s| {
                        json!({
                            "name": s.name, "description": s.description, "perm": s.perm,
                            "source": s.source.kind, "owner": s.source.owner,
                            "file": s.source.file, "input_schema": s.input_schema,
                            "timeout_secs": s.timeout.as_secs(),
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
            } else {
                for s in &specs {
                    println!(
                        "{:<32} {:<5} {:<8} {}",
                        super::terminal_safe(&s.name),
                        s.perm.as_str(),
                        s.source.kind.as_str(),
                        super::terminal_safe(&s.source.owner)
                    );
                }
            }
            exit::OK
        }
        ToolsCmd::Call { name, args } => {
            let text = if args == "-" {
                let mut s = String::new();
                if let Err(e) = std::io::stdin().read_to_string(&mut s) {
                    eprintln!("error: cannot read arguments from stdin: {e}");
                    return exit::USAGE;
                }
                s
            } else {
                args.clone()
            };
            let value: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: --args is not valid JSON: {e}");
                    return exit::USAGE;
                }
            };
            let ctx = ToolContext::new(workspace);
            let cancel = ctx.cancel.clone();
            // Ctrl-C cancels the call; runners clean up (process groups, MCP cancel).
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            });
            match loaded.registry.call(name, value, &ctx).await {
                Ok(out) => {
                    println!("{}", super::redact(&out));
                    exit::OK
                }
                Err(e) => {
                    eprintln!("error: {}", super::redact(&e.to_string()));
                    if let CallError::Failed { exit_code: Some(c), .. } = &e {
                        eprintln!("(exit code {c})");
                    }
                    e.exit_code()
                }
            }
        }
    }
}
