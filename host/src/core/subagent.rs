//! Running a sub-agent for a `task` call (A1–A6): the same agent loop as the main agent, with
//! the role's tools, model, step limit and instructions, the parent's approval gate (so its
//! approval requests reach the parent's front end) and its own transcript `sub-N.jsonl`.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::mpsc;

use super::{prompt, Agent, Event, TurnEnd};
use crate::approvals::{ApprovalGate, SubAgentGate};
use crate::model::{ChatMessage, ModelClient};
use crate::subagents::task_tool::{SubAgentHost, TaskArgs};
use crate::subagents::{transcripts, Role, RoleSet, NEVER_FOR_SUBAGENTS};
use crate::tools::{Failure, Invocation, Registry, ToolScope};
use crate::transcript::{Redactor, Transcript};

/// A session's sub-agent runner (the `task` tool's [`SubAgentHost`]).
pub(crate) struct SubAgents {
    pub workspace: PathBuf,
    pub registry: Arc<Registry>,
    pub model: ModelClient,
    /// Step limit of a role without `max_steps`: the session's.
    pub default_max_steps: u32,
    pub gate: Arc<ApprovalGate>,
    pub events: mpsc::UnboundedSender<Event>,
    pub roles: Arc<RoleSet>,
    /// Workspace root, skills index, AGENTS.md (see [`prompt::context`]).
    pub context: String,
    /// The session's transcript folder and redactor; `None` when transcripts are off.
    pub transcript_dir: Option<(PathBuf, Redactor)>,
    pub next_n: AtomicU32,
    /// `task` call id → `sub-N.jsonl`, for the parent transcript's entry.
    pub files: Mutex<HashMap<String, String>>,
}

impl SubAgents {
    /// The transcript file name of the sub-agent a `task` call started.
    pub fn file_of(&self, call_id: &str) -> Option<String> {
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(call_id)
            .cloned()
    }

    fn scope(role: &Role) -> ToolScope {
        ToolScope {
            allowed: role.tools.as_ref().map(|t| t.iter().cloned().collect::<BTreeSet<_>>()),
            never: NEVER_FOR_SUBAGENTS.iter().map(|s| s.to_string()).collect(),
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
        let model = match &role.model {
            Some(m) => self.model.with_model(m),
            None => self.model.clone(),
        };
        let max_steps = role.max_steps.unwrap_or(self.default_max_steps);
        let scope = Self::scope(&role);

        let transcript = self.transcript_dir.as_ref().and_then(|(dir, redactor)| {
            let name = transcripts::file_name(n);
            match Transcript::create_in(dir, &name, redactor.clone()) {
                Ok(t) => {
                    self.files
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(call_id.clone(), name);
                    Some(Arc::new(t))
                }
                Err(e) => {
                    let _ = self.events.send(Event::Warning {
                        message: format!(
                            "cannot create the sub-agent transcript {}: {e}",
                            dir.join(name).display()
                        ),
                    });
                    None
                }
            }
        });
        let system_prompt = prompt::subagent_prompt(&self.context, &role);
        if let Some(t) = &transcript {
            t.record(
                "subagent",
                json!({"n": n, "role": role.name, "description": args.description, "prompt": args.prompt,
                       "model": model.config().name, "readonly": role.readonly, "max_steps": max_steps,
                       "tools": role.tools, "role_file": role.file, "parent_call_id": call_id,
                       "system_prompt": system_prompt}),
            );
        }
        let _ = self.events.send(Event::SubAgentStarted {
            n,
            call_id: call_id.clone(),
            role: role.name.clone(),
            description: args.description.clone(),
            model: model.config().name.clone(),
            transcript: transcript.as_ref().map(|t| t.path().to_path_buf()),
        });

        let ending = Ending {
            transcript: transcript.clone(),
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
            transcript: transcript.clone(),
            history: vec![ChatMessage::System { content: system_prompt }],
            scope: Some(Arc::new(scope)),
            subagents: None,
            sub: Some(n),
        };
        let (end, steps) = agent.run_turn(args.prompt.clone(), &call.ctx.cancel).await;
        let result = match &end {
            TurnEnd::Done { answer } if answer.trim().is_empty() => Ok("(the sub-agent ended without a report)".into()),
            TurnEnd::Done { answer } => Ok(answer.clone()),
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

/// Writes the `report` record, closes the transcript and sends [`Event::SubAgentFinished`] —
/// also when the run is dropped half-way (the turn was cancelled and the registry stopped
/// waiting), so a transcript always ends and the front end always hears the end.
struct Ending {
    transcript: Option<Arc<Transcript>>,
    events: mpsc::UnboundedSender<Event>,
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
        if let Some(t) = &self.transcript {
            t.record("report", json!({"report": report, "end": end.as_str(), "steps": steps}));
            t.close(end.as_str());
        }
        let _ = self.events.send(Event::SubAgentFinished {
            n: self.n,
            call_id: std::mem::take(&mut self.call_id),
            end,
            steps,
        });
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
