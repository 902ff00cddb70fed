//! The built-in tools through the registry and the real approval gate (file tools stay in the
//! workspace, symlinks out are refused, profiles).
#![cfg(unix)]

use std::sync::Arc;

use serde_json::json;

use cst_agent::approvals::{ApprovalGate, ApprovalMode};
use cst_agent::builtin_tools::{register_builtins, MINIMAL};
use cst_agent::discovery::ToolsProfile;
use cst_agent::tools::{CallError, Perm, PermissionGate, Registry, ToolContext};

fn setup(profile: ToolsProfile) -> (tempfile::TempDir, Registry) {
    let ws = tempfile::tempdir().unwrap();
    let reg = Registry::new();
    let mut w = Vec::new();
    register_builtins(&reg, profile, &mut w);
    assert!(w.is_empty(), "{w:?}");
    (ws, reg)
}

fn ctx(ws: &tempfile::TempDir, mode: Option<ApprovalMode>) -> ToolContext {
    let mut c = ToolContext::new(std::fs::canonicalize(ws.path()).unwrap());
    c.gate = mode.map(|m| Arc::new(ApprovalGate::new(m, true, None)) as Arc<dyn PermissionGate>);
    c
}

#[tokio::test]
async fn profiles() {
    let (_ws, reg) = setup(ToolsProfile::Minimal);
    let names: Vec<String> = reg.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names.len(), MINIMAL.len());
    assert!(!names.contains(&"ask_user".to_string()));
    let (_ws, reg) = setup(ToolsProfile::Default);
    assert!(reg.contains("ask_user"));
    assert_eq!(reg.spec("read_file").unwrap().perm, Perm::Read);
    assert_eq!(reg.spec("edit_file").unwrap().perm, Perm::Write);
    assert_eq!(reg.spec("run_shell").unwrap().perm, Perm::Shell);
}

#[tokio::test]
async fn write_edit_read_list_grep() {
    let (ws, reg) = setup(ToolsProfile::Default);
    let c = ctx(&ws, Some(ApprovalMode::Auto));
    reg.call(
        "write_file",
        json!({"path": "src/a.txt", "content": "one\ntwo\nthree\n"}),
        &c,
    )
    .await
    .unwrap();
    let out = reg
        .call(
            "edit_file",
            json!({"path": "src/a.txt", "old_text": "two", "new_text": "2"}),
            &c,
        )
        .await
        .unwrap();
    assert!(out.contains("replaced 1"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/a.txt")).unwrap(),
        "one\n2\nthree\n"
    );
    let err = reg
        .call(
            "edit_file",
            json!({"path": "src/a.txt", "old_text": "nope", "new_text": "x"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    std::fs::write(ws.path().join("dup.txt"), "x x").unwrap();
    let err = reg
        .call(
            "edit_file",
            json!({"path": "dup.txt", "old_text": "x", "new_text": "y"}),
            &c,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("2 times"), "{err}");
    let out = reg
        .call("read_file", json!({"path": "src/a.txt", "offset": 2, "limit": 1}), &c)
        .await
        .unwrap();
    assert_eq!(out, "2\n");
    let out = reg.call("list", json!({"pattern": "**/*.txt"}), &c).await.unwrap();
    assert_eq!(out, "dup.txt\nsrc/a.txt");
    let out = reg.call("grep", json!({"pattern": "^th"}), &c).await.unwrap();
    assert_eq!(out, "src/a.txt:3:three");
}

#[cfg(unix)]
#[tokio::test]
async fn paths_outside_the_workspace_are_refused_unless_full() {
    let (ws, reg) = setup(ToolsProfile::Default);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("nowhere"), ws.path().join("dangling")).unwrap();
    let abs = outside.path().join("secret.txt").display().to_string();
    for mode in [None, Some(ApprovalMode::Auto)] {
        let c = ctx(&ws, mode);
        for (tool, args) in [
            ("read_file", json!({"path": "../x"})),
            ("read_file", json!({"path": abs})),
            ("read_file", json!({"path": "link/secret.txt"})),
            ("write_file", json!({"path": "link/new.txt", "content": "x"})),
            ("write_file", json!({"path": "dangling", "content": "x"})),
            ("list", json!({"path": "link"})),
        ] {
            let err = reg.call(tool, args.clone(), &c).await.unwrap_err();
            assert!(matches!(err, CallError::Failed { .. }), "{tool} {args}: {err}");
        }
    }
    assert!(!outside.path().join("nowhere").exists());
    let c = ctx(&ws, Some(ApprovalMode::Full));
    assert_eq!(
        reg.call("read_file", json!({"path": "link/secret.txt"}), &c)
            .await
            .unwrap(),
        "s"
    );
}

#[tokio::test]
async fn ask_user_tells_the_model_nobody_is_there() {
    let (ws, reg) = setup(ToolsProfile::Default);
    let err = reg
        .call(
            "ask_user",
            json!({"question": "?"}),
            &ctx(&ws, Some(ApprovalMode::Auto)),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no person"), "{err}");
}

/// Documented behaviour of run_shell through `process::run_captured` (its body lands with the
/// extensions work): output and exit code, a failing command, cancellation.
#[cfg(unix)]
#[tokio::test]
async fn run_shell_runs_through_the_process_runner() {
    let (ws, reg) = setup(ToolsProfile::Default);
    let c = ctx(&ws, Some(ApprovalMode::Full));
    let out = reg
        .call("run_shell", json!({"command": "echo hi; echo err >&2; pwd"}), &c)
        .await
        .unwrap();
    assert!(out.contains("hi") && out.contains("err"), "{out}");
    assert!(
        out.contains(&std::fs::canonicalize(ws.path()).unwrap().display().to_string()),
        "{out}"
    );
    let err = reg
        .call("run_shell", json!({"command": "echo bad; exit 3"}), &c)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Failed { exit_code: Some(3), .. }), "{err:?}");
    let err = reg
        .call("run_shell", json!({"command": "sleep 5", "timeout_secs": 1}), &c)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::TimedOut { .. }), "{err:?}");
}

/// Issue 14 item 13: `list` and `grep` leave out what `.gitignore` files say (at the root and
/// in sub-folders, `!` re-includes honoured, also when the walk starts below the root) and our
/// own transcripts under `.agent/sessions`.
#[tokio::test]
async fn list_and_grep_honour_gitignore_and_skip_transcripts() {
    let (ws, reg) = setup(ToolsProfile::Default);
    let c = ctx(&ws, Some(ApprovalMode::Auto));
    let root = ws.path();
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(".gitignore", "target/\nnode_modules/\n*.log\n!keep.log\n");
    write("src/.gitignore", "generated.rs\n");
    write("src/main.rs", "fn main() { needle(); }\n");
    write("src/generated.rs", "needle\n");
    write("src/sub/lib.rs", "needle\n");
    write("src/sub/debug.log", "needle\n");
    write("keep.log", "needle\n");
    write("target/debug/out.txt", "needle\n");
    write("node_modules/pkg/index.js", "needle\n");
    write(".agent/sessions/s1/main.jsonl", "needle\n");
    write(".agent/skills/s/SKILL.md", "needle\n");

    let listed = reg.call("list", json!({}), &c).await.unwrap();
    for shown in ["src/main.rs", "src/sub/lib.rs", "keep.log", ".agent/skills/s/SKILL.md"] {
        assert!(listed.lines().any(|l| l.ends_with(shown)), "{shown} missing:\n{listed}");
    }
    for hidden in [
        "target",
        "node_modules",
        "generated.rs",
        "debug.log",
        "sessions",
        "main.jsonl",
    ] {
        assert!(!listed.contains(hidden), "{hidden} listed:\n{listed}");
    }

    let found = reg.call("grep", json!({"pattern": "needle"}), &c).await.unwrap();
    let files: Vec<&str> = found.lines().filter_map(|l| l.split(':').next()).collect();
    for hidden in ["target", "node_modules", "generated.rs", "debug.log", "main.jsonl"] {
        assert!(files.iter().all(|f| !f.contains(hidden)), "{hidden} searched:\n{found}");
    }
    assert!(files.iter().any(|f| f.ends_with("src/sub/lib.rs")), "{found}");
    assert!(files.iter().any(|f| f.ends_with("keep.log")), "{found}");

    // Starting below the root, the root's rules still hold.
    let below = reg
        .call("grep", json!({"pattern": "needle", "path": "src/sub"}), &c)
        .await
        .unwrap();
    assert!(below.contains("lib.rs") && !below.contains("debug.log"), "{below}");
    // A path named explicitly is searched even when ignored.
    let explicit = reg
        .call("grep", json!({"pattern": "needle", "path": "target/debug"}), &c)
        .await
        .unwrap();
    assert!(explicit.contains("out.txt"), "{explicit}");
}
