//! The extension sources: where tools, skills, roles and MCP servers come from, and how each
//! kind of tool runs. Every tool they define goes into the one registry (`cst-registry`);
//! wasm components run in `cst-wasm`.
//!
//! Inside, [`discovery`] sits on top and loads the others; none of them imports it.

pub mod bounded_read;
pub mod builtin_tools;
pub mod child_env;
pub mod command_tools;
pub mod discovery;
pub mod hook_runner;
pub mod mcp;
pub mod plugin_manifest;
pub mod plugins;
pub mod process;
pub mod repo_identity;
pub mod sandbox;
pub mod skills;
pub mod subagents;
