//! How the registry reaches the session for the `task` tool: the session implements
//! [`SubAgentHost`] and hands itself to each call through [`ToolContext`](crate::ToolContext), so
//! the registry and the tool sources never depend on the core that runs sub-agents.

use futures::future::BoxFuture;
use serde::Deserialize;

use crate::{Failure, Invocation};

/// Role used when a `task` call names none.
pub const DEFAULT_ROLE: &str = "general";

/// The arguments of a `task` call (already validated against the schema).
#[derive(Debug, Clone, Deserialize)]
pub struct TaskArgs {
    pub description: String,
    pub prompt: String,
    #[serde(default)]
    pub agent: Option<String>,
}

impl TaskArgs {
    pub fn role(&self) -> &str {
        self.agent
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .unwrap_or(DEFAULT_ROLE)
    }
}

/// What runs sub-agents: the session, through the tool context.
pub trait SubAgentHost: Send + Sync {
    fn run_task<'a>(&'a self, call: &'a Invocation<'a>, args: TaskArgs) -> BoxFuture<'a, Result<String, Failure>>;
}
