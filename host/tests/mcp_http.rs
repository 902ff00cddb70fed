//! The deployment config's HTTP MCP servers against real servers on loopback (D5–D8, D10–D12):
//! our test server over streamable HTTP (modern: answers `server/discover`), the same with
//! `server/discover` ignored (legacy after the probe deadline), and `server-everything` over
//! streamable HTTP (a legacy TypeScript server).
#![cfg(target_os = "linux")]

mod mcp_support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use cst_agent::mcp::deployment_servers::parsed_servers;
use cst_agent::mcp::{McpManager, ServerStatus};
use cst_agent::tools::{readonly_allows, Perm, Registry, ToolContext};
use mcp_support::*;
use serde_json::{json, Value};

/// A server process, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Our test server in `mode` (`http` or `http-ignore-discover`); its requests' headers and
/// methods go to `record`.
fn test_server_http(mode: &str, record: &Path) -> Server {
    let mut child = StdCommand::new(test_server())
        .arg(mode)
        .env("CST_TEST_HEADERS_FILE", record)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().strip_prefix("listening ").expect(&line).to_string();
    Server { child, url }
}

/// `server-everything streamableHttp` on a free port.
fn everything_http() -> Server {
    let bin = peers_dir().join("node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "server-everything missing at {} (scripts/test-deps.sh installs it)",
        bin.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = StdCommand::new(bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    assert!(
        eventually(20, || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()),
        "server-everything did not listen"
    );
    server
}

/// Start the servers of a deployment config (offered to `identity`) in a fresh manager.
fn start(config: Value, identity: Option<&str>, env: &[(&str, &str)]) -> (McpManager, Arc<Registry>) {
    let config = cst_config::deployment::parse(&config.to_string()).unwrap();
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let lookup = move |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let parsed = parsed_servers(&config, Path::new("/etc/cst-agent/deployment.json"), identity, &lookup);
    let reg = Arc::new(Registry::new());
    let m = McpManager::new(reg.clone(), parsed);
    m.start_all();
    (m, reg)
}

fn one_server(url: &str, extra: Value) -> Value {
    let mut s = json!({"id": "dep", "url": url});
    if let (Value::Object(base), Value::Object(more)) = (&mut s, extra) {
        base.extend(more);
    }
    json!({"version": 1, "mcp": {"servers": [s]}})
}

fn status(m: &McpManager, name: &str) -> ServerStatus {
    m.servers().into_iter().find(|s| s.name == name).unwrap().status
}

fn ctx() -> ToolContext {
    ToolContext::new(std::env::temp_dir())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d7_modern_server_connects_with_server_discover() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests");
    let srv = test_server_http("http", &record);
    let t0 = Instant::now();
    let (m, reg) = start(one_server(&srv.url, json!({})), None, &[]);
    assert!(m.wait_ready(Duration::from_secs(20)).await);
    assert_eq!(status(&m, "dep"), ServerStatus::Ready);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let info = m.servers().into_iter().find(|s| s.name == "dep").unwrap();
    assert_eq!(info.origin, "deployment");
    assert!(info.pid.is_none());
    let out = reg.call("mcp__dep__echo", json!({"text": "hi"}), &ctx()).await.unwrap();
    assert!(out.contains("echo: hi"), "{out}");
    let seen = std::fs::read_to_string(&record).unwrap();
    assert!(seen.contains("method: server/discover"), "{seen}");
    assert!(!seen.contains("method: initialize"), "modern: no handshake\n{seen}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d7_legacy_server_everything_falls_back_to_initialize() {
    let srv = everything_http();
    let t0 = Instant::now();
    let (m, reg) = start(one_server(&srv.url, json!({})), None, &[]);
    assert!(m.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(status(&m, "dep"), ServerStatus::Ready);
    // It answers the probe with an error at once: no wait for the deadline.
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    let out = reg
        .call("mcp__dep__echo", json!({"message": "hello"}), &ctx())
        .await
        .unwrap();
    assert!(out.contains("hello"), "{out}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d7_ignored_discover_falls_back_after_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests");
    let srv = test_server_http("http-ignore-discover", &record);
    let t0 = Instant::now();
    let (m, reg) = start(
        one_server(&srv.url, json!({})),
        None,
        &[("CST_MCP_DISCOVER_DEADLINE_MS", "1500")],
    );
    assert!(m.wait_ready(Duration::from_secs(20)).await);
    assert_eq!(status(&m, "dep"), ServerStatus::Ready);
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "{took:?}"
    );
    let seen = std::fs::read_to_string(&record).unwrap();
    assert!(
        seen.contains("method: server/discover") && seen.contains("method: initialize"),
        "{seen}"
    );
    // The deadline was about connecting: a call longer than it runs to its end.
    let out = reg.call("mcp__dep__slow", json!({"secs": 2}), &ctx()).await.unwrap();
    assert!(out.contains("slept 2"), "{out}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d6_progress_keeps_a_call_alive_past_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let srv = test_server_http("http", &dir.path().join("r"));
    let (m, reg) = start(one_server(&srv.url, json!({"timeout_seconds": 1})), None, &[]);
    assert!(m.wait_ready(Duration::from_secs(20)).await);
    assert_eq!(status(&m, "dep"), ServerStatus::Ready);
    let out = reg
        .call("mcp__dep__progress", json!({"secs": 3.5}), &ctx())
        .await
        .unwrap();
    assert!(out.contains("progressed"), "{out}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d6_silent_server_is_cut_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let srv = test_server_http("http", &dir.path().join("r"));
    let (m, reg) = start(one_server(&srv.url, json!({"timeout_seconds": 1})), None, &[]);
    assert!(m.wait_ready(Duration::from_secs(20)).await);
    let t0 = Instant::now();
    let err = reg
        .call("mcp__dep__slow", json!({"secs": 30}), &ctx())
        .await
        .unwrap_err()
        .to_string();
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "{took:?}: {err}"
    );
    assert_eq!(
        err,
        "MCP server `dep` sent no data for 1 s (its idle timeout, `timeout_seconds`); the call was cut"
    );
    // The connection outlives the cut call.
    let out = reg
        .call("mcp__dep__echo", json!({"text": "after"}), &ctx())
        .await
        .unwrap();
    assert!(out.contains("echo: after"), "{out}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d12_tool_policies_decide_registration_and_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let srv = test_server_http("http", &dir.path().join("r"));
    let (m, reg) = start(
        one_server(
            &srv.url,
            json!({"default_policy": {"read_only": false},
                   "tools": {"fail": {"enabled": false}, "echo": {"read_only": true}}}),
        ),
        None,
        &[],
    );
    assert!(m.wait_ready(Duration::from_secs(20)).await);
    assert!(!reg.contains("mcp__dep__fail"), "disabled tool registered");
    let echo = reg.spec("mcp__dep__echo").unwrap();
    let add = reg.spec("mcp__dep__add").unwrap();
    assert_eq!(echo.perm, Perm::Read);
    assert_eq!(add.perm, Perm::Net);
    // Read-only sub-agents see only the tools the admin marked read_only.
    assert!(readonly_allows(&echo));
    assert!(!readonly_allows(&add));

    // default_policy disabled: only the tools named enabled.
    let (m2, reg2) = start(
        one_server(
            &srv.url,
            json!({"default_policy": {"enabled": false}, "tools": {"add": {"enabled": true}}}),
        ),
        None,
        &[],
    );
    assert!(m2.wait_ready(Duration::from_secs(20)).await);
    let tools = m2.servers()[0].tools.clone();
    assert_eq!(tools, ["mcp__dep__add"], "{tools:?}");
    assert!(reg2.contains("mcp__dep__add"));
    m.shutdown().await;
    m2.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// End to end: `cst-agent` with a deployment file

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
    workspace: PathBuf,
    deployment: PathBuf,
}

fn env_with(deployment: Value) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(config.join("cst-agent")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let file = dir.path().join("deployment.json");
    std::fs::write(&file, deployment.to_string()).unwrap();
    Env {
        config,
        workspace,
        deployment: file,
        dir,
    }
}

fn agent(env: &Env) -> Command {
    let mut c = Command::cargo_bin("cst-agent").unwrap();
    c.env("XDG_CONFIG_HOME", &env.config)
        .env("XDG_CACHE_HOME", env.config.join("cache"))
        .env("CST_DEPLOYMENT_FILE", &env.deployment)
        .env_remove("CST_T_DIR")
        .arg("--workspace")
        .arg(&env.workspace);
    c
}

fn list(env: &Env, extra_env: &[(&str, &str)]) -> (Vec<Value>, String) {
    let mut cmd = agent(env);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.args(["mcp", "list", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

fn names(list: &[Value]) -> Vec<String> {
    list.iter().map(|s| s["name"].as_str().unwrap().to_string()).collect()
}

fn git(ws: &Path, args: &[&str]) {
    let ok = StdCommand::new("git").arg("-C").arg(ws).args(args).status().unwrap();
    assert!(ok.success(), "git {args:?}");
}

#[test]
fn d8_d10_credential_header_reaches_the_server_and_no_output() {
    let secret = "Bearer cred-value-7f3a9c";
    let team = "team-static-91b2";
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests");
    let srv = test_server_http("http", &record);
    let env = env_with(json!({"version": 1, "mcp": {"servers": [{
        "id": "dep", "url": srv.url,
        "credential_headers": {"Authorization": "CST_MCP_TEST_TOKEN"},
        "headers": {"X-Team": team}
    }]}}));
    // Missing variable: the server fails, naming the variable (never a value).
    let (l, _) = list(&env, &[]);
    assert_eq!(l[0]["status"], "failed", "{l:?}");
    let reason = l[0]["reason"].as_str().unwrap();
    assert!(reason.contains("CST_MCP_TEST_TOKEN"), "{reason}");

    // Set: connected, and the server saw both headers.
    let (l, stderr) = list(&env, &[("CST_MCP_TEST_TOKEN", secret)]);
    assert_eq!(l[0]["status"], "ready", "{l:?} {stderr}");
    assert_eq!(l[0]["origin"], "deployment", "{l:?}");
    let seen = std::fs::read_to_string(&record).unwrap().to_ascii_lowercase();
    assert!(
        seen.contains(&format!("authorization: {}", secret.to_ascii_lowercase())),
        "{seen}"
    );
    assert!(seen.contains(&format!("x-team: {team}")), "{seen}");

    // A tool call end to end; nothing shows a header value or the URL's path.
    let out = agent(&env)
        .env("CST_MCP_TEST_TOKEN", secret)
        .args(["tools", "call", "mcp__dep__echo", "--args", r#"{"text":"hi"}"#])
        .output()
        .unwrap();
    let all = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        stderr
    );
    assert!(out.status.success(), "{all}");
    assert!(all.contains("echo: hi"), "{all}");
    let port_path = srv.url.split_once("//").unwrap().1;
    for bad in [secret, "cred-value-7f3a9c", team, port_path] {
        assert!(!all.contains(bad), "`{bad}` in output: {all}");
    }
    // Not even a value the server echoes back: it is a remembered secret.
    let out = agent(&env)
        .env("CST_MCP_TEST_TOKEN", secret)
        .args([
            "tools",
            "call",
            "mcp__dep__echo",
            "--args",
            &json!({"text": secret}).to_string(),
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("cred-value-7f3a9c"), "{shown}");
    drop(env.dir);
}

#[test]
fn d11_scopes_follow_the_git_remote_and_unknown_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let srv = test_server_http("http", &dir.path().join("r"));
    let env = env_with(json!({"version": 1,
        "mcp": {"servers": [
            {"id": "mine", "url": srv.url},
            {"id": "theirs", "url": srv.url},
            {"id": "nobody", "url": srv.url},
            {"id": "everyone", "url": srv.url}
        ]},
        "mcp_repository_scopes": {"mine": ["acme/widgets"], "theirs": ["other/thing"], "nobody": []}
    }));
    // No repository: unknown identity, only unscoped servers.
    let (l, _) = list(&env, &[]);
    assert_eq!(names(&l), ["everyone"], "{l:?}");
    // origin acme/widgets (scp form).
    git(&env.workspace, &["init", "-q"]);
    git(
        &env.workspace,
        &["remote", "add", "origin", "git@github.com:acme/widgets.git"],
    );
    let (l, _) = list(&env, &[]);
    assert_eq!(names(&l), ["mine", "everyone"], "{l:?}");
    assert!(l.iter().all(|s| s["status"] == "ready"), "{l:?}");
    // An untrusted workspace's files cannot add or change them; an https remote elsewhere.
    git(
        &env.workspace,
        &["remote", "set-url", "origin", "https://git.example/other/thing"],
    );
    let (l, _) = list(&env, &[]);
    assert_eq!(names(&l), ["theirs", "everyone"], "{l:?}");
}

/// D9, D10: a whole `exec` session that calls a deployment server's tool, whose result echoes
/// the credential back: no header value appears in stdout, stderr, the `--json` stream or the
/// transcript.
#[test]
fn d10_a_full_session_shows_no_header_value_anywhere() {
    use cst_test_support::{call, Reply, ScriptedServer};
    let secret = "Bearer sess-cred-5e1d0a";
    let team = "team-static-44c1";
    let dir = tempfile::tempdir().unwrap();
    let srv = test_server_http("http", &dir.path().join("requests"));
    let env = env_with(json!({"version": 1, "mcp": {"servers": [{
        "id": "dep", "url": srv.url,
        "credential_headers": {"Authorization": "CST_MCP_TEST_TOKEN"},
        "headers": {"X-Team": team}
    }]}}));
    // The model echoes the secret through the tool: a hostile server could do the same.
    let model = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "c1",
            "mcp__dep__echo",
            json!({"text": format!("{secret} {team}")}),
        )]),
        Reply::text("done"),
    ]);
    std::fs::write(
        env.config.join("cst-agent/settings.json"),
        json!({"model": {"base_url": model.url(), "name": "m", "api_key_env": "NO_KEY_SET"}}).to_string(),
    )
    .unwrap();
    let out = agent(&env)
        .env("CST_MCP_TEST_TOKEN", secret)
        .args(["exec", "--json", "--allow-server", "dep", "call the echo tool"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    // The call ran (its result reached the model, redacted).
    let result = model.requests()[1].tool_result("c1").expect("the tool ran");
    assert!(result.contains("echo:"), "{result}");
    model.finish();
    let sessions = env.workspace.join(".agent/sessions");
    let mut transcripts = String::new();
    for entry in std::fs::read_dir(&sessions).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            transcripts.push_str(&std::fs::read_to_string(path.join("main.jsonl")).unwrap());
        }
    }
    assert!(transcripts.contains("mcp__dep__echo"), "{transcripts}");
    for (what, text) in [
        ("stdout", &stdout),
        ("stderr", &stderr),
        ("transcript", &transcripts),
        ("model", &result),
    ] {
        for bad in ["sess-cred-5e1d0a", team] {
            assert!(!text.contains(bad), "`{bad}` in the {what}: {text}");
        }
    }
}
