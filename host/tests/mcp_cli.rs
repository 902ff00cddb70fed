//! `cst-agent mcp list` and `cst-agent tools list|call` with MCP servers, as real processes:
//! our test server and real third-party servers from npm and PyPI (M1–M9, E1, E5).
#![cfg(target_os = "linux")]

mod mcp_support;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use mcp_support::*;
use predicates::prelude::PredicateBooleanExt;
use serde_json::{json, Value};

struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    workspace: PathBuf,
}

fn env_with(servers: Value) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(config.join("cst-agent")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        config.join("cst-agent").join("mcp.json"),
        serde_json::to_string_pretty(&json!({"mcpServers": servers})).unwrap(),
    )
    .unwrap();
    Env {
        _dir: dir,
        config,
        workspace,
    }
}

fn agent(env: &Env) -> Command {
    let mut c = Command::cargo_bin("cst-agent").unwrap();
    c.env("XDG_CONFIG_HOME", &env.config)
        .env("XDG_CACHE_HOME", env.config.join("cache"))
        .env_remove("CST_T_DIR")
        .arg("--workspace")
        .arg(&env.workspace);
    c
}

fn list_json(cmd: &mut Command) -> Vec<Value> {
    let out = cmd.args(["mcp", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn find<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {list:?}"))
}

fn test_server_str() -> String {
    test_server().to_string_lossy().into_owned()
}

#[test]
fn mcp_list_shows_every_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("variant"), "expanded").unwrap();
    let env = env_with(json!({
        "t": {"command": test_server_str(), "env": {"CST_TEST_VARIANT_FILE": "${CST_T_DIR}/variant"}},
        "off": {"command": test_server_str(), "disabled": true},
        "web": {"url": "http://127.0.0.1:9/mcp"},
        "nokey": {"command": test_server_str(), "args": ["--key", "${CST_SURELY_MISSING_VAR}"]},
    }));
    let list = list_json(agent(&env).env("CST_T_DIR", dir.path()));
    assert_eq!(list.len(), 4);
    let t = find(&list, "t");
    assert_eq!(t["status"], "ready");
    // 12 named tools + 11 fillers + variant_expanded: `${CST_T_DIR}` was expanded (M3).
    assert_eq!(t["tool_count"], 24);
    assert!(t["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("mcp__t__variant_expanded")));
    assert!(t["pid"].is_u64());
    // M5: disabled, not started.
    let off = find(&list, "off");
    assert_eq!(off["status"], "disabled");
    assert_eq!(off["tool_count"], 0);
    assert!(off["pid"].is_null());
    // M2: url → failed, stdio only.
    let web = find(&list, "web");
    assert_eq!(web["status"], "failed");
    assert!(web["reason"]
        .as_str()
        .unwrap()
        .contains("mcp.json supports stdio servers only"));
    // M3: a missing variable fails that server, naming it.
    let nokey = find(&list, "nokey");
    assert_eq!(nokey["status"], "failed");
    let reason = nokey["reason"].as_str().unwrap();
    assert!(
        reason.contains("`CST_SURELY_MISSING_VAR`") && reason.contains("mcp.json"),
        "{reason}"
    );

    // Plain text output names the states too.
    let out = agent(&env)
        .env("CST_T_DIR", dir.path())
        .args(["mcp", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("disabled") && text.contains("ready") && text.contains("failed"),
        "{text}"
    );
}

/// M4: a plugin's server without `cwd` runs in the plugin folder; a relative `cwd` is the
/// workspace's; a relative program (`./server.sh`) is the plugin's own even then, never a file of
/// the same name that the workspace holds.
#[test]
fn plugin_server_cwd_default_and_relative() {
    let env = env_with(json!({}));
    let plugin = env.config.join("cst-agent/plugins/p");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::create_dir_all(env.workspace.join("sub")).unwrap();
    let script = |path: &Path, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        &plugin.join("server.sh"),
        &format!("#!/bin/sh\nexec '{}' serve\n", test_server_str()),
    );
    // A planted look-alike in the workspace: it would start and answer nothing.
    script(&env.workspace.join("sub/server.sh"), "#!/bin/sh\nexit 7\n");
    script(&env.workspace.join("server.sh"), "#!/bin/sh\nexit 7\n");
    std::fs::write(
        plugin.join("plugin.json"),
        serde_json::to_string(&json!({
            "name": "p", "description": "MCP servers only", "tools": [],
            "mcpServers": {
                "home": {"command": "./server.sh"},
                "rel": {"command": "./server.sh", "cwd": "sub"},
                "dot": {"command": "./server.sh", "cwd": "."},
            }
        }))
        .unwrap(),
    )
    .unwrap();
    // Trusted: until then (T1) a plugin's server runs in its own folder, relative `cwd` too.
    let trusted = agent(&env).args(["plugins", "trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let cwd_of = |server: &str| {
        let out = agent(&env)
            .args(["tools", "call", &format!("mcp__{server}__cwd")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{server}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap();
    assert_eq!(real(&cwd_of("home")), real(&plugin));
    assert_eq!(real(&cwd_of("rel")), real(&env.workspace.join("sub")));
    assert_eq!(real(&cwd_of("dot")), real(&env.workspace));
}

/// M7: one rule for every headless run — `mcp list`, `tools list` and `exec` wait for a server
/// that never finishes its handshake for 30 s, not for its (longer) `startTimeout`, then go on
/// and warn naming the file.
#[test]
fn headless_runs_wait_30_s_for_a_server_that_never_answers() {
    let env = env_with(json!({
        "mute": {"command": test_server_str(), "args": ["never-init"], "startTimeout": 600},
        "t": {"command": test_server_str()},
        "bad": {"command": "sh", "args": ["-c", "echo 'bad: no such token' >&2; exit 3"]},
    }));
    let spawn = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cst-agent"));
        c.env("XDG_CONFIG_HOME", &env.config)
            .env("XDG_CACHE_HOME", env.config.join("cache"))
            .env("OPENAI_API_KEY", "test-key")
            .arg("--workspace")
            .arg(&env.workspace)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let started = std::time::Instant::now();
    // All three at once, so the test costs one wait. `exec` then fails at the model (port 9).
    let children = [
        spawn(&["mcp", "list", "--json"]),
        spawn(&["tools", "list", "--json"]),
        spawn(&["exec", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "hi"]),
    ];
    let deadline = started + std::time::Duration::from_secs(120);
    let mut outputs = Vec::new();
    for mut child in children {
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("a headless run still waits after 120 s: it waits for `startTimeout`");
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        outputs.push((std::time::Instant::now() - started, child.wait_with_output().unwrap()));
    }
    for (elapsed, out) in &outputs {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(elapsed.as_secs() >= 29, "went on before 30 s ({elapsed:?}): {stderr}");
        assert!(
            stderr.contains("MCP server `mute` has not finished starting after 30 s") && stderr.contains("mcp.json"),
            "{stderr}"
        );
    }
    // Issue 14 item 7: after 2 s each run names what it waits for; `tools` and `exec` report the
    // server that failed, with its reason; the summary line counts it apart.
    for (i, (_, out)) in outputs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("waiting for MCP servers: mute"), "{stderr}");
        let reported = stderr.contains("MCP server `bad`") && stderr.contains("no such token");
        assert_eq!(reported, i > 0, "run {i}: {stderr}");
    }
    let exec_err = String::from_utf8_lossy(&outputs[2].1.stderr);
    assert!(exec_err.contains("3 MCP servers (1 failed)"), "{exec_err}");
    let list: Vec<Value> = serde_json::from_slice(&outputs[0].1.stdout).unwrap();
    assert_eq!(find(&list, "bad")["status"], "failed");
    assert_eq!(find(&list, "mute")["status"], "starting");
    assert_eq!(find(&list, "t")["status"], "ready", "the other server is not held up");
    let tools: Vec<Value> = serde_json::from_slice(&outputs[1].1.stdout).unwrap();
    assert!(tools.iter().any(|t| t["name"] == "mcp__t__echo"), "{tools:?}");
}

#[test]
fn tools_list_and_call_go_through_the_registry() {
    let env = env_with(json!({"t": {"command": test_server_str(), "autoApprove": true}}));
    let out = agent(&env).args(["tools", "list", "--json"]).output().unwrap();
    assert!(out.status.success());
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp__t__echo")
        .expect("mcp__t__echo listed");
    assert_eq!(echo["source"], "mcp");
    assert_eq!(echo["perm"], "read", "autoApprove: true makes tools read (M6)");
    assert_eq!(echo["timeout_secs"], 60);

    agent(&env)
        .args(["tools", "call", "mcp__t__echo", "--args", r#"{"text":"hi"}"#])
        .assert()
        .success()
        .stdout("echo: hi\n");
    agent(&env)
        .args(["tools", "call", "mcp__t__fail"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("it failed on purpose"));
    agent(&env)
        .args(["tools", "call", "mcp__t__echo", "--args", r#"{"text":3}"#])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("invalid arguments"));
    agent(&env)
        .args(["tools", "call", "mcp__t__crash"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "server t exited: crashing on purpose in the middle of a call",
        ));
}

/// A server entry of the test server that appends its pid to `marker` when it starts: evidence
/// that outlives the process (`mcp list` stops its servers before it returns).
fn marked_server(marker: &Path) -> Value {
    json!({"command": test_server_str(), "env": {"CST_TEST_START_MARKER": marker.to_string_lossy()}})
}

#[test]
fn untrusted_workspace_mcp_json_is_not_started() {
    // E5/T1: <ws>/.agent/mcp.json only after trust. A fresh config dir trusts nothing.
    let env = env_with(json!({}));
    let marker = env.config.join("wsserver-started");
    let agent_dir = env.workspace.join(".agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(
        agent_dir.join("mcp.json"),
        serde_json::to_string(&json!({"mcpServers": {"wsserver": marked_server(&marker)}})).unwrap(),
    )
    .unwrap();
    let list = list_json(&mut agent(&env));
    assert!(list.iter().all(|s| s["name"] != "wsserver"), "{list:?}");
    assert!(
        !marker.exists(),
        "E5: the untrusted workspace's server was started (pid {})",
        std::fs::read_to_string(&marker).unwrap_or_default().trim()
    );
    // The library view: discovery must not hand the workspace file to the MCP layer.
    std::env::set_var("XDG_CONFIG_HOME", &env.config);
    let loaded = cst_agent::discovery::load(&cst_agent::discovery::LoadOptions {
        workspace: env.workspace.clone(),
        profile: cst_agent::discovery::ToolsProfile::Default,
    });
    assert!(
        loaded.mcp_sources.iter().all(|s| !s.file.starts_with(&env.workspace)),
        "untrusted workspace mcp.json reached the MCP layer"
    );

    // T2: once trusted the same file starts its server, and the marker shows it, so its absence
    // above means "not started" rather than "the marker does not work".
    agent(&env).args(["plugins", "trust"]).assert().success();
    let list = list_json(&mut agent(&env));
    assert_eq!(find(&list, "wsserver")["status"], "ready", "{list:?}");
    assert!(marker.exists(), "a started test server leaves its marker");
}

#[test]
fn minimal_profile_starts_nothing() {
    let env = env_with(json!({}));
    let marker = env.config.join("t-started");
    std::fs::write(
        env.config.join("cst-agent").join("mcp.json"),
        serde_json::to_string(&json!({"mcpServers": {"t": marked_server(&marker)}})).unwrap(),
    )
    .unwrap();
    let list = list_json(agent(&env).args(["--tools", "minimal"]));
    assert!(list.is_empty(), "E1: --tools minimal loads no MCP server: {list:?}");
    assert!(
        !marker.exists(),
        "E1: --tools minimal started the config dir's server (pid {})",
        std::fs::read_to_string(&marker).unwrap_or_default().trim()
    );
    // With the default profile the same config starts it and leaves the marker.
    let list = list_json(&mut agent(&env));
    assert_eq!(find(&list, "t")["status"], "ready", "{list:?}");
    assert!(marker.exists(), "a started test server leaves its marker");
}

/// A third-party peer installed by `.ci/run`; a missing one is a failure, not a skip.
fn peer(env_var: &str, rel: &str, install: &str) -> String {
    let path = std::env::var(env_var)
        .map(PathBuf::from)
        .unwrap_or_else(|_| peers_dir().join(rel));
    assert!(
        Path::new(&path).exists(),
        "third-party MCP server missing at {} (set {env_var} or CST_MCP_PEERS; install with: {install})",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

#[test]
fn third_party_server_everything_npm() {
    let bin = peer(
        "CST_MCP_EVERYTHING",
        "node_modules/.bin/mcp-server-everything",
        "npm install --prefix <peers> @modelcontextprotocol/server-everything@2026.8.31",
    );
    let env = env_with(json!({"everything": {"command": bin, "args": ["stdio"]}}));
    let list = list_json(&mut agent(&env));
    let e = find(&list, "everything");
    assert_eq!(e["status"], "ready", "{e}");
    assert!(e["tools"].as_array().unwrap().contains(&json!("mcp__everything__echo")));
    agent(&env)
        .args([
            "tools",
            "call",
            "mcp__everything__echo",
            "--args",
            r#"{"message":"hi from cst"}"#,
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("Echo: hi from cst"));
    agent(&env)
        .args([
            "tools",
            "call",
            "mcp__everything__get-sum",
            "--args",
            r#"{"a":2,"b":40}"#,
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("42"));
}

#[test]
fn third_party_server_time_pypi() {
    let bin = peer(
        "CST_MCP_SERVER_TIME",
        "venv/bin/mcp-server-time",
        "python3 -m venv <peers>/venv && <peers>/venv/bin/pip install mcp-server-time==2026.10.19",
    );
    let env = env_with(json!({"time": {"command": bin, "args": ["--local-timezone", "UTC"]}}));
    let list = list_json(&mut agent(&env));
    let t = find(&list, "time");
    assert_eq!(t["status"], "ready", "{t}");
    assert!(t["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("mcp__time__get_current_time")));
    agent(&env)
        .args([
            "tools",
            "call",
            "mcp__time__get_current_time",
            "--args",
            r#"{"timezone":"UTC"}"#,
        ])
        .assert()
        .success()
        .stdout(predicates::str::contains("\"timezone\"").and(predicates::str::contains("UTC")));
}

/// Issue 14 item 6: mcp.json files as VS Code (`servers`, JSONC, `${workspaceFolder}`,
/// `${env:…}`, `${input:…}`), a Claude Code plugin's `.mcp.json` (a bare map,
/// `${VAR:-default}`) and Gemini CLI (`httpUrl`) write them.
#[test]
fn mcp_json_in_the_shapes_other_clients_write() {
    let server = test_server_str();
    let write = |env: &Env, text: &str| std::fs::write(env.config.join("cst-agent/mcp.json"), text).unwrap();

    // VS Code's .vscode/mcp.json: JSONC with comments and trailing commas, `servers`, `type`.
    let env = env_with(json!({}));
    write(
        &env,
        &format!(
            r#"{{
  // Servers for this machine
  "inputs": [{{"type": "promptString", "id": "gh", "description": "GitHub token", "password": true}}],
  "servers": {{
    "tests": {{
      "type": "stdio",
      "command": "{server}",
      "args": [],
      "env": {{"WS": "${{workspaceFolder}}", "FROM_ENV": "${{env:CST_T_DIR}}", "CST_TEST_ENV_TOOL": "1"}}, /* trailing comma next */
    }},
    "github": {{"type": "stdio", "command": "{server}", "env": {{"TOKEN": "${{input:gh}}"}}}},
  }},
}}"#
        ),
    );
    let list = list_json(agent(&env).env("CST_T_DIR", "/from/env"));
    assert_eq!(find(&list, "tests")["status"], "ready", "{list:?}");
    let out = agent(&env)
        .env("CST_T_DIR", "/from/env")
        .args(["tools", "call", "mcp__tests__env"])
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(
        // An `${env:…}` value is a secret the host knows: expanded, and redacted on output.
        seen.contains(&format!("WS={}", env.workspace.display())) && seen.contains("FROM_ENV=[REDACTED]"),
        "{seen}"
    );
    let github = find(&list, "github");
    assert_eq!(github["status"], "failed", "{github}");
    assert!(
        github["reason"].as_str().unwrap_or_default().contains("${input:gh}")
            && github["reason"].as_str().unwrap_or_default().contains("env.TOKEN"),
        "{github}"
    );

    // A Claude Code plugin's .mcp.json: the servers at the top level; `${VAR:-default}`.
    write(
        &env,
        &json!({"local": {"command": server, "args": [], "env": {"LEVEL": "${CST_NOT_SET_ANYWHERE:-info}"}}})
            .to_string(),
    );
    let list = list_json(&mut agent(&env));
    assert_eq!(find(&list, "local")["status"], "ready", "{list:?}");

    // Gemini CLI's `httpUrl`: a remote server, named as such, not started.
    write(
        &env,
        &json!({"mcpServers": {"remote": {"httpUrl": "https://example.com/mcp"}}}).to_string(),
    );
    let list = list_json(&mut agent(&env));
    let remote = find(&list, "remote");
    assert!(
        remote["reason"].as_str().unwrap_or_default().contains("remote"),
        "{remote}"
    );

    // None of the known keys: a warning naming the file, not a silent zero.
    write(&env, r#"{"mcp": {"servers": {}}}"#);
    let out = agent(&env).args(["mcp", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp.json") && err.contains("no `mcpServers`"), "{err}");
}
