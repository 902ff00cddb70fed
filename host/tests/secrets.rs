//! Issue 13 items 3 and 4, performed for real with the `cst-agent` binary:
//! - nothing of an untrusted workspace runs (T1): the user's own mcp.json servers and command
//!   tools start outside it, with `PYTHONSAFEPATH=1`, until it is trusted;
//! - no secret reaches a child (command tools, `run_shell`, MCP servers get a scrubbed
//!   environment plus what their config declares) or an output (`exec --json`, transcripts,
//!   stderr, error messages redact the API key and every `${VAR}` value of an MCP server).
#![cfg(target_os = "linux")]

mod exec_support;
mod mcp_support;

use std::path::{Path, PathBuf};

use cst_test_support::{call, Reply, ScriptedServer};
use exec_support::*;
use serde_json::json;

/// In the host's environment under a name that looks like a secret.
const TOKEN: &str = "foo-token-value-7731";
/// The default model key variable's value (the fixture's key is in `CST_TEST_KEY`).
const OPENAI: &str = "sk-openai-default-9911";
/// Expanded into an MCP server's env from `${MY_MCP_VAR}`.
const MCP_SECRET: &str = "mcp-var-secret-5521";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A config-dir plugin with one command tool running `command`.
fn command_plugin(config: &Path, tool: &str, command: serde_json::Value) {
    write(
        &config.join("plugins/envy/plugin.json"),
        &json!({"name": "envy", "tools": [{"name": tool, "description": "test", "command": command,
                 "parameters": {"type": "object"}, "perm": "read"}]})
        .to_string(),
    );
}

/// The config dir's mcp.json: the test server with its `env` tool, a declared variable and one
/// taken from `${MY_MCP_VAR}`.
fn mcp_json(config: &Path) {
    write(
        &config.join("mcp.json"),
        &json!({"mcpServers": {"t": {"command": mcp_support::test_server(), "env": {
            "CST_TEST_ENV_TOOL": "1", "DECLARED_VAR": "declared-plain", "PASS_KEY": "${MY_MCP_VAR}"}}}})
        .to_string(),
    );
}

fn exec(f: &Fixture, args: &[&str]) -> std::process::Output {
    let child = f
        .cmd(args)
        .env("FOO_TOKEN", TOKEN)
        .env("OPENAI_API_KEY", OPENAI)
        .env("MY_MCP_VAR", MCP_SECRET)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_output(child, std::time::Duration::from_secs(90))
}

#[test]
fn children_get_a_scrubbed_environment_plus_what_is_declared() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("c1", "run_shell", json!({"command": "env"})),
            call("c2", "show_env", json!({})),
            call("c3", "mcp__t__env", json!({})),
        ]),
        Reply::text("done"),
    ]);
    let f = Fixture::new(&server);
    command_plugin(&f.config_dir(), "show_env", json!(["sh", "-c", "env"]));
    mcp_json(&f.config_dir());
    let out = exec(&f, &["exec", "--approval", "full", "show me"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reqs = server.requests();
    // What the model got back is each child's real environment (not redacted on the way).
    for id in ["c1", "c2", "c3"] {
        let env = reqs[1].tool_result(id).unwrap_or_default();
        assert!(env.contains("PATH="), "{id}: not an environment: {env}");
        for secret in [KEY, TOKEN, OPENAI] {
            assert!(!env.contains(secret), "{id} got a secret {secret}:\n{env}");
        }
        assert!(
            !env.contains("FOO_TOKEN=") && !env.contains("CST_TEST_KEY="),
            "{id}:\n{env}"
        );
    }
    let shell = reqs[1].tool_result("c1").unwrap();
    assert!(shell.contains("CST_WORKSPACE="), "{shell}");
    let tool = reqs[1].tool_result("c2").unwrap();
    assert!(
        tool.contains("CST_TOOL=show_env") && tool.contains("CST_PLUGIN_DIR="),
        "{tool}"
    );
    let mcp = reqs[1].tool_result("c3").unwrap();
    assert!(mcp.contains("DECLARED_VAR=declared-plain"), "{mcp}");
    // A variable the config names explicitly is passed: the user asked for it. (The model sees
    // its value redacted, which shows it was exactly the secret.)
    assert!(mcp.contains("PASS_KEY=[REDACTED]"), "{mcp}");
    server.finish();
}

#[test]
fn secrets_are_redacted_from_the_stream_transcripts_and_stderr() {
    let server = ScriptedServer::start_conversations(vec![
        (
            "MAIN:",
            vec![
                Reply::text_and_calls(
                    &format!("the key is {KEY} and the var {MCP_SECRET}"),
                    vec![
                        call(
                            "c1",
                            "run_shell",
                            json!({"command": format!("echo {KEY}; echo var=$MY_MCP_VAR; exit 3")}),
                        ),
                        call(
                            "c2",
                            "task",
                            json!({"description": "sub", "prompt": "SUB: look", "agent": "general"}),
                        ),
                    ],
                ),
                Reply::status(400, &format!("bad request for key {KEY} / {MCP_SECRET}")),
            ],
        ),
        ("SUB:", vec![Reply::text(&format!("sub saw {KEY} and {MCP_SECRET}"))]),
    ]);
    let f = Fixture::new(&server);
    mcp_json(&f.config_dir());
    let out = exec(&f, &["exec", "--json", "--approval", "full", "MAIN: go"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The values really went through the tool, and even the model got them redacted (a hostile
    // server may echo a credential back; the model's provider is a third party).
    let reqs = server.requests();
    assert!(reqs.iter().any(|r| r
        .tool_result("c1")
        .is_some_and(|t| t.contains("[REDACTED]") && !t.contains(KEY) && !t.contains(MCP_SECRET))));
    let mut files = String::new();
    for e in std::fs::read_dir(f.session_dir()).unwrap() {
        files.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    assert!(f.session_dir().join("sub-1.jsonl").is_file());
    for (what, text) in [("stdout", &stdout), ("stderr", &stderr), ("transcripts", &files)] {
        for secret in [KEY, MCP_SECRET] {
            assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
        }
        // With --json stderr holds the summary and warnings only: nothing to redact there.
        assert!(what == "stderr" || text.contains("[REDACTED]"), "{what}:\n{text}");
    }
    // Each kind of output: the model's text, a tool's output and args, an error.
    for kind in [
        "\"type\":\"message\"",
        "\"type\":\"tool.finished\"",
        "\"type\":\"error\"",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(kind) && l.contains("[REDACTED]"))
            .unwrap_or_else(|| panic!("no redacted {kind} line:\n{stdout}"));
        assert!(!line.contains(KEY), "{line}");
    }
}

fn pkg_workspace(ws: &Path, marker: &Path) {
    let code = format!("open({:?}, 'w').write('ran')\n", marker.to_string_lossy());
    write(&ws.join("pkg.py"), &code);
    write(&ws.join("pkg/__main__.py"), &code);
}

fn marker_in(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[test]
fn an_untrusted_workspace_runs_nothing_of_its_own() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    let ws = f.ws();
    let markers = tempfile::tempdir().unwrap();
    let m = marker_in(markers.path(), "ran");
    pkg_workspace(&ws, &m);
    // The user's own server and command tool: `python3 -m pkg`, once without cwd, once with the
    // workspace named explicitly (PYTHONSAFEPATH keeps the workspace's pkg out even then).
    write(
        &f.config_dir().join("mcp.json"),
        &json!({"mcpServers": {
            "py": {"command": "python3", "args": ["-m", "pkg"], "startTimeout": 5},
            "pyws": {"command": "python3", "args": ["-m", "pkg"], "cwd": ws, "startTimeout": 5},
        }})
        .to_string(),
    );
    command_plugin(&f.config_dir(), "pytool", json!(["python3", "-m", "pkg"]));
    let run = |args: &[&str]| {
        let out = f.run(args);
        text(&out.stdout) + &text(&out.stderr)
    };
    let listed = run(&["mcp", "list"]);
    let called = run(&["tools", "call", "pytool", "--args", "{}"]);
    assert!(
        !m.exists(),
        "the workspace's pkg ran while untrusted:\n{listed}\n{called}"
    );

    // Trusted: they run in the workspace as before (P9, M4).
    let trusted = run(&["plugins", "trust"]);
    run(&["mcp", "list"]);
    assert!(
        m.exists(),
        "mcp.json servers do not run in a trusted workspace: {trusted}"
    );
    std::fs::remove_file(&m).unwrap();
    run(&["tools", "call", "pytool", "--args", "{}"]);
    assert!(m.exists(), "command tools do not run in a trusted workspace");
}

/// A wasm plugin granted the key's variable logs its value as a warning: the host's log on
/// stderr shows `[REDACTED]`, never the key.
#[test]
fn a_plugin_logging_a_secret_is_redacted_in_the_log() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let component = root.join("example-plugins/target/wasm32-wasip2/release/hostile_test.wasm");
    assert!(component.is_file(), "run example-plugins/build.sh first");
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("c1", "hostile_log_env", json!({"name": "CST_TEST_KEY"}))]),
        Reply::text("done"),
    ]);
    let f = Fixture::new(&server);
    // Beside the config dir, in the fixture's home (not the shared temp dir).
    let src = f.config_dir().join("../../hostile-src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&component, src.join("hostile-test.wasm")).unwrap();
    write(
        &src.join("plugin.json"),
        &json!({"name": "hostile-test", "wasm": "hostile-test.wasm", "capabilities": ["env:CST_TEST_KEY"]}).to_string(),
    );
    let out = f.cmd(&["plugins", "install", &src.to_string_lossy()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = exec(&f, &["exec", "--approval", "full", "go"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(server.requests()[1]
        .tool_result("c1")
        .is_some_and(|t| t.contains("logged")));
    assert!(!stderr.contains(KEY), "the log shows the key:\n{stderr}");
    assert!(stderr.contains("CST_TEST_KEY=[REDACTED]"), "{stderr}");
}
