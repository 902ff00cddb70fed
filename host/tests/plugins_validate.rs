//! Install refuses a component whose `list-tools` is unusable: invalid names (P2), duplicates,
//! input schemas that are not JSON Schema, no tools. Nothing is installed in those cases.

mod wasm_common;

use serde_json::json;
use wasm_common::{files_in, wasm, Env};

fn try_install(mode: &str) -> (i32, String, String, Env) {
    let env = Env::new();
    let dir = env.plugin_dir(
        "bad-tools",
        &wasm("test_bad_tools"),
        json!({"name": "bad-tools", "wasm": "bad-tools.wasm", "capabilities": ["env:CST_BAD_TOOLS"]}),
    );
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
