//! Running a deployment `command` hook (D15) on the command-tool execution path: the same
//! [`crate::process::run_captured`] as plugin.json command tools and `run_shell` — the host's
//! environment without its secrets ([`crate::child_env`]), the process sandbox when the session's
//! approval mode confines a `shell` call, a time limit after which the whole process group (or
//! PID namespace) is killed, cancellation, and the output cap.
//!
//! The hook's `argv` is run with `{workspace}` replaced where it is a whole argument (validation
//! refuses it inside a longer one), in the workspace, with the event's JSON payload on stdin.
//! Which events run which hooks, and what a failure means, is the session's business
//! (`cst_core::hooks`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::process::{run_captured, ProcessSpec, SandboxPolicy};

/// How long a command hook may run before its process group is killed (the deployment format
/// has no field for it; a `before_finish` test suite is the specification's own example).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// The placeholder replaced by the workspace path when it is a whole argument.
pub const WORKSPACE_ARG: &str = "{workspace}";

/// One command hook to run.
#[derive(Debug, Clone)]
pub struct HookCommand {
    pub argv: Vec<String>,
    pub workspace: PathBuf,
    /// The event's name, also given as `CST_HOOK_EVENT`.
    pub event: String,
    /// The JSON payload written to stdin.
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Run in the process sandbox (workspace writable, no network), as a `shell` call is in the
    /// session's approval mode.
    pub sandboxed: bool,
    pub cancel: CancellationToken,
}

/// How a command hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookRun {
    Passed {
        output: String,
    },
    /// Non-zero exit, timeout, cancellation or a program that cannot start; `why` says which
    /// (never the arguments).
    Failed {
        output: String,
        why: String,
    },
}

/// `argv` with every argument that is exactly `{workspace}` replaced by the workspace path.
pub fn expand_argv(argv: &[String], workspace: &Path) -> Vec<String> {
    argv.iter()
        .map(|a| {
            if a == WORKSPACE_ARG {
                workspace.to_string_lossy().into_owned()
            } else {
                a.clone()
            }
        })
        .collect()
}

/// Run one command hook to its end.
pub async fn run_command_hook(cmd: HookCommand) -> HookRun {
    let spec = ProcessSpec {
        argv: expand_argv(&cmd.argv, &cmd.workspace),
        cwd: cmd.workspace.clone(),
        env: vec![
            ("CST_HOOK_EVENT".into(), cmd.event.clone()),
            ("CST_WORKSPACE".into(), cmd.workspace.to_string_lossy().into_owned()),
        ],
        stdin: cmd.stdin,
        timeout: cmd.timeout,
        sandbox: cmd.sandboxed.then(|| SandboxPolicy::workspace(cmd.workspace.clone())),
        cancel: cmd.cancel,
    };
    match run_captured(spec).await {
        Err(e) => HookRun::Failed {
            output: String::new(),
            why: format!("cannot start: {e}"),
        },
        Ok(out) if out.timed_out => HookRun::Failed {
            output: out.output,
            why: format!(
                "timed out after {} s (process group killed, exit code 124)",
                cmd.timeout.as_secs()
            ),
        },
        Ok(out) if out.cancelled => HookRun::Failed {
            output: out.output,
            why: "cancelled (process group killed)".into(),
        },
        Ok(out) => match out.exit_code {
            Some(0) => HookRun::Passed { output: out.output },
            Some(c) => HookRun::Failed {
                output: out.output,
                why: format!("exit code {c}"),
            },
            None => HookRun::Failed {
                output: out.output,
                why: "no exit code".into(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_only_as_a_whole_argument() {
        let argv: Vec<String> = ["check", "{workspace}", "--dir={workspace}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            expand_argv(&argv, Path::new("/w s")),
            ["check", "/w s", "--dir={workspace}"]
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn exit_codes_stdin_and_cwd() {
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        let run = |script: &str| HookCommand {
            argv: vec![
                "sh".into(),
                "-c".into(),
                script.into(),
                "hook".into(),
                "{workspace}".into(),
            ],
            workspace: ws.clone(),
            event: "before_tool".into(),
            stdin: b"{\"x\":1}".to_vec(),
            timeout: Duration::from_secs(20),
            sandboxed: false,
            cancel: CancellationToken::new(),
        };
        let ok = run_command_hook(run("cat; echo; pwd; echo \"$1\" $CST_HOOK_EVENT")).await;
        let want = format!("{{\"x\":1}}\n{}\n{} before_tool\n", ws.display(), ws.display());
        assert_eq!(ok, HookRun::Passed { output: want });
        let bad = run_command_hook(run("echo nope; exit 3")).await;
        assert_eq!(
            bad,
            HookRun::Failed {
                output: "nope\n".into(),
                why: "exit code 3".into()
            }
        );
        let mut slow = run("sleep 30");
        slow.timeout = Duration::from_millis(300);
        assert!(matches!(run_command_hook(slow).await, HookRun::Failed { why, .. } if why.starts_with("timed out")));
        let mut missing = run("");
        missing.argv = vec!["/nonexistent/cst-hook-program".into()];
        assert!(matches!(run_command_hook(missing).await, HookRun::Failed { .. }));
    }
}
