//! The `task` tool (A5): `task(description, prompt, agent)` runs a sub-agent to its final report.
//!
//! It is an ordinary registry tool (validation, time limit, cancellation, output cap), in the
//! `read` category because it changes nothing itself: each of the sub-agent's own calls goes
//! through the gate. The runner only hands the call to the session that made it
//! ([`ToolContext::subagents`](cst_registry::ToolContext)); outside a session it fails.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;

use cst_registry::{Confinement, Failure, Invocation, Perm, Registry, SourceKind, ToolRunner, ToolSource, ToolSpec};

pub const TASK_TOOL: &str = "task";

/// Backstop for one whole sub-agent run; its model calls and tool calls have their own limits.
pub const TASK_TIMEOUT: Duration = Duration::from_secs(30 * 60);

pub use cst_registry::task::{SubAgentHost, TaskArgs, DEFAULT_ROLE};

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TASK_TOOL.into(),
        description: "Hand a self-contained task to a sub-agent and get back its final report. `agent` is \
                      a role from the Sub-agents list in the system prompt (default `general`). The \
                      sub-agent sees nothing of this conversation, so `prompt` must say everything it \
                      needs. Several `task` calls of read-only roles in one reply run at the same time."
            .into(),
        input_schema: json!({"type": "object", "properties": {
            "description": {"type": "string", "minLength": 1, "description": "A few words on what the task is for"},
            "prompt": {"type": "string", "minLength": 1, "description": "The whole task for the sub-agent"},
            "agent": {"type": "string", "description": "Role name (default `general`)"}
        }, "required": ["description", "prompt"], "additionalProperties": false}),
        perm: Perm::Read,
        source: ToolSource::builtin(),
        timeout: TASK_TIMEOUT,
        // The sub-agent's own calls go through the gate one by one.
        confine_with: Confinement::None,
    }
}

/// Whether `spec` is the built-in `task` tool.
pub fn is_task_tool(spec: &ToolSpec) -> bool {
    spec.name == TASK_TOOL && spec.source.kind == SourceKind::Builtin
}

struct TaskTool;

impl ToolRunner for TaskTool {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            let args: TaskArgs = serde_json::from_value(call.args.clone()).map_err(|e| Failure::Failed {
                message: format!("invalid `task` arguments: {e}"),
                exit_code: None,
            })?;
            match call.ctx.subagents.clone() {
                Some(host) => host.run_task(&call, args).await,
                None => Err(Failure::Failed {
                    message: "`task` runs sub-agents and works only inside an agent session \
                              (`cst-agent exec` or the TUI)"
                        .into(),
                    exit_code: None,
                }),
            }
        })
    }
}

/// Register `task` (the `default` tools profile).
pub fn register(registry: &Registry, warnings: &mut Vec<cst_protocol::Diagnostic>) {
    if let Err(clash) = registry.register(spec(), Arc::new(TaskTool)) {
        warnings.push(clash.into());
    }
}
