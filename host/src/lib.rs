//! cst-agent: a host for AI coding-agent sessions and a plugin platform.
//!
//! The core knows nothing about terminals; the CLI (and later the TUI) are clients of it.

pub mod approvals;
pub mod builtin_tools;
pub mod cli;
pub mod command_tools;
pub mod config_dir;
pub mod core;
pub mod discovery;
pub mod mcp;
pub mod model;
pub mod plugins;
pub mod process;
pub mod sandbox;
pub mod settings;
pub mod skills;
pub mod subagents;
pub mod tools;
pub mod transcript;
pub mod trust;
pub mod wasm;
