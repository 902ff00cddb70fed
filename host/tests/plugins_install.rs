//! `cst-agent plugins install|list|remove` (H4): what lands in the config dir, reinstalling,
//! and the install record that start-up reads.

mod wasm_common;

use serde_json::Value;
use wasm_common::{example_dir, Env};

#[test]
fn install_records_metadata_and_reinstall_replaces() {
    let env = Env::new();
    let out = env.install(&example_dir("json-query"));
    assert!(out.contains("installed json-query (1 tool: json_query)"), "{out}");
    let dir = env.plugins_dir().join("json-query");
    for f in [
        "plugin.json",
        "json-query.wasm",
        "installed.json",
        "Cargo.toml",
        "src/lib.rs",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing in {}", dir.display());
    }
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("installed.json")).unwrap()).unwrap();
    assert_eq!(rec["name"], "json-query");
    assert_eq!(rec["world_version"], "0.1.0");
    assert_eq!(rec["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(rec["tools"][0]["name"], "json_query");
    assert_eq!(rec["tools"][0]["perm"], "read");
    assert_eq!(rec["tools"][0]["input_schema"]["type"], "object");

    // Reinstalling replaces the folder: a stray file does not survive.
    std::fs::write(dir.join("stray.txt"), "x").unwrap();
    env.install(&example_dir("json-query"));
    assert!(!dir.join("stray.txt").exists());
    // No staging folders are left behind.
    let names: Vec<String> = std::fs::read_dir(env.plugins_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["json-query"]);

    let (code, out, _) = env.run(&["plugins", "list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("json-query") && out.contains("wasm") && out.contains("ok"),
        "{out}"
    );
}

#[test]
fn install_errors_name_the_path() {
    let env = Env::new();
    let (code, _, err) = env.run(&["plugins", "install", "/nonexistent/thing.wasm"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/thing.wasm"), "{err}");
    let txt = env.tmp.path().join("notes.txt");
    std::fs::write(&txt, "x").unwrap();
    let (code, _, err) = env.run(&["plugins", "install", &txt.to_string_lossy()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("expected a .wasm component or a folder with plugin.json"),
        "{err}"
    );
    let empty = env.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, err) = env.run(&["plugins", "install", &empty.to_string_lossy()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("empty/plugin.json") && err.contains("cannot read"),
        "{err}"
    );
    let (code, out, _) = env.run(&["plugins", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("no plugins installed"), "{out}");
}

/// Issue 13 item 4: install says what it grants, `env:NAME` first — the plugin gets that host
/// variable, possibly a secret.
#[test]
fn install_prints_the_capabilities_it_grants() {
    let env = Env::new();
    let src = example_dir("json-query");
    let dir = env.tmp.path().join("json-query");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(src.join("json-query.wasm"), dir.join("json-query.wasm")).unwrap();
    let mut manifest: Value = serde_json::from_str(&std::fs::read_to_string(src.join("plugin.json")).unwrap()).unwrap();
    manifest["capabilities"] = serde_json::json!(["workspace-read", "env:CST_DEMO_TOKEN"]);
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let out = env.install(&dir);
    assert!(
        out.contains("capabilities granted: env:CST_DEMO_TOKEN, workspace-read"),
        "{out}"
    );
    assert!(
        out.contains("env:CST_DEMO_TOKEN: the plugin can read the host variable CST_DEMO_TOKEN"),
        "{out}"
    );
}
