//! `cst-agent mcp serve` driven by real MCP clients: the Python `mcp` SDK's client (2.3, both
//! protocol eras, over stdio and streamable HTTP; `tests/mcp-serve/drive.py`) and the MCP
//! inspector's CLI. The clients come from `scripts/test-deps.sh` (`target/mcp-clients`, or
//! `$CST_MCP_CLIENTS`); a missing one fails the test.
//!
//! The plugins are real: the text-stats and hostile-test wasm components and a plugin.json
//! command plugin, installed into a temp config dir. The attacks are made for real: a call to a
//! tool outside `--allow`, paths outside the workspace, a command writing outside it.

mod wasm_common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use wasm_common::{example_dir, repo, Env};

fn clients() -> PathBuf {
    std::env::var_os("CST_MCP_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/mcp-clients"))
}

fn python() -> PathBuf {
    let p = clients().join("venv/bin/python");
    assert!(p.is_file(), "{} is missing: run scripts/test-deps.sh", p.display());
    p
}

fn cst_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cst-agent"))
}

/// A temp home with: text-stats (wasm), hostile-test (wasm, a 60 s limit so a spin runs until
/// cancelled), a command plugin, a skill, a trusted workspace with `notes.txt`, and
/// `secret.txt` beside the workspace.
fn setup() -> Env {
    let env = Env::new();
    let (code, _, err) = env.run(&["plugins", "trust"]);
    assert_eq!(code, 0, "{err}");
    env.install(&example_dir("text-stats"));
    let hostile = example_dir("hostile-test");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(hostile.join("plugin.json")).unwrap()).unwrap();
    manifest["timeout"] = json!(60);
    let dir = env.plugin_dir("hostile-test", &hostile.join("hostile-test.wasm"), manifest);
    env.install(&dir);
    let outside = env.tmp.path().join("outside.txt");
    let cmd = env.config().join("cst-agent/plugins/cmd-tools");
    std::fs::create_dir_all(&cmd).unwrap();
    std::fs::write(
        cmd.join("plugin.json"),
        json!({
            "name": "cmd-tools",
            "description": "Command tools for the mcp serve tests.",
            "tools": [
                {"name": "shout", "description": "Upper-case the arguments.", "command": ["tr", "a-z", "A-Z"],
                 "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                 "perm": "read"},
                {"name": "wait_then_mark", "description": "Sleep 3 s, then leave a file.",
                 "command": "sleep 3; echo ran > marker-ran.txt", "perm": "read", "timeout": 60},
                {"name": "write_outside", "description": "Write a file beside the workspace.",
                 "command": format!("echo pwned > '{}'", outside.display()), "perm": "write"}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let skill = env.config().join("cst-agent/skills/greeting");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greeting\ndescription: How to greet.\n---\nSay hello.\n",
    )
    .unwrap();
    std::fs::write(env.ws().join("notes.txt"), "one two three\n").unwrap();
    std::fs::write(env.tmp.path().join("secret.txt"), "top secret\n").unwrap();
    env
}

/// Run drive.py with `args`; its report.
fn drive(env: &Env, args: &[&str], install: Option<&str>) -> (Value, String) {
    let mut c = Command::new(python());
    c.arg(repo().join("tests/mcp-serve/drive.py"))
        .args(args)
        .env("XDG_CONFIG_HOME", env.config())
        .env("XDG_CACHE_HOME", env.cache())
        .env("CST_LOG", "cst_mcp_serve=info");
    match install {
        Some(dir) => c.env(
            "CST_SERVE_INSTALL",
            format!("'{}' plugins install '{dir}'", cst_agent().display()),
        ),
        None => c.env_remove("CST_SERVE_INSTALL"),
    };
    let out = c.output().expect("run drive.py");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "drive.py {args:?} failed:\n{stderr}");
    let report =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("drive.py printed no report ({e}):\n{stderr}"));
    (report, stderr)
}

fn stdio_cmd(env: &Env) -> Vec<String> {
    vec![
        cst_agent().display().to_string(),
        "--workspace".into(),
        env.ws().display().to_string(),
        "mcp".into(),
        "serve".into(),
    ]
}

/// What every run must show, whatever the era and transport.
fn check_common(r: &Value, stderr: &str) {
    assert_eq!(r["server"], "cst-agent", "{r}");
    let tools = r["tools"].as_object().unwrap();
    for name in ["text_stats", "shout", "hostile_spin", "skill"] {
        assert!(tools.contains_key(name), "{name} not offered: {r}");
    }
    assert_eq!(tools["text_stats"]["readOnlyHint"], true);
    assert_eq!(tools["text_stats"]["destructiveHint"], false);
    // A wasm tool's answer.
    assert_eq!(r["wasm"]["is_error"], false, "{r}");
    let stats: Value = serde_json::from_str(r["wasm"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(stats["files"]["notes.txt"]["words"], 3);
    // A command tool's: the arguments as JSON on stdin, upper-cased.
    assert_eq!(r["command"]["is_error"], false, "{r}");
    assert!(r["command"]["text"].as_str().unwrap().contains("QUIET PLEASE"), "{r}");
    // The `skill` tool names the skills (the client has no index of ours) and loads one.
    assert!(
        r["skill_description"]
            .as_str()
            .unwrap()
            .contains("- greeting: How to greet."),
        "{r}"
    );
    assert_eq!(r["skill"]["is_error"], false, "{r}");
    assert!(r["skill"]["text"].as_str().unwrap().contains("Say hello."), "{r}");
    // A failing call and invalid arguments are tool errors the client reads.
    assert_eq!(r["failing"]["is_error"], true);
    assert!(r["failing"]["text"].as_str().unwrap().contains("missing.txt"), "{r}");
    assert_eq!(r["invalid"]["is_error"], true);
    assert!(
        r["invalid"]["text"].as_str().unwrap().contains("invalid arguments"),
        "{r}"
    );
    assert!(r["unknown"]["error"].as_str().unwrap().contains("unknown tool"), "{r}");
    // Attacks: a path outside the workspace is not reachable from a component.
    assert_eq!(r["outside_workspace"]["is_error"], true, "{r}");
    assert_eq!(r["dotdot"]["is_error"], true, "{r}");
    assert!(!r["dotdot"]["text"].as_str().unwrap().contains("top secret"), "{r}");
    // Cancelled calls stop, and the server goes on.
    for name in ["hostile_spin", "wait_then_mark"] {
        assert_eq!(r[format!("cancel_{name}")]["abandoned"], true, "{r}");
        assert!(
            stderr.contains(&format!("call to `{name}` cancelled by the client")),
            "no cancellation of {name} in the server's log:\n{stderr}"
        );
    }
    assert_eq!(r["after_cancel"]["is_error"], false, "{r}");
    // Heard while serving: the plugin installed during the run.
    assert_eq!(r["list_changed"], true, "{r}");
}

/// A wasm plugin folder of the examples by its plugin name, for the install while serving.
fn example(name: &str) -> String {
    example_dir(name).display().to_string()
}

#[test]
fn stdio_both_eras_with_the_python_sdk() {
    let env = setup();
    let cmd = stdio_cmd(&env);
    for (mode, protocol, late) in [
        ("auto", "2026-07-28", "json-query"),
        ("legacy", "2025-11-25", "regex-search"),
    ] {
        let mut args = vec!["--mode", mode, "--"];
        args.extend(cmd.iter().map(String::as_str));
        let (r, stderr) = drive(&env, &args, Some(&example(late)));
        assert_eq!(r["protocol"], protocol, "{r}");
        check_common(&r, &stderr);
        // Only read tools by default: the write tool is neither listed nor run.
        assert!(!r["tools"].as_object().unwrap().contains_key("write_outside"), "{r}");
        assert_eq!(r["outside_allow"]["is_error"], true, "{r}");
        let why = r["outside_allow"]["text"].as_str().unwrap();
        assert!(why.contains("write tool") && why.contains("--allow read"), "{why}");
        assert_eq!(r["wasm_write_outside"]["is_error"], true, "{r}");
        let late_tool = late.replace('-', "_");
        assert!(
            r["tools_after_install"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == &json!(late_tool)),
            "{r}"
        );
    }
    assert!(!env.tmp.path().join("outside.txt").exists());
    assert!(!env.tmp.path().join("escaped.txt").exists());
    // The cancelled command never got to leave its file (it would have after 3 s).
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        !env.ws().join("marker-ran.txt").exists(),
        "the cancelled command ran on"
    );
}

/// A running `mcp serve --http`, its stderr collected; killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    fn start(env: &Env, extra: &[&str]) -> Self {
        let mut child = env
            .std_cmd(&[&["mcp", "serve", "--http", "127.0.0.1:0"], extra].concat())
            .env("CST_LOG", "cst_mcp_serve=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcp serve --http");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = BufReader::new(child.stderr.take().unwrap());
        let log = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("serving MCP at ") {
                    let _ = tx.send(url.to_string());
                }
                log.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no address from mcp serve --http: {}", stderr.lock().unwrap()));
        HttpServer { child, url, stderr }
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

trait StdCmd {
    fn std_cmd(&self, args: &[&str]) -> Command;
}

impl StdCmd for Env {
    fn std_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(cst_agent());
        c.env("XDG_CONFIG_HOME", self.config())
            .env("XDG_CACHE_HOME", self.cache())
            .arg("--workspace")
            .arg(self.ws())
            .args(args);
        c
    }
}

#[test]
fn http_both_eras_pages_and_write_confined_to_the_workspace() {
    let env = setup();
    // Pages of 2, and write tools allowed: the write tool runs, in the process sandbox.
    let server = HttpServer::start(&env, &["--allow", "read,write", "--page-size", "2"]);
    for (mode, protocol, late) in [
        ("auto", "2026-07-28", "json-query"),
        ("legacy", "2025-11-25", "regex-search"),
    ] {
        let (r, _) = drive(&env, &["--mode", mode, "--url", &server.url], Some(&example(late)));
        assert_eq!(r["protocol"], protocol, "{r}");
        check_common(&r, &server.log());
        assert!(r["pages"].as_u64().unwrap() >= 4, "{r}");
        assert_eq!(r["tools"]["write_outside"]["destructiveHint"], true, "{r}");
        assert_eq!(r["tools"]["write_outside"]["readOnlyHint"], false, "{r}");
        // Offered and run, but the process sandbox keeps writes in the workspace (its `/tmp`
        // is a private one, gone with the call).
        if cst_agent::sandbox::available() {
            assert!(r["outside_allow"].get("error").is_none(), "{r}");
            assert!(
                !env.tmp.path().join("outside.txt").exists(),
                "a write escaped the workspace"
            );
        }
        // A component granted only workspace-read writes nothing, inside or out.
        assert_eq!(r["wasm_write_outside"]["is_error"], true, "{r}");
        assert!(!env.tmp.path().join("escaped.txt").exists());
    }
    // The server still runs: a cancelled command would have left its file after 3 s.
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        !env.ws().join("marker-ran.txt").exists(),
        "the cancelled command ran on"
    );
}

/// The status line of a raw `initialize` POST to `url` with `headers`.
fn post_status(url: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                      "capabilities": {}, "clientInfo": {"name": "web", "version": "1"}}})
    .to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// A web page cannot use the tools: a request with a browser's `Origin`, or a `Host` that is
/// not a loopback name (DNS rebinding), is refused; a plain client is served.
#[test]
fn http_refuses_web_pages_and_foreign_hosts() {
    let env = Env::new();
    let server = HttpServer::start(&env, &[]);
    let host = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let ok = post_status(&server.url, &format!("Host: {host}\r\n"));
    assert!(ok.contains(" 200"), "{ok}");
    let web = post_status(&server.url, &format!("Host: {host}\r\nOrigin: http://evil.example\r\n"));
    assert!(web.contains(" 403"), "{web}");
    let rebound = post_status(&server.url, "Host: evil.example\r\n");
    assert!(rebound.contains(" 403"), "{rebound}");
}

#[test]
fn inspector_cli_lists_the_tools() {
    let env = setup();
    let inspector = clients().join("node_modules/.bin/mcp-inspector");
    assert!(
        inspector.is_file(),
        "{} is missing: run scripts/test-deps.sh",
        inspector.display()
    );
    let home = env.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(&inspector)
        .env("HOME", &home)
        .args(["--cli", "-e"])
        .arg(format!("XDG_CONFIG_HOME={}", env.config().display()))
        .arg("-e")
        .arg(format!("XDG_CACHE_HOME={}", env.cache().display()))
        .args(stdio_cmd(&env))
        .args(["--method", "tools/list"])
        .output()
        .expect("run the inspector");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"text_stats") && names.contains(&"shout"), "{names:?}");
    assert!(!names.contains(&"write_outside"), "{names:?}");
}

/// Options that would open too much are refused before anything is served.
#[test]
fn refuses_wide_open_settings() {
    let env = Env::new();
    let (code, _, err) = env.run(&["mcp", "serve", "--http", "0.0.0.0:0"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("only a loopback address"), "{err}");
    let (code, _, err) = env.run(&["mcp", "serve", "--allow", "read,admin"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown category `admin`"), "{err}");
    // Started in `/` without --workspace (as a desktop client does): the tools would reach
    // everything.
    let out = Command::new(cst_agent())
        .current_dir("/")
        .env("XDG_CONFIG_HOME", env.config())
        .args(["mcp", "serve"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workspace"));
}

/// stdin closing ends the server at once (no client left to answer).
#[test]
fn exits_on_stdin_eof() {
    let env = Env::new();
    let out = env.std_cmd(&["mcp", "serve"]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "stdout is only for the protocol");
}

/// One `tools/call` over stdio, as raw JSON-RPC after a legacy `initialize`; the result.
fn call_once(mut cmd: Command, tool: &str, args: Value) -> Value {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start mcp serve");
    let mut stdin = child.stdin.take().unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
               "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut result = Value::Null;
    for line in stdout.lines().map_while(Result::ok) {
        let v: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC only");
        if v["id"] == 2 {
            result = v["result"].clone();
            break;
        }
    }
    drop(stdin);
    let _ = child.wait();
    result
}

/// D14, D17: the deployment's tool hooks fire for calls served here as for the agent's: a
/// required `before_tool` hook that fails refuses the call; `after_tool` audits it.
#[test]
fn deployment_hooks_fire_for_served_calls() {
    let env = setup();
    let deployment = env.tmp.path().join("deployment.json");
    let audit = env.tmp.path().join("audit.jsonl");
    let args = json!({"paths": ["notes.txt"]});
    std::fs::write(
        &deployment,
        json!({"version": 1, "hooks": [
            {"id": "policy", "event": "before_tool", "kind": "command", "argv": ["sh", "-c", "echo no tools today; exit 3"], "required": true}
        ]})
        .to_string(),
    )
    .unwrap();
    let mut cmd = env.std_cmd(&["mcp", "serve"]);
    cmd.env("CST_DEPLOYMENT_FILE", &deployment);
    let r = call_once(cmd, "text_stats", args.clone());
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("the required before_tool hook `policy` failed") && text.contains("no tools today"),
        "{text}"
    );

    std::fs::write(
        &deployment,
        json!({"version": 1, "hooks": [{"id": "record", "event": "after_tool", "kind": "audit"}]}).to_string(),
    )
    .unwrap();
    let mut cmd = env.std_cmd(&["mcp", "serve"]);
    cmd.env("CST_DEPLOYMENT_FILE", &deployment).env("CST_AUDIT_LOG", &audit);
    let r = call_once(cmd, "text_stats", args);
    assert_eq!(r["isError"], false, "{r}");
    let line: Value = serde_json::from_str(std::fs::read_to_string(&audit).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["event"], "after_tool", "{line}");
    assert_eq!(line["tool"], "text_stats", "{line}");
}

/// D2: the deployment's permission profile comes before `--allow`: under `read_only`, a write
/// tool is refused even with `--allow all`.
#[test]
fn d2_the_permission_profile_outranks_allow() {
    let env = setup();
    std::fs::write(
        env.config().join("cst-agent/settings.json"),
        json!({"permission_profile": "read_only"}).to_string(),
    )
    .unwrap();
    let r = call_once(
        env.std_cmd(&["mcp", "serve", "--allow", "all"]),
        "write_outside",
        json!({}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("permission profile `read_only`"), "{text}");
    assert!(!env.tmp.path().join("outside.txt").exists());
    // Reads still run.
    let r = call_once(
        env.std_cmd(&["mcp", "serve", "--allow", "all"]),
        "text_stats",
        json!({"paths": ["notes.txt"]}),
    );
    assert_eq!(r["isError"], false, "{r}");
}
