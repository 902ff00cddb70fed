//! run_shell: `sh -c COMMAND` in the workspace through the shared process runner
//! (`process::run_captured`: containment, deadline, cancellation, the process sandbox
//! when the gate's confinement asks for it).

use std::time::Duration;

use serde_json::Value;

use super::fail;
use crate::process::{run_captured, ProcessSpec};
use cst_registry::{Failure, Invocation};

/// Default per-call time limit of run_shell.
pub const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_secs(120);

pub async fn run_shell(call: &Invocation<'_>) -> Result<String, Failure> {
    let command = call.args.get("command").and_then(Value::as_str).unwrap_or_default();
    let timeout = call
        .args
        .get("timeout_secs")
        .and_then(Value::as_u64)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_SHELL_TIMEOUT)
        .min(call.spec.timeout);
    let workspace = call.ctx.workspace.clone();
    let spec = ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), command.to_string()],
        cwd: workspace.clone(),
        env: vec![("CST_WORKSPACE".into(), workspace.display().to_string())],
        stdin: Vec::new(),
        timeout,
        sandbox: crate::process::sandbox_policy(call),
        cancel: call.ctx.cancel.clone(),
    };
    let out = run_captured(spec)
        .await
        .map_err(|e| fail(&format!("cannot run `sh -c`: {e}")))?;
    if out.timed_out {
        return Err(Failure::TimedOut {
            message: format!(
                "timed out after {} s; output so far:\n{}",
                timeout.as_secs(),
                out.output
            ),
        });
    }
    if out.cancelled {
        return Err(fail(&format!("cancelled; output so far:\n{}", out.output)));
    }
    match out.exit_code {
        Some(0) => Ok(out.output),
        code => Err(Failure::Failed {
            message: if out.output.is_empty() {
                "the command failed with no output".into()
            } else {
                out.output
            },
            exit_code: code,
        }),
    }
}
