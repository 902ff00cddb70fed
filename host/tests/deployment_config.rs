//! The deployment config through the real binary (D1, D2, D5, D8, D9, D11, D13–D16): real files,
//! `deployment check` and `deployment show`, the refusal of every session command under an invalid
//! installed file, `status`, and that no workspace file is ever read as a deployment config.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const STATIC_SECRET: &str = "static-header-secret-7731";
const CREDENTIAL_VAR: &str = "CST_MCP_DOCS_TOKEN";
const CREDENTIAL_VALUE: &str = "Bearer credential-secret-9902";
const URL_PASSWORD: &str = "pw-in-url-5150";

/// A config dir, a workspace and the path `CST_DEPLOYMENT_FILE` points at (no file there until a
/// test writes one), so the machine's own `/etc/cst-agent/deployment.json` is never read.
struct Env {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    file: PathBuf,
}

impl Env {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("etc").join("deployment.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::create_dir_all(home.path().join("config").join("cst-agent")).unwrap();
        Self {
            home,
            ws: tempfile::tempdir().unwrap(),
            file,
        }
    }

    fn install(&self, v: &Value) {
        std::fs::write(&self.file, serde_json::to_string_pretty(v).unwrap()).unwrap();
    }

    fn settings(&self, v: Value) {
        std::fs::write(self.home.path().join("config/cst-agent/settings.json"), v.to_string()).unwrap();
    }

    fn settings_path(&self) -> PathBuf {
        self.home.path().join("config/cst-agent/settings.json")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cst-agent"));
        c.env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("XDG_CACHE_HOME", self.home.path().join("cache"))
            .env("CST_DEPLOYMENT_FILE", &self.file)
            .env(CREDENTIAL_VAR, CREDENTIAL_VALUE)
            .env_remove("CST_MODEL")
            .env_remove("CST_BASE_URL")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Out {
        let mut all = vec!["--workspace", self.ws.path().to_str().unwrap()];
        all.extend_from_slice(args);
        Out::of(self.cmd(&all).output().unwrap())
    }

    fn run_in(&self, dir: &Path, args: &[&str]) -> Out {
        Out::of(self.cmd(args).current_dir(dir).output().unwrap())
    }

    fn check(&self, file: &Path) -> Out {
        self.run(&["deployment", "check", file.to_str().unwrap()])
    }
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn of(o: Output) -> Self {
        Self {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The specification's example, with our `CST_MCP_` prefix, a static header and an audit hook.
fn full_example() -> Value {
    json!({
      "version": 1,
      "mcp": {"servers": [{
          "id": "docs",
          "url": "https://mcp.example.com/mcp",
          "enabled": true,
          "timeout_seconds": 300,
          "credential_headers": {"Authorization": CREDENTIAL_VAR},
          "headers": {"X-Team": STATIC_SECRET},
          "default_policy": {"enabled": true, "read_only": false},
          "tools": {"search": {"enabled": true, "read_only": true}}
      }, {
          "id": "wiki",
          "url": "http://127.0.0.1:9/mcp"
      }]},
      "mcp_repository_scopes": {"docs": ["owner/repo"], "wiki": null},
      "hooks": [{
          "id": "checks",
          "event": "before_finish",
          "kind": "command",
          "argv": ["python", "-m", "pytest", "-q"],
          "required": true,
          "enabled": true
      }, {
          "id": "audit-tools",
          "event": "after_tool",
          "kind": "audit",
          "capabilities": ["workspace-read"]
      }]
    })
}

/// `full_example` with `change` applied to it.
fn example_with(change: impl FnOnce(&mut Value)) -> Value {
    let mut v = full_example();
    change(&mut v);
    v
}

#[test]
fn d1_the_full_example_checks_ok_and_a_session_starts_under_it() {
    let env = Env::new();
    env.install(&full_example());
    let out = env.check(&env.file);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "ok: 2 MCP servers, 2 hooks", "{out:?}");

    let status = env.run(&["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert!(
        status
            .stdout
            .contains(&format!("deployment: {} (2 MCP servers, 2 hooks)", env.file.display())),
        "{status:?}"
    );
    assert!(status.stdout.contains("permission profile: autonomous"), "{status:?}");

    let tools = env.run(&["--tools", "minimal", "tools", "list"]);
    assert_eq!(tools.code, 0, "{tools:?}");

    // The defaults of a minimal file.
    let minimal = env.home.path().join("minimal.json");
    std::fs::write(&minimal, r#"{"version": 1}"#).unwrap();
    let out = env.check(&minimal);
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, "ok: 0 MCP servers, 0 hooks"),
        "{out:?}"
    );
}

#[test]
fn d1_d5_d8_d11_d13_d14_d15_each_invalid_case_is_refused_with_its_path() {
    let env = Env::new();
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "unknown field",
            example_with(|v| v["mcp"]["servers"][0]["retries"] = json!(3)),
            "mcp.servers[0].retries",
            "unknown field",
        ),
        (
            "version 2",
            example_with(|v| v["version"] = json!(2)),
            "version",
            "must be 1",
        ),
        (
            "userinfo",
            example_with(|v| v["mcp"]["servers"][1]["url"] = json!(format!("https://admin:{URL_PASSWORD}@h/mcp"))),
            "mcp.servers[1].url",
            "userinfo",
        ),
        (
            "query",
            example_with(|v| v["mcp"]["servers"][1]["url"] = json!("https://h/mcp?token=abc")),
            "mcp.servers[1].url",
            "query",
        ),
        (
            "fragment",
            example_with(|v| v["mcp"]["servers"][1]["url"] = json!("https://h/mcp#part")),
            "mcp.servers[1].url",
            "fragment",
        ),
        (
            "ftp scheme",
            example_with(|v| v["mcp"]["servers"][1]["url"] = json!("ftp://h/mcp")),
            "mcp.servers[1].url",
            "http",
        ),
        (
            "credential outside the prefix",
            example_with(|v| {
                v["mcp"]["servers"][0]["credential_headers"]["Authorization"] = json!("SAKURA_MCP_DOCS_TOKEN")
            }),
            "mcp.servers[0].credential_headers.Authorization",
            "CST_MCP_",
        ),
        (
            "timeout zero",
            example_with(|v| v["mcp"]["servers"][0]["timeout_seconds"] = json!(0)),
            "mcp.servers[0].timeout_seconds",
            "greater than 0",
        ),
        (
            "unknown capability",
            example_with(|v| v["hooks"][1]["capabilities"] = json!(["workspace-read", "root"])),
            "hooks[1].capabilities[1]",
            "unknown capability",
        ),
        (
            "audit hook with argv",
            example_with(|v| v["hooks"][1]["argv"] = json!(["echo", "hi"])),
            "hooks[1].argv",
            "audit hook",
        ),
        (
            "command hook with empty argv",
            example_with(|v| v["hooks"][0]["argv"] = json!([])),
            "hooks[0].argv",
            "empty",
        ),
        (
            "command hook read_only",
            example_with(|v| v["hooks"][0]["read_only"] = json!(true)),
            "hooks[0].read_only",
            "read-only",
        ),
        (
            "unknown event",
            example_with(|v| v["hooks"][0]["event"] = json!("before_commit")),
            "hooks[0].event",
            "unknown event",
        ),
        (
            "duplicate server id",
            example_with(|v| v["mcp"]["servers"][1]["id"] = json!("docs")),
            "mcp.servers[1].id",
            "duplicate",
        ),
        (
            "duplicate hook id",
            example_with(|v| v["hooks"][1]["id"] = json!("checks")),
            "hooks[1].id",
            "duplicate",
        ),
        (
            "scope naming an unknown server",
            example_with(|v| v["mcp_repository_scopes"]["nowhere"] = json!(["a/b"])),
            "mcp_repository_scopes.nowhere",
            "no server",
        ),
        (
            "scope entry not owner/repo",
            example_with(|v| v["mcp_repository_scopes"]["docs"] = json!(["owner/repo", "just-owner"])),
            "mcp_repository_scopes.docs[1]",
            "owner/repo",
        ),
    ];
    for (name, doc, path, word) in cases {
        let file = env.home.path().join("candidate.json");
        std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let out = env.check(&file);
        assert_eq!(out.code, 2, "{name}: {out:?}");
        assert!(out.stdout.is_empty(), "{name}: {out:?}");
        assert!(
            out.stderr
                .lines()
                .any(|l| l.contains(&format!("{path}: ")) && l.contains(word)),
            "{name}: expected `{path}: …{word}…`: {out:?}"
        );
        assert!(out.stderr.contains(&file.display().to_string()), "{name}: {out:?}");
        assert!(
            !out.stderr.contains(URL_PASSWORD)
                && !out.stderr.contains(STATIC_SECRET)
                && !out.stderr.contains("token=abc"),
            "{name}: an error quotes a secret: {out:?}"
        );
    }
}

#[test]
fn d1_several_errors_are_reported_together() {
    let env = Env::new();
    let doc = example_with(|v| {
        v["version"] = json!(2);
        v["extra"] = json!(true);
        v["mcp"]["servers"][1]["url"] = json!("https://h/?q=1");
        v["hooks"][0]["argv"] = json!([]);
        v["hooks"][1]["event"] = json!("whenever");
    });
    let file = env.home.path().join("many.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = env.check(&file);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("(5 problems)"), "{out:?}");
    for path in [
        "version: ",
        "extra: ",
        "mcp.servers[1].url: ",
        "hooks[0].argv: ",
        "hooks[1].event: ",
    ] {
        assert!(out.stderr.contains(path), "{path}: {out:?}");
    }
}

#[test]
fn d1_check_of_a_missing_or_broken_file_exits_2() {
    let env = Env::new();
    let missing = env.home.path().join("nope.json");
    let out = env.check(&missing);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no such file"), "{out:?}");
    let broken = env.home.path().join("broken.json");
    std::fs::write(&broken, "{\"version\": 1,").unwrap();
    let out = env.check(&broken);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not valid JSON"), "{out:?}");
    let big = env.home.path().join("big.json");
    std::fs::write(&big, vec![b' '; 1024 * 1024 + 1]).unwrap();
    let out = env.check(&big);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("larger than"), "{out:?}");
}

#[test]
fn d9_show_masks_every_header_value() {
    let env = Env::new();
    env.install(&full_example());
    let out = env.run(&["deployment", "show"]);
    assert_eq!(out.code, 0, "{out:?}");
    let shown: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let docs = &shown["mcp"]["servers"][0];
    assert_eq!(docs["headers"]["X-Team"], "[UNCHANGED SECRET]", "{out:?}");
    assert_eq!(
        docs["credential_headers"]["Authorization"], "[UNCHANGED SECRET]",
        "{out:?}"
    );
    // The admin sees the endpoints, and the defaults filled in.
    assert_eq!(docs["url"], "https://mcp.example.com/mcp");
    assert_eq!(shown["mcp"]["servers"][1]["timeout_seconds"], 300);
    assert_eq!(
        shown["mcp"]["servers"][1]["default_policy"],
        json!({"enabled": true, "read_only": false})
    );
    assert_eq!(shown["hooks"][1]["required"], false);
    for secret in [STATIC_SECRET, CREDENTIAL_VAR, CREDENTIAL_VALUE] {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "`{secret}` printed: {out:?}"
        );
    }

    // No installed file: the defaults.
    std::fs::remove_file(&env.file).unwrap();
    let out = env.run(&["deployment", "show"]);
    assert_eq!(out.code, 0, "{out:?}");
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        shown,
        json!({"version": 1, "mcp": {"servers": []}, "mcp_repository_scopes": {}, "hooks": []})
    );
    assert!(out.stderr.contains("no deployment file"), "{out:?}");
}

#[test]
fn d1_an_invalid_installed_file_refuses_every_session_but_not_status() {
    let env = Env::new();
    env.install(&example_with(|v| v["hooks"][0]["kind"] = json!("shell")));
    let path = env.file.display().to_string();
    for args in [
        &["exec", "hello"][..],
        &["--tools", "minimal", "tools", "list"],
        &["mcp", "list"],
    ] {
        let out = env.run(args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(&path), "{args:?}: {out:?}");
        assert!(out.stderr.contains("hooks[0].kind: "), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
    let status = env.run(&["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert!(
        status.stdout.contains(&format!(
            "deployment: {path} (invalid: 1 problem; sessions refuse to start)"
        )),
        "{status:?}"
    );
    assert!(status.stderr.contains("hooks[0].kind: "), "{status:?}");
    let show = env.run(&["deployment", "show"]);
    assert_eq!(show.code, 2, "{show:?}");
    assert!(show.stderr.contains("hooks[0].kind: "), "{show:?}");
    // `check` of another, valid file still works.
    let good = env.home.path().join("good.json");
    std::fs::write(&good, full_example().to_string()).unwrap();
    assert_eq!(env.check(&good).code, 0);
}

#[test]
fn d16_no_workspace_or_user_file_is_read_as_the_deployment_config() {
    let env = Env::new();
    // An invalid "deployment file" in the workspace and in the user's config dir; none installed.
    let bad = json!({"version": 2, "hooks": [{"id": "evil", "event": "session_start", "kind": "command", "argv": []}]});
    std::fs::create_dir_all(env.ws.path().join(".agent")).unwrap();
    std::fs::write(env.ws.path().join(".agent/deployment.json"), bad.to_string()).unwrap();
    std::fs::write(
        env.home.path().join("config/cst-agent/deployment.json"),
        bad.to_string(),
    )
    .unwrap();
    std::fs::write(env.ws.path().join(".agent/hooks.json"), bad.to_string()).unwrap();
    let status = env.run(&["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert!(status.stdout.lines().any(|l| l == "deployment: none"), "{status:?}");
    let tools = env.run_in(env.ws.path(), &["--tools", "minimal", "tools", "list"]);
    assert_eq!(tools.code, 0, "{tools:?}");
    let show = env.run_in(env.ws.path(), &["deployment", "show"]);
    assert_eq!(show.code, 0, "{show:?}");
    let shown: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(shown["hooks"], json!([]), "{show:?}");
}

#[test]
fn d2_the_permission_profile_is_shown_and_an_unknown_one_refuses_sessions() {
    let env = Env::new();
    for profile in ["autonomous", "read_only", "workspace_write", "full_access"] {
        env.settings(json!({"permission_profile": profile}));
        let status = env.run(&["status"]);
        assert_eq!(status.code, 0, "{status:?}");
        assert!(
            status.stdout.contains(&format!("permission profile: {profile}")),
            "{status:?}"
        );
    }
    env.settings(json!({"permission_profile": "yolo"}));
    let settings = env.settings_path().display().to_string();
    let status = env.run(&["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert!(status.stdout.contains("permission profile: invalid"), "{status:?}");
    assert!(
        status.stderr.contains(&settings) && status.stderr.contains("yolo"),
        "{status:?}"
    );
    let exec = env.run(&["exec", "hello"]);
    assert_eq!(exec.code, 2, "{exec:?}");
    assert!(
        exec.stderr.contains(&settings) && exec.stderr.contains("permission_profile"),
        "{exec:?}"
    );
}

#[test]
fn deployment_help_carries_no_rule_ids() {
    let env = Env::new();
    let re = regex::Regex::new(r"\b[ESPMTADH][0-9]{1,2}\b").unwrap();
    for args in [
        &["deployment", "--help"][..],
        &["deployment", "check", "--help"],
        &["deployment", "show", "--help"],
    ] {
        let out = env.run(args);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.stdout.contains("Usage:"), "{out:?}");
        assert!(!re.is_match(&out.stdout), "{args:?}: {out:?}");
    }
}

/// D10: what the host logs about the deployment is the counts and the profile — at the most
/// verbose log level, no server URL (beyond its host), header value or hook argument appears.
#[test]
fn d10_logs_carry_only_counts_and_the_profile() {
    let env = Env::new();
    env.install(&json!({
        "version": 1,
        "mcp": {"servers": [{
            "id": "docs",
            "url": "http://127.0.0.1:9/private-path-4d2/mcp",
            "credential_headers": {"Authorization": CREDENTIAL_VAR},
            "headers": {"X-Team": STATIC_SECRET}
        }]},
        "hooks": [{"id": "lint", "event": "after_tool", "kind": "command", "argv": ["lint-4d2", "--flag-4d2"]}]
    }));
    let out = Out::of(
        env.cmd(&["--workspace", env.ws.path().to_str().unwrap(), "tools", "list"])
            .env("CST_LOG", "debug")
            .output()
            .unwrap(),
    );
    assert!(
        out.stderr
            .contains("deployment: 1 MCP server, 1 hook, permission profile autonomous"),
        "{out:?}"
    );
    for bad in [
        "private-path-4d2",
        CREDENTIAL_VALUE,
        STATIC_SECRET,
        "lint-4d2",
        "--flag-4d2",
    ] {
        assert!(
            !out.stderr.contains(bad) && !out.stdout.contains(bad),
            "`{bad}` logged: {out:?}"
        );
    }
}
