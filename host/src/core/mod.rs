//! The agent core: a session task driven by [`Op`]s that emits [`Event`]s. It knows nothing
//! about terminals; the headless runner (`cli/exec.rs`) and the TUI are its clients.
//!
//! A turn: model call → tool calls → results → repeat, until the model answers without tool
//! calls or the step limit is reached. In one model reply, consecutive `read` calls run at the
//! same time (a `task` call counts as one when its role is read-only); any other call runs
//! alone, in order; results go back in the order of the calls.
//!
//! A `task` call runs a sub-agent (`subagent.rs`): the same loop with the role's tools, model and
//! step limit, sharing this session's approval gate and event stream.

pub mod prompt;
pub mod protocol;
mod subagent;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::approvals::{ApprovalGate, ApprovalMode};
use crate::model::{ChatMessage, ModelClient, ModelError, ToolCall, ToolDef};
use crate::subagents::task_tool::{is_task_tool, SubAgentHost, TaskArgs};
pub use crate::subagents::transcripts::{load_subagent_transcript, subagent_transcripts, SubAgentTranscript};
use crate::subagents::RoleSet;
use crate::tools::{CallError, Perm, PermissionGate, Registry, ToolContext, ToolScope};
use crate::transcript::{Redactor, Transcript};
pub use protocol::{ApprovalDecision, Event, Op, Outcome, TurnEnd};

/// Default step limit of a turn (model calls).
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// Called on [`Op::Reload`]; returns warnings to report.
pub type ReloadFn = Arc<dyn Fn(&Registry) -> Vec<String> + Send + Sync>;

/// Everything a session needs.
pub struct SessionConfig {
    pub workspace: PathBuf,
    pub registry: Arc<Registry>,
    pub model: ModelClient,
    pub approval: ApprovalMode,
    /// No person can answer approval requests; calls that would ask are refused.
    pub headless: bool,
    /// Model calls per turn.
    pub max_steps: u32,
    pub system_prompt: String,
    /// Write `.agent/sessions/<id>/main.jsonl`.
    pub transcript: bool,
    pub reload: Option<ReloadFn>,
    /// Extra values to redact from the transcript (besides the API key).
    pub secrets: Vec<String>,
    /// Sub-agent roles for the `task` tool (A1); the built-ins when none were loaded.
    pub roles: Arc<RoleSet>,
    /// Workspace root, skills index and AGENTS.md for sub-agents' system prompts
    /// ([`prompt::context`]).
    pub subagent_context: String,
}

/// A front end's side of a running session.
pub struct SessionHandle {
    pub session_id: String,
    pub ops: mpsc::UnboundedSender<Op>,
    pub events: mpsc::UnboundedReceiver<Event>,
}

/// A new session id: sortable by start time, unique.
pub fn new_session_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let uuid = uuid::Uuid::new_v4().simple().to_string();
    format!("{secs}-{}", &uuid[..8])
}

/// Start a session task. It runs until [`Op::Shutdown`] or until `ops` is dropped, then
/// closes the transcript and sends [`Event::SessionClosed`].
pub fn spawn(config: SessionConfig) -> SessionHandle {
    let session_id = new_session_id();
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let (op_tx, mut op_rx) = mpsc::unbounded_channel::<Op>();
    let gate = Arc::new(ApprovalGate::new(config.approval, config.headless, Some(ev_tx.clone())));

    let mut secrets = config.secrets.clone();
    secrets.extend(config.model.config().api_key.clone());
    let transcript = if config.transcript {
        match Transcript::create(&config.workspace, &session_id, Redactor::new(secrets.clone())) {
            Ok(t) => Some(Arc::new(t)),
            Err(e) => {
                let _ = ev_tx.send(Event::Warning {
                    message: format!(
                        "cannot create the transcript under {}: {e}",
                        config.workspace.join(".agent/sessions").display()
                    ),
                });
                None
            }
        }
    } else {
        None
    };
    if let Some(t) = &transcript {
        t.record(
            "session",
            json!({"session_id": session_id, "model": config.model.config().name,
                   "base_url": config.model.config().base_url, "workspace": config.workspace,
                   "approval": config.approval.as_str(), "system_prompt": config.system_prompt}),
        );
    }
    let _ = ev_tx.send(Event::SessionStarted {
        session_id: session_id.clone(),
        model: config.model.config().name.clone(),
        transcript: transcript.as_ref().map(|t| t.path().to_path_buf()),
    });

    let current_cancel = Arc::new(Mutex::new(CancellationToken::new()));
    let (turn_tx, mut turn_rx) = mpsc::unbounded_channel::<String>();

    // Op router: turns are queued; cancel and approval answers act at once, even mid-turn.
    let router_cancel = current_cancel.clone();
    let router_gate = gate.clone();
    let registry = config.registry.clone();
    let reload = config.reload.clone();
    let router_events = ev_tx.clone();
    tokio::spawn(async move {
        while let Some(op) = op_rx.recv().await {
            match op {
                Op::UserTurn { text } => {
                    let _ = turn_tx.send(text);
                }
                Op::Approval { request_id, decision } => router_gate.answer(request_id, decision),
                Op::Cancel => {
                    router_cancel.lock().unwrap_or_else(|e| e.into_inner()).cancel();
                    router_gate.cancel_pending();
                }
                Op::Reload => {
                    if let Some(reload) = &reload {
                        for message in reload(&registry) {
                            let _ = router_events.send(Event::Warning { message });
                        }
                    }
                }
                Op::Shutdown => break,
            }
        }
        // Shutdown or the front end went away: stop the running turn, end the turn queue.
        router_cancel.lock().unwrap_or_else(|e| e.into_inner()).cancel();
        router_gate.cancel_pending();
    });

    let subagents = Arc::new(subagent::SubAgents {
        workspace: config.workspace.clone(),
        registry: config.registry.clone(),
        model: config.model.clone(),
        default_max_steps: config.max_steps,
        gate: gate.clone(),
        events: ev_tx.clone(),
        roles: config.roles.clone(),
        context: config.subagent_context.clone(),
        transcript_dir: transcript.as_ref().and_then(|t| {
            t.path()
                .parent()
                .map(|d| (d.to_path_buf(), Redactor::new(secrets.clone())))
        }),
        next_n: Default::default(),
        files: Default::default(),
    });
    let mut agent = Agent {
        history: vec![ChatMessage::System {
            content: config.system_prompt.clone(),
        }],
        workspace: config.workspace.clone(),
        registry: config.registry.clone(),
        model: config.model.clone(),
        max_steps: config.max_steps,
        gate,
        events: ev_tx,
        transcript,
        scope: None,
        subagents: Some(subagents),
        sub: None,
    };
    tokio::spawn(async move {
        let mut last_end = "no turn";
        while let Some(text) = turn_rx.recv().await {
            let cancel = CancellationToken::new();
            *current_cancel.lock().unwrap_or_else(|e| e.into_inner()) = cancel.clone();
            let _ = agent.events.send(Event::TurnStarted);
            let (end, steps) = agent.run_turn(text, &cancel).await;
            last_end = end.as_str();
            if let Some(t) = &agent.transcript {
                t.record("turn_end", json!({"reason": last_end, "steps": steps}));
            }
            let _ = agent.events.send(Event::TurnFinished { end, steps });
        }
        if let Some(t) = &agent.transcript {
            t.close(last_end);
        }
        let _ = agent.events.send(Event::SessionClosed);
    });

    SessionHandle {
        session_id,
        ops: op_tx,
        events: ev_rx,
    }
}

/// One agent loop: the main agent of a session, or a sub-agent running a `task`.
struct Agent {
    workspace: PathBuf,
    registry: Arc<Registry>,
    model: ModelClient,
    max_steps: u32,
    gate: Arc<dyn PermissionGate>,
    events: mpsc::UnboundedSender<Event>,
    transcript: Option<Arc<Transcript>>,
    history: Vec<ChatMessage>,
    /// A sub-agent's limits (A2, A3); `None` for the main agent.
    scope: Option<Arc<ToolScope>>,
    /// What runs `task` calls; only the main agent has it (A2: no nesting).
    subagents: Option<Arc<subagent::SubAgents>>,
    /// `Some(N)` for sub-agent N: its events reach the front end wrapped in [`Event::SubAgent`].
    sub: Option<u32>,
}

impl Agent {
    fn emit(&self, ev: Event) {
        let ev = match self.sub {
            None => ev,
            // Sub-agents' text deltas are noise for the parent's front end; the whole message follows.
            Some(_) if matches!(ev, Event::MessageDelta { .. }) => return,
            Some(n) => Event::SubAgent { n, event: Box::new(ev) },
        };
        let _ = self.events.send(ev);
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

    async fn run_turn(&mut self, text: String, cancel: &CancellationToken) -> (TurnEnd, u32) {
        if let Some(t) = &self.transcript {
            t.message("user", &text);
        }
        self.history.push(ChatMessage::User { content: text });
        let max = self.max_steps.max(1);
        for step in 1..=max {
            if cancel.is_cancelled() {
                return (TurnEnd::Cancelled, step - 1);
            }
            let tools = self.tool_defs();
            let events = self.events.clone();
            let is_sub = self.sub.is_some();
            let mut on_delta = move |d: &str| {
                if !is_sub {
                    let _ = events.send(Event::MessageDelta { text: d.to_string() });
                }
            };
            let reply = match self.model.complete(&self.history, &tools, cancel, &mut on_delta).await {
                Ok(r) => r,
                Err(ModelError::Cancelled) => return (TurnEnd::Cancelled, step - 1),
                Err(e) => {
                    let message = e.to_string();
                    if let Some(t) = &self.transcript {
                        t.error(&message);
                    }
                    self.emit(Event::Error {
                        message: message.clone(),
                    });
                    return (TurnEnd::Failed { message }, step);
                }
            };
            if !reply.text.is_empty() {
                self.emit(Event::Message {
                    text: reply.text.clone(),
                });
            }
            if let Some(t) = &self.transcript {
                let calls: Vec<Value> = reply
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "tool": c.function.name, "args": parse_args(&c.function.arguments).unwrap_or_else(|_| Value::String(c.function.arguments.clone()))}))
                    .collect();
                t.record(
                    "message",
                    json!({"role": "assistant", "content": reply.text, "tool_calls": calls}),
                );
            }
            let calls = reply.tool_calls;
            self.history.push(ChatMessage::Assistant {
                content: (!reply.text.is_empty()).then_some(reply.text.clone()),
                tool_calls: calls.clone(),
            });
            if calls.is_empty() {
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
            for (c, out) in calls.iter().zip(outputs) {
                self.history.push(ChatMessage::Tool {
                    tool_call_id: c.id.clone(),
                    content: out,
                });
            }
            if cancel.is_cancelled() {
                return (TurnEnd::Cancelled, step);
            }
        }
        (TurnEnd::MaxSteps { limit: max }, max)
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
        if !is_task_tool(&spec) {
            return true;
        }
        let role = parse_args(&call.function.arguments)
            .ok()
            .and_then(|a| serde_json::from_value::<TaskArgs>(a).ok());
        match (role, &self.subagents) {
            (Some(args), Some(subs)) => subs.roles.get(args.role()).is_some_and(|r| r.readonly),
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
            args: args.clone().unwrap_or(Value::Null),
        });
        let start = Instant::now();
        let (outcome, output) = match args.clone() {
            Err(e) => (
                Outcome::Error,
                format!("error: the arguments of `{name}` are not valid JSON: {e}"),
            ),
            Ok(_) if cancel.is_cancelled() => (Outcome::Cancelled, "error: cancelled before it ran".into()),
            Ok(args) => {
                let ctx = ToolContext {
                    workspace: self.workspace.clone(),
                    cancel: cancel.clone(),
                    gate: Some(self.gate.clone()),
                    scope: self.scope.clone(),
                    subagents: self.subagents.clone().map(|s| s as Arc<dyn SubAgentHost>),
                    call_id: Some(call.id.clone()),
                };
                match self.registry.call(name, args, &ctx).await {
                    Ok(text) => (Outcome::Ok, text),
                    Err(e) => {
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
                        (outcome, text)
                    }
                }
            }
        };
        let duration = start.elapsed();
        if let Some(t) = &self.transcript {
            // The entry of a `task` call names the sub-agent's transcript file (A6).
            let subagent_file = self.subagents.as_ref().and_then(|s| s.file_of(&call.id));
            t.tool_call(
                &call.id,
                name,
                &source,
                args.as_ref().unwrap_or(&Value::String(call.function.arguments.clone())),
                &output,
                duration,
                outcome.as_str(),
                subagent_file.as_deref(),
            );
        }
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
fn parse_args(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text).map_err(|e| e.to_string())
}
