//! One agent loop: a turn of model calls and tool calls, for the main agent of a session or a
//! sub-agent running a `task`. In one model reply, consecutive `read` calls run at the same time
//! (a `task` call counts as one when its role is read-only); any other call runs alone, in
//! order; results go back in the order of the calls.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::context;
use crate::events::EventBus;
use crate::hooks::{HookContext, SessionHooks, MAX_FINISH_BLOCKS};
use crate::model::{ChatMessage, ModelClient, ModelError, ToolCall, ToolDef};
use cst_config::deployment::HookEvent;
use cst_protocol::{Event, Outcome, TokenUsage, ToolCallRequest, TurnEnd};
use cst_registry::question::Questions;
use cst_registry::task::{SubAgentHost, TaskArgs};
use cst_registry::{CallError, Perm, PermissionGate, Registry, ToolContext, ToolScope};

/// What runs the main agent's `task` calls (the session's sub-agents). A trait so the loop does
/// not depend on the module that runs sub-agents with it.
pub(crate) trait TaskHost: SubAgentHost {
    /// Whether `role` is read-only (its `task` calls may run in parallel, A3).
    fn role_is_readonly(&self, role: &str) -> bool;
}

/// One agent loop: the main agent of a session, or a sub-agent running a `task`.
pub(crate) struct Agent {
    pub(crate) workspace: PathBuf,
    pub(crate) registry: Arc<Registry>,
    pub(crate) model: ModelClient,
    pub(crate) max_steps: u32,
    pub(crate) gate: Arc<dyn PermissionGate>,
    pub(crate) events: EventBus,
    /// The system prompt as it is now (a reload rebuilds its indexes); put first in the
    /// history before each model call. `None`: the history's own first message stays.
    pub(crate) system_prompt: Option<Arc<RwLock<String>>>,
    /// Who answers `ask_user` (the main agent only, A2).
    pub(crate) questions: Option<Arc<dyn Questions>>,
    pub(crate) history: Vec<ChatMessage>,
    /// A sub-agent's limits (A2, A3); `None` for the main agent.
    pub(crate) scope: Option<Arc<ToolScope>>,
    /// What runs `task` calls; only the main agent has it (A2: no nesting).
    pub(crate) subagents: Option<Arc<dyn TaskHost>>,
    /// `Some(N)` for sub-agent N: its events reach the front end wrapped in [`Event::SubAgent`].
    pub(crate) sub: Option<u32>,
    /// Tokens of the current turn so far (`None` until a reply reports usage).
    pub(crate) usage: Option<TokenUsage>,
    /// The deployment's hooks; only the main agent has them (D18).
    pub(crate) hooks: Option<Arc<SessionHooks>>,
}

impl Agent {
    pub(crate) fn emit(&self, ev: Event) {
        let ev = match self.sub {
            None => ev,
            // Sub-agents' text deltas are noise for the parent's front end; the whole message follows.
            Some(_) if matches!(ev, Event::MessageDelta { .. }) => return,
            Some(n) => Event::SubAgent { n, event: Box::new(ev) },
        };
        self.events.emit(ev);
    }

    fn refresh_system_prompt(&mut self) {
        let Some(shared) = &self.system_prompt else { return };
        let content = shared.read().unwrap_or_else(|e| e.into_inner()).clone();
        match self.history.first_mut() {
            Some(ChatMessage::System { content: c }) => *c = content,
            _ => self.history.insert(0, ChatMessage::System { content }),
        }
    }

    fn tool_defs(&self) -> Vec<ToolDef> {
        self.registry
            .specs()
            .into_iter()
            .filter(|s| self.scope.as_ref().is_none_or(|scope| scope.permits(s).is_ok()))
            .map(|s| ToolDef {
                name: s.name,
                description: s.description,
                parameters: s.input_schema,
            })
            .collect()
    }

    pub(crate) async fn run_turn(&mut self, text: String, cancel: &CancellationToken) -> (TurnEnd, u32) {
        self.emit(Event::UserMessage { text: text.clone() });
        self.history.push(ChatMessage::User { content: text });
        self.usage = None;
        let max = self.max_steps.max(1);
        let mut finish_blocks = 0;
        for step in 1..=max {
            if cancel.is_cancelled() {
                return (TurnEnd::Cancelled, step - 1);
            }
            self.refresh_system_prompt();
            let tools = self.tool_defs();
            let events = self.events.clone();
            let is_sub = self.sub.is_some();
            let mut on_delta = move |d: crate::model::Delta<'_>| {
                if !is_sub {
                    events.emit(match d {
                        crate::model::Delta::Text(t) => Event::MessageDelta { text: t.to_string() },
                        crate::model::Delta::Reasoning(t) => Event::ReasoningDelta { text: t.to_string() },
                    });
                }
            };
            let window = context::window_of(self.model.config());
            if context::needs_compaction(&self.history, &tools, window) {
                if let Err(ModelError::Cancelled) = self.compact(&tools, window, cancel).await {
                    return (TurnEnd::Cancelled, step - 1);
                }
            }
            if let Some(h) = self.hooks.clone() {
                let ctx = HookContext {
                    step: Some(step),
                    ..Default::default()
                };
                if let Err(f) = h.fire(HookEvent::BeforeModel, &ctx, Some(cancel)).await {
                    return self.hook_failed(f.to_string(), step);
                }
            }
            let reply = match self.model.complete(&self.history, &tools, cancel, &mut on_delta).await {
                Ok(r) => r,
                Err(ModelError::Cancelled) => return (TurnEnd::Cancelled, step - 1),
                Err(e) => {
                    let message = e.to_string();
                    self.emit(Event::Error {
                        message: message.clone(),
                    });
                    return (TurnEnd::Failed { message }, step);
                }
            };
            self.emit(Event::Message {
                text: reply.text.clone(),
                tool_calls: reply
                    .tool_calls
                    .iter()
                    .map(|c| ToolCallRequest {
                        id: c.id.clone(),
                        tool: c.function.name.clone(),
                        args: parse_args(&c.function.arguments)
                            .unwrap_or_else(|_| Value::String(c.function.arguments.clone())),
                    })
                    .collect(),
            });
            if let Some(u) = reply.usage {
                self.usage.get_or_insert_with(TokenUsage::default).add(u);
            }
            self.history.push(reply.to_message());
            let truncated = reply.finish_reason.as_deref() == Some("length");
            let calls = reply.tool_calls;
            if let Some(h) = self.hooks.clone() {
                let ctx = HookContext {
                    step: Some(step),
                    ..Default::default()
                };
                if let Err(f) = h.fire(HookEvent::AfterModel, &ctx, Some(cancel)).await {
                    for c in &calls {
                        self.history.push(ChatMessage::Tool {
                            tool_call_id: c.id.clone(),
                            content: "error: not run: a required after_model hook failed".into(),
                        });
                    }
                    return self.hook_failed(f.to_string(), step);
                }
            }
            if calls.is_empty() && truncated {
                self.emit(Event::Warning {
                    message: "the model's answer was cut at its output limit (finish_reason: length); \
                              it may be incomplete"
                        .into(),
                });
                return (TurnEnd::Truncated { answer: reply.text }, step);
            }
            if calls.is_empty() {
                if let Some(h) = self.hooks.clone() {
                    let ctx = HookContext {
                        step: Some(step),
                        answer: Some(reply.text.clone()),
                        ..Default::default()
                    };
                    let checked = h.fire(HookEvent::BeforeFinish, &ctx, Some(cancel)).await;
                    if cancel.is_cancelled() {
                        return (TurnEnd::Cancelled, step);
                    }
                    if let Err(f) = checked {
                        // D17: completion is blocked; the model gets the evidence and goes on.
                        finish_blocks += 1;
                        if finish_blocks >= MAX_FINISH_BLOCKS {
                            return self.hook_failed(
                                format!("completion was blocked {finish_blocks} times in a row: {f}"),
                                step,
                            );
                        }
                        let text = f.finish_feedback();
                        self.emit(Event::UserMessage { text: text.clone() });
                        self.history.push(ChatMessage::User { content: text });
                        continue;
                    }
                }
                return (TurnEnd::Done { answer: reply.text }, step);
            }
            if step == max {
                // Every call still gets an answer so the conversation stays valid for a next turn.
                for c in &calls {
                    self.history.push(ChatMessage::Tool {
                        tool_call_id: c.id.clone(),
                        content: format!("error: not run: the step limit ({max}) was reached"),
                    });
                }
                return (TurnEnd::MaxSteps { limit: max }, step);
            }
            let outputs = self.run_calls(&calls, cancel).await;
            // The model gets each result cut to a share of its window (head and tail kept), and
            // without any secret the host knows (a hostile MCP server may echo its credential
            // header back); the transcript and the front end got it whole (and redacted).
            let budget = context::result_budget(context::window_of(self.model.config()));
            for (c, out) in calls.iter().zip(outputs) {
                self.history.push(ChatMessage::Tool {
                    tool_call_id: c.id.clone(),
                    content: context::cut_result(&cst_config::secrets::redact(&out), budget),
                });
            }
            if cancel.is_cancelled() {
                return (TurnEnd::Cancelled, step);
            }
        }
        (TurnEnd::MaxSteps { limit: max }, max)
    }

    /// A turn ended by a required hook's failure: said as an error, the turn fails.
    fn hook_failed(&self, message: String, step: u32) -> (TurnEnd, u32) {
        self.emit(Event::Error {
            message: message.clone(),
        });
        (TurnEnd::Failed { message }, step)
    }

    /// Replace the older history by a summary the model writes, so the next request fits the
    /// window; if the model cannot summarise, the older messages are dropped with a note. Only
    /// a cancelled summary call is an error (the turn ends).
    async fn compact(&mut self, tools: &[ToolDef], window: u64, cancel: &CancellationToken) -> Result<(), ModelError> {
        let before = context::estimate(&self.history, tools);
        let Some(keep) = context::keep_from(&self.history, tools, window) else {
            return Ok(());
        };
        let first = usize::from(matches!(self.history.first(), Some(ChatMessage::System { .. })));
        let request = context::summary_request(&self.history[first..keep], window);
        let summary = match self.model.complete(&request, &[], cancel, &mut |_| {}).await {
            Ok(reply) if !reply.text.trim().is_empty() => {
                if let Some(u) = reply.usage {
                    self.usage.get_or_insert_with(TokenUsage::default).add(u);
                }
                reply.text
            }
            Err(ModelError::Cancelled) => return Err(ModelError::Cancelled),
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "the summary was empty".into(),
                };
                self.emit(Event::Warning {
                    message: format!("the model could not summarise the older history ({why}); it was dropped"),
                });
                format!(
                    "({} older messages were dropped; no summary could be made)",
                    keep - first
                )
            }
        };
        self.history = context::compacted(&self.history, keep, &summary);
        // A kept tail that is still too big (one huge exchange): its tool results are cut
        // harder until the request fits.
        let mut budget = context::result_budget(window);
        while context::needs_compaction(&self.history, tools, window) && budget > 500 {
            budget /= 2;
            for m in &mut self.history {
                if let ChatMessage::Tool { content, .. } = m {
                    *content = context::cut_result(content, budget);
                }
            }
        }
        let after = context::estimate(&self.history, tools);
        self.emit(Event::Compacted {
            messages: keep - first,
            tokens_before: before,
            tokens_after: after,
            summary,
        });
        Ok(())
    }

    /// Run one reply's calls: consecutive parallel-safe calls together, others alone, in order.
    async fn run_calls(&self, calls: &[ToolCall], cancel: &CancellationToken) -> Vec<String> {
        let mut out = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let mut j = i + 1;
            if self.parallel_safe(&calls[i]) {
                while j < calls.len() && self.parallel_safe(&calls[j]) {
                    j += 1;
                }
            }
            if j - i == 1 {
                out.push(self.run_one(&calls[i], cancel).await);
            } else {
                let batch = calls[i..j].iter().map(|c| self.run_one(c, cancel));
                out.extend(futures::future::join_all(batch).await);
            }
            i = j;
        }
        out
    }

    /// `read` tools may run together (P6, M6); a `task` call only when its role is read-only (A3).
    fn parallel_safe(&self, call: &ToolCall) -> bool {
        let Some(spec) = self.registry.spec(&call.function.name) else {
            return false;
        };
        if spec.perm != Perm::Read {
            return false;
        }
        if !cst_extensions::subagents::task_tool::is_task_tool(&spec) {
            return true;
        }
        let role = parse_args(&call.function.arguments)
            .ok()
            .and_then(|a| serde_json::from_value::<TaskArgs>(a).ok());
        match (role, &self.subagents) {
            (Some(args), Some(subs)) => subs.role_is_readonly(args.role()),
            _ => false,
        }
    }

    /// Run one call through the registry; returns the text for the model.
    async fn run_one(&self, call: &ToolCall, cancel: &CancellationToken) -> String {
        let name = call.function.name.as_str();
        let spec = self.registry.spec(name);
        let source = spec
            .as_ref()
            .map(|s| format!("{}:{}", s.source.kind.as_str(), s.source.owner))
            .unwrap_or_else(|| "unknown".into());
        let args = parse_args(&call.function.arguments);
        self.emit(Event::ToolCallStarted {
            call_id: call.id.clone(),
            tool: name.to_string(),
            source: source.clone(),
            args: args
                .clone()
                .unwrap_or_else(|_| Value::String(call.function.arguments.clone())),
        });
        let start = Instant::now();
        let (mut outcome, mut output, ran) = match args.clone() {
            Err(e) => (
                Outcome::Error,
                format!("error: the arguments of `{name}` are not valid JSON: {e}"),
                None,
            ),
            Ok(_) if cancel.is_cancelled() => (Outcome::Cancelled, "error: cancelled before it ran".into(), None),
            Ok(args) => {
                let ctx = ToolContext {
                    workspace: self.workspace.clone(),
                    cancel: cancel.clone(),
                    gate: Some(self.gate.clone()),
                    scope: self.scope.clone(),
                    subagents: self.subagents.clone().map(|s| s as Arc<dyn SubAgentHost>),
                    questions: self.questions.clone(),
                    call_id: Some(call.id.clone()),
                };
                match self.registry.call(name, args.clone(), &ctx).await {
                    Ok(text) => (Outcome::Ok, text, Some(args)),
                    Err(e) => {
                        // The calls the tool ran (for `after_tool`); refused or invalid ones did not.
                        let ran = matches!(e, CallError::Failed { .. } | CallError::TimedOut { .. });
                        let outcome = match &e {
                            CallError::Denied { .. } => Outcome::Denied,
                            CallError::TimedOut { .. } => Outcome::TimedOut,
                            CallError::Cancelled(_) => Outcome::Cancelled,
                            _ => Outcome::Error,
                        };
                        let mut text = format!("error: {e}");
                        if let CallError::Failed { exit_code: Some(c), .. } = &e {
                            text.push_str(&format!("\n(exit code {c})"));
                        }
                        (outcome, text, ran.then_some(args))
                    }
                }
            }
        };
        if let (Some(h), Some(args)) = (&self.hooks, ran) {
            let perm = spec.as_ref().map(|s| s.perm);
            if let Err(f) = h.after_call(name, perm, &args, outcome, cancel).await {
                outcome = Outcome::Error;
                output = format!("{output}\nerror: {f}");
            }
        }
        let duration = start.elapsed();
        self.emit(Event::ToolCallFinished {
            call_id: call.id.clone(),
            tool: name.to_string(),
            outcome,
            output: output.clone(),
            duration,
        });
        output
    }
}

/// Tool-call arguments as the model sent them; an empty string means no arguments.
pub(crate) fn parse_args(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text).map_err(|e| e.to_string())
}
