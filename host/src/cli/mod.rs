//! The `cst-agent` command line: a thin client of the library.

pub mod admin;
pub mod agents;
pub mod deployment;
pub mod exec;
pub mod mcp;
pub mod plugins;
pub mod session_args;
pub mod status;
pub mod tools;
pub mod trust;
pub mod tui;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use cst_config::ToolsProfile;
use cst_protocol::Diagnostic;

/// Exit codes shared by every command.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILURE: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const TIMEOUT: i32 = 124;
}

#[derive(Debug, Parser)]
#[command(name = "cst-agent", version, about = "AI coding-agent host and plugin platform")]
pub struct Cli {
    /// Workspace root (default: the nearest folder upwards holding `.git` or `.agent/`, else the
    /// current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    // E1. Doc comments on clap items are the `--help` text: no rule ids in them.
    /// Tool profile: `default` loads extensions, `minimal` loads none.
    #[arg(long, global = true, value_enum, default_value_t = ToolsProfile::Default)]
    pub tools: ToolsProfile,
    /// Without a subcommand: the interactive session's options.
    #[command(flatten)]
    pub tui: tui::TuiArgs,
    /// Without one, `cst-agent` opens the interactive session (TUI).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List and call tools through the registry.
    #[command(subcommand)]
    Tools(tools::ToolsCmd),
    /// Run one agent turn headless: summary on stderr, final answer (or `--json` events) on stdout.
    Exec(exec::ExecArgs),
    /// Install, list and remove plugins; trust the workspace.
    #[command(subcommand)]
    Plugins(plugins::PluginsCmd),
    /// MCP servers from mcp.json files and plugins.
    #[command(subcommand)]
    Mcp(mcp::McpCmd),
    /// Sub-agent roles, and the sub-agent transcripts of a session.
    #[command(subcommand)]
    Agents(agents::AgentsCmd),
    // E9, P11, T1.
    /// The extensions summary, the sandbox and the trust hint.
    #[command(alias = "doctor")]
    Status,
    /// The administrator's deployment config: check a file, show the installed one.
    #[command(subcommand)]
    Deployment(deployment::DeploymentCmd),
    /// The admin pages: the deployment config's inventory and editor, the settings page.
    #[command(subcommand)]
    Admin(admin::AdminCmd),
    /// Print a shell completion script: `cst-agent completions bash > ~/.local/share/bash-completion/completions/cst-agent`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Print load problems (broken files, clashes) to stderr, one a line: `warning: {file}: {message}`.
/// Names, descriptions and paths in them can come from a workspace: control characters are
/// escaped ([`terminal_safe`]).
pub fn print_warnings(warnings: &[Diagnostic]) {
    for w in warnings {
        eprintln!("warning: {}", terminal_safe(&redact(&w.to_string())));
    }
}

/// `text` with every secret the host knows replaced by `[REDACTED]` (the API key, the `${NAME}`
/// values expanded into MCP servers): for everything printed to stderr or stdout.
pub fn redact(text: &str) -> String {
    cst_config::secrets::redact(text)
}

/// `text` with every control character escaped (`\u{1b}`), so text from a workspace (names,
/// descriptions, file names) never reaches the terminal raw: no escape sequence can set the
/// title, clear the screen or move the cursor (issue 13 item 8).
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

impl Cli {
    /// Discover this session's extensions (E1–E7) for the chosen workspace and profile.
    pub fn load(&self) -> cst_extensions::discovery::Loaded {
        cst_extensions::discovery::load(&cst_extensions::discovery::LoadOptions {
            workspace: self.workspace_dir(),
            profile: self.tools,
        })
    }

    /// `--workspace`, else the project the current folder belongs to ([`find_workspace_root`]).
    pub fn workspace_dir(&self) -> PathBuf {
        match &self.workspace {
            // dunce: on Windows `C:\…` where it is the same folder, not `\\?\C:\…`, which users do not
            // recognise in messages and which takes no `/` in paths joined to it.
            Some(ws) => dunce::canonicalize(ws).unwrap_or_else(|_| ws.clone()),
            None => {
                let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                let here = dunce::canonicalize(&here).unwrap_or(here);
                find_workspace_root(&here)
            }
        }
    }
}

/// The nearest folder from `start` upwards that holds `.git` (a repository or a worktree's
/// `.git` file) or an `.agent/` folder; `start` itself when none does. Run from `repo/src`,
/// the session still gets the repository's `AGENTS.md`, skills and trust, as Codex and Claude
/// Code find the project root.
pub fn find_workspace_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists() || dir.join(".agent").is_dir())
        .unwrap_or(start)
        .to_path_buf()
}

/// Run a parsed command line; returns the process exit code.
pub async fn run(cli: Cli) -> i32 {
    // D1: a session never starts under an installed deployment file that is invalid. Every
    // command says here whether it starts a session; the check is made once, for all of them.
    let starts_session = match &cli.command {
        None | Some(Command::Exec(_) | Command::Tools(_) | Command::Mcp(_)) => true,
        Some(
            Command::Plugins(_)
            | Command::Agents(_)
            | Command::Status
            | Command::Deployment(_)
            | Command::Admin(_)
            | Command::Completions { .. },
        ) => false,
    };
    if starts_session {
        if let Err(e) = deployment::check_before_session() {
            eprintln!("error: {}", deployment::terminal_safe_lines(&redact(&e)));
            return exit::USAGE;
        }
    }
    let Some(command) = &cli.command else {
        return tui::run(&cli, &cli.tui).await;
    };
    match command {
        Command::Tools(cmd) => tools::run(&cli, cmd).await,
        Command::Exec(args) => exec::run(&cli, args).await,
        Command::Plugins(cmd) => plugins::run(&cli, cmd).await,
        Command::Mcp(cmd) => mcp::run(&cli, cmd).await,
        Command::Agents(cmd) => agents::run(&cli, cmd),
        Command::Status => status::run(&cli),
        Command::Deployment(cmd) => deployment::run(cmd),
        Command::Admin(cmd) => admin::run(cmd).await,
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "cst-agent", &mut std::io::stdout());
            0
        }
    }
}
