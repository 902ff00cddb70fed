//! Wasm plugins in a workspace's `.agent/plugins/` (E4, T1–T3, E7): a folder with plugin.json
//! and its component, copied from `example-plugins/` the way a user would, loaded only once the
//! workspace is trusted, compiled and listed once per content, the list recorded in the cache
//! dir (never in the workspace), and hostile folders refused with a warning naming the file.
//! The components are the real examples built by `scripts/test-deps.sh`.

mod wasm_common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use wasm_common::{example_dir, files_in, wasm, Env};

/// `<ws>/.agent/plugins`.
fn ws_plugins(ws: &Path) -> PathBuf {
    ws.join(".agent/plugins")
}

/// Copy `example-plugins/<example>` (plugin.json, the built `.wasm`, its sources; not `target`)
/// to `<ws>/.agent/plugins/<folder>`, as a user would.
fn copy_example(ws: &Path, example: &str, folder: &str) -> PathBuf {
    let from = example_dir(example);
    let to = ws_plugins(ws).join(folder);
    std::fs::write(ws.join("notes.txt"), "hello wasm world\nsecond line\n").unwrap();
    for f in files_in(&from) {
        let rel = f.strip_prefix(&from).unwrap();
        if rel.starts_with("target") {
            continue;
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&f, &dest).unwrap();
    }
    to
}

/// The same component with one more custom section: new content, new sha256, same tools.
fn touch_component(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    // custom section: id 0, size, name ("x"), payload.
    let payload = b"changed";
    bytes.extend_from_slice(&[0, (2 + payload.len()) as u8, 1, b'x']);
    bytes.extend_from_slice(payload);
    std::fs::write(file, bytes).unwrap();
}

fn trust(env: &Env) {
    let (code, _, err) = env.run(&["plugins", "trust"]);
    assert_eq!(code, 0, "{err}");
}

/// `<cache>/cst-agent/tool-lists/*.json`, the recorded tool lists.
fn records(env: &Env) -> Vec<PathBuf> {
    files_in(&env.cache().join("cst-agent/tool-lists"))
}

fn tools_json(env: &Env) -> (Vec<Value>, String) {
    let (code, out, err) = env.run(&["tools", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    (serde_json::from_str(&out).unwrap(), err)
}

fn tool<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|t| t["name"] == name)
}

fn compiling(stderr: &str) -> bool {
    stderr.contains("compiling ")
}

fn workspace_files(env: &Env) -> Vec<PathBuf> {
    let mut f = files_in(&env.ws());
    f.sort();
    f
}

/// E4, T1: an untrusted workspace's component is not loaded, compiled or listed — not even
/// looked at. (Passes before the feature too: it guards that trust still gates it.)
#[test]
fn e4_untrusted_workspace_component_loads_nothing() {
    let env = Env::isolated();
    copy_example(&env.ws(), "text-stats", "text-stats");
    let (code, out, _) = env.run(&["status"]);
    assert_eq!(code, 0);
    assert!(out.contains("untrusted workspace: /plugins trust"), "T1 hint: {out}");
    assert!(out.starts_with("0 skills · 0 plugins (0 tools)"), "{out}");
    let (list, err) = tools_json(&env);
    assert!(tool(&list, "text_stats").is_none(), "{list:?}");
    assert!(!compiling(&err), "{err}");
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["x"]}"#]);
    assert_eq!(code, 2, "unknown tool while untrusted: {err}");
    assert!(files_in(&env.components_dir()).is_empty(), "nothing compiled");
    assert!(records(&env).is_empty(), "nothing listed");
}

/// E4: once trusted, a copied example plugin folder loads with no install step. The first start
/// compiles it (saying so on stderr) and records its tools in the cache dir; the next starts
/// take the tools from that record — no compile, no instantiation — and nothing is written into
/// the workspace. Without the feature the tool is missing ("not installed").
#[test]
fn e4_trusted_workspace_component_is_compiled_once_and_its_tools_recorded() {
    let env = Env::isolated();
    let dir = copy_example(&env.ws(), "text-stats", "text-stats");
    trust(&env);
    let before = workspace_files(&env);

    let (list, err) = tools_json(&env);
    let t = tool(&list, "text_stats").unwrap_or_else(|| panic!("text_stats missing: {err}"));
    assert_eq!(t["source"], "wasm");
    assert_eq!(t["owner"], "text-stats");
    assert_eq!(t["perm"], "read");
    assert_eq!(t["file"], dir.join("plugin.json").display().to_string());
    assert!(
        compiling(&err) && err.contains(&dir.join("text-stats.wasm").display().to_string()),
        "the first start compiles and says so: {err}"
    );
    assert!(!err.contains("warning"), "{err}");

    // The record: in the cache dir, named by the content hash, holding the listed tools.
    let recs = records(&env);
    assert_eq!(recs.len(), 1, "{recs:?}");
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(&recs[0]).unwrap()).unwrap();
    let sha = rec["sha256"].as_str().unwrap().to_string();
    assert_eq!(sha.len(), 64);
    assert_eq!(recs[0].file_name().unwrap().to_string_lossy(), format!("{sha}.json"));
    assert_eq!(rec["tools"][0]["name"], "text_stats");
    assert_eq!(workspace_files(&env), before, "nothing written into the workspace");

    // Second start: a cache hit, no compiling line; the call works.
    let (list, err) = tools_json(&env);
    assert!(tool(&list, "text_stats").is_some());
    assert!(!compiling(&err), "second start must not compile: {err}");
    let (code, out, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["notes.txt"]}"#]);
    assert_eq!(code, 0, "{err}");
    assert!(!compiling(&err), "{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["total"]["words"], 5, "{out}");
    assert_eq!(result["total"]["lines"], 2, "{out}");

    // Without the compile cache the tools still come from the record: listing them needs
    // neither compiling nor instantiating the component.
    for f in files_in(&env.components_dir()) {
        std::fs::remove_file(f).unwrap();
    }
    let (list, err) = tools_json(&env);
    assert!(tool(&list, "text_stats").is_some(), "{err}");
    assert!(!compiling(&err), "listed from the record: {err}");
    assert!(
        files_in(&env.components_dir()).is_empty(),
        "listing compiled the component"
    );
    // The call compiles it again, quietly, and works.
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["notes.txt"]}"#]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(workspace_files(&env), before, "nothing written into the workspace");
}

/// E4: a changed `.wasm` is new content: compiled and listed again under its new hash. A
/// different component under the same file name brings its own tools.
#[test]
fn e4_changed_component_is_compiled_and_listed_again() {
    let env = Env::isolated();
    let dir = copy_example(&env.ws(), "text-stats", "text-stats");
    let file = dir.join("text-stats.wasm");
    trust(&env);
    let (_, err) = tools_json(&env);
    assert!(compiling(&err), "{err}");
    assert_eq!(records(&env).len(), 1);

    touch_component(&file);
    // Issue 13 item 5: a change of the trusted host config needs trust again first.
    let (list, err) = tools_json(&env);
    assert!(
        tool(&list, "text_stats").is_none() && err.contains("needs trust again"),
        "{err}"
    );
    trust(&env);
    let (list, err) = tools_json(&env);
    assert!(compiling(&err), "a changed .wasm is compiled again: {err}");
    assert!(tool(&list, "text_stats").is_some(), "{err}");
    assert_eq!(records(&env).len(), 2, "listed again under the new hash");
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["notes.txt"]}"#]);
    assert_eq!(code, 0, "{err}");
    assert!(!compiling(&err), "{err}");

    // Another component in the same place: re-listed, so its tools replace the old ones.
    std::fs::copy(wasm("json_query"), &file).unwrap();
    trust(&env);
    let (list, err) = tools_json(&env);
    assert!(compiling(&err), "{err}");
    assert!(tool(&list, "text_stats").is_none(), "{list:?}");
    let t = tool(&list, "json_query").unwrap_or_else(|| panic!("json_query missing: {err}"));
    assert_eq!(t["owner"], "text-stats");
    assert_eq!(records(&env).len(), 3);
}

/// Hostile workspace folders (T1: the workspace is not the user's): a core module, a broken
/// manifest, a huge `.wasm` or plugin.json, `..` in `wasm`, symlinks out of the plugin folder or
/// out of the workspace. Each is one warning naming its file; nothing outside is read or
/// compiled; the good plugin still loads and runs.
#[test]
fn hostile_workspace_plugins_are_refused_by_name_and_the_rest_loads() {
    let env = Env::isolated();
    let plugins = ws_plugins(&env.ws());
    copy_example(&env.ws(), "text-stats", "good");
    let folder = |name: &str, manifest: Value| {
        let d = plugins.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("plugin.json"), manifest.to_string()).unwrap();
        d
    };
    // A core module, not a component.
    let core = folder("core", json!({"name": "core", "wasm": "core.wasm"}));
    std::fs::write(core.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    // A manifest that is not JSON.
    let broken = plugins.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("plugin.json"), "{ \"name\": \"broken\", oops").unwrap();
    // `..` in `wasm`: the component outside the folder is never read.
    std::fs::copy(wasm("json_query"), plugins.join("outside.wasm")).unwrap();
    let dotdot = folder("dotdot", json!({"name": "dotdot", "wasm": "../outside.wasm"}));
    // Too large to read: refused by its size, unread (sparse files).
    let huge = folder("huge", json!({"name": "huge", "wasm": "huge.wasm"}));
    std::fs::File::create(huge.join("huge.wasm"))
        .unwrap()
        .set_len(64 * 1024 * 1024 + 1)
        .unwrap();
    let huge_manifest = plugins.join("huge-manifest");
    std::fs::create_dir_all(&huge_manifest).unwrap();
    std::fs::File::create(huge_manifest.join("plugin.json"))
        .unwrap()
        .set_len(1024 * 1024 + 1)
        .unwrap();
    // A plugin's skills folder outside the plugin.
    let outside_skill = env.tmp.path().join("src/secret-skills/secret");
    std::fs::create_dir_all(&outside_skill).unwrap();
    std::fs::write(
        outside_skill.join("SKILL.md"),
        "---\nname: secret\ndescription: x\n---\nsecret\n",
    )
    .unwrap();
    let skills = folder(
        "skills-out",
        json!({"name": "skills-out", "skills": "../../../../src/secret-skills"}),
    );

    let mut expected = vec![
        (core.join("core.wasm"), "a core wasm module, not a component"),
        (broken.join("plugin.json"), "not a valid plugin.json"),
        (
            dotdot.join("plugin.json"),
            "`wasm` must be a file inside the plugin folder",
        ),
        (huge.join("huge.wasm"), "too large (67108865 bytes"),
        (huge_manifest.join("plugin.json"), "too large (1048577 bytes"),
        (
            skills.join("plugin.json"),
            "`skills` must be a folder inside the plugin folder",
        ),
    ];
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        let outside = env.tmp.path().join("src/outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::copy(wasm("json_query"), outside.join("c.wasm")).unwrap();
        // The `.wasm` a symlink to a component outside.
        let link = folder("link", json!({"name": "link", "wasm": "c.wasm"}));
        symlink(outside.join("c.wasm"), link.join("c.wasm")).unwrap();
        expected.push((link.join("c.wasm"), "a symlink"));
        // A folder on the way a symlink to outside.
        let via = folder("via-dir", json!({"name": "via-dir", "wasm": "lib/c.wasm"}));
        symlink(&outside, via.join("lib")).unwrap();
        expected.push((via.join("lib/c.wasm"), "leads outside the plugin folder"));
        // The plugin folder itself a symlink to a plugin outside the workspace.
        std::fs::write(
            outside.join("plugin.json"),
            json!({"name": "escaped", "wasm": "c.wasm"}).to_string(),
        )
        .unwrap();
        symlink(&outside, plugins.join("escaped")).unwrap();
        expected.push((
            plugins.join("escaped/plugin.json"),
            "the plugin folder leads outside the workspace",
        ));
    }
    trust(&env);

    let (list, err) = tools_json(&env);
    for (file, what) in &expected {
        let line = format!("warning: {}: ", file.display());
        assert!(
            err.lines().any(|l| l.starts_with(&line) && l.contains(what)),
            "expected `{line}… {what}` in:\n{err}"
        );
    }
    assert_eq!(err.matches("warning: ").count(), expected.len(), "{err}");
    assert!(
        tool(&list, "json_query").is_none(),
        "a component outside loaded: {list:?}"
    );
    assert!(
        tool(&list, "text_stats").is_some(),
        "the good plugin still loads: {err}"
    );
    let (code, out, err) = env.run(&["status"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("0 skills"), "the outside skill loaded: {out}");
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["notes.txt"]}"#]);
    assert_eq!(code, 0, "{err}");
    // Only text-stats was compiled: one cache file (its checksum is in the config dir).
    assert_eq!(
        files_in(&env.components_dir()).len(),
        1,
        "{:?}",
        files_in(&env.components_dir())
    );
    assert_eq!(records(&env).len(), 1);
}

/// E7: the workspace comes first. A workspace plugin with the name of an installed one wins
/// (the installed one is a warning naming both files); so does a workspace tool of the same
/// name in a plugin of another name.
#[test]
fn e7_workspace_component_wins_over_the_installed_one() {
    let env = Env::new();
    env.install(&example_dir("text-stats"));
    let installed = env.plugins_dir().join("text-stats/plugin.json");
    let dir = copy_example(&env.ws(), "text-stats", "text-stats");
    let (list, _) = tools_json(&env);
    assert_eq!(
        tool(&list, "text_stats").unwrap()["file"],
        installed.display().to_string()
    );

    trust(&env);
    let (list, err) = tools_json(&env);
    let t = tool(&list, "text_stats").unwrap_or_else(|| panic!("{err}"));
    assert_eq!(t["file"], dir.join("plugin.json").display().to_string());
    let clash = err
        .lines()
        .find(|l| l.starts_with(&format!("warning: {}: ", installed.display())))
        .unwrap_or_else(|| panic!("no warning about the installed plugin: {err}"));
    assert!(
        clash.contains("plugin `text-stats` clashes") && clash.contains(&dir.join("plugin.json").display().to_string()),
        "{clash}"
    );
    let (code, _, err) = env.run(&["tools", "call", "text_stats", "--args", r#"{"paths":["notes.txt"]}"#]);
    assert_eq!(code, 0, "{err}");

    // Another plugin name, the same tool name: the workspace's tool wins.
    let manifest = dir.join("plugin.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["name"] = json!("my-stats");
    std::fs::write(&manifest, m.to_string()).unwrap();
    trust(&env); // the changed plugin.json needs trust again (issue 13 item 5)
    let (list, err) = tools_json(&env);
    let t = tool(&list, "text_stats").unwrap_or_else(|| panic!("{err}"));
    assert_eq!(t["owner"], "my-stats");
    assert!(
        err.lines()
            .any(|l| l.starts_with(&format!("warning: {}: ", installed.display()))
                && l.contains("tool `text_stats`")
                && l.contains("clashes")),
        "{err}"
    );
}

// ---- in-process: the session (T2) and the library ----

use cst_test_support::session::{config_home, set_trust};

fn workspace() -> (tempfile::TempDir, PathBuf) {
    config_home();
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    (t, root)
}

async fn reload(
    h: &mut cst_agent::core::SessionHandle,
    what: cst_agent::core::ReloadTarget,
) -> (cst_agent::protocol::ReloadSummary, Vec<cst_agent::protocol::Diagnostic>) {
    use cst_agent::core::{Event, Op};
    h.ops.send(Op::Reload { what }).unwrap();
    match cst_test_support::session::until(h, |e| matches!(e, Event::Reloaded { .. }))
        .await
        .pop()
    {
        Some(Event::Reloaded { summary, warnings, .. }) => (summary, warnings),
        other => panic!("{other:?}"),
    }
}

/// T2: `Op::Reload { Trust }` loads the workspace's components into the running session, and
/// `Op::Reload { Plugins }` picks up one added later; their tools answer in the next turn.
/// Without the feature the reload adds the plugin with no tools and the calls fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t2_session_reload_loads_workspace_components() {
    use cst_agent::approvals::ApprovalMode;
    use cst_agent::core::{ReloadTarget, SessionBuilder};
    use cst_agent::protocol::{Changed, ExtensionKind};
    use cst_test_support::session::{close, model, turn};
    use cst_test_support::{call, Reply, ScriptedServer};

    let (_t, ws) = workspace();
    copy_example(&ws, "text-stats", "text-stats");
    std::fs::write(ws.join("notes.txt"), "one two three\n").unwrap();
    std::fs::write(ws.join("data.json"), r#"{"a": {"b": 7}}"#).unwrap();
    let stats = |id: &str| Reply::calls(vec![call(id, "text_stats", json!({"paths": ["notes.txt"]}))]);
    let server = ScriptedServer::start(vec![
        stats("before"),
        Reply::text("one"),
        stats("after"),
        Reply::text("two"),
        Reply::calls(vec![call(
            "added",
            "json_query",
            json!({"file": "data.json", "path": "a.b"}),
        )]),
        Reply::text("three"),
    ]);
    let session = SessionBuilder::new(ws.clone(), model(&server, "m"))
        .approval(ApprovalMode::Full)
        .build()
        .await;
    let mut h = session.handle;
    let result = |id: &str| server.requests().iter().find_map(|r| r.tool_result(id));

    turn(&mut h, "first").await;
    let before = result("before").unwrap();
    assert!(
        before.contains("unknown tool"),
        "untrusted workspace component ran: {before}"
    );

    set_trust(&ws, true);
    let (summary, warnings) = reload(&mut h, ReloadTarget::Trust).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let plugin = |name: &str| Changed {
        kind: ExtensionKind::Plugin,
        name: name.to_string(),
    };
    assert_eq!(summary.added, vec![plugin("text-stats")]);
    turn(&mut h, "second").await;
    let after = result("after").unwrap();
    assert!(after.contains("\"words\": 3"), "{after}");

    copy_example(&ws, "json-query", "json-query");
    set_trust(&ws, true); // a new plugin needs trust again (issue 13 item 5)
    let (summary, warnings) = reload(&mut h, ReloadTarget::Plugins).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(summary.added, vec![plugin("json-query")]);
    turn(&mut h, "third").await;
    let added = result("added").unwrap();
    assert_eq!(added.trim(), "7");
    close(h).await;
    server.finish();
    set_trust(&ws, false);
}

/// The record says which content was listed: a `.wasm` swapped after the tools were listed is
/// refused at its first call, never run under the old list.
#[test]
fn a_component_changed_after_listing_is_refused_at_the_call() {
    let (_t, ws) = workspace();
    let dir = copy_example(&ws, "text-stats", "text-stats");
    set_trust(&ws, true);
    let opts = cst_agent::discovery::LoadOptions {
        workspace: ws.clone(),
        profile: cst_agent::discovery::ToolsProfile::Default,
    };
    // The first load lists (and records); the second takes the record and loads lazily.
    let first = cst_agent::discovery::load(&opts);
    assert!(first.registry.contains("text_stats"), "{:?}", first.warnings);
    let l = cst_agent::discovery::load(&opts);
    assert!(l.registry.contains("text_stats"), "{:?}", l.warnings);
    touch_component(&dir.join("text-stats.wasm"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = cst_agent::tools::ToolContext::new(ws.clone());
    let err = rt
        .block_on(l.registry.call("text_stats", json!({"paths": ["notes.txt"]}), &ctx))
        .expect_err("a changed component must not run");
    let text = err.to_string();
    assert!(
        text.contains("text-stats.wasm: changed since its tools were listed") && text.contains("/plugins reload"),
        "{text}"
    );
    set_trust(&ws, false);
}
