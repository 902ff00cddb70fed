//! The agent core: a session driven by [`Op`]s that emits [`Event`]s. It knows nothing about
//! terminals; the headless runner, the TUI and `mcp serve` are its clients, through
//! [`SessionBuilder`] and the protocol crate's types.
//!
//! - [`builder`]: assembles a session from a workspace (discovery, MCP, prompts).
//! - [`session`]: the session task, its op router, the extensions it owns.
//! - [`agent`]: one agent loop (model call → tool calls → results → repeat); `subagent` runs a
//!   `task` call with the same loop.
//! - [`events`]: the one event path (the bus and its sinks); [`transcript`]: the JSONL files,
//!   written by a sink.
//! - [`approvals`] and [`questions`]: what a person is asked; [`model`]: the model client.
//! - [`resume`]: a session read back from its transcript, to continue it.

pub mod agent;
pub mod approvals;
pub mod builder;
pub mod context;
pub mod events;
pub mod hooks;
pub mod model;
mod pending;
pub mod prompt;
pub mod questions;
pub mod resume;
pub mod session;
pub mod session_extensions;
mod subagent;
pub mod subagent_transcripts;
pub mod transcript;

pub use builder::{Session, SessionBuilder};
pub use cst_protocol::{ApprovalDecision, Diagnostic, DiagnosticKind, Event, Op, Outcome, ReloadTarget, TurnEnd};
pub use events::{EventBus, EventSink};
pub use session::{new_session_id, spawn, SessionConfig, SessionHandle, DEFAULT_MAX_STEPS};
pub use subagent_transcripts::{load_subagent_transcript, subagent_transcripts, SubAgentTranscript};
