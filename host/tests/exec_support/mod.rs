//! The `cst-agent exec` fixture shared by the end-to-end tests: a workspace, a config dir whose
//! settings.json points at a scripted model server, and helpers to run the binary and read the
//! session's transcripts.
#![allow(dead_code)]

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cst_test_support::ScriptedServer;
use serde_json::{json, Value};

pub const KEY: &str = "sk-test-secret-4242";

pub struct Fixture {
    pub ws: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Fixture {
    pub fn new(server: &ScriptedServer) -> Self {
        Self::with_ws(server, tempfile::tempdir().unwrap())
    }

    /// Same, with the workspace folder given (the sandbox tests put it outside the temp dirs).
    pub fn with_ws(server: &ScriptedServer, ws: tempfile::TempDir) -> Self {
        let f = Self {
            ws,
            home: tempfile::tempdir().unwrap(),
        };
        let cfg = f.config_dir();
        std::fs::create_dir_all(&cfg).unwrap();
        std::fs::write(
            cfg.join("settings.json"),
            json!({"model": {"base_url": server.url(), "name": "test-model", "api_key_env": "CST_TEST_KEY"}})
                .to_string(),
        )
        .unwrap();
        f
    }

    pub fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.ws.path()).unwrap()
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join("config").join("cst-agent")
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.base();
        c.arg("--workspace").arg(self.ws.path());
        c.args(args);
        c
    }

    /// Without `--workspace`, started in `dir`: the binary finds the workspace itself.
    pub fn cmd_in(&self, dir: &std::path::Path, args: &[&str]) -> Command {
        let mut c = self.base();
        c.current_dir(dir).args(args);
        c
    }

    fn base(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cst-agent"));
        c.env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("XDG_CACHE_HOME", self.home.path().join("cache"))
            .env("CST_TEST_KEY", KEY)
            .env_remove("CST_MODEL")
            .env_remove("CST_BASE_URL")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null());
        c
    }

    /// Run to completion (killed after 60 s so a hang fails instead of blocking CI).
    pub fn run(&self, args: &[&str]) -> Output {
        let child = self
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_output(child, Duration::from_secs(60))
    }

    /// The folder of the one session of this workspace.
    pub fn session_dir(&self) -> PathBuf {
        let sessions = self.ws.path().join(".agent/sessions");
        let dirs: Vec<PathBuf> = std::fs::read_dir(&sessions)
            .unwrap_or_else(|e| panic!("{}: {e}", sessions.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir()) // `.gitignore` beside the session folders
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        dirs[0].clone()
    }

    /// The one main transcript of this workspace, parsed.
    pub fn transcript(&self) -> Vec<Value> {
        self.transcript_file("main.jsonl")
    }

    /// A transcript file of the one session (`main.jsonl`, `sub-1.jsonl`), parsed.
    pub fn transcript_file(&self, name: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.session_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad transcript line {l}: {e}")))
            .collect()
    }
}

pub fn wait_output(mut child: std::process::Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "cst-agent did not finish in {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn assert_summary_first(stderr: &str) {
    let first = stderr.lines().next().unwrap_or_default();
    let re = regex::Regex::new(r"^\d+ skills? · \d+ plugins? \(\d+ tools?\) · \d+ MCP servers?$").unwrap();
    assert!(
        re.is_match(first),
        "first stderr line is not the summary (E9): {first:?}\n{stderr}"
    );
}

/// Spawn exec, wait until stderr shows `tool <name>` started, send SIGINT, return the output.
#[cfg(unix)]
pub fn interrupt_during_tool(f: &Fixture, args: &[&str], tool: &str) -> (Output, Duration) {
    let mut child = f
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let wanted = format!("tool {tool} ");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.starts_with(&wanted) => break,
            _ if Instant::now() > deadline => {
                let _ = child.kill();
                panic!("the tool call never started");
            }
            _ => {}
        }
    }
    // Let the tool get going before the interrupt.
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let mut out = wait_output(child, Duration::from_secs(30));
    let took = sent.elapsed();
    out.stderr = reader.join().unwrap().into_bytes();
    (out, took)
}
