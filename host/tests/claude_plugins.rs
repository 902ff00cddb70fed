//! Issue 14 item 9: Claude Code plugins work unchanged — installed with `plugins install DIR` or
//! dropped into the plugins folder. Fixtures in `tests/fixtures/claude-plugins/` are shaped like
//! Anthropic's `feature-dev` and `pr-review-toolkit` plugins and an MCP-only plugin.
#![cfg(unix)]

mod exec_support;
mod mcp_support;

use std::path::{Path, PathBuf};

use cst_test_support::{Reply, ScriptedServer};
use exec_support::*;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/claude-plugins")
        .join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn cmd(f: &Fixture, args: &[&str]) -> std::process::Output {
    f.cmd(args)
        .env("CST_TEST_SERVER", mcp_support::test_server())
        .output()
        .unwrap()
}

/// Two installed, one dropped into `<config>/plugins`.
fn with_plugins(f: &Fixture) {
    for name in ["feature-dev", "mcp-only"] {
        let out = cmd(f, &["plugins", "install", &fixture(name).to_string_lossy()]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    }
    copy_tree(
        &fixture("pr-review-toolkit"),
        &f.config_dir().join("plugins/pr-review-toolkit"),
    );
}

#[test]
fn claude_code_plugins_bring_roles_commands_skills_and_servers() {
    let server = ScriptedServer::start(vec![Reply::text("Planned.")]);
    let f = Fixture::new(&server);
    with_plugins(&f);

    let out = cmd(&f, &["plugins", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for name in ["feature-dev", "mcp-only", "pr-review-toolkit"] {
        let row = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {rows:?}"));
        assert_eq!(row["status"], "ok", "{row}");
    }

    // Roles: both plugins have a `code-reviewer`; the second is namespaced, as Claude Code does.
    let out = cmd(&f, &["agents", "list", "--json"]);
    let warnings = text(&out.stderr);
    let roles: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let role = |n: &str| {
        roles
            .iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {roles:?}"))
    };
    assert!(role("code-reviewer")["file"].as_str().unwrap().contains("feature-dev"));
    assert!(role("pr-review-toolkit:code-reviewer")["description"]
        .as_str()
        .unwrap()
        .starts_with("Use this agent when you need to review code"));
    assert_eq!(
        role("code-explorer")["tools"],
        serde_json::json!(["list", "grep", "read_file"])
    );
    role("silent-failure-hunter");
    assert!(
        warnings.contains("code-explorer.md") && warnings.contains("`WebFetch`"),
        "{warnings}"
    );
    // Hooks come from the deployment config: said, not run.
    assert!(
        warnings.contains("hooks.json") && warnings.contains("hooks are not loaded"),
        "{warnings}"
    );

    // The MCP-only plugin's server, `${CLAUDE_PLUGIN_ROOT}` expanded to its installed folder.
    let out = cmd(&f, &["tools", "call", "mcp__tests__env"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let installed = std::fs::canonicalize(f.config_dir().join("plugins/mcp-only")).unwrap();
    let seen = text(&out.stdout);
    assert!(
        seen.contains(&format!("PLUGIN_ROOT={}", installed.display()))
            || seen.contains(&format!(
                "PLUGIN_ROOT={}",
                f.config_dir().join("plugins/mcp-only").display()
            )),
        "{seen}"
    );

    // A slash command: `/feature-dev ARGS`, `$ARGUMENTS` replaced; the plugin's skill is indexed.
    let out = f
        .cmd(&["exec", "/feature-dev add a login page"])
        .env("CST_TEST_SERVER", mcp_support::test_server())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let messages = server.requests()[0].messages();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("- review-checklist: "), "{system}");
    assert!(
        !system.contains("- feature-dev:"),
        "a command is not in the skills index"
    );
    let user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        user.starts_with("# Feature Development") && user.ends_with("Initial request: add a login page"),
        "{user}"
    );
    server.finish();
}
