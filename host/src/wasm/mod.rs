//! The wasm component runtime: every line of wasmtime code lives in this module.
