//! Running a sub-agent for a `task` call (A1–A6): the same agent loop as the main agent, with
//! the role's tools, model, step limit and instructions, the parent's approval gate (so its
//! approval requests reach the parent's front end) and its own transcript `sub-N.jsonl`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;

use crate::agent::{Agent, TaskHost};
use crate::approvals::{ApprovalGate, SubAgentGate};
use crate::events::{EventBus, SinkId};
use crate::model::{ChatMessage, ModelClient};
use crate::prompt;
use crate::subagent_transcripts as transcripts;
use crate::transcript::{Record, Redactor, Transcript, TranscriptOf, TranscriptSink};
use cst_extensions::subagents::{Role, RoleSet, NEVER_FOR_SUBAGENTS};
use cst_protocol::{Event, TurnEnd};
use cst_registry::task::{SubAgentHost, TaskArgs};
use cst_registry::{Failure, Invocation, Registry, ToolScope};

/// A session's sub-agent runner (the `task` tool's [`SubAgentHost`]).
pub(crate) struct SubAgents {
    pub workspace: PathBuf,
    pub registry: Arc<Registry>,
    /// The session's model (`/model` changes it between turns, so never while one runs); a
    /// role's own `model` is asked of the same provider.
    pub model: RwLock<ModelClient>,
    /// Step limit of a role without `max_steps`: the session's.
    pub default_max_steps: u32,
    pub gate: Arc<ApprovalGate>,
    pub events: EventBus,
    pub roles: Arc<RoleSet>,
    /// Workspace root, skills index, AGENTS.md (see [`prompt::context`]); a reload rebuilds it.
    pub context: Arc<RwLock<String>>,
    /// The session's transcript folder and redactor; `None` when transcripts are off.
    pub transcript_dir: Option<(PathBuf, Redactor)>,
    pub next_n: AtomicU32,
}

impl SubAgents {
    fn scope(role: &Role) -> ToolScope {
        ToolScope {
            allowed: role.tools.as_ref().map(|t| t.iter().cloned().collect::<BTreeSet<_>>()),
            never: NEVER_FOR_SUBAGENTS.iter().map(|s| s.to_string()).collect(),
            denied: role.disallowed.clone(),
            readonly: role.readonly,
            who: format!(
                "{}sub-agent role `{}`",
                if role.readonly { "read-only " } else { "" },
                role.name
            ),
        }
    }

    async fn run(&self, call: &Invocation<'_>, args: TaskArgs) -> Result<String, Failure> {
        let fail = |message: String| Failure::Failed {
            message,
            exit_code: None,
        };
        let Some(role) = self.roles.get(args.role()).cloned() else {
            return Err(fail(format!(
                "unknown sub-agent role `{}`; the roles are: {}",
                args.role(),
                self.roles.names().join(", ")
            )));
        };
        let n = self.next_n.fetch_add(1, Ordering::Relaxed) + 1;
        let call_id = call.ctx.call_id.clone().unwrap_or_default();
        let model = {
            let session = self.model.read().unwrap_or_else(|e| e.into_inner());
            match &role.model {
                Some(m) => session.with_model(m),
                None => session.clone(),
            }
        };
        let max_steps = role.max_steps.unwrap_or(self.default_max_steps);
        let scope = Self::scope(&role);

        let transcript = self.transcript_dir.as_ref().and_then(|(dir, redactor)| {
            let name = transcripts::file_name(n);
            match Transcript::create_in(dir, &name, redactor.clone()) {
                Ok(t) => Some(Arc::new(t)),
                Err(e) => {
                    self.events.emit(Event::Warning {
                        message: format!(
                            "cannot create the sub-agent transcript {}: {e}",
                            dir.join(name).display()
                        ),
                    });
                    None
                }
            }
        });
        let context = self.context.read().unwrap_or_else(|e| e.into_inner()).clone();
        let system_prompt = prompt::subagent_prompt(&context, &role);
        // The header, then every record from the sub-agent's events through its own sink.
        let sink = transcript.as_ref().map(|t| {
            t.write(&Record::Subagent {
                n,
                role: role.name.clone(),
                description: args.description.clone(),
                prompt: args.prompt.clone(),
                model: model.config().name.clone(),
                readonly: role.readonly,
                max_steps,
                tools: role.tools.clone(),
                role_file: role.file.clone(),
                parent_call_id: call_id.clone(),
                system_prompt: system_prompt.clone(),
            });
            self.events
                .add(Arc::new(TranscriptSink::new(t.clone(), TranscriptOf::SubAgent(n))))
        });
        self.events.emit(Event::SubAgentStarted {
            n,
            call_id: call_id.clone(),
            role: role.name.clone(),
            description: args.description.clone(),
            model: model.config().name.clone(),
            transcript: transcript.as_ref().map(|t| t.path().to_path_buf()),
        });

        let ending = Ending {
            sink,
            events: self.events.clone(),
            n,
            call_id: call_id.clone(),
            done: false,
        };
        let mut agent = Agent {
            workspace: self.workspace.clone(),
            registry: self.registry.clone(),
            model,
            max_steps,
            gate: Arc::new(SubAgentGate {
                gate: self.gate.clone(),
                n,
            }),
            events: self.events.clone(),
            system_prompt: None,
            questions: None, // A2: never `ask_user`
            history: vec![ChatMessage::System { content: system_prompt }],
            scope: Some(Arc::new(scope)),
            subagents: None,
            sub: Some(n),
            usage: None,
            hooks: None, // D18: sub-agents run no hooks
        };
        let (end, steps) = agent.run_turn(args.prompt.clone(), &call.ctx.cancel).await;
        let result = match &end {
            TurnEnd::Done { answer } if answer.trim().is_empty() => Ok("(the sub-agent ended without a report)".into()),
            TurnEnd::Done { answer } => Ok(answer.clone()),
            TurnEnd::Truncated { answer } => Ok(format!(
                "{answer}\n[the sub-agent's report was cut at the model's output limit; it may be incomplete]"
            )),
            // A5: it returns what it has, with a note that it stopped at the limit.
            TurnEnd::MaxSteps { limit } => {
                let so_far = last_assistant_text(&agent.history);
                Ok(format!(
                    "{}[the sub-agent stopped at its step limit ({limit} model calls) before it finished; \
                     this report may be incomplete]",
                    if so_far.is_empty() {
                        String::new()
                    } else {
                        format!("{so_far}\n\n")
                    }
                ))
            }
            TurnEnd::Cancelled => Err(fail("the sub-agent was cancelled".into())),
            TurnEnd::Failed { message } => Err(fail(format!("the sub-agent failed: {message}"))),
        };
        let report = match &result {
            Ok(r) => r.clone(),
            Err(Failure::Failed { message, .. } | Failure::TimedOut { message }) => message.clone(),
        };
        ending.finish(end, steps, &report);
        result
    }
}

/// Sends [`Event::SubAgentFinished`] (its transcript sink writes the report and closes the file)
/// and takes the sink off the bus — also when the run is dropped half-way (the turn was
/// cancelled and the registry stopped waiting), so a transcript always ends and the front end
/// always hears the end.
struct Ending {
    sink: Option<SinkId>,
    events: EventBus,
    n: u32,
    call_id: String,
    done: bool,
}

impl Ending {
    fn finish(mut self, end: TurnEnd, steps: u32, report: &str) {
        self.write(end, steps, report);
    }

    fn write(&mut self, end: TurnEnd, steps: u32, report: &str) {
        self.done = true;
        self.events.emit(Event::SubAgentFinished {
            n: self.n,
            call_id: std::mem::take(&mut self.call_id),
            end,
            steps,
            report: report.to_string(),
        });
        if let Some(id) = self.sink.take() {
            self.events.remove(id);
        }
    }
}

impl Drop for Ending {
    fn drop(&mut self) {
        if !self.done {
            self.write(TurnEnd::Cancelled, 0, "the sub-agent was cancelled");
        }
    }
}

/// The last non-empty text the model wrote (what a stopped sub-agent has so far).
fn last_assistant_text(history: &[ChatMessage]) -> String {
    history
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::Assistant { content: Some(c), .. } if !c.trim().is_empty() => Some(c.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

impl SubAgentHost for SubAgents {
    fn run_task<'a>(&'a self, call: &'a Invocation<'a>, args: TaskArgs) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(self.run(call, args))
    }
}

impl TaskHost for SubAgents {
    fn role_is_readonly(&self, role: &str) -> bool {
        self.roles.get(role).is_some_and(|r| r.readonly)
    }
}
