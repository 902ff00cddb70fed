//! Habits people bring from `codex exec` and `claude -p` (issue 14 item 14): piped stdin added to
//! a prompt, `NO_COLOR`, shell completions, env variables and exit codes in `--help`.

mod exec_support;

use std::io::Write;
use std::process::Stdio;

use cst_test_support::{Reply, ScriptedServer};
use exec_support::*;

fn first_user_message(server: &ScriptedServer) -> String {
    let messages = server.requests()[0].messages();
    messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn piped_stdin_is_appended_to_the_prompt() {
    let server = ScriptedServer::start(vec![Reply::text("Looks fine.")]);
    let f = Fixture::new(&server);
    let mut child = f
        .cmd(&["exec", "review this diff"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"--- a/x.rs\n+++ b/x.rs\n+fn new() {}\n")
        .unwrap();
    let out = wait_output(child, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        first_user_message(&server),
        "review this diff\n\n--- a/x.rs\n+++ b/x.rs\n+fn new() {}\n"
    );
    server.finish();
}

#[test]
fn completions_and_help() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    for shell in ["bash", "zsh", "fish"] {
        let out = f.cmd(&["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(
            script.contains("cst-agent") && script.contains("exec"),
            "{shell}: {script}"
        );
    }
    let out = f.cmd(&["exec", "--help"]).output().unwrap();
    let help = text(&out.stdout);
    assert!(
        help.contains("[env: CST_MODEL") && help.contains("[env: CST_BASE_URL"),
        "{help}"
    );
    assert!(
        help.contains("Exit codes: 0") && help.contains("4 the answer was cut") && help.contains("130 cancelled"),
        "{help}"
    );
    server.finish_allow_unused();
}

/// A retried model call logs a warning; on a terminal it is coloured unless `NO_COLOR` is set.
/// `script` gives the binary a real terminal.
#[test]
fn no_color_is_honoured_on_a_terminal() {
    let run = |no_color: bool| {
        let server = ScriptedServer::start(vec![Reply::status(500, "overloaded"), Reply::text("ok")]);
        let f = Fixture::new(&server);
        let inner = f.cmd(&["exec", "hi"]);
        let mut line = format!("{:?}", inner.get_program());
        for a in inner.get_args() {
            line.push_str(&format!(" '{}'", a.to_string_lossy()));
        }
        // The same environment, through `script`, which runs the line on a new terminal.
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qec", &line, "/dev/null"]);
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if no_color {
            cmd.env("NO_COLOR", "1");
        } else {
            cmd.env_remove("NO_COLOR");
        }
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        server.finish();
        text(&out.stdout)
    };
    let coloured = run(false);
    assert!(
        coloured.contains("retrying") && coloured.contains('\u{1b}'),
        "{coloured:?}"
    );
    let plain = run(true);
    assert!(plain.contains("retrying") && !plain.contains("\u{1b}["), "{plain:?}");
}
