//! `cst-agent status` (alias `doctor`): the E9 summary line, the sandbox (P11) and, for an
//! untrusted workspace with `.agent/plugins` or `.agent/mcp.json`, the T1 hint; the deployment
//! file with its counts and the permission profile (D1, D2). It runs even when the deployment file
//! is invalid, to say so.

use super::{exit, Cli};
use cst_extensions::discovery;

pub fn run(cli: &Cli) -> i32 {
    let workspace = cli.workspace_dir();
    let loaded = cli.load();
    super::print_warnings(&loaded.warnings);
    println!("{}", discovery::summary_line(&loaded));
    println!("workspace: {}", workspace.display());
    println!("sandbox: {}", cst_extensions::sandbox::status());
    match cst_config::deployment::load() {
        Ok(d) => match &d.config {
            Some(c) => println!(
                "deployment: {} ({})",
                super::terminal_safe(&d.path.display().to_string()),
                super::deployment::counts(c)
            ),
            None => println!("deployment: none"),
        },
        Err(e) => {
            println!(
                "deployment: {} (invalid: {} problem{}; sessions refuse to start)",
                super::terminal_safe(&e.path.display().to_string()),
                e.problems.len(),
                if e.problems.len() == 1 { "" } else { "s" }
            );
            eprintln!("error: {}", super::deployment::terminal_safe_lines(&e.to_string()));
        }
    }
    match super::deployment::permission_profile() {
        Ok(p) => println!("permission profile: {}", p.describe()),
        Err(e) => {
            println!("permission profile: invalid (sessions refuse to start)");
            eprintln!("error: {}", super::terminal_safe(&e));
        }
    }
    if let Some(hint) = &loaded.untrusted_hint {
        println!("{hint}");
    }
    exit::OK
}
