//! `cst-agent status` (alias `doctor`): the E9 summary line, the sandbox (P11) and, for an
//! untrusted workspace with `.agent/plugins` or `.agent/mcp.json`, the T1 hint.

use super::{exit, Cli};
use cst_extensions::discovery;

pub fn run(cli: &Cli) -> i32 {
    let workspace = cli.workspace_dir();
    let loaded = cli.load();
    super::print_warnings(&loaded.warnings);
    println!("{}", discovery::summary_line(&loaded));
    println!("workspace: {}", workspace.display());
    println!("sandbox: {}", cst_extensions::sandbox::status());
    if let Some(hint) = &loaded.untrusted_hint {
        println!("{hint}");
    }
    exit::OK
}
