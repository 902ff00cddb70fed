//! The rmcp server handler: `tools/list` in pages, `tools/call` through the registry's one call
//! path, and `notifications/tools/list_changed` for both protocol eras (a notification after
//! `initialize`; a `subscriptions/listen` stream for 2026-07-28 clients).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::gate::allow_text;
use crate::offer::{to_tool, Offer};
use cst_extensions::skills::SKILL_TOOL;
use cst_protocol::Outcome;
use cst_registry::{CallError, SourceKind, ToolContext};

#[derive(Clone)]
pub struct ServeHandler {
    pub offer: Arc<Offer>,
}

fn error_result(text: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(cst_config::secrets::redact(&text))]).into()
}

impl ServerHandler for ServeHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("cst-agent", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "Plugin tools of cst-agent (wasm components and plugin commands) and its `skill` tool. \
                 They work in the folder {} and only {} tools are offered.",
            self.offer.workspace.display(),
            allow_text(&self.offer.policy.allow)
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The cursor is the name of the last tool of the previous page: a page stays right when a
        // plugin is installed or removed between two pages.
        let after = request.and_then(|r| r.cursor);
        let index = self.offer.skill_index();
        let tools: Vec<Tool> = self
            .offer
            .specs()
            .iter()
            .filter(|s| after.as_deref().is_none_or(|a| s.name.as_str() > a))
            .map(|s| {
                let is_skill = s.name == SKILL_TOOL && s.source.kind == SourceKind::Builtin;
                to_tool(s, if is_skill { &index } else { "" })
            })
            .collect();
        let more = tools.len() > self.offer.page_size;
        let page: Vec<Tool> = tools.into_iter().take(self.offer.page_size).collect();
        let next = if more {
            page.last().map(|t| t.name.to_string())
        } else {
            None
        };
        let mut result = ListToolsResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let Some(spec) = self.offer.registry.spec(&name) else {
            return Err(McpError::invalid_params(format!("unknown tool `{name}`"), None));
        };
        // Refused before anything looks at the arguments; the registry's gate checks it again.
        if let Err(reason) = self.offer.policy.offers(&spec) {
            tracing::warn!("refused a call to `{name}`: {reason}");
            return Ok(error_result(reason));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let mut ctx = ToolContext::new(self.offer.workspace.clone());
        // `notifications/cancelled` (or the client going away) cancels this token: the registry
        // stops the call (the wasm store is dropped, a command's process group killed).
        ctx.cancel = cx.ct.clone();
        ctx.gate = Some(self.offer.gate.clone());
        let cancel = ctx.cancel.clone();
        let result = self.offer.registry.call(&name, args.clone(), &ctx).await;
        let (outcome, ran) = match &result {
            Ok(_) => (Outcome::Ok, true),
            Err(CallError::Failed { .. }) => (Outcome::Error, true),
            Err(CallError::TimedOut { .. }) => (Outcome::TimedOut, true),
            Err(CallError::Denied { .. }) => (Outcome::Denied, false),
            Err(CallError::Cancelled(_)) => (Outcome::Cancelled, false),
            Err(_) => (Outcome::Error, false),
        };
        let mut response = match result {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(cst_config::secrets::redact(&text))]).into(),
            Err(CallError::UnknownTool(_)) => {
                return Err(McpError::invalid_params(format!("unknown tool `{name}`"), None))
            }
            Err(CallError::Cancelled(_)) => {
                tracing::info!("call to `{name}` cancelled by the client");
                error_result(format!("call to `{name}` cancelled"))
            }
            Err(
                e @ CallError::Failed {
                    exit_code: Some(code), ..
                },
            ) => error_result(format!("{e}\n(exit code {code})")),
            Err(e) => error_result(e.to_string()),
        };
        // As in the agent: after a call the tool ran, `after_write` / `after_tool`; a required
        // failure turns the result into an error.
        if let (Some(hooks), true) = (&self.offer.hooks, ran) {
            if let Err(f) = hooks.after_call(&name, Some(spec.perm), &args, outcome, &cancel).await {
                response = error_result(f.to_string());
            }
        }
        Ok(response)
    }

    /// A handshake-era client: `notifications/tools/list_changed` on this connection until it
    /// closes.
    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let mut changes = self.offer.subscribe();
        let peer = cx.peer;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    r = changes.changed() => {
                        if r.is_err() || peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                    // An HTTP client may go away without a word: look now and then.
                    _ = tokio::time::sleep(Duration::from_secs(10)) => {
                        if peer.is_transport_closed() {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// A 2026-07-28 client listens with `subscriptions/listen`; tool-list changes are all there
    /// is to hear.
    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.offer.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                r = changes.changed() => {
                    if r.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}
