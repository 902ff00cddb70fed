//! plugin.json command tools (P1–P10): a [`ToolRunner`] that runs the declared command as a
//! native process through [`crate::process::run_captured`].
//!
//! - `command` as an array runs directly; an element naming a file in the plugin folder (relative
//!   path) becomes that file's absolute path; a string runs under `sh -c` (P4);
//! - the arguments, already validated by the registry against the full JSON Schema, go to stdin
//!   as one JSON object (P5, P8);
//! - cwd = workspace root; env adds `CST_PLUGIN_DIR`, `CST_WORKSPACE`, `CST_TOOL` (P9) to the
//!   host's environment without its secrets ([`crate::child_env`]); while the workspace is
//!   untrusted (T1) cwd = the plugin folder, with `PYTHONSAFEPATH=1`;
//! - stdout+stderr in order, capped, non-zero exit = failure (P10); timeout = group killed, 124 (P7);
//! - POSIX only (P12): elsewhere [`register_all`] skips them with one message.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::plugin_manifest::{CommandLine, PluginManifest};
use crate::process::{run_captured, ProcessSpec};
use cst_protocol::{Diagnostic, DiagnosticKind};
use cst_registry::{
    sanitize_tool_name, Confinement, Failure, Invocation, Registry, SourceKind, ToolRunner, ToolSource, ToolSpec,
};

/// Runs one declared command.
pub struct CommandTool {
    /// The resolved command line (P4).
    pub argv: Vec<String>,
    pub plugin_dir: PathBuf,
    /// The workspace is untrusted (T1): run in the plugin folder, not the workspace, with
    /// `PYTHONSAFEPATH=1` and the plugin folder on `PYTHONPATH`.
    pub contained: bool,
}

/// P4: an array is run directly, with relative elements that name a file in the plugin folder
/// made absolute; a string runs under `sh -c`.
pub fn resolve_command(command: &CommandLine, plugin_dir: &Path) -> Vec<String> {
    match command {
        CommandLine::Shell(s) => vec!["sh".into(), "-c".into(), s.clone()],
        CommandLine::Argv(items) => items
            .iter()
            .map(|item| {
                let p = Path::new(item);
                if !item.is_empty() && p.is_relative() {
                    let candidate = plugin_dir.join(p);
                    if candidate.is_file() {
                        return candidate.to_string_lossy().into_owned();
                    }
                }
                item.clone()
            })
            .collect(),
    }
}

impl ToolRunner for CommandTool {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            let ws = &call.ctx.workspace;
            let stdin = serde_json::to_vec(call.args).map_err(|e| Failure::Failed {
                message: format!("cannot encode the arguments: {e}"),
                exit_code: None,
            })?;
            let mut env = vec![
                ("CST_PLUGIN_DIR".into(), self.plugin_dir.to_string_lossy().into_owned()),
                ("CST_WORKSPACE".into(), ws.to_string_lossy().into_owned()),
                ("CST_TOOL".into(), call.spec.name.clone()),
            ];
            // P9's cwd is the workspace root once it is trusted; until then nothing of it may
            // run, so the tool starts in its own folder and finds the workspace in CST_WORKSPACE.
            let cwd = if self.contained {
                let (k, v) = crate::child_env::PYTHON_SAFE_PATH;
                env.push((k.into(), v.into()));
                env.push((
                    "PYTHONPATH".into(),
                    crate::child_env::python_path_with(&self.plugin_dir),
                ));
                self.plugin_dir.clone()
            } else {
                ws.clone()
            };
            let mut sandbox = crate::process::sandbox_policy(&call);
            if let Some(policy) = &mut sandbox {
                policy.read_only.push(self.plugin_dir.clone());
            }
            let spec = ProcessSpec {
                argv: self.argv.clone(),
                cwd,
                env,
                stdin,
                timeout: call.spec.timeout,
                sandbox,
                cancel: call.ctx.cancel.clone(),
            };
            let out = run_captured(spec).await.map_err(|e| Failure::Failed {
                message: format!("{}: {e}", call.spec.name),
                exit_code: None,
            })?;
            if out.timed_out {
                return Err(Failure::TimedOut {
                    message: format!(
                        "{}\n[timed out after {} s: process group killed, exit code 124]",
                        out.output,
                        call.spec.timeout.as_secs()
                    ),
                });
            }
            if out.cancelled {
                return Err(Failure::Failed {
                    message: format!("{}\n[cancelled: process group killed]", out.output),
                    exit_code: out.exit_code,
                });
            }
            match out.exit_code {
                Some(0) => Ok(out.output),
                code => Err(Failure::Failed {
                    message: match code {
                        Some(c) => format!("{}\n[exit code {c}]", out.output),
                        None => format!("{}\n[no exit code]", out.output),
                    },
                    exit_code: code,
                }),
            }
        })
    }
}

/// Register the command tools of one plugin. Returns the names registered; problems (a bad
/// `perm`/`timeout`, a clash) are warnings naming the plugin.json, and the other tools still load.
pub fn register_all(
    manifest: &PluginManifest,
    dir: &Path,
    file: &Path,
    contained: bool,
    registry: &Registry,
    warnings: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut names = Vec::new();
    if manifest.tools.is_empty() {
        return names;
    }
    // P12
    if !cfg!(unix) {
        warnings.push(Diagnostic::in_file(
            DiagnosticKind::Other,
            file,
            format!(
                "{} command tool(s) skipped: plugin.json command tools run only on POSIX systems; wasm tools still load",
                manifest.tools.len()
            ),
        ));
        return names;
    }
    let broken = |message: String| Diagnostic::in_file(DiagnosticKind::BrokenFile, file, message);
    // Relative paths in `command` resolve against the real folder, so use its absolute path.
    let dir_abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    for decl in &manifest.tools {
        let name = sanitize_tool_name(&decl.name);
        if name.is_empty() {
            warnings.push(broken("a tool has an empty name; skipped".into()));
            continue;
        }
        let perm = match decl.perm(file) {
            Ok(p) => p,
            Err(e) => {
                warnings.push(broken(format!("{}; tool skipped", e.message)));
                continue;
            }
        };
        let timeout = match decl.timeout(file) {
            Ok(t) => t,
            Err(e) => {
                warnings.push(broken(format!("{}; tool skipped", e.message)));
                continue;
            }
        };
        let argv = resolve_command(&decl.command, &dir_abs);
        if argv.first().is_none_or(|a| a.is_empty()) {
            warnings.push(broken(format!("tool `{}` has an empty `command`; skipped", decl.name)));
            continue;
        }
        let spec = ToolSpec {
            name: name.clone(),
            description: decl.description.clone(),
            input_schema: decl.schema(),
            perm,
            source: ToolSource {
                kind: SourceKind::Command,
                owner: manifest.name.clone(),
                file: Some(file.to_path_buf()),
            },
            timeout,
            // A native process: confining it is the process sandbox.
            confine_with: Confinement::ProcessSandbox,
        };
        let runner = Arc::new(CommandTool {
            argv,
            plugin_dir: dir_abs.clone(),
            contained,
        });
        match registry.register(spec, runner) {
            Ok(()) => {
                // P2
                if name != decl.name {
                    warnings.push(Diagnostic::in_file(
                        DiagnosticKind::Other,
                        file,
                        format!(
                            "tool name `{}` registered as `{name}` (only [A-Za-z0-9_-], at most 63 bytes)",
                            decl.name
                        ),
                    ));
                }
                names.push(name);
            }
            // E7, P2: the first tool keeps the name; this one is not renamed.
            Err(clash) => warnings.push(clash.into()),
        }
    }
    names
}
