//! The TUI: `cst-agent` with no subcommand. A client of the session layer only — it builds a
//! session with `cst_core::SessionBuilder`, sends `Op`s and draws `Event`s; no agent logic here.

pub mod diff;
pub mod markdown;
pub mod sanitize;
pub mod wrap;
