//! `cst-agent plugins install|list|remove` (H4).

use std::path::PathBuf;

use clap::Subcommand;

use super::{exit, Cli};
use cst_extensions::plugins::install;

#[derive(Debug, Subcommand)]
pub enum PluginsCmd {
    /// Install a `.wasm` component or a folder with plugin.json into the config dir.
    Install { path: PathBuf },
    /// Installed plugins, their tools and status.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed plugin.
    Remove { name: String },
    // T2: `plugins trust` / `plugins untrust`.
    #[command(flatten)]
    Trust(super::trust::TrustCmd),
}

pub async fn run(cli: &Cli, cmd: &PluginsCmd) -> i32 {
    if let PluginsCmd::Trust(t) = cmd {
        return super::trust::run(cli, *t);
    }
    let plugins_dir = match cst_config::config_dir::plugins_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: config dir: {e}");
            return exit::FAILURE;
        }
    };
    match cmd {
        PluginsCmd::Install { path } => match install::install(path, &plugins_dir, &cli.workspace_dir()).await {
            Ok(done) => {
                let tools = if done.tools.is_empty() {
                    String::new()
                } else {
                    let n = done.tools.len();
                    format!(
                        " ({n} tool{}: {})",
                        if n == 1 { "" } else { "s" },
                        done.tools.join(", ")
                    )
                };
                println!("installed {}{tools} into {}", done.name, done.dir.display());
                print_capabilities(&done.dir);
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::FAILURE
            }
        },
        PluginsCmd::List { json } => {
            let rows = install::list(&plugins_dir);
            if *json {
                println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
            } else if rows.is_empty() {
                println!("no plugins installed in {}", plugins_dir.display());
            } else {
                for r in &rows {
                    let kind = if r.wasm.is_some() { "wasm" } else { "plugin" };
                    println!(
                        "{:<24} {:<6} {:>2} tools  {}",
                        super::terminal_safe(&r.name),
                        kind,
                        r.tools.len(),
                        super::terminal_safe(&r.status)
                    );
                }
            }
            exit::OK
        }
        PluginsCmd::Remove { name } => match install::remove(&plugins_dir, name) {
            Ok(dir) => {
                println!("removed {name} ({})", dir.display());
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::USAGE
            }
        },
        PluginsCmd::Trust(_) => unreachable!("handled above"),
    }
}

/// What the installed plugin may reach (D13), `env:NAME` entries first: each one hands the
/// plugin the value of a host variable, possibly a secret.
fn print_capabilities(dir: &std::path::Path) {
    let Ok(manifest) = cst_extensions::plugins::PluginManifest::load(&dir.join("plugin.json")) else {
        return;
    };
    if manifest.wasm.is_none() {
        return;
    }
    let mut caps = manifest.capabilities.clone();
    caps.sort_by_key(|c| !c.starts_with("env:"));
    if caps.is_empty() {
        println!("capabilities granted: none (no files, no environment, no network)");
        return;
    }
    println!("capabilities granted: {}", caps.join(", "));
    for c in &caps {
        if let Some(name) = c.strip_prefix("env:") {
            println!("  {c}: the plugin can read the host variable {name}");
        }
    }
}
