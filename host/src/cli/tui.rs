//! `cst-agent` with no subcommand: the interactive TUI (crate `cst-tui`). This side builds the
//! session and hands the TUI what only the binary's lower layers know (sandbox, trust).

use super::Cli;
use cst_core::approvals::ApprovalMode;
use cst_core::model::ModelClient;
use cst_core::transcript::Record;
use cst_core::{resume, SessionBuilder};
use cst_protocol::Outcome;
use cst_tui::app::{Startup, TrustFn};
use cst_tui::Replay;

/// Options of the interactive session (given before any subcommand).
#[derive(Debug, Clone, clap::Args)]
pub struct TuiArgs {
    /// Approval mode of the session (`/approval` changes it later).
    #[arg(long, value_enum, default_value_t = ApprovalMode::Auto)]
    pub approval: ApprovalMode,
    /// Model name (overrides settings.json `model.name`; `/model` changes it later).
    #[arg(long, env = "CST_MODEL")]
    pub model: Option<String>,
    /// Base URL of the model server (overrides the provider's, OPENAI_BASE_URL and settings.json
    /// `model.base_url`).
    #[arg(long, value_name = "URL", env = "CST_BASE_URL")]
    pub base_url: Option<String>,
    #[command(flatten)]
    pub session: super::session_args::SessionArgs,
}

/// What the chat shows of a reopened conversation: its messages and tool calls.
fn replay(resumed: &resume::Resumed) -> Vec<Replay> {
    let outcome = |s: &str| match s {
        "ok" => Outcome::Ok,
        "denied" => Outcome::Denied,
        "timeout" => Outcome::TimedOut,
        "cancelled" => Outcome::Cancelled,
        _ => Outcome::Error,
    };
    resumed
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Message { role, content, .. } => Some(Replay::Message {
                role: role.clone(),
                text: super::redact(content),
            }),
            Record::ToolCall {
                call_id,
                tool,
                source,
                args,
                result,
                outcome: o,
                duration_ms,
                ..
            } => Some(Replay::Tool {
                call_id: call_id.clone(),
                tool: tool.clone(),
                source: source.clone(),
                args: args.clone(),
                output: super::redact(result),
                outcome: outcome(o),
                duration: std::time::Duration::try_from_secs_f64(duration_ms / 1000.0).unwrap_or_default(),
            }),
            _ => None,
        })
        .collect()
}

pub async fn run(cli: &Cli, args: &TuiArgs) -> i32 {
    let workspace = cli.workspace_dir();
    if !workspace.is_dir() {
        eprintln!("error: workspace {} is not a folder", workspace.display());
        return super::exit::USAGE;
    }
    let resumed = match args.session.resumed(&workspace) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return super::exit::USAGE;
        }
    };
    let config = match args
        .session
        .model_config(args.model.clone(), args.base_url.clone(), resumed.as_ref())
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return super::exit::USAGE;
        }
    };
    // After the checks above, so their errors are said the same with or without a terminal.
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("error: the interactive session needs a terminal; use `cst-agent exec \"PROMPT\"` in scripts");
        return super::exit::USAGE;
    }
    let model_name = config.name.clone();
    let model = match ModelClient::new(config) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: cannot set up the HTTP client: {e:#}");
            return super::exit::FAILURE;
        }
    };
    // The TUI never waits for MCP servers: the sidebar shows them arrive (M7, M12).
    // The deployment's hooks and profile; a file that broke since the start-up check stops here.
    let (hooks, profile) = match super::deployment::session_settings() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("error: {e}");
            return super::exit::USAGE;
        }
    };
    let mut builder = SessionBuilder::new(workspace.clone(), model)
        .profile(cli.tools)
        .permission_profile(profile.chosen())
        .approval(args.approval)
        .headless(false)
        .mcp_wait(None);
    let mut shown = Vec::new();
    if let Some(r) = resumed {
        shown = replay(&r);
        builder = builder.resume(r);
    }
    let session = builder.hooks(hooks).build().await;
    let startup = Startup {
        workspace: workspace.clone(),
        model: model_name,
        approval: args.approval.as_str().into(),
        sandbox: cst_extensions::sandbox::status().to_string(),
        summary: session.summary.clone(),
        untrusted_hint: session.untrusted_hint.clone(),
        warnings: session.warnings.iter().map(|w| super::redact(&w.to_string())).collect(),
        completions: session.completions.clone(),
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
                .map(|was| {
                    if was {
                        "workspace no longer trusted".to_string()
                    } else {
                        "the workspace was not trusted".to_string()
                    }
                })
                .map_err(|e| e.to_string())
        }
    });
    cst_tui::run(session, startup, Some(trust), shown).await
}
