//! The wire format of `cst-agent exec --json`: one [`HeadlessEvent`] per line (JSONL), schema
//! version [`SCHEMA_VERSION`]. This is the headless runner's public contract, kept apart from the
//! core's [`Event`]s: [`HeadlessEvent::from_event`] says which of them appear and how.
//!
//! `docs/headless-events.schema.json` is [`schema()`], written by
//! `cargo run -q -p cst-protocol --example headless_schema > docs/headless-events.schema.json`;
//! a test of this crate fails when the file is stale.
//!
//! Compatibility within version 1: event types and optional fields may be added; renames and
//! removals bump [`SCHEMA_VERSION`]. Deserializing therefore ignores unknown fields, while the
//! published schema (which describes exactly what this build writes) forbids them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Event, TurnEnd};

/// Version of the `--json` event schema; bumped only on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The `$id` of the published schema.
pub const SCHEMA_ID: &str = "https://cst-agent.dev/schemas/headless-events-v1.json";

/// The values of `status` in `turn.finished` and `subagent.finished` ([`TurnEnd::as_str`]).
pub const TURN_STATUSES: [&str; 5] = ["done", "max_steps", "cancelled", "error", "length"];

/// The values of `outcome` in `tool.finished` ([`crate::Outcome::as_str`]).
pub const TOOL_OUTCOMES: [&str; 5] = ["ok", "error", "denied", "timeout", "cancelled"];

/// One line of `cst-agent exec --json` output. `type` says which event it is; `subagent` (N)
/// marks the events of sub-agent N and is absent on the main agent's.
///
/// Optional fields (`subagent`, `answer`, `error`) are left out when absent, never `null`; their
/// `#[schemars(with = …)]` says so in the schema. `transcript` is always there, maybe `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[schemars(deny_unknown_fields)]
#[schemars(
    title = "cst-agent exec --json event (schema version 1)",
    description = "One line of `cst-agent exec --json` output (JSONL: one such object per line). \
                   `subagent` (N) marks the events of sub-agent N. Generated from \
                   `cst_protocol::headless`; see docs/headless.md and docs/subagents.md."
)]
#[schemars(extend("$id" = SCHEMA_ID))]
pub enum HeadlessEvent {
    /// The first line.
    #[serde(rename = "session.started")]
    SessionStarted {
        /// The schema version of this stream: 1.
        #[schemars(extend("const" = SCHEMA_VERSION))]
        schema_version: u32,
        #[schemars(length(min = 1))]
        session_id: String,
        model: String,
        /// The path of the session's transcript (`main.jsonl`), or null when none is written.
        transcript: Option<String>,
    },
    /// The prompt was accepted.
    #[serde(rename = "turn.started")]
    TurnStarted,
    /// A fragment of the model's text as it streams.
    #[serde(rename = "message.delta")]
    MessageDelta {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32", range(min = 1))]
        subagent: Option<u32>,
    },
    /// The model's whole text of one model call (only when it had text).
    #[serde(rename = "message")]
    Message {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32", range(min = 1))]
        subagent: Option<u32>,
    },
    /// A tool call is about to run (before approval).
    #[serde(rename = "tool.started")]
    ToolStarted {
        call_id: String,
        tool: String,
        /// `builtin:builtin`, `wasm:<plugin>`, `command:<plugin>` or `mcp:<server>`.
        source: String,
        /// The arguments the model gave.
        args: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32", range(min = 1))]
        subagent: Option<u32>,
    },
    /// A tool call ended.
    #[serde(rename = "tool.finished")]
    ToolFinished {
        call_id: String,
        tool: String,
        #[schemars(extend("enum" = TOOL_OUTCOMES))]
        outcome: String,
        /// The text the model gets back.
        output: String,
        #[schemars(range(min = 0.0))]
        duration_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32", range(min = 1))]
        subagent: Option<u32>,
    },
    /// A problem that did not stop the turn.
    #[serde(rename = "warning")]
    Warning {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32", range(min = 1))]
        subagent: Option<u32>,
    },
    /// The problem that ended the turn (of the main agent, or of sub-agent `subagent`).
    #[serde(rename = "error")]
    Error {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "u32", range(min = 1))]
        subagent: Option<u32>,
    },
    /// A `task` call started sub-agent N.
    #[serde(rename = "subagent.started")]
    SubAgentStarted {
        #[schemars(range(min = 1))]
        subagent: u32,
        /// The parent's `task` call.
        call_id: String,
        role: String,
        description: String,
        model: String,
        /// The path of the sub-agent's transcript (`sub-N.jsonl`), or null when none is written.
        transcript: Option<String>,
    },
    /// Sub-agent N ended; its report went back to the parent as the `task` result.
    #[serde(rename = "subagent.finished")]
    SubAgentFinished {
        #[schemars(range(min = 1))]
        subagent: u32,
        call_id: String,
        #[schemars(extend("enum" = TURN_STATUSES))]
        status: String,
        /// Model calls the sub-agent made.
        steps: u32,
    },
    /// The last line.
    #[serde(rename = "turn.finished")]
    TurnFinished {
        #[schemars(extend("enum" = TURN_STATUSES))]
        status: String,
        /// Model calls made in the turn.
        steps: u32,
        /// The final answer (when `status` is `done`, or `length`: cut at the output limit).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        answer: Option<String>,
        /// Why the turn failed (when `status` is `error`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        error: Option<String>,
        /// Tokens the model server reported for the turn (absent when it reported none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "crate::TokenUsage")]
        usage: Option<crate::TokenUsage>,
    },
}

impl HeadlessEvent {
    /// The line a core event becomes, or `None` when it has none: headless runs never ask (the
    /// gate refuses instead, `ask_user` says nobody can answer) and never reload, the user's
    /// message is the prompt the run was given, and a reply with only tool calls (empty text)
    /// is shown by its tool events. [`Event::SubAgent`] `{ n, event }` is the inner event's line
    /// with `subagent: Some(n)`; an inner event whose line cannot carry `subagent` (the core
    /// sends none such) has no line.
    pub fn from_event(ev: &Event) -> Option<HeadlessEvent> {
        let line = match ev {
            Event::SessionStarted {
                session_id,
                model,
                transcript,
            } => HeadlessEvent::SessionStarted {
                schema_version: SCHEMA_VERSION,
                session_id: session_id.clone(),
                model: model.clone(),
                transcript: transcript.as_ref().map(|p| p.display().to_string()),
            },
            Event::TurnStarted => HeadlessEvent::TurnStarted,
            Event::MessageDelta { text } => HeadlessEvent::MessageDelta {
                text: text.clone(),
                subagent: None,
            },
            Event::Message { text, .. } if text.is_empty() => return None,
            Event::Message { text, .. } => HeadlessEvent::Message {
                text: text.clone(),
                subagent: None,
            },
            Event::ToolCallStarted {
                call_id,
                tool,
                source,
                args,
            } => HeadlessEvent::ToolStarted {
                call_id: call_id.clone(),
                tool: tool.clone(),
                source: source.clone(),
                args: args.clone(),
                subagent: None,
            },
            Event::ToolCallFinished {
                call_id,
                tool,
                outcome,
                output,
                duration,
            } => HeadlessEvent::ToolFinished {
                call_id: call_id.clone(),
                tool: tool.clone(),
                outcome: outcome.as_str().to_string(),
                output: output.clone(),
                duration_ms: duration.as_secs_f64() * 1000.0,
                subagent: None,
            },
            Event::Compacted {
                messages,
                tokens_before,
                tokens_after,
                ..
            } => HeadlessEvent::Warning {
                message: format!(
                    "context compacted: {messages} older messages summarised (about {tokens_before} → {tokens_after} tokens)"
                ),
                subagent: None,
            },
            Event::Warning { message } => HeadlessEvent::Warning {
                message: message.clone(),
                subagent: None,
            },
            Event::Error { message } => HeadlessEvent::Error {
                message: message.clone(),
                subagent: None,
            },
            Event::TurnFinished { end, steps, usage } => {
                let (answer, error) = match end {
                    TurnEnd::Done { answer } | TurnEnd::Truncated { answer } => (Some(answer.clone()), None),
                    TurnEnd::Failed { message } => (None, Some(message.clone())),
                    TurnEnd::MaxSteps { .. } | TurnEnd::Cancelled => (None, None),
                };
                HeadlessEvent::TurnFinished {
                    status: end.as_str().to_string(),
                    steps: *steps,
                    answer,
                    error,
                    usage: *usage,
                }
            }
            Event::SubAgentStarted {
                n,
                call_id,
                role,
                description,
                model,
                transcript,
            } => HeadlessEvent::SubAgentStarted {
                subagent: *n,
                call_id: call_id.clone(),
                role: role.clone(),
                description: description.clone(),
                model: model.clone(),
                transcript: transcript.as_ref().map(|p| p.display().to_string()),
            },
            Event::SubAgentFinished {
                n, call_id, end, steps, ..
            } => HeadlessEvent::SubAgentFinished {
                subagent: *n,
                call_id: call_id.clone(),
                status: end.as_str().to_string(),
                steps: *steps,
            },
            Event::SubAgent { n, event } => return HeadlessEvent::from_event(event)?.in_subagent(*n),
            Event::ApprovalRequested { .. }
            | Event::QuestionAsked { .. }
            | Event::Reloaded { .. }
            | Event::UserMessage { .. }
            | Event::ReasoningDelta { .. }
            | Event::McpServers { .. }
            | Event::ModelChanged { .. }
            | Event::ApprovalModeChanged { .. }
            | Event::Cleared
            | Event::SessionClosed => return None,
        };
        Some(line)
    }

    /// This line as sub-agent `n`'s; `None` for the events only the main agent has.
    fn in_subagent(mut self, n: u32) -> Option<HeadlessEvent> {
        match &mut self {
            HeadlessEvent::MessageDelta { subagent, .. }
            | HeadlessEvent::Message { subagent, .. }
            | HeadlessEvent::ToolStarted { subagent, .. }
            | HeadlessEvent::ToolFinished { subagent, .. }
            | HeadlessEvent::Warning { subagent, .. }
            | HeadlessEvent::Error { subagent, .. } => *subagent = Some(n),
            HeadlessEvent::SessionStarted { .. }
            | HeadlessEvent::TurnStarted
            | HeadlessEvent::SubAgentStarted { .. }
            | HeadlessEvent::SubAgentFinished { .. }
            | HeadlessEvent::TurnFinished { .. } => return None,
        }
        Some(self)
    }

    /// The sub-agent this line is about (`subagent`), `None` for the main agent's.
    pub fn subagent(&self) -> Option<u32> {
        match self {
            HeadlessEvent::MessageDelta { subagent, .. }
            | HeadlessEvent::Message { subagent, .. }
            | HeadlessEvent::ToolStarted { subagent, .. }
            | HeadlessEvent::ToolFinished { subagent, .. }
            | HeadlessEvent::Warning { subagent, .. }
            | HeadlessEvent::Error { subagent, .. } => *subagent,
            HeadlessEvent::SubAgentStarted { subagent, .. } | HeadlessEvent::SubAgentFinished { subagent, .. } => {
                Some(*subagent)
            }
            HeadlessEvent::SessionStarted { .. } | HeadlessEvent::TurnStarted | HeadlessEvent::TurnFinished { .. } => {
                None
            }
        }
    }

    /// The line as `exec --json` prints it (without the newline). Keys are in alphabetical
    /// order, as version 1 has always printed them (it goes through [`Value`], whose map is
    /// ordered by key).
    pub fn to_json_line(&self) -> serde_json::Result<String> {
        serde_json::to_value(self).map(|v| v.to_string())
    }
}

/// The JSON Schema (draft 2020-12) of one line of `cst-agent exec --json`, generated from
/// [`HeadlessEvent`]: what `docs/headless-events.schema.json` holds.
pub fn schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    generator.into_root_schema_for::<HeadlessEvent>().to_value()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::{Outcome, Perm, ReloadSummary, ReloadTarget, ToolCallRequest};

    fn tool_finished(call_id: &str) -> Event {
        Event::ToolCallFinished {
            call_id: call_id.into(),
            tool: "read_file".into(),
            outcome: Outcome::Ok,
            output: "hello\n".into(),
            duration: Duration::from_micros(400),
        }
    }

    fn sub(n: u32, event: Event) -> Event {
        Event::SubAgent {
            n,
            event: Box::new(event),
        }
    }

    fn line(ev: &Event) -> Value {
        let h = HeadlessEvent::from_event(ev).unwrap_or_else(|| panic!("{ev:?} has no line"));
        serde_json::to_value(&h).expect("serializes")
    }

    /// Core events that give every kind of line, the main agent's and a sub-agent's.
    fn samples() -> Vec<Event> {
        let mut evs = vec![
            Event::SessionStarted {
                session_id: "1764490000-1a2b3c4d".into(),
                model: "qwen3:8b".into(),
                transcript: Some(PathBuf::from("/ws/.agent/sessions/1764490000-1a2b3c4d/main.jsonl")),
            },
            Event::SessionStarted {
                session_id: "s".into(),
                model: "m".into(),
                transcript: None,
            },
            Event::TurnStarted,
            Event::MessageDelta { text: "It says".into() },
            Event::Message {
                text: "It says hello.".into(),
                tool_calls: vec![],
            },
            Event::ToolCallStarted {
                call_id: "call_0".into(),
                tool: "read_file".into(),
                source: "builtin:builtin".into(),
                args: json!({"path": "a.txt"}),
            },
            tool_finished("call_0"),
            Event::Warning {
                message: "retrying".into(),
            },
            Event::Error {
                message: "HTTP 500".into(),
            },
            Event::SubAgentStarted {
                n: 1,
                call_id: "t1".into(),
                role: "explore".into(),
                description: "look around".into(),
                model: "m".into(),
                transcript: Some(PathBuf::from("/ws/.agent/sessions/s/sub-1.jsonl")),
            },
            Event::SubAgentStarted {
                n: 2,
                call_id: "t2".into(),
                role: "plan".into(),
                description: "plan it".into(),
                model: "m".into(),
                transcript: None,
            },
        ];
        for (i, end) in [
            TurnEnd::Done { answer: "ok".into() },
            TurnEnd::MaxSteps { limit: 3 },
            TurnEnd::Cancelled,
            TurnEnd::Failed { message: "401".into() },
            TurnEnd::Truncated { answer: "half".into() },
        ]
        .into_iter()
        .enumerate()
        {
            evs.push(Event::SubAgentFinished {
                n: 1,
                call_id: "t1".into(),
                end: end.clone(),
                steps: i as u32,
                report: "r".into(),
            });
            let usage = (i % 2 == 0).then_some(crate::TokenUsage {
                input_tokens: 1200,
                output_tokens: 34,
            });
            evs.push(Event::TurnFinished {
                end,
                steps: i as u32,
                usage,
            });
        }
        for outcome in [
            Outcome::Ok,
            Outcome::Error,
            Outcome::Denied,
            Outcome::TimedOut,
            Outcome::Cancelled,
        ] {
            evs.push(Event::ToolCallFinished {
                call_id: "c".into(),
                tool: "t".into(),
                outcome,
                output: String::new(),
                duration: Duration::ZERO,
            });
        }
        let subs: Vec<Event> = evs
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::MessageDelta { .. }
                        | Event::Message { .. }
                        | Event::ToolCallStarted { .. }
                        | Event::ToolCallFinished { .. }
                        | Event::Warning { .. }
                        | Event::Error { .. }
                )
            })
            .map(|e| sub(2, e.clone()))
            .collect();
        evs.extend(subs);
        evs
    }

    #[test]
    fn a_subagents_tool_finished_carries_its_number_and_the_main_agents_does_not() {
        let main = line(&tool_finished("call_0"));
        assert_eq!(main["type"], "tool.finished");
        assert!(main.get("subagent").is_none(), "{main}");
        let s = line(&sub(2, tool_finished("s1")));
        assert_eq!(s["type"], "tool.finished");
        assert_eq!(s["subagent"], 2, "{s}");
        assert_eq!(s["call_id"], "s1");
        assert_eq!(s["duration_ms"], 0.4);
        let h = HeadlessEvent::from_event(&sub(2, tool_finished("s1"))).expect("a line");
        assert_eq!(h.subagent(), Some(2));
    }

    #[test]
    fn every_line_validates_against_the_schema() {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        let mut types = BTreeSet::new();
        for ev in samples() {
            let v = line(&ev);
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{v} does not match the schema: {errors:?}");
            types.insert(v["type"].as_str().expect("a type").to_string());
        }
        // Every kind of line the schema knows was checked.
        let known: BTreeSet<String> = schema["oneOf"]
            .as_array()
            .expect("oneOf")
            .iter()
            .map(|s| {
                s["properties"]["type"]["const"]
                    .as_str()
                    .expect("a const type")
                    .to_string()
            })
            .collect();
        assert_eq!(types, known);
        assert_eq!(known.len(), 11);
    }

    #[test]
    fn the_schema_rejects_what_exec_never_writes() {
        let validator = jsonschema::validator_for(&schema()).expect("a valid schema");
        for bad in [
            json!({"type": "session.started", "schema_version": 2, "session_id": "s", "model": "m", "transcript": null}),
            json!({"type": "session.started", "schema_version": 1, "session_id": "", "model": "m", "transcript": null}),
            json!({"type": "session.started", "schema_version": 1, "session_id": "s", "model": "m"}),
            json!({"type": "turn.started", "subagent": 1}),
            json!({"type": "turn.started", "extra": true}),
            json!({"type": "message", "text": "x", "subagent": 0}),
            json!({"type": "message", "text": "x", "subagent": null}),
            json!({"type": "message"}),
            json!({"type": "tool.finished", "call_id": "c", "tool": "t", "outcome": "fine", "output": "", "duration_ms": 1.0}),
            json!({"type": "tool.finished", "call_id": "c", "tool": "t", "outcome": "ok", "output": "", "duration_ms": -1.0}),
            json!({"type": "subagent.finished", "call_id": "c", "status": "done", "steps": 1}),
            json!({"type": "turn.finished", "status": "finished", "steps": 1}),
            json!({"type": "turn.finished", "status": "done", "steps": -1}),
            json!({"type": "turn.finished", "status": "done", "steps": 1, "answer": null}),
            json!({"type": "bogus"}),
            json!({"text": "no type"}),
        ] {
            assert!(!validator.is_valid(&bad), "accepted: {bad}");
        }
    }

    #[test]
    fn lines_are_printed_as_version_1_always_printed_them() {
        let l = |ev: &Event| {
            HeadlessEvent::from_event(ev)
                .expect("a line")
                .to_json_line()
                .expect("serializes")
        };
        assert_eq!(
            l(&sub(2, tool_finished("s1"))),
            r#"{"call_id":"s1","duration_ms":0.4,"outcome":"ok","output":"hello\n","subagent":2,"tool":"read_file","type":"tool.finished"}"#
        );
        assert_eq!(l(&Event::TurnStarted), r#"{"type":"turn.started"}"#);
        assert_eq!(
            l(&Event::TurnFinished {
                end: TurnEnd::Done { answer: "hi".into() },
                steps: 2,
                usage: None,
            }),
            r#"{"answer":"hi","status":"done","steps":2,"type":"turn.finished"}"#
        );
        assert_eq!(
            l(&Event::TurnFinished {
                end: TurnEnd::Truncated { answer: "h".into() },
                steps: 1,
                usage: Some(crate::TokenUsage {
                    input_tokens: 10,
                    output_tokens: 4096,
                }),
            }),
            r#"{"answer":"h","status":"length","steps":1,"type":"turn.finished","usage":{"input_tokens":10,"output_tokens":4096}}"#
        );
        assert_eq!(
            l(&Event::TurnFinished {
                end: TurnEnd::Cancelled,
                steps: 0,
                usage: None,
            }),
            r#"{"status":"cancelled","steps":0,"type":"turn.finished"}"#
        );
        assert_eq!(
            l(&Event::SessionStarted {
                session_id: "s".into(),
                model: "m".into(),
                transcript: None
            }),
            r#"{"model":"m","schema_version":1,"session_id":"s","transcript":null,"type":"session.started"}"#
        );
    }

    #[test]
    fn lines_read_back() {
        for ev in samples() {
            let h = HeadlessEvent::from_event(&ev).expect("a line");
            let text = h.to_json_line().expect("serializes");
            let back: HeadlessEvent = serde_json::from_str(&text).expect("reads back");
            assert_eq!(back, h, "{text}");
        }
        // Fields added later within version 1 are ignored by readers.
        let newer: HeadlessEvent =
            serde_json::from_str(r#"{"type":"warning","message":"m","new_field":1}"#).expect("reads");
        assert_eq!(
            newer,
            HeadlessEvent::Warning {
                message: "m".into(),
                subagent: None
            }
        );
    }

    #[test]
    fn events_without_a_line() {
        let none = [
            Event::Message {
                text: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "c".into(),
                    tool: "list".into(),
                    args: json!({}),
                }],
            },
            Event::UserMessage { text: "go".into() },
            Event::ApprovalRequested {
                request_id: 1,
                tool: "run_shell".into(),
                perm: Perm::Shell,
                args: json!({}),
                reason: "r".into(),
                subagent: None,
            },
            Event::QuestionAsked {
                request_id: 2,
                question: "q".into(),
                subagent: Some(1),
            },
            Event::Reloaded {
                what: ReloadTarget::Skills,
                summary: ReloadSummary::default(),
                warnings: vec![],
            },
            Event::SessionClosed,
            sub(1, Event::UserMessage { text: "task".into() }),
            sub(
                1,
                Event::Message {
                    text: String::new(),
                    tool_calls: vec![],
                },
            ),
            // Lines only the main agent has.
            sub(1, Event::TurnStarted),
            sub(
                1,
                Event::TurnFinished {
                    end: TurnEnd::Cancelled,
                    steps: 1,
                    usage: None,
                },
            ),
        ];
        for ev in none {
            assert_eq!(HeadlessEvent::from_event(&ev), None, "{ev:?}");
        }
    }

    #[test]
    fn statuses_and_outcomes_are_the_schemas() {
        // Exhaustive matches: a new `TurnEnd` or `Outcome` does not compile until it is listed.
        let turn_end = |e: &TurnEnd| match e {
            TurnEnd::Done { .. }
            | TurnEnd::MaxSteps { .. }
            | TurnEnd::Cancelled
            | TurnEnd::Failed { .. }
            | TurnEnd::Truncated { .. } => e.as_str(),
        };
        let outcome = |o: Outcome| match o {
            Outcome::Ok | Outcome::Error | Outcome::Denied | Outcome::TimedOut | Outcome::Cancelled => o.as_str(),
        };
        let ends = [
            TurnEnd::Done { answer: String::new() },
            TurnEnd::MaxSteps { limit: 1 },
            TurnEnd::Cancelled,
            TurnEnd::Failed { message: String::new() },
            TurnEnd::Truncated { answer: String::new() },
        ];
        let statuses: Vec<&str> = ends.iter().map(turn_end).collect();
        assert_eq!(statuses, TURN_STATUSES);
        let outcomes: Vec<&str> = [
            Outcome::Ok,
            Outcome::Error,
            Outcome::Denied,
            Outcome::TimedOut,
            Outcome::Cancelled,
        ]
        .into_iter()
        .map(outcome)
        .collect();
        assert_eq!(outcomes, TOOL_OUTCOMES);
        let s = schema();
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["$id"], SCHEMA_ID);
        for variant in s["oneOf"].as_array().expect("oneOf") {
            assert_eq!(variant["additionalProperties"], false, "{variant}");
        }
    }
}
