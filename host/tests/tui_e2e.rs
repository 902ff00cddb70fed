//! The TUI end to end: the real `cst-agent` binary in a real pseudo-terminal (tmux, from
//! Debian's packages) against the scripted model server and our MCP test server. A person's
//! session: type a prompt, approve a write with `a`, see the answer, open `/mcp`, cancel a slow
//! tool with Esc, `/quit` — and the terminal is back in cooked mode afterwards.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::json;

mod exec_support;
mod mcp_support;
use exec_support::*;

struct Tmux {
    name: String,
}

impl Tmux {
    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.name])
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        let out = self.tmux(&args);
        assert!(
            out.status.success(),
            "send-keys: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Literal text (`-l`: no key names).
    fn type_text(&self, text: &str) {
        self.keys(&["-l", text]);
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "main"]).stdout).into_owned()
    }

    /// Wait until the screen shows `needle`; the screen when it does.
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {needle:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn a_whole_session_in_the_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        // scripts/test-deps.sh installs tmux; CI must not skip.
        assert!(std::env::var_os("CI").is_none(), "tmux is not installed");
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "c1",
            "write_file",
            json!({"path": "notes.txt", "content": "from the TUI\n"}),
        )]),
        Reply::text("Wrote **notes.txt**."),
        Reply::calls(vec![call("c2", "run_shell", json!({"command": "sleep 60"}))]),
        Reply::text("Still here."),
    ]);
    let f = Fixture::new(&server);
    let cfg = f.config_dir();
    std::fs::write(
        cfg.join("mcp.json"),
        json!({"mcpServers": {"testsrv": {"command": mcp_support::test_server()}}}).to_string(),
    )
    .expect("mcp.json");

    let tmux = Tmux {
        name: format!("cst-tui-{}", std::process::id()),
    };
    let ws: &Path = f.ws.path();
    start(&tmux, &f, "main", "--approval ask");

    // Home: the summary, and the sidebar sees the MCP server become ready without waiting.
    tmux.wait_for("approval ask");
    tmux.wait_for("MCP 1/1");

    // A prompt; the write asks (mode ask); `a` approves it for the session.
    tmux.type_text("write a note");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Allow write_file");
    assert!(screen.contains("[a] always"), "{screen}");
    tmux.keys(&["a"]);
    tmux.wait_for("Wrote notes.txt.");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).expect("notes.txt written"),
        "from the TUI\n"
    );

    // /mcp shows the server, ready, with its tools.
    tmux.type_text("/mcp");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("MCP servers");
    assert!(screen.contains("testsrv") && screen.contains("ready"), "{screen}");
    tmux.keys(&["Escape"]);

    // A slow tool, approved once, cancelled with Esc; the UI says so and stays usable.
    tmux.type_text("sleep a while");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Allow run_shell");
    tmux.keys(&["y"]);
    tmux.wait_for("running");
    tmux.keys(&["Escape"]);
    let screen = tmux.wait_for("turn cancelled");
    assert!(screen.contains("cancelled"), "{screen}");

    tmux.type_text("/quit");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        screen.contains(" icanon") || screen.starts_with("icanon") || screen.contains("\nicanon"),
        "terminal left in raw mode:\n{screen}"
    );
    assert!(
        !screen.contains("-icanon") && !screen.contains("-echo"),
        "terminal left in raw mode:\n{screen}"
    );

    // The session's transcript has the turns.
    let t = f.transcript();
    assert!(t
        .iter()
        .any(|r| r["type"] == "tool_call" && r["tool"] == "write_file" && r["outcome"] == "ok"));
    assert!(t
        .iter()
        .any(|r| r["type"] == "tool_call" && r["tool"] == "run_shell" && r["outcome"] == "cancelled"));

    // `--continue` reopens it: the old turns on screen, and the next request carries them.
    let again = Tmux {
        name: format!("cst-tui-again-{}", std::process::id()),
    };
    start(&again, &f, "main", "--continue");
    let screen = again.wait_for("reopened the conversation");
    assert!(
        screen.contains("write a note") && screen.contains("Wrote notes.txt."),
        "{screen}"
    );
    again.type_text("still there?");
    again.keys(&["Enter"]);
    again.wait_for("Still here.");
    let last = server.requests().last().cloned().expect("a request");
    let texts: Vec<String> = last.messages().iter().map(|m| m["content"].to_string()).collect();
    assert!(texts.iter().any(|t| t.contains("write a note")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("still there?")), "{texts:?}");
    again.type_text("/quit");
    again.keys(&["Enter"]);
    assert!(again.wait_for("MODES=[").contains("EXIT=0"));
    server.finish();
}

/// Start the binary in a new tmux server's session `name` (120×36). After the TUI exits, the
/// shell prints its exit code and whether the terminal is back in canonical (cooked) mode, then
/// stays so the pane can be read.
fn start(tmux: &Tmux, f: &Fixture, name: &str, args: &str) {
    let script = format!(
        "XDG_CONFIG_HOME={cfg_home} XDG_CACHE_HOME={cache} CST_TEST_KEY={KEY} {bin} --workspace {ws} {args}; \
         code=$?; modes=$(stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '); \
         echo \"EXIT=$code MODES=[ $modes]\"; sleep 600",
        cfg_home = shell_quote(&f.home.path().join("config").to_string_lossy()),
        cache = shell_quote(&f.home.path().join("cache").to_string_lossy()),
        bin = shell_quote(env!("CARGO_BIN_EXE_cst-agent")),
        ws = shell_quote(&f.ws.path().to_string_lossy()),
    );
    let out = tmux.tmux(&[
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        "120",
        "-y",
        "36",
        "sh",
        "-c",
        &script,
    ]);
    assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn without_a_terminal_it_points_to_exec() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs a terminal") && stderr.contains("cst-agent exec"),
        "{stderr}"
    );
    server.finish_allow_unused();
}

#[test]
fn continue_without_a_session_says_so() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    // Checked before the terminal is needed, so these run without one.
    let out = f.run(&["--continue"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no session to continue"), "{stderr}");
    let out = f.run(&["--resume", "../etc"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("needs a terminal"), "the id was not checked: {stderr}");
    server.finish_allow_unused();
}
