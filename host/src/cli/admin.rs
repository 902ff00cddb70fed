//! `cst-agent admin serve|add-user|reset-token`: the admin pages (`cst-admin`) on a loopback
//! address, and the sign-in tokens (docs/admin.md).

use std::io::Write;
use std::net::SocketAddr;

use clap::Subcommand;

use cst_admin::auth::{self, Credentials};
use cst_config::deployment;

use super::{exit, terminal_safe};

// D3, D4, D9, D10. Doc comments here are `--help` text: no rule ids in them.
#[derive(Debug, Clone, Subcommand)]
pub enum AdminCmd {
    /// Serve the admin pages (/agent-plugins/ for the deployment config, /settings/) on a
    /// loopback address. The first start prints the super-admin token once.
    Serve {
        /// Where to listen: a loopback address only (127.0.0.1 or [::1]); port 0 picks a free one.
        #[arg(long, default_value = "127.0.0.1:8765", value_name = "ADDR:PORT")]
        listen: SocketAddr,
    },
    /// Create (or replace) an ordinary user's sign-in token for the settings page; printed once.
    AddUser {
        /// The user's name: letters, digits, `-` and `_`.
        name: String,
    },
    /// Replace the super-admin token (the old one stops working); printed once.
    ResetToken,
}

fn credentials() -> Result<Credentials, String> {
    Credentials::load(&auth::default_path()?)
}

pub async fn run(cmd: &AdminCmd) -> i32 {
    match cmd {
        AdminCmd::AddUser { name } => match credentials().and_then(|mut c| c.add_user(name)) {
            Ok(token) => {
                println!(
                    "token for user {} (shown once; it signs in to /settings/ only):",
                    terminal_safe(name)
                );
                println!("{token}");
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {}", terminal_safe(&e));
                exit::USAGE
            }
        },
        AdminCmd::ResetToken => match credentials().and_then(|mut c| c.reset_super_admin()) {
            Ok(token) => {
                println!("new super-admin token (shown once; the old one no longer works):");
                println!("{token}");
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {}", terminal_safe(&e));
                exit::FAILURE
            }
        },
        AdminCmd::Serve { listen } => serve(*listen).await,
    }
}

async fn serve(listen: SocketAddr) -> i32 {
    // The pages hold the deployment config and sign-in cookies over plain HTTP: only this
    // machine may reach them. A remote admin tunnels (`ssh -L`) rather than exposing the port.
    if !listen.ip().is_loopback() {
        eprintln!(
            "error: --listen {listen}: not a loopback address; the admin pages listen on 127.0.0.1 or [::1] only \
             (reach them from another machine through an SSH tunnel: ssh -L 8765:127.0.0.1:8765 HOST)"
        );
        return exit::USAGE;
    }
    let mut creds = match credentials() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}", terminal_safe(&e));
            return exit::FAILURE;
        }
    };
    let settings_file = match cst_config::settings::settings_path() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {listen}: {e}");
            return exit::FAILURE;
        }
    };
    let addr = listener.local_addr().unwrap_or(listen);
    match creds.ensure_super_admin() {
        Ok(Some(token)) => {
            println!(
                "super-admin token (shown once, stored hashed in {}):",
                terminal_safe(&creds.path().display().to_string())
            );
            println!("{token}");
        }
        Ok(None) => {}
        Err(e) => {
            eprintln!("error: {}", terminal_safe(&e));
            return exit::FAILURE;
        }
    }
    println!("admin pages: http://{addr}/agent-plugins/");
    let _ = std::io::stdout().flush();
    let opts = cst_admin::Options {
        deployment_file: deployment::installed_path(),
        settings_file,
        credentials_file: creds.path().to_path_buf(),
    };
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match cst_admin::serve(listener, opts, shutdown).await {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: the admin server stopped: {e}");
            exit::FAILURE
        }
    }
}
