//! `cst-agent` with no subcommand: the interactive TUI (crate `cst-tui`). This side builds the
//! session and hands the TUI what only the binary's lower layers know (sandbox, trust).

use super::Cli;
use cst_core::approvals::ApprovalMode;
use cst_core::model::{ModelClient, ModelConfig, ModelOverrides};
use cst_core::SessionBuilder;
use cst_tui::app::{Startup, TrustFn};

/// Options of the interactive session (given before any subcommand).
#[derive(Debug, Clone, clap::Args)]
pub struct TuiArgs {
    /// Approval mode of the session (`/approval` changes it later).
    #[arg(long, value_enum, default_value_t = ApprovalMode::Auto)]
    pub approval: ApprovalMode,
    /// Model name (overrides settings.json `model.name`; `/model` changes it later).
    #[arg(long, env = "CST_MODEL")]
    pub model: Option<String>,
    /// Chat Completions base URL (overrides OPENAI_BASE_URL and settings.json `model.base_url`).
    #[arg(long, value_name = "URL", env = "CST_BASE_URL")]
    pub base_url: Option<String>,
}

pub async fn run(cli: &Cli, args: &TuiArgs) -> i32 {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("error: the interactive session needs a terminal; use `cst-agent exec \"PROMPT\"` in scripts");
        return super::exit::USAGE;
    }
    let workspace = cli.workspace_dir();
    if !workspace.is_dir() {
        eprintln!("error: workspace {} is not a folder", workspace.display());
        return super::exit::USAGE;
    }
    let config = match ModelConfig::resolve(&ModelOverrides {
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return super::exit::USAGE;
        }
    };
    let model_name = config.name.clone();
    let model = match ModelClient::new(config) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: cannot set up the HTTP client: {e:#}");
            return super::exit::FAILURE;
        }
    };
    // The TUI never waits for MCP servers: the sidebar shows them arrive (M7, M12).
    let session = SessionBuilder::new(workspace.clone(), model)
        .profile(cli.tools)
        .approval(args.approval)
        .headless(false)
        .mcp_wait(None)
        .build()
        .await;
    let startup = Startup {
        workspace: workspace.clone(),
        model: model_name,
        approval: args.approval.as_str().into(),
        sandbox: cst_extensions::sandbox::status().to_string(),
        summary: session.summary.clone(),
        untrusted_hint: session.untrusted_hint.clone(),
        warnings: session.warnings.iter().map(|w| super::redact(&w.to_string())).collect(),
        completions: Vec::new(),
        redact: super::redact,
    };
    let ws = workspace.clone();
    let trust: TrustFn = Box::new(move |trusted| {
        if trusted {
            cst_config::trust::trust(&ws)
                .map(|real| format!("trusted workspace: {}", real.display()))
                .map_err(|e| e.to_string())
        } else {
            cst_config::trust::untrust(&ws)
                .map(|was| if was { "workspace no longer trusted".to_string() } else { "the workspace was not trusted".to_string() })
                .map_err(|e| e.to_string())
        }
    });
    cst_tui::run(session, startup, Some(trust), Vec::new()).await
}
