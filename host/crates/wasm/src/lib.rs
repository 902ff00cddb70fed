//! The wasm component runtime: every line of wasmtime code lives in this module.
//!
//! - [`engine`]: the one process-wide `Engine` (fuel, epochs, pooling allocator) and its ticker.
//! - [`capabilities`]: the fixed capability list of plugin.json (D13).
//! - [`inspect`]: what a `.wasm` file is (core module, component, which world version).
//! - [`cache`]: the compile cache (`.cwasm` keyed by content and engine).
//! - [`runner`]: a plugin's tools as a [`cst_registry::ToolRunner`] — a fresh `Store` per call.

pub mod cache;
pub mod capabilities;
pub mod engine;
pub mod inspect;
pub mod runner;

pub use capabilities::Capabilities;
pub use inspect::{WORLD_PACKAGE, WORLD_VERSION};
pub use runner::{Limits, ListedTool, WasmPlugin, WasmToolRunner};

/// Default memory cap per store in MiB (plugin.json `limits.memory_mb`).
pub const DEFAULT_MEMORY_MB: u64 = 256;
