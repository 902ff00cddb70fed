//! The deployment config's lifecycle hooks attached to a session (D14–D18; docs/hooks.md).
//!
//! The hooks come only from the deployment file ([`HookSettings::from_deployment`]; D16) and
//! are handed to the builder. They fire only in the MAIN session: sub-agents get neither the
//! hooks nor the gate that runs them (D18). Events fire from three places:
//! - the turn task of the session: `session_start` (once, before the first turn) and the end of
//!   a turn ([`SessionHooks::turn_ended`]: `after_finish`, `task_failed`, `task_cancelled`);
//! - the main agent loop: `before_model`, `after_model`, `before_finish`, and after every call
//!   the tool ran, `after_write` (write tools) and `after_tool`;
//! - the main agent's permission gate ([`HookGate`]): `before_tool` and, for write tools,
//!   `before_write`, after the approval gate allowed the call and before it runs, so a required
//!   failure refuses the call like a denial.
//!
//! An `audit` hook appends one JSON line to the audit log; a `command` hook runs its `argv`
//! through the command-tool execution path (`cst_extensions::hook_runner`). A failing
//! `required` hook fails its event ([`HookFailure`]); any other failing hook is a warning.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::approvals::{confinement, ApprovalGate};
use crate::events::EventBus;
use crate::transcript::Redactor;
use cst_config::deployment::{DeploymentConfig, Hook, HookEvent, HookKind};
use cst_extensions::hook_runner::{run_command_hook, HookCommand, HookRun, HOOK_TIMEOUT};
use cst_protocol::{Event, Outcome, TurnEnd};
use cst_registry::{Confinement, Decision, Perm, PermissionGate, ToolSpec};

/// Consecutive `before_finish` blocks after which the turn fails instead of going on.
pub const MAX_FINISH_BLOCKS: u32 = 3;

/// The variable naming the audit log instead of `<config dir>/audit.jsonl`.
pub const AUDIT_LOG_ENV: &str = "CST_AUDIT_LOG";

/// The most of a failing hook's output given back as evidence (its tail is kept).
pub const EVIDENCE_CAP: usize = 8 * 1024;

/// What the builder gets: the enabled hooks of the deployment file and where audit records go.
#[derive(Debug, Clone, Default)]
pub struct HookSettings {
    pub hooks: Vec<Hook>,
    /// `None`: no config dir could be found; audit hooks then fail (a warning, or a failure when
    /// required).
    pub audit_log: Option<PathBuf>,
    /// A command hook's time limit; `None` (what [`Self::from_deployment`] gives): [`HOOK_TIMEOUT`].
    /// The deployment format has no field for it: this is for tests, which cannot wait 600 s.
    pub command_timeout: Option<Duration>,
}

impl HookSettings {
    /// The enabled hooks of `config` (a disabled hook never runs) and [`audit_log_path`].
    pub fn from_deployment(config: &DeploymentConfig) -> Self {
        Self {
            hooks: config.hooks.iter().filter(|h| h.enabled).cloned().collect(),
            audit_log: audit_log_path(),
            command_timeout: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

/// `CST_AUDIT_LOG` when set and not empty, else `<config dir>/audit.jsonl`.
pub fn audit_log_path() -> Option<PathBuf> {
    match std::env::var_os(AUDIT_LOG_ENV) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => cst_config::config_dir::config_dir().ok().map(|d| d.join("audit.jsonl")),
    }
}

/// What one event is about; each field is given where it applies.
#[derive(Debug, Clone, Default)]
pub struct HookContext {
    pub tool: Option<String>,
    pub perm: Option<Perm>,
    /// The call's arguments (redacted before any hook sees them).
    pub arguments: Option<Value>,
    pub outcome: Option<Outcome>,
    /// The model call of the turn (1, 2, …).
    pub step: Option<u32>,
    /// `before_finish` / `after_finish`: the final answer.
    pub answer: Option<String>,
    /// `task_failed`: why.
    pub reason: Option<String>,
}

/// A required hook that failed: its event fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    pub hook: String,
    pub event: HookEvent,
    /// `exit code 1`, `timed out …`, `cannot start: …` (never the arguments).
    pub why: String,
    /// The tail of its output, at most [`EVIDENCE_CAP`] bytes.
    pub evidence: String,
}

impl std::fmt::Display for HookFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the required {} hook `{}` failed ({})",
            self.event.as_str(),
            self.hook,
            self.why
        )?;
        if !self.evidence.trim().is_empty() {
            write!(f, "; its output:\n{}", self.evidence.trim_end())?;
        }
        Ok(())
    }
}

impl HookFailure {
    /// The user message a blocked `before_finish` puts before the model.
    pub fn finish_feedback(&self) -> String {
        format!("The before_finish check failed: {self}\nFix the problem, then give your final answer again.")
    }
}

/// The hooks of a running main session.
pub struct SessionHooks {
    hooks: Vec<Hook>,
    audit_log: Option<PathBuf>,
    command_timeout: Duration,
    session_id: String,
    workspace: PathBuf,
    /// The approval mode in force (a `command` hook is sandboxed as a `shell` call would be).
    gate: Arc<ApprovalGate>,
    events: EventBus,
    redactor: Redactor,
    /// The running turn's cancel token (Esc stops a hook of the turn).
    turn_cancel: Arc<Mutex<CancellationToken>>,
    audit: Mutex<()>,
}

impl SessionHooks {
    pub(crate) fn new(
        settings: HookSettings,
        session_id: &str,
        workspace: PathBuf,
        gate: Arc<ApprovalGate>,
        events: EventBus,
        redactor: Redactor,
        turn_cancel: Arc<Mutex<CancellationToken>>,
    ) -> Self {
        Self {
            hooks: settings.hooks,
            audit_log: settings.audit_log,
            command_timeout: settings.command_timeout.unwrap_or(HOOK_TIMEOUT),
            session_id: session_id.to_string(),
            workspace,
            gate,
            events,
            redactor,
            turn_cancel,
            audit: Mutex::new(()),
        }
    }

    /// Hooks for tool calls made outside a session (`mcp serve`): a [`HookGate`] fires
    /// `before_tool` / `before_write`, the front end [`Self::after_call`]. `run_id` stands for the
    /// session id in payloads and audit records. A command hook is sandboxed as in `auto` mode;
    /// a non-required failure is a `tracing` warning (no session to show an event).
    pub fn outside_session(settings: HookSettings, run_id: &str, workspace: PathBuf) -> Self {
        let gate = Arc::new(ApprovalGate::new(crate::approvals::ApprovalMode::Auto, true, None));
        Self::new(
            settings,
            run_id,
            workspace,
            gate,
            EventBus::new(None),
            Redactor::new(Vec::new()),
            Arc::new(Mutex::new(CancellationToken::new())),
        )
    }

    fn current_cancel(&self) -> CancellationToken {
        self.turn_cancel.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Run every hook of `event`, in file order. The first required hook that fails stops the
    /// event and is returned; a non-required failure is a warning and the next hook runs.
    /// `cancel`: `None` for events after a turn (they run even when it was cancelled).
    pub async fn fire(
        &self,
        event: HookEvent,
        ctx: &HookContext,
        cancel: Option<&CancellationToken>,
    ) -> Result<(), HookFailure> {
        for hook in self.hooks.iter().filter(|h| h.event == event && h.enabled) {
            let result = match hook.kind {
                HookKind::Audit => self.audit(hook, ctx).map_err(|why| (why, String::new())),
                HookKind::Command => self.command(hook, ctx, cancel).await,
            };
            let Err((why, output)) = result else { continue };
            if cancel.is_some_and(|c| c.is_cancelled()) {
                // The turn is ending anyway; its end says so.
                return Ok(());
            }
            let failure = HookFailure {
                hook: hook.id.clone(),
                event,
                why,
                evidence: tail(&self.redactor.text(&output), EVIDENCE_CAP),
            };
            if hook.required {
                tracing::warn!(hook = %hook.id, event = event.as_str(), why = %failure.why, "required hook failed");
                return Err(failure);
            }
            tracing::warn!(hook = %hook.id, event = event.as_str(), why = %failure.why, "hook failed");
            self.events.emit(Event::Warning {
                message: format!(
                    "the {} hook `{}` failed ({}); it is not required, so work goes on",
                    event.as_str(),
                    hook.id,
                    failure.why
                ),
            });
        }
        Ok(())
    }

    fn base(&self, event: HookEvent, hook: &Hook, ctx: &HookContext) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("event".into(), json!(event.as_str()));
        m.insert("hook".into(), json!(hook.id));
        m.insert("session_id".into(), json!(self.session_id));
        m.insert("workspace".into(), json!(self.workspace));
        if let Some(t) = &ctx.tool {
            m.insert("tool".into(), json!(t));
        }
        if let Some(p) = ctx.perm {
            m.insert("perm".into(), json!(p.to_string()));
        }
        if let Some(o) = &ctx.outcome {
            m.insert("outcome".into(), json!(o.as_str()));
        }
        if let Some(s) = ctx.step {
            m.insert("step".into(), json!(s));
        }
        m
    }

    /// One line of the audit log: the lifecycle only, never arguments or answers (D10, D15).
    fn audit(&self, hook: &Hook, ctx: &HookContext) -> Result<(), String> {
        let Some(path) = &self.audit_log else {
            return Err("no audit log: the config dir cannot be found".into());
        };
        let mut record = Map::new();
        let time_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        record.insert("time_ms".into(), json!(time_ms));
        record.extend(self.base(hook.event, hook, ctx));
        let mut line = Value::Object(record).to_string();
        line.push('\n');
        let _one_at_a_time = self.audit.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(|e| format!("cannot write the audit log {}: {e}", path.display()))
    }

    async fn command(
        &self,
        hook: &Hook,
        ctx: &HookContext,
        cancel: Option<&CancellationToken>,
    ) -> Result<(), (String, String)> {
        let mut payload = self.base(hook.event, hook, ctx);
        if let Some(a) = &ctx.arguments {
            payload.insert("arguments".into(), self.redactor.value(a));
        }
        if let Some(a) = &ctx.answer {
            payload.insert("answer".into(), json!(self.redactor.text(a)));
        }
        if let Some(r) = &ctx.reason {
            payload.insert("reason".into(), json!(self.redactor.text(r)));
        }
        let sandboxed = confinement(self.gate.mode(), Confinement::ProcessSandbox) != Confinement::None;
        let run = run_command_hook(HookCommand {
            argv: hook.argv.clone().unwrap_or_default(),
            workspace: self.workspace.clone(),
            event: hook.event.as_str().into(),
            stdin: Value::Object(payload).to_string().into_bytes(),
            timeout: self.command_timeout,
            sandboxed,
            cancel: cancel.cloned().unwrap_or_default(),
        })
        .await;
        match run {
            HookRun::Passed { .. } => Ok(()),
            HookRun::Failed { output, why } => Err((why, output)),
        }
    }

    /// `before_tool`, then for a write tool `before_write`; the first required failure.
    pub async fn before_call(&self, spec: &ToolSpec, args: &Value) -> Result<(), HookFailure> {
        let ctx = HookContext {
            tool: Some(spec.name.clone()),
            perm: Some(spec.perm),
            arguments: Some(args.clone()),
            ..Default::default()
        };
        let cancel = self.current_cancel();
        self.fire(HookEvent::BeforeTool, &ctx, Some(&cancel)).await?;
        if spec.perm == Perm::Write {
            self.fire(HookEvent::BeforeWrite, &ctx, Some(&cancel)).await?;
        }
        Ok(())
    }

    /// After a call the tool ran: `after_write` (write tools), then `after_tool`. A required
    /// failure is returned; the call's result then says so.
    pub async fn after_call(
        &self,
        tool: &str,
        perm: Option<Perm>,
        args: &Value,
        outcome: Outcome,
        cancel: &CancellationToken,
    ) -> Result<(), HookFailure> {
        let ctx = HookContext {
            tool: Some(tool.to_string()),
            perm,
            arguments: Some(args.clone()),
            outcome: Some(outcome),
            ..Default::default()
        };
        if perm == Some(Perm::Write) {
            self.fire(HookEvent::AfterWrite, &ctx, Some(cancel)).await?;
        }
        self.fire(HookEvent::AfterTool, &ctx, Some(cancel)).await
    }

    /// The end of a main-agent turn: `after_finish` (done), `task_failed` (failed, step limit)
    /// or `task_cancelled`; a truncated answer fires none. A required `after_finish` failure
    /// turns the end into a failure.
    pub async fn turn_ended(&self, end: TurnEnd) -> TurnEnd {
        let (event, ctx) = match &end {
            TurnEnd::Done { answer } => (
                HookEvent::AfterFinish,
                HookContext {
                    answer: Some(answer.clone()),
                    ..Default::default()
                },
            ),
            TurnEnd::Failed { message } => (
                HookEvent::TaskFailed,
                HookContext {
                    reason: Some(message.clone()),
                    ..Default::default()
                },
            ),
            TurnEnd::MaxSteps { limit } => (
                HookEvent::TaskFailed,
                HookContext {
                    reason: Some(format!("the step limit ({limit}) was reached")),
                    ..Default::default()
                },
            ),
            TurnEnd::Cancelled => (HookEvent::TaskCancelled, HookContext::default()),
            _ => return end,
        };
        match self.fire(event, &ctx, None).await {
            Ok(()) => end,
            Err(f) if event == HookEvent::AfterFinish => {
                let message = f.to_string();
                self.events.emit(Event::Error {
                    message: message.clone(),
                });
                TurnEnd::Failed { message }
            }
            Err(f) => {
                self.events.emit(Event::Error { message: f.to_string() });
                end
            }
        }
    }
}

/// The main agent's permission gate: the approval gate, then `before_tool` / `before_write`
/// for a call it allowed. A required failure refuses the call with the hook's evidence.
pub struct HookGate {
    inner: Arc<dyn PermissionGate>,
    hooks: Arc<SessionHooks>,
}

impl HookGate {
    pub fn new(inner: Arc<dyn PermissionGate>, hooks: Arc<SessionHooks>) -> Self {
        Self { inner, hooks }
    }
}

impl PermissionGate for HookGate {
    fn check<'a>(&'a self, spec: &'a ToolSpec, args: &'a Value) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let decision = self.inner.check(spec, args).await;
            if !matches!(decision, Decision::Allow { .. }) {
                return decision;
            }
            match self.hooks.before_call(spec, args).await {
                Ok(()) => decision,
                Err(f) => Decision::Deny { reason: f.to_string() },
            }
        })
    }
}

/// The gate of the main agent: `gate`, wrapped in a [`HookGate`] when there are hooks.
pub fn main_gate(gate: Arc<ApprovalGate>, hooks: Option<&Arc<SessionHooks>>) -> Arc<dyn PermissionGate> {
    match hooks {
        Some(h) => Arc::new(HookGate::new(gate, h.clone())),
        None => gate,
    }
}

/// The last `cap` bytes of `s` (at a char boundary), marked when cut.
fn tail(s: &str, cap: usize) -> String {
    if s.len() <= cap {
        return s.to_string();
    }
    let mut start = s.len() - cap;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} earlier bytes cut]\n{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end() {
        assert_eq!(tail("abc", 5), "abc");
        assert_eq!(tail("abcdef", 2), "[… 4 earlier bytes cut]\nef");
        assert!(tail("ééé", 3).ends_with('é'));
    }

    #[test]
    fn failure_text_names_the_hook_not_its_argv() {
        let f = HookFailure {
            hook: "checks".into(),
            event: HookEvent::BeforeFinish,
            why: "exit code 1".into(),
            evidence: "2 tests failed\n".into(),
        };
        assert_eq!(
            f.to_string(),
            "the required before_finish hook `checks` failed (exit code 1); its output:\n2 tests failed"
        );
        assert!(f.finish_feedback().starts_with("The before_finish check failed: "));
    }

    #[test]
    fn only_enabled_hooks_are_kept() {
        let config = cst_config::deployment::parse(
            r#"{"version": 1, "hooks": [
                {"id": "a", "event": "after_tool", "kind": "audit"},
                {"id": "b", "event": "after_tool", "kind": "audit", "enabled": false}]}"#,
        )
        .unwrap();
        let s = HookSettings::from_deployment(&config);
        assert_eq!(s.hooks.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["a"]);
    }
}
