//! Issue 14 item 12: without `--workspace` the workspace is the nearest folder upwards holding
//! `.git` or `.agent/`, so a run from `repo/src` gets the repository's instructions; `CLAUDE.md`
//! is read when there is no `AGENTS.md`.

mod exec_support;

use cst_test_support::{Reply, ScriptedServer};
use exec_support::*;

fn system_prompt(server: &ScriptedServer) -> String {
    server.requests()[0].messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_run_from_a_subfolder_finds_the_repository_and_its_claude_md() {
    let server = ScriptedServer::start(vec![Reply::text("ok")]);
    let f = Fixture::new(&server);
    let repo = f.ws();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "Use pnpm, never npm.").unwrap();
    let out = f.cmd_in(&repo.join("src/deep"), &["exec", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let prompt = system_prompt(&server);
    assert!(
        prompt.contains(&format!("Workspace root: {}\n", repo.display())),
        "{prompt}"
    );
    assert!(
        prompt.contains("## Project instructions (CLAUDE.md)") && prompt.contains("Use pnpm"),
        "{prompt}"
    );
    // The transcript is the repository's too.
    assert!(repo.join(".agent/sessions").is_dir());
    server.finish();
}

#[test]
fn an_agent_folder_marks_the_root_and_a_plain_folder_is_its_own() {
    let server = ScriptedServer::start(vec![Reply::text("ok"), Reply::text("ok")]);
    let f = Fixture::new(&server);
    let root = f.ws();
    std::fs::create_dir_all(root.join(".agent")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let out = f.cmd_in(&root.join("sub"), &["exec", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(system_prompt(&server).contains(&format!("Workspace root: {}\n", root.display())));
    // No marker anywhere upwards (a temp folder): the current folder is the workspace.
    let plain = std::fs::canonicalize(f.home.path()).unwrap().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let out = f.cmd_in(&plain, &["exec", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let second = server.requests()[1].messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        second.contains(&format!("Workspace root: {}\n", plain.display())),
        "{second}"
    );
    server.finish();
}
