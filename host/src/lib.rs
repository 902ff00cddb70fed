//! cst-agent: the front ends of the host — today the command line (`exec`, `tools`, `plugins`,
//! `mcp`, `agents`, `status`). A front end builds a session with the core's `SessionBuilder` and
//! exchanges ops and events with it; it never reaches below that.
//!
//! The layers (each a crate, each depending only on those above it in this list):
//! `cst-protocol` → `cst-config` → `cst-registry` → `cst-wasm` → `cst-extensions` → `cst-core`
//! → this crate. See docs/architecture.md.
//!
//! The modules of the lower crates are re-exported under their familiar names so tests,
//! benchmarks and embedders have one crate to name.

pub mod cli;

pub use cst_config::{config_dir, settings, trust};
pub use cst_core as core;
pub use cst_core::{approvals, model, transcript};
pub use cst_extensions::{
    builtin_tools, command_tools, discovery, mcp, plugin_manifest, plugins, process, sandbox, skills, subagents,
};
pub use cst_protocol as protocol;
pub use cst_registry as tools;
pub use cst_wasm as wasm;
