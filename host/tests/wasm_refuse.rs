//! What install and load refuse, with errors that name the file and say why (H2, H4, D13), and
//! the compile cache: rebuilt when corrupt, never touched by `tools list`.

mod wasm_common;

use std::path::Path;

use serde_json::json;
use wasm_common::{example_dir, files_in, wasm, Env};

fn install_err(env: &Env, path: &Path) -> String {
    let (code, out, err) = env.run(&["plugins", "install", &path.to_string_lossy()]);
    assert_eq!(code, 1, "install of {} should fail: {out}", path.display());
    // A refused install leaves nothing behind (no plugin, no staging folder).
    assert!(
        files_in(&env.plugins_dir()).is_empty(),
        "{:?}",
        files_in(&env.plugins_dir())
    );
    err
}

#[test]
fn core_module_truncated_and_not_wasm_are_refused_before_compiling() {
    let env = Env::isolated();
    let core = env.tmp.path().join("core.wasm");
    // The smallest valid core module: magic + version 1.
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    let err = install_err(&env, &core);
    assert!(
        err.contains("core.wasm") && err.contains("a core wasm module, not a component"),
        "{err}"
    );

    let tiny = env.tmp.path().join("tiny.wasm");
    std::fs::write(&tiny, b"\0as").unwrap();
    let err = install_err(&env, &tiny);
    assert!(err.contains("tiny.wasm") && err.contains("truncated"), "{err}");

    let text = env.tmp.path().join("text.wasm");
    std::fs::write(&text, "definitely not wasm").unwrap();
    let err = install_err(&env, &text);
    assert!(err.contains("text.wasm") && err.contains("not a wasm file"), "{err}");
    // Nothing was compiled for any of them.
    assert!(files_in(&env.components_dir()).is_empty());
}

#[test]
fn truncated_component_is_refused_naming_the_file() {
    let env = Env::isolated();
    let bytes = std::fs::read(wasm("text_stats")).unwrap();
    let cut = env.tmp.path().join("cut.wasm");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = install_err(&env, &cut);
    assert!(
        err.contains("cut.wasm") && err.contains("not a valid wasm component"),
        "{err}"
    );
}

#[test]
fn other_world_and_other_version_are_refused() {
    let env = Env::new();
    let err = install_err(&env, &wasm("test_other_world"));
    assert!(err.contains("test_other_world.wasm"), "{err}");
    assert!(
        err.contains("not a cst-agent plugin") && err.contains("another world"),
        "{err}"
    );
    assert!(err.contains("exports run"), "{err}");

    let err = install_err(&env, &wasm("test_future_version"));
    assert!(
        err.contains("built for cst:plugin@0.2.0") && err.contains("speaks cst:plugin@0.1.0"),
        "both versions must be named: {err}"
    );
}

#[test]
fn unknown_and_unimplemented_capabilities_are_refused_at_install() {
    let env = Env::new();
    let dir = env.plugin_dir(
        "caps",
        &wasm("text_stats"),
        json!({"name": "caps", "wasm": "caps.wasm", "capabilities": ["workspace-read", "telepathy"]}),
    );
    let err = install_err(&env, &dir);
    assert!(err.contains("plugin.json"), "{err}");
    assert!(err.contains("unknown capability `telepathy`"), "{err}");
    assert!(
        err.contains("known: workspace-read, workspace-write, env:NAME, network"),
        "{err}"
    );

    let dir = env.plugin_dir(
        "net",
        &wasm("text_stats"),
        json!({"name": "net", "wasm": "net.wasm", "capabilities": ["network"]}),
    );
    let err = install_err(&env, &dir);
    assert!(err.contains("`network` is not implemented yet"), "{err}");

    let dir = env.plugin_dir(
        "bad-name",
        &wasm("text_stats"),
        json!({"name": "bad name/..", "wasm": "x.wasm"}),
    );
    let err = install_err(&env, &dir);
    assert!(err.contains("plugin name `bad name/..`"), "{err}");
}

#[test]
fn load_refuses_unknown_capability_changed_wasm_and_uninstalled_folder() {
    let env = Env::new();
    env.install(&example_dir("text-stats"));
    env.install(&example_dir("json-query"));
    env.install(&example_dir("regex-search"));

    // An unknown capability added after install: refused at load, naming the entry and the list.
    let manifest = env.plugins_dir().join("text-stats/plugin.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["capabilities"] = json!(["workspace-read", "telepathy"]);
    std::fs::write(&manifest, m.to_string()).unwrap();

    // The component replaced after install: skipped until reinstalled.
    let jq = env.plugins_dir().join("json-query/json-query.wasm");
    std::fs::copy(wasm("regex_search"), &jq).unwrap();

    // A folder copied in by hand (no install record).
    std::fs::remove_file(env.plugins_dir().join("regex-search/installed.json")).unwrap();

    let (code, out, err) = env.run(&["tools", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.lines().any(|l| l.split_whitespace().nth(2) == Some("wasm")),
        "no wasm tool may be registered: {out}"
    );
    assert!(
        err.contains("text-stats/plugin.json")
            && err.contains("unknown capability `telepathy`")
            && err.contains("known:"),
        "{err}"
    );
    assert!(err.contains("json-query.wasm changed since it was installed"), "{err}");
    assert!(
        err.contains("regex-search/plugin.json") && err.contains("was not installed"),
        "{err}"
    );
    assert!(err.contains("cst-agent plugins install"), "{err}");

    let (_, out, _) = env.run(&["plugins", "list", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert!(rows.iter().all(|r| r["status"] != "ok"), "{out}");

    // Reinstalling from the installed folder itself fixes the changed one.
    let fixed = env.tmp.path().join("jq-copy");
    std::fs::create_dir_all(&fixed).unwrap();
    for f in ["plugin.json", "json-query.wasm"] {
        std::fs::copy(env.plugins_dir().join("json-query").join(f), fixed.join(f)).unwrap();
    }
    env.install(&fixed);
    let (_, out, _) = env.run(&["tools", "list"]);
    assert!(out.contains("regex_search") && out.contains("json-query"), "{out}");
}

#[test]
fn tools_list_never_compiles_and_a_corrupt_cache_entry_is_rebuilt() {
    let env = Env::isolated();
    std::fs::write(env.ws().join("a.txt"), "a b c\n").unwrap();
    env.install(&example_dir("text-stats"));
    let artifacts: Vec<_> = files_in(&env.components_dir());
    assert_eq!(artifacts.len(), 1, "install precompiles (.cwasm): {artifacts:?}");
    let records = files_in(&env.config().join("cst-agent/compile-cache"));
    assert_eq!(
        records.len(),
        1,
        "its checksum is recorded in the config dir: {records:?}"
    );

    // Start-up and `tools list` read the install record only.
    std::fs::remove_dir_all(env.components_dir()).unwrap();
    let (code, out, _) = env.run(&["tools", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("text_stats"));
    assert!(
        files_in(&env.components_dir()).is_empty(),
        "tools list must not compile"
    );

    // The first call compiles and fills the cache.
    let args = r#"{"paths":["a.txt"]}"#;
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", args]);
    assert_eq!(code, 0, "{err}");
    let cwasm = files_in(&env.components_dir())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a .cwasm after the first call");

    // A corrupt entry is never trusted: the call still works and the entry is rewritten.
    std::fs::write(&cwasm, b"garbage, not machine code").unwrap();
    let (code, out, err) = env.run(&["tools", "call", "text_stats", "--args", args]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"words\": 3"), "{out}");
    let rebuilt = std::fs::read(&cwasm).unwrap();
    assert_ne!(rebuilt, b"garbage, not machine code");
    assert!(rebuilt.len() > 1000);

    // A truncated entry (checksum mismatch) too.
    std::fs::write(&cwasm, &rebuilt[..rebuilt.len() / 2]).unwrap();
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", args]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&cwasm).unwrap().len(), rebuilt.len());
}

/// Issue 13 item 5: the cache dir may be under a temp dir a sandboxed shell can write. Whoever
/// swaps a cached artifact for another component's (forging any checksum file beside it, as a
/// writer of that folder could) gets nothing run: the artifact's own hash is checked against the
/// record in the config dir, so the swapped entry is rebuilt from the `.wasm`.
#[test]
fn a_swapped_cache_artifact_is_never_run() {
    let env = Env::isolated();
    std::fs::write(env.ws().join("a.txt"), "a b c\n").unwrap();
    env.install(&example_dir("text-stats"));
    env.install(&example_dir("json-query"));
    let ts_sha = sha256_file(&example_dir("text-stats").join("text-stats.wasm"));
    let cwasms: Vec<_> = files_in(&env.components_dir())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(cwasms.len(), 2, "{cwasms:?}");
    let (victim, other): (Vec<_>, Vec<_>) = cwasms
        .into_iter()
        .partition(|p| p.file_name().unwrap().to_string_lossy().starts_with(&ts_sha));
    let (victim, other) = (&victim[0], &other[0]);

    // The swap: the other component's machine code under text-stats' name, and every checksum
    // file in the cache forged to match it.
    let swapped = std::fs::read(other).unwrap();
    std::fs::write(victim, &swapped).unwrap();
    let forged = sha256_bytes(&swapped);
    let mut sidecar = victim.clone().into_os_string();
    sidecar.push(".sha256");
    std::fs::write(&sidecar, &forged).unwrap();

    let (code, out, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["a.txt"]}"#]);
    assert_eq!(code, 0, "the swapped artifact ran: {out}{err}");
    assert!(out.contains("\"words\": 3"), "{out}");
    assert_ne!(std::fs::read(victim).unwrap(), swapped, "the entry is rebuilt");
}

fn sha256_bytes(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

fn sha256_file(p: &Path) -> String {
    sha256_bytes(&std::fs::read(p).unwrap())
}
