//! The session task: driven by [`Op`]s, it emits [`Event`]s on its [`EventBus`]. Turns are
//! queued and run one at a time by the agent loop ([`crate::agent`]), and so are `/model` and
//! `/clear`, in order with them; cancel, approval answers and refusals, question answers, the
//! approval mode and reloads act at once, even mid-turn. The session owns its loaded extensions
//! ([`SessionExtensions`]), reports its MCP servers' states as they change
//! ([`Event::McpServers`]) and shuts the servers down before it closes.
//!
//! Front ends build sessions with [`SessionBuilder`](crate::builder::SessionBuilder); [`spawn`]
//! is the layer under it, for sessions whose tools are assembled by hand (tests, benchmarks).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::approvals::{ApprovalGate, ApprovalMode, RequestSink};
use crate::events::{EventBus, EventSink};
use crate::model::{ChatMessage, ModelClient};
use crate::questions::QuestionBroker;
use crate::resume::Resumed;
use crate::session_extensions::{mcp_server_states, SessionExtensions};
use crate::transcript::{Record, Redactor, Transcript, TranscriptOf, TranscriptSink};
use crate::{prompt, subagent};
use cst_extensions::mcp::McpManager;
use cst_extensions::subagents::RoleSet;
use cst_protocol::{Diagnostic, DiagnosticKind, Event, Op, ReloadSummary, TurnEnd};
use cst_registry::question::Questions;
use cst_registry::Registry;

/// Default step limit of a turn (model calls).
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// Everything a session needs.
pub struct SessionConfig {
    pub workspace: PathBuf,
    pub registry: Arc<Registry>,
    pub model: ModelClient,
    pub approval: ApprovalMode,
    /// No person can answer approval requests or questions; calls that would ask are refused.
    pub headless: bool,
    /// Model calls per turn.
    pub max_steps: u32,
    pub system_prompt: String,
    /// Write `.agent/sessions/<id>/main.jsonl`.
    pub transcript: bool,
    /// Extra values to redact from the transcript (besides the API key).
    pub secrets: Vec<String>,
    /// Sub-agent roles for the `task` tool (A1); the built-ins when none were loaded.
    pub roles: Arc<RoleSet>,
    /// Workspace root, skills index and AGENTS.md for sub-agents' system prompts
    /// ([`prompt::context`]).
    pub subagent_context: String,
    /// What `Op::Reload` reloads and shutdown stops; `None`: tools assembled by hand.
    pub extensions: Option<SessionExtensions>,
    /// More sinks for every event (the hooks of the deployment layer), after the transcript and
    /// before the front end.
    pub sinks: Vec<Arc<dyn EventSink>>,
    /// Said as [`Event::Warning`]s right after [`Event::SessionStarted`] (MCP servers that
    /// failed while the session started).
    pub startup_warnings: Vec<String>,
    /// Tools approved for the whole session (`--allow-tool`, `--allow-server`).
    pub allowed: crate::approvals::AllowList,
    /// A session to continue (see `SessionBuilder::resume`): its history follows the system
    /// prompt and its records are copied into the new transcript.
    pub resumed: Option<Resumed>,
    /// The deployment's hooks (D14–D18; `crate::hooks`): the main agent's only.
    pub hooks: crate::hooks::HookSettings,
    /// The chosen permission profile (D2, D19); `None`: the approval mode alone decides.
    pub permission_profile: Option<cst_config::deployment::PermissionProfile>,
}

impl SessionConfig {
    /// A config with no extensions, transcript on, no extra sinks.
    pub fn new(workspace: PathBuf, registry: Arc<Registry>, model: ModelClient) -> Self {
        Self {
            workspace,
            registry,
            model,
            approval: ApprovalMode::default(),
            headless: false,
            max_steps: DEFAULT_MAX_STEPS,
            system_prompt: String::new(),
            transcript: true,
            secrets: Vec::new(),
            roles: Default::default(),
            subagent_context: String::new(),
            extensions: None,
            sinks: Vec::new(),
            startup_warnings: Vec::new(),
            allowed: Default::default(),
            resumed: None,
            hooks: Default::default(),
            permission_profile: Default::default(),
        }
    }
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

/// What the turn queue runs, in the order the ops came: turns, and the ops that must not change
/// a turn under way.
enum Queued {
    Turn(String),
    SetModel(String),
    Clear,
}

/// The prompts a reload rebuilds; agents read them before each model call.
#[derive(Clone)]
struct Prompts {
    main: Arc<RwLock<String>>,
    subagent_context: Arc<RwLock<String>>,
}

/// Start a session task. It runs until [`Op::Shutdown`] or until `ops` is dropped, then stops its
/// extensions, closes the transcript and sends [`Event::SessionClosed`].
pub fn spawn(mut config: SessionConfig) -> SessionHandle {
    let session_id = new_session_id();
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let bus = EventBus::new(Some(ev_tx));

    config.model.config().remember_secrets();
    let mut secrets = config.secrets.clone();
    secrets.extend(config.model.config().api_key.clone());
    let resumed = config.resumed.take();
    let transcript = config
        .transcript
        .then(|| open_transcript(&config, &session_id, &secrets, &bus, resumed.as_ref()));
    let transcript = transcript.flatten();
    for sink in &config.sinks {
        bus.add(sink.clone());
    }

    let requests: RequestSink = {
        let bus = bus.clone();
        Box::new(move |r| {
            bus.emit(Event::ApprovalRequested {
                request_id: r.request_id,
                tool: r.tool,
                perm: r.perm,
                args: r.args,
                reason: r.reason,
                subagent: r.subagent,
            })
        })
    };
    let mut gate = ApprovalGate::new(config.approval, config.headless, Some(requests))
        .with_host_files(&config.workspace)
        .with_allowed(std::mem::take(&mut config.allowed));
    if let Some(profile) = config.permission_profile {
        gate = gate.with_profile(profile);
    }
    let gate = Arc::new(gate);
    if gate.mode() != config.approval {
        config.startup_warnings.push(format!(
            "the permission profile `{}` does not allow approval mode `{}`; the session uses `{}`",
            gate.profile().as_str(),
            config.approval.as_str(),
            gate.mode().as_str()
        ));
    }
    let questions = (!config.headless).then(|| Arc::new(QuestionBroker::new(bus.clone())));

    bus.emit(Event::SessionStarted {
        session_id: session_id.clone(),
        model: config.model.config().name.clone(),
        transcript: transcript.as_ref().map(|t| t.path().to_path_buf()),
    });
    for message in &config.startup_warnings {
        bus.emit(Event::Warning {
            message: message.clone(),
        });
    }
    // The manager is cheap to clone: the watcher never needs the extensions' lock, which a
    // reload holds while servers stop and start.
    let mcp_watch = CancellationToken::new();
    let mcp_watcher = config
        .extensions
        .as_ref()
        .map(|ext| watch_mcp(ext.mcp.clone(), bus.clone(), mcp_watch.clone()));

    let prompts = Prompts {
        main: Arc::new(RwLock::new(config.system_prompt.clone())),
        subagent_context: Arc::new(RwLock::new(config.subagent_context.clone())),
    };
    let extensions = Arc::new(tokio::sync::Mutex::new(config.extensions));
    let current_cancel = Arc::new(Mutex::new(CancellationToken::new()));
    let hooks = (!config.hooks.is_empty()).then(|| {
        Arc::new(crate::hooks::SessionHooks::new(
            std::mem::take(&mut config.hooks),
            &session_id,
            config.workspace.clone(),
            gate.clone(),
            bus.clone(),
            Redactor::new(secrets.clone()),
            current_cancel.clone(),
        ))
    });
    let (turn_tx, mut turn_rx) = mpsc::unbounded_channel::<Queued>();

    // Op router: turns are queued; everything else acts at once, even mid-turn.
    let router = Router {
        cancel: current_cancel.clone(),
        gate: gate.clone(),
        questions: questions.clone(),
        extensions: extensions.clone(),
        bus: bus.clone(),
        prompts: prompts.clone(),
        workspace: config.workspace.clone(),
    };
    let (op_tx, mut op_rx) = mpsc::unbounded_channel::<Op>();
    tokio::spawn(async move {
        while let Some(op) = op_rx.recv().await {
            match op {
                Op::UserTurn { text } => {
                    let _ = turn_tx.send(Queued::Turn(text));
                }
                Op::SetModel { model } => match model.trim() {
                    "" => {
                        router.bus.emit(Event::Warning {
                            message: "`/model` needs a model name (`/model NAME`); the model did not change".into(),
                        });
                    }
                    name => {
                        let _ = turn_tx.send(Queued::SetModel(name.to_string()));
                    }
                },
                Op::Clear => {
                    let _ = turn_tx.send(Queued::Clear);
                }
                Op::Shutdown => break,
                other => router.handle(other),
            }
        }
        // Shutdown or the front end went away: stop the running turn, end the turn queue.
        router.cancel_turn();
    });

    let subagents = Arc::new(subagent::SubAgents {
        workspace: config.workspace.clone(),
        registry: config.registry.clone(),
        model: RwLock::new(config.model.clone()),
        default_max_steps: config.max_steps,
        gate: gate.clone(),
        events: bus.clone(),
        roles: config.roles.clone(),
        context: prompts.subagent_context.clone(),
        transcript_dir: transcript.as_ref().and_then(|t| {
            t.path()
                .parent()
                .map(|d| (d.to_path_buf(), Redactor::new(secrets.clone())))
        }),
        next_n: Default::default(),
    });
    // A resumed conversation follows today's system prompt (the one its skills and roles are).
    let mut history = vec![ChatMessage::System {
        content: config.system_prompt.clone(),
    }];
    history.extend(resumed.as_ref().map(Resumed::history).unwrap_or_default());
    let mut agent = Agent {
        history,
        workspace: config.workspace.clone(),
        registry: config.registry.clone(),
        model: config.model.clone(),
        max_steps: config.max_steps,
        gate: crate::hooks::main_gate(gate, hooks.as_ref()),
        events: bus.clone(),
        system_prompt: Some(prompts.main.clone()),
        questions: questions.map(|q| q as Arc<dyn Questions>),
        scope: None,
        subagents: Some(subagents.clone()),
        sub: None,
        usage: None,
        hooks: hooks.clone(),
    };
    tokio::spawn(async move {
        // D17: a required session_start hook that failed fails every turn of the session.
        let start_failure = match &hooks {
            Some(h) => h
                .fire(
                    cst_config::deployment::HookEvent::SessionStart,
                    &Default::default(),
                    None,
                )
                .await
                .err()
                .map(|f| f.to_string()),
            None => None,
        };
        while let Some(queued) = turn_rx.recv().await {
            let text = match queued {
                Queued::Turn(text) => text,
                Queued::SetModel(name) => {
                    // Between turns, so no model call and no sub-agent is under way.
                    agent.model = agent.model.with_model(&name);
                    let mut sub = subagents.model.write().unwrap_or_else(|e| e.into_inner());
                    *sub = sub.with_model(&name);
                    drop(sub);
                    agent.events.emit(Event::ModelChanged { model: name });
                    continue;
                }
                Queued::Clear => {
                    let content = prompts.main.read().unwrap_or_else(|e| e.into_inner()).clone();
                    agent.history = vec![ChatMessage::System { content }];
                    agent.events.emit(Event::Cleared);
                    continue;
                }
            };
            let cancel = CancellationToken::new();
            *current_cancel.lock().unwrap_or_else(|e| e.into_inner()) = cancel.clone();
            agent.events.emit(Event::TurnStarted);
            // S6: `/skill NAME message` puts the skill's instructions into the message.
            let expanded = match &start_failure {
                Some(failure) => Err(failure.clone()),
                None => expand_skill(&extensions, text).await,
            };
            let text = match expanded {
                Ok(text) => text,
                Err(message) => {
                    agent.events.emit(Event::Error {
                        message: message.clone(),
                    });
                    agent.events.emit(Event::TurnFinished {
                        end: TurnEnd::Failed { message },
                        steps: 0,
                        usage: None,
                    });
                    continue;
                }
            };
            let (end, steps) = agent.run_turn(text, &cancel).await;
            let end = match &hooks {
                Some(h) => h.turn_ended(end).await,
                None => end,
            };
            agent.events.emit(Event::TurnFinished {
                end,
                steps,
                usage: agent.usage,
            });
        }
        // The session is ending: its servers' last states ("stopped by the host") are no news, and
        // nothing may follow SessionClosed.
        mcp_watch.cancel();
        if let Some(watcher) = mcp_watcher {
            let _ = watcher.await;
        }
        // The session owns its extensions: MCP servers stop before the session says it closed.
        if let Some(ext) = extensions.lock().await.take() {
            ext.shutdown().await;
        }
        agent.events.emit(Event::SessionClosed);
    });

    SessionHandle {
        session_id,
        ops: op_tx,
        events: ev_rx,
    }
}

/// Report the MCP servers' states now ([`Event::McpServers`]) and again each time they change,
/// until `stop`. Runs on its own task; returns it.
fn watch_mcp(mcp: McpManager, bus: EventBus, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    // Subscribed before the first reading, so a change in between is not lost.
    let mut changed = mcp.subscribe();
    let mut last = mcp_server_states(&mcp);
    bus.emit(Event::McpServers { servers: last.clone() });
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                r = changed.changed() => {
                    if r.is_err() {
                        break;
                    }
                    // A bump can leave what a front end shows unchanged (a reload that kept
                    // everything); only news is sent.
                    let now = mcp_server_states(&mcp);
                    if now != last {
                        bus.emit(Event::McpServers { servers: now.clone() });
                        last = now;
                    }
                }
            }
        }
    })
}

/// Create `main.jsonl`, write its header (and a resumed session's records) and put its sink on
/// the bus.
fn open_transcript(
    config: &SessionConfig,
    session_id: &str,
    secrets: &[String],
    bus: &EventBus,
    resumed: Option<&Resumed>,
) -> Option<Arc<Transcript>> {
    match Transcript::create(&config.workspace, session_id, Redactor::new(secrets.to_vec())) {
        Ok(t) => {
            let t = Arc::new(t);
            t.write(&Record::Session {
                session_id: session_id.to_string(),
                model: config.model.config().name.clone(),
                base_url: config.model.config().base_url.clone(),
                workspace: config.workspace.clone(),
                approval: config.approval.as_str().into(),
                system_prompt: config.system_prompt.clone(),
                resumed_from: resumed.map(|r| r.session_id.clone()),
            });
            // So that this session, resumed in turn, still has the whole conversation.
            for record in resumed.map(Resumed::records_for_copy).unwrap_or_default() {
                t.write(&record);
            }
            bus.add(Arc::new(TranscriptSink::new(t.clone(), TranscriptOf::Main)));
            Some(t)
        }
        Err(e) => {
            bus.emit(Event::Warning {
                message: format!(
                    "cannot create the transcript under {}: {e}",
                    config.workspace.join(".agent/sessions").display()
                ),
            });
            None
        }
    }
}

/// What the op router needs to act on ops other than turns.
struct Router {
    cancel: Arc<Mutex<CancellationToken>>,
    gate: Arc<ApprovalGate>,
    questions: Option<Arc<QuestionBroker>>,
    extensions: Arc<tokio::sync::Mutex<Option<SessionExtensions>>>,
    bus: EventBus,
    prompts: Prompts,
    workspace: PathBuf,
}

impl Router {
    fn handle(&self, op: Op) {
        match op {
            Op::Approval { request_id, decision } => self.gate.answer(request_id, decision),
            Op::Answer { request_id, answer } => {
                if let Some(q) = &self.questions {
                    q.answer(request_id, answer);
                }
            }
            Op::Cancel => self.cancel_turn(),
            Op::Reload { what } => {
                // Off the router, so approvals and cancel still work while servers stop and
                // start; reloads run one at a time (the lock).
                let extensions = self.extensions.clone();
                let bus = self.bus.clone();
                let prompts = self.prompts.clone();
                let workspace = self.workspace.clone();
                tokio::spawn(async move {
                    let mut guard = extensions.lock().await;
                    let (summary, warnings) = match guard.as_mut() {
                        Some(ext) => {
                            let (summary, mut warnings) = ext.reload(&what).await;
                            warnings.extend(prompt::agents_md_warning(&workspace));
                            // The indexes of the next model call's prompt follow the reload.
                            let context = prompt::context(&workspace, &ext.loaded.skills);
                            let main = prompt::system_prompt(&context, &ext.loaded.roles);
                            *prompts.main.write().unwrap_or_else(|e| e.into_inner()) = main;
                            *prompts.subagent_context.write().unwrap_or_else(|e| e.into_inner()) = context;
                            (summary, warnings)
                        }
                        None => (
                            ReloadSummary::default(),
                            vec![Diagnostic::new(
                                DiagnosticKind::Other,
                                "this session loaded no extensions, so there is nothing to reload",
                            )],
                        ),
                    };
                    drop(guard);
                    bus.emit(Event::Reloaded {
                        what,
                        summary,
                        warnings,
                    });
                });
            }
            Op::Refuse { request_id, reason } => self.gate.refuse(request_id, &reason),
            Op::SetApproval { mode } => match ApprovalMode::parse(&mode) {
                Some(mode) if !crate::approvals::profile_allows_mode(self.gate.profile(), mode) => {
                    self.bus.emit(Event::Warning {
                        message: format!(
                            "the permission profile `{}` does not allow approval mode `{}`; it stays `{}`",
                            self.gate.profile().as_str(),
                            mode.as_str(),
                            self.gate.mode().as_str()
                        ),
                    });
                }
                Some(mode) => {
                    self.gate.set_mode(mode);
                    self.bus.emit(Event::ApprovalModeChanged {
                        mode: mode.as_str().into(),
                    });
                }
                None => {
                    let modes: Vec<&str> = ApprovalMode::ALL.iter().map(|m| m.as_str()).collect();
                    self.bus.emit(Event::Warning {
                        message: format!(
                            "unknown approval mode `{}`; the modes are {}; it stays `{}`",
                            mode.trim(),
                            modes.join(", "),
                            self.gate.mode().as_str()
                        ),
                    });
                }
            },
            // The turn queue takes these (see `spawn`).
            Op::UserTurn { .. } | Op::SetModel { .. } | Op::Clear | Op::Shutdown => {}
        }
    }

    fn cancel_turn(&self) {
        self.cancel.lock().unwrap_or_else(|e| e.into_inner()).cancel();
        self.gate.cancel_pending();
        if let Some(q) = &self.questions {
            q.cancel_pending();
        }
    }
}

/// A user message that is a `/skill NAME message` command, expanded with the session's current
/// skills (S6); any other message as it is. `Err` names an unknown skill or a bad command.
async fn expand_skill(
    extensions: &tokio::sync::Mutex<Option<SessionExtensions>>,
    text: String,
) -> Result<String, String> {
    if !text.starts_with('/') {
        return Ok(text);
    }
    let skills = extensions
        .lock()
        .await
        .as_ref()
        .map(|e| e.loaded.skills.clone())
        .unwrap_or_default();
    // `/skill NAME message`, else a plugin's slash command `/NAME arguments`.
    match cst_extensions::skills::expand_skill_command(&text, &skills)
        .or_else(|| cst_extensions::skills::expand_command(&text, &skills))
    {
        None => Ok(text),
        Some(expanded) => expanded,
    }
}
