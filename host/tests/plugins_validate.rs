//! Install refuses a component whose `list-tools` is unusable: invalid names (P2), duplicates,
//! input schemas that are not JSON Schema, no tools. Nothing is installed in those cases.

mod wasm_common;

use serde_json::json;
use wasm_common::{files_in, wasm, Env};

/// The test component with its built-in mode patched to `mode` (see its source: install runs
/// `list-tools` with no capabilities, so the mode lives in the component's own bytes).
fn with_mode(env: &Env, mode: &str) -> std::path::PathBuf {
    const MARK: &[u8] = b"CST-BAD-TOOLS-MODE:good    ";
    let mut bytes = std::fs::read(wasm("test_bad_tools")).expect("read test_bad_tools.wasm");
    let at = bytes
        .windows(MARK.len())
        .position(|w| w == MARK)
        .expect("the mode marker is in the component");
    let patched = format!("CST-BAD-TOOLS-MODE:{mode:<8}");
    assert_eq!(patched.len(), MARK.len(), "mode {mode} is too long");
    bytes[at..at + MARK.len()].copy_from_slice(patched.as_bytes());
    let file = env.tmp.path().join(format!("bad-tools-{mode}.wasm"));
    std::fs::write(&file, bytes).expect("write patched component");
    file
}

fn try_install_with(mode: &str, manifest: serde_json::Value) -> (i32, String, String, Env) {
    let env = Env::new();
    let src = with_mode(&env, mode);
    let dir = env.plugin_dir("bad-tools", &src, manifest);
    let out = env
        .cmd(&["plugins", "install", &dir.to_string_lossy()])
        .env("CST_BAD_TOOLS", mode)
        .output()
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        env,
    )
}

fn try_install(mode: &str) -> (i32, String, String, Env) {
    try_install_with(mode, json!({"name": "bad-tools", "wasm": "bad-tools.wasm"}))
}

#[test]
fn bad_tool_lists_are_refused() {
    for (mode, expect) in [
        ("name", "tool name `has space.and dot` is not valid"),
        ("dup", "tool `same` is listed twice"),
        ("schema", "tool `bad_schema`: invalid JSON Schema"),
        ("json", "tool `bad_json`: input schema is not JSON"),
        ("empty", "list-tools returned no tools"),
    ] {
        let (code, _, err, env) = try_install(mode);
        assert_eq!(code, 1, "{mode}: {err}");
        assert!(err.contains("bad-tools.wasm") && err.contains(expect), "{mode}: {err}");
        assert!(
            files_in(&env.plugins_dir()).is_empty(),
            "{mode}: nothing may be installed"
        );
    }
    // The same component with a good list installs and runs.
    let (code, out, err, env) = try_install("good");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("good_tool"), "{out}");
    let (code, out, _) = env.run(&["tools", "call", "good_tool"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "called good_tool");
}

/// Issue 13 item 8: install runs `list-tools` with no capabilities, whatever the manifest grants
/// (the guest sees no variable and no workspace), and under the manifest's deadline.
#[test]
fn install_lists_tools_without_capabilities_and_within_the_deadline() {
    let (code, out, err, _env) = try_install_with(
        "caps",
        json!({"name": "bad-tools", "wasm": "bad-tools.wasm",
               "capabilities": ["env:CST_BAD_TOOLS", "workspace-read"]}),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no_caps"), "list-tools saw a capability: {out}");

    let (code, _, err, env) = try_install_with(
        "spin",
        json!({"name": "bad-tools", "wasm": "bad-tools.wasm", "timeout": 1}),
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("list-tools") && err.contains("timed out"), "{err}");
    assert!(files_in(&env.plugins_dir()).is_empty(), "nothing may be installed");
}
