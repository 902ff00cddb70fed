//! `cst-agent plugins trust|untrust` (T2), the CLI twin of `/plugins trust|untrust`: stores or
//! removes the workspace's canonical real path in settings.json `trusted_workspaces`.

use clap::Subcommand;

use super::{exit, Cli};

/// The two trust commands; `PluginsCmd` embeds these (`plugins trust`, `plugins untrust`).
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum TrustCmd {
    // T2. Doc comments here are `--help` text: no rule ids in them.
    /// Trust the workspace: its `.agent/plugins` and `.agent/mcp.json` load from now on.
    Trust,
    /// Revoke the trust of the workspace.
    Untrust,
}

pub fn run(cli: &Cli, cmd: TrustCmd) -> i32 {
    let ws = cli.workspace_dir();
    match cmd {
        TrustCmd::Trust => match cst_config::trust::trust(&ws) {
            Ok(real) => {
                println!("trusted workspace: {}", real.display());
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::FAILURE
            }
        },
        TrustCmd::Untrust => match cst_config::trust::untrust(&ws) {
            Ok(true) => {
                println!("untrusted workspace: {}", ws.display());
                exit::OK
            }
            Ok(false) => {
                println!("workspace was not trusted: {}", ws.display());
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::FAILURE
            }
        },
    }
}
