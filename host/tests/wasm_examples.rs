//! The example plugins, installed and called through the real `cst-agent` binary (H2, H4, P2).

mod wasm_common;

use serde_json::Value;
use wasm_common::{example_dir, Env};

fn setup() -> Env {
    let env = Env::new();
    for p in ["text-stats", "json-query", "regex-search"] {
        let out = env.install(&example_dir(p));
        assert!(out.contains(&format!("installed {p}")), "{out}");
    }
    std::fs::write(env.ws().join("notes.txt"), "one two\nthree\n").unwrap();
    std::fs::create_dir_all(env.ws().join("src")).unwrap();
    std::fs::write(env.ws().join("src/main.rs"), "fn main() {\n    // TODO: greet\n}\n").unwrap();
    std::fs::write(
        env.ws().join("package.json"),
        r#"{"name":"demo","scripts":{"test":"jest"},"deps":[{"n":"a"},{"n":"left-pad"}]}"#,
    )
    .unwrap();
    env
}

#[test]
fn text_stats_counts_files_and_folders() {
    let env = setup();
    let (code, out, err) = env.run(&[
        "tools",
        "call",
        "text_stats",
        "--args",
        r#"{"paths":["notes.txt","src"]}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"]["notes.txt"]["lines"], 2);
    assert_eq!(v["files"]["notes.txt"]["words"], 3);
    assert_eq!(v["files"]["notes.txt"]["bytes"], 14);
    assert_eq!(v["total"]["files"], 2);
    // A missing file is a tool failure (exit 1) naming it.
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["nope.txt"]}"#]);
    assert_eq!(code, 1);
    assert!(err.contains("nope.txt"), "{err}");
}

#[test]
fn json_query_dotted_and_pointer_paths() {
    let env = setup();
    let (code, out, err) = env.run(&[
        "tools",
        "call",
        "json_query",
        "--args",
        r#"{"file":"package.json","path":"deps[1].n"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "\"left-pad\"");
    let (code, out, _) = env.run(&[
        "tools",
        "call",
        "json_query",
        "--args",
        r#"{"file":"package.json","path":"/scripts/test"}"#,
    ]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "\"jest\"");
    let (code, _, err) = env.run(&[
        "tools",
        "call",
        "json_query",
        "--args",
        r#"{"file":"package.json","path":"nothing.here"}"#,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing at `nothing.here`"), "{err}");
    // Arguments are validated against the derived schema before the component runs.
    let (code, _, err) = env.run(&["tools", "call", "json_query", "--args", r#"{"file":3}"#]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/file"), "{err}");
}

#[test]
fn regex_search_finds_and_bounds() {
    let env = setup();
    let (code, out, err) = env.run(&["tools", "call", "regex_search", "--args", r#"{"pattern":"TODO"}"#]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "src/main.rs:2:     // TODO: greet");
    let (code, out, _) = env.run(&[
        "tools",
        "call",
        "regex_search",
        "--args",
        r#"{"pattern":"[a-z]+","max_results":2}"#,
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("(stopped after 2 results)"), "{out}");
    let (code, _, err) = env.run(&["tools", "call", "regex_search", "--args", r#"{"pattern":"("}"#]);
    assert_eq!(code, 1);
    assert!(err.contains("bad pattern"), "{err}");
}

#[test]
fn tools_list_shows_source_perm_schema_and_plugins_list_remove() {
    let env = setup();
    let (code, out, err) = env.run(&["tools", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let list: Vec<Value> = serde_json::from_str(&out).unwrap();
    let t = list
        .iter()
        .find(|t| t["name"] == "json_query")
        .expect("json_query listed");
    assert_eq!(t["source"], "wasm");
    assert_eq!(t["owner"], "json-query");
    assert_eq!(t["perm"], "read");
    assert_eq!(t["timeout_secs"], 30);
    assert_eq!(t["input_schema"]["required"][0], "file");

    let (code, out, _) = env.run(&["plugins", "list", "--json"]);
    assert_eq!(code, 0);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["json-query", "regex-search", "text-stats"]);
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{out}");

    let (code, out, _) = env.run(&["plugins", "remove", "json-query"]);
    assert_eq!(code, 0);
    assert!(out.contains("removed json-query"));
    let (code, _, err) = env.run(&["tools", "call", "json_query", "--args", "{}"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown tool"), "{err}");
    let (code, _, err) = env.run(&["plugins", "remove", "json-query"]);
    assert_eq!(code, 2);
    assert!(err.contains("no installed plugin named `json-query`"), "{err}");
}

#[test]
fn bare_wasm_install_has_no_filesystem() {
    let env = Env::new();
    std::fs::write(env.ws().join("notes.txt"), "hello\n").unwrap();
    // A bare .wasm gets a synthesized manifest without capabilities: no filesystem at all.
    let out = env.install(&wasm_common::wasm("text_stats"));
    assert!(out.contains("installed text_stats"), "{out}");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(env.plugins_dir().join("text_stats/plugin.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["capabilities"], serde_json::json!([]));
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["notes.txt"]}"#]);
    assert_eq!(code, 1);
    assert!(err.contains("notes.txt"), "{err}");
}
