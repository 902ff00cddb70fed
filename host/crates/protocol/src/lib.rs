//! The contract between the core and its front ends (headless runner, TUI, `mcp serve`):
//! operations in, events out, and the shared types they carry (permission categories, approval
//! and question requests, reload results, load diagnostics). Front ends never reach into the session
//! otherwise. [`headless`] is the wire format of `cst-agent exec --json` and its JSON Schema.
//! The lowest layer: it depends on nothing of ours.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod headless;

/// Permission category of a tool (P6). Approval is decided by category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Perm {
    Read,
    Write,
    Net,
    #[default]
    Shell,
}

impl Perm {
    pub fn as_str(self) -> &'static str {
        match self {
            Perm::Read => "read",
            Perm::Write => "write",
            Perm::Net => "net",
            Perm::Shell => "shell",
        }
    }

    pub fn parse(s: &str) -> Option<Perm> {
        match s {
            "read" => Some(Perm::Read),
            "write" => Some(Perm::Write),
            "net" => Some(Perm::Net),
            "shell" => Some(Perm::Shell),
            _ => None,
        }
    }
}

impl fmt::Display for Perm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// The answer to an [`Event::QuestionAsked`]; `None` when the person declined to answer.
    Answer { request_id: u64, answer: Option<String> },
    /// Reload extensions without restarting (E8); answered by [`Event::Reloaded`].
    Reload { what: ReloadTarget },
    /// Refuse an [`Event::ApprovalRequested`] and tell the model why (the TUI's `n` with a
    /// reason typed after it): the call is denied with `the user declined this call: <reason>`.
    /// An empty reason is a plain [`ApprovalDecision::No`].
    Refuse { request_id: u64, reason: String },
    /// Use this model (same server and key) for later turns and the sub-agents they start
    /// (`/model NAME`). Queued in order with [`Op::UserTurn`]s: it takes effect once the turns
    /// sent before it have finished, then [`Event::ModelChanged`] follows. An empty name is
    /// answered at once by an [`Event::Warning`] and changes nothing.
    SetModel { model: String },
    /// Change the approval mode at once, also for the turn under way (`/approval MODE`: `ask`,
    /// `auto`, `full`); answered by [`Event::ApprovalModeChanged`], or an [`Event::Warning`]
    /// naming the modes when unknown (then nothing changes).
    SetApproval { mode: String },
    /// Forget the conversation (`/clear`): the next turn starts from the system prompt. Queued
    /// in order with [`Op::UserTurn`]s (applied between turns); answered by [`Event::Cleared`].
    /// The transcript marks it, so resuming starts after it.
    Clear,
    /// Finish the session: the transcript is closed and the event stream ends.
    Shutdown,
}

/// How the message that carries a compaction summary starts ([`Event::Compacted`]): the
/// history before it was summarised, so tool calls of earlier replies are no longer in it.
pub const COMPACTED_SUMMARY_PREFIX: &str =
    "[Summary of the conversation so far: older turns were compacted to fit the context window]";

/// One MCP server as a front end shows it (the TUI's sidebar and `/mcp`, M11, M12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerState {
    pub name: String,
    /// Where it was configured: `workspace`, `config`, `plugin NAME`, …
    pub origin: String,
    /// The file that configured it.
    pub file: PathBuf,
    /// `starting`, `ready`, `failed`, `exited` or `disabled`.
    pub status: String,
    /// Why it failed, or the last line an exited server wrote on stderr.
    pub detail: Option<String>,
    /// Tools it registered.
    pub tools: usize,
}

/// What [`Op::Reload`] reloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReloadTarget {
    /// `/skills reload`: skill folders; the skills index of the prompt is rebuilt.
    Skills,
    /// `/plugins reload`: plugin folders, their tools, skills and MCP servers.
    Plugins,
    /// `/mcp reload`: one server is restarted (`Some`), or every `mcp.json` is read again and
    /// the servers follow it (`None`): added ones start, removed ones stop, changed ones
    /// restart, unchanged ones keep running; exited or failed ones restart (M11).
    Mcp { server: Option<String> },
    /// The workspace's trust changed (`/plugins trust`, `/plugins untrust`): its plugins and
    /// `.agent/mcp.json` servers are loaded or unloaded at once (T2).
    Trust,
}

impl ReloadTarget {
    pub fn as_str(&self) -> &'static str {
        match self {
            ReloadTarget::Skills => "skills",
            ReloadTarget::Plugins => "plugins",
            ReloadTarget::Mcp { .. } => "mcp",
            ReloadTarget::Trust => "trust",
        }
    }
}

/// What kind of extension a reload changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtensionKind {
    Skill,
    Plugin,
    McpServer,
}

impl ExtensionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionKind::Skill => "skill",
            ExtensionKind::Plugin => "plugin",
            ExtensionKind::McpServer => "MCP server",
        }
    }
}

/// One extension a reload added, removed, changed or restarted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Changed {
    pub kind: ExtensionKind,
    pub name: String,
}

/// What a reload changed, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadSummary {
    pub added: Vec<Changed>,
    pub removed: Vec<Changed>,
    pub changed: Vec<Changed>,
    /// Unchanged servers that were not running (exited, failed) and were started again.
    pub restarted: Vec<Changed>,
}

impl ReloadSummary {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty() && self.restarted.is_empty()
    }

    /// `added plugin jira · removed MCP server gh`, or `no changes`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (label, list) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("changed", &self.changed),
            ("restarted", &self.restarted),
        ] {
            if !list.is_empty() {
                let names: Vec<String> = list.iter().map(|c| format!("{} {}", c.kind.as_str(), c.name)).collect();
                parts.push(format!("{label} {}", names.join(", ")));
            }
        }
        if parts.is_empty() {
            "no changes".into()
        } else {
            parts.join(" · ")
        }
    }
}

/// What kind of problem a [`Diagnostic`] reports, so a front end can group or mark them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// A file that cannot be read or parsed, or an entry in it that is invalid (plugin.json,
    /// SKILL.md, a role file, mcp.json, an install record). What it declares, or that entry, is
    /// skipped; the rest keeps loading.
    BrokenFile,
    /// Two skills, plugins, roles, MCP servers or tools of the same name: the first one is kept
    /// (workspace, then config dir, then plugins) and the other is not loaded, never renamed.
    NameClash,
    /// Loaded, but left out of an index of the system prompt that has a size limit; it can still
    /// be used by name.
    LeftOutOfIndex,
    /// A wasm component that was never installed or changed since: its tools are skipped until
    /// `cst-agent plugins install` runs again.
    NotInstalled,
    /// The config dir or `settings.json` cannot be used (trust then counts as "not trusted").
    Config,
    /// An MCP server could not be reloaded or restarted, or was not ready in time.
    McpServer,
    /// Anything else worth telling (a tool name that was adjusted, a platform limit).
    Other,
}

impl DiagnosticKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticKind::BrokenFile => "broken_file",
            DiagnosticKind::NameClash => "name_clash",
            DiagnosticKind::LeftOutOfIndex => "left_out_of_index",
            DiagnosticKind::NotInstalled => "not_installed",
            DiagnosticKind::Config => "config",
            DiagnosticKind::McpServer => "mcp_server",
            DiagnosticKind::Other => "other",
        }
    }
}

/// A problem found while loading or reloading extensions that did not stop the load. Displayed
/// as `{file}: {message}`, or only the message when no file is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    /// The file the problem is in, or of the extension that was not loaded (on a name clash:
    /// the one that lost).
    pub file: Option<PathBuf>,
    pub message: String,
}

impl Diagnostic {
    /// A problem that concerns no single file.
    pub fn new(kind: DiagnosticKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            file: None,
            message: message.into(),
        }
    }

    /// A problem in, or about, `file`.
    pub fn in_file(kind: DiagnosticKind, file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self {
            kind,
            file: Some(file.into()),
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A tool call the model asked for, as the transcript records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    pub id: String,
    pub tool: String,
    /// The arguments, parsed; the raw text as a string when it is not JSON.
    pub args: Value,
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
    /// The model's final answer was cut at its output limit (`finish_reason: "length"`): what it
    /// wrote, which may be incomplete.
    Truncated {
        answer: String,
    },
}

/// Tokens the model server reported for a turn (`usage` of each reply, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TokenUsage {
    /// Prompt tokens, summed over the turn's model calls.
    pub input_tokens: u64,
    /// Completion tokens, summed over the turn's model calls.
    pub output_tokens: u64,
}

impl TokenUsage {
    pub fn add(&mut self, other: TokenUsage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

impl TurnEnd {
    /// `done`, `max_steps`, `cancelled`, `error`, `length` — as transcripts and `exec --json`
    /// name it.
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnEnd::Done { .. } => "done",
            TurnEnd::MaxSteps { .. } => "max_steps",
            TurnEnd::Cancelled => "cancelled",
            TurnEnd::Failed { .. } => "error",
            TurnEnd::Truncated { .. } => "length",
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
    /// A fragment of the model's thinking as it streams (servers that send `reasoning_content`
    /// or `reasoning`). Front ends show that the model is thinking; `exec --json` has no line.
    ReasoningDelta {
        text: String,
    },
    /// The user's message that started a turn (a sub-agent's: its task prompt).
    UserMessage {
        text: String,
    },
    /// One model reply: its whole text (may be empty) and the tool calls it asked for. Front ends
    /// show the text when there is any.
    Message {
        text: String,
        tool_calls: Vec<ToolCallRequest>,
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
        perm: Perm,
        args: Value,
        reason: String,
        /// The sub-agent that asks (its N); `None` for the main agent.
        subagent: Option<u32>,
    },
    /// `ask_user` wants a person's answer; reply with [`Op::Answer`]. Withdrawn (the tool call
    /// fails) when the turn is cancelled.
    QuestionAsked {
        request_id: u64,
        question: String,
        /// The sub-agent that asks; `None` for the main agent.
        subagent: Option<u32>,
    },
    /// An [`Op::Reload`] finished: what changed, and problems found while loading.
    Reloaded {
        what: ReloadTarget,
        summary: ReloadSummary,
        warnings: Vec<Diagnostic>,
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
        /// `None` when the server reported no usage.
        usage: Option<TokenUsage>,
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
        /// What went back to the parent (or why nothing did).
        report: String,
    },
    /// Every MCP server and its state; sent right after [`Event::SessionStarted`] (and its
    /// warnings) and again whenever one changes (a handshake finished in the background, a
    /// server exited, a reload). Only sessions built with extensions send it, and none while
    /// the session shuts its servers down.
    McpServers {
        servers: Vec<McpServerState>,
    },
    /// [`Op::SetModel`] took effect: later turns use this model.
    ModelChanged {
        model: String,
    },
    /// [`Op::SetApproval`] took effect.
    ApprovalModeChanged {
        mode: String,
    },
    /// [`Op::Clear`] took effect: the conversation starts again from the system prompt.
    Cleared,
    /// The history was about to outgrow the model's context window: its `messages` older
    /// messages were replaced by the model's `summary` (the transcript keeps them all).
    Compacted {
        messages: usize,
        tokens_before: u64,
        tokens_after: u64,
        summary: String,
    },
    /// The session is over; no more events follow.
    SessionClosed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostic_reads_as_file_then_message() {
        let d = Diagnostic::in_file(
            DiagnosticKind::BrokenFile,
            "/cfg/plugins/x/plugin.json",
            "`name` is empty",
        );
        assert_eq!(d.to_string(), "/cfg/plugins/x/plugin.json: `name` is empty");
        let d = Diagnostic::new(DiagnosticKind::Config, "config dir: no home directory");
        assert_eq!(d.to_string(), "config dir: no home directory");
        // Front ends get the kind as a stable snake_case name.
        assert_eq!(
            serde_json::to_value(&d).ok(),
            Some(serde_json::json!({"kind": "config", "file": null, "message": "config dir: no home directory"}))
        );
        assert_eq!(DiagnosticKind::LeftOutOfIndex.as_str(), "left_out_of_index");
    }
}
