//! The contract between the core and its front ends (headless runner, TUI): operations in,
//! events out. Front ends never reach into the session otherwise.

use std::time::Duration;

use serde_json::Value;

/// An operation a front end submits.
#[derive(Debug, Clone)]
pub enum Op {
    /// Start a turn with this user message (queued if a turn is running).
    UserTurn { text: String },
    /// The answer to an [`Event::ApprovalRequested`].
    Approval {
        request_id: u64,
        decision: ApprovalDecision,
    },
    /// Cancel the running turn: tools are stopped, the turn ends with [`TurnEnd::Cancelled`].
    Cancel,
    /// Reload extensions (skills, plugins, MCP) without restarting.
    Reload,
    /// Finish the session: the transcript is closed and the event stream ends.
    Shutdown,
}

/// How a person answered an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run this call.
    Yes,
    /// Do not run it; the model is told.
    No,
    /// Run it and every later call of the same tool this session (`a`).
    Always,
}

/// Where a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The tool ran and failed, or its arguments were invalid, or it is unknown.
    Error,
    /// The permission gate refused it.
    Denied,
    TimedOut,
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::TimedOut => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model gave a final answer.
    Done {
        answer: String,
    },
    /// The step limit was reached while the model still asked for tools.
    MaxSteps {
        limit: u32,
    },
    Cancelled,
    /// The model call failed for good.
    Failed {
        message: String,
    },
}

impl TurnEnd {
    /// `done`, `max_steps`, `cancelled`, `error` — as transcripts and `exec --json` name it.
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnEnd::Done { .. } => "done",
            TurnEnd::MaxSteps { .. } => "max_steps",
            TurnEnd::Cancelled => "cancelled",
            TurnEnd::Failed { .. } => "error",
        }
    }
}

/// Something that happened in the session.
#[derive(Debug, Clone)]
pub enum Event {
    SessionStarted {
        session_id: String,
        model: String,
        transcript: Option<std::path::PathBuf>,
    },
    TurnStarted,
    /// A fragment of the assistant's text as it streams.
    MessageDelta {
        text: String,
    },
    /// The assistant's whole text of one model call (when it had any).
    Message {
        text: String,
    },
    ToolCallStarted {
        call_id: String,
        tool: String,
        source: String,
        args: Value,
    },
    ToolCallFinished {
        call_id: String,
        tool: String,
        outcome: Outcome,
        /// The text handed back to the model.
        output: String,
        duration: Duration,
    },
    /// The gate wants a person to decide; answer with [`Op::Approval`].
    ApprovalRequested {
        request_id: u64,
        tool: String,
        perm: crate::tools::Perm,
        args: Value,
        reason: String,
        /// The sub-agent that asks (its N); `None` for the main agent.
        subagent: Option<u32>,
    },
    /// A problem that did not end the turn (a retry, a broken extension file).
    Warning {
        message: String,
    },
    /// A problem that ended the turn (also reported in [`TurnEnd::Failed`]).
    Error {
        message: String,
    },
    TurnFinished {
        end: TurnEnd,
        steps: u32,
    },
    /// A `task` call started sub-agent `n` (numbered from 1 in the session, as its `sub-N.jsonl`).
    SubAgentStarted {
        n: u32,
        /// The parent's `task` call.
        call_id: String,
        role: String,
        description: String,
        model: String,
        transcript: Option<std::path::PathBuf>,
    },
    /// Something sub-agent `n` did (its messages, tool calls, warnings and errors). Its approval
    /// requests are not wrapped: they come as [`Event::ApprovalRequested`] with `subagent` set,
    /// and are answered with [`Op::Approval`] like the main agent's.
    SubAgent {
        n: u32,
        event: Box<Event>,
    },
    /// Sub-agent `n` ended; its report went back to the parent as the `task` result.
    SubAgentFinished {
        n: u32,
        call_id: String,
        end: TurnEnd,
        steps: u32,
    },
    /// The session is over; no more events follow.
    SessionClosed,
}
