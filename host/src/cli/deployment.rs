//! `cst-agent deployment check FILE|show`, and the start-up check every session command passes:
//! an installed deployment file that exists but is invalid, or an unknown permission profile,
//! refuses the session (exit 2) rather than guess what the admin meant.

use std::path::PathBuf;

use clap::Subcommand;

use cst_config::deployment::{self, ProfileSetting};

use super::{exit, terminal_safe};

// D1, D9. Doc comments here are `--help` text: no rule ids in them.
#[derive(Debug, Clone, Subcommand)]
pub enum DeploymentCmd {
    /// Validate a deployment file (not the installed one) without applying it: `ok` and its
    /// counts, or every problem with the path of its field.
    Check {
        /// The deployment JSON file to check.
        file: PathBuf,
    },
    /// Print the installed deployment config in force as JSON, every header value masked.
    Show,
}

pub fn run(cmd: &DeploymentCmd) -> i32 {
    match cmd {
        DeploymentCmd::Check { file } => match deployment::load_file(file, false) {
            Ok(Some(c)) => {
                println!("ok: {}", counts(&c));
                exit::OK
            }
            Ok(None) => {
                eprintln!("error: {}: no such file", terminal_safe(&file.display().to_string()));
                exit::USAGE
            }
            Err(e) => {
                eprintln!("error: {}", terminal_safe_lines(&e.to_string()));
                exit::USAGE
            }
        },
        DeploymentCmd::Show => match deployment::load() {
            Ok(installed) => {
                let path = terminal_safe(&installed.path.display().to_string());
                if installed.config.is_none() {
                    eprintln!("no deployment file at {path}: the defaults (no MCP servers, no hooks)");
                } else {
                    eprintln!("deployment file: {path}");
                }
                let json = serde_json::to_string_pretty(&installed.effective().masked()).unwrap_or_default();
                println!("{}", terminal_safe_lines(&json));
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {}", terminal_safe_lines(&e.to_string()));
                exit::USAGE
            }
        },
    }
}

/// `N MCP servers, M hooks`.
pub fn counts(c: &deployment::DeploymentConfig) -> String {
    let (s, h) = (c.mcp.servers.len(), c.hooks.len());
    format!(
        "{s} MCP server{}, {h} hook{}",
        if s == 1 { "" } else { "s" },
        if h == 1 { "" } else { "s" }
    )
}

/// `text` line by line through [`terminal_safe`]: its own line breaks stay (an error lists one
/// problem a line; pretty JSON), every other control character is escaped.
pub fn terminal_safe_lines(text: &str) -> String {
    text.lines().map(terminal_safe).collect::<Vec<_>>().join("\n")
}

/// The start-up check of every session command: the installed deployment file (when there is
/// one) is valid, and the permission profile is known. The error names the file and every
/// problem. The later parts of the deployment layer take the config from here.
pub fn check_before_session() -> Result<(), String> {
    let installed = deployment::load().map_err(|e| {
        format!(
            "{e}\nno session starts until it is fixed (`cst-agent deployment check {}` lists the problems)",
            e.path.display()
        )
    })?;
    let profile = profile_of(&installed)?;
    // D10: the log says how many servers and hooks and which profile, never a URL, a header or
    // a command's arguments.
    tracing::info!(
        "deployment: {}, permission profile {}",
        counts(&installed.effective()),
        profile.describe()
    );
    Ok(())
}

/// What a session takes from the deployment: the hooks of the installed deployment file
/// (D14–D18: only enabled ones, only from that file, never from a workspace, D16) and the
/// permission profile (D2). It fails closed: a file that cannot be read or is invalid now (it
/// changed since [`check_before_session`]) starts no session, rather than one without its
/// required hooks.
pub fn session_settings() -> Result<(cst_core::hooks::HookSettings, ProfileSetting), String> {
    let installed = deployment::load().map_err(|e| e.to_string())?;
    let hooks = cst_core::hooks::HookSettings::from_deployment(&installed.effective());
    Ok((hooks, profile_of(&installed)?))
}

/// The permission profile in force and who chose it (D2): the installed deployment file's, else
/// the user's settings.json `permission_profile`, else nobody's. A settings file that cannot be
/// read is reported by the commands that read it, not here.
pub fn permission_profile() -> Result<ProfileSetting, String> {
    let installed = deployment::load().map_err(|e| e.to_string())?;
    profile_of(&installed)
}

fn profile_of(installed: &deployment::Installed) -> Result<ProfileSetting, String> {
    let settings = cst_config::settings::Settings::load().ok();
    deployment::resolve_profile(installed.config.as_ref(), settings.as_ref())
}
