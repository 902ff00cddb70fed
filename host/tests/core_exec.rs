//! End-to-end tests of `cst-agent exec` against the scripted Chat Completions server
//! (`cst-test-support`). The server checks every request's invariants (tool calls answered once,
//! role order); `finish()` fails the test on any violation.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::{json, Value};

mod exec_support;
use exec_support::*;

#[test]
fn tool_round_trip_answer_and_transcript() {
    let server = ScriptedServer::start(vec![
        Reply::text_and_calls(
            "Reading.",
            vec![
                call("c1", "read_file", json!({"path": "notes.txt"})),
                call(
                    "c2",
                    "write_file",
                    json!({"path": "out/key.txt", "content": format!("key={KEY}"), "api_key": "zzz"}),
                ),
            ],
        ),
        Reply::text("All done."),
    ]);
    let f = Fixture::new(&server);
    std::fs::write(f.ws.path().join("notes.txt"), "hello notes\n").unwrap();
    std::fs::write(f.ws.path().join("AGENTS.md"), "Use British spelling.").unwrap();
    let out = f.run(&["exec", "summarise notes.txt"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout), "All done.\n");
    assert_summary_first(&stderr);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].model(), "test-model");
    assert_eq!(reqs[0].authorization.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    let tools = reqs[0].tool_names();
    for t in [
        "read_file",
        "write_file",
        "edit_file",
        "list",
        "grep",
        "run_shell",
        "ask_user",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} not offered: {tools:?}");
    }
    let system = reqs[0].messages()[0]["content"].as_str().unwrap().to_string();
    assert!(
        system.contains("Use British spelling."),
        "AGENTS.md not in the system prompt"
    );
    assert_eq!(reqs[1].tool_result("c1").as_deref(), Some("hello notes\n"));
    // write_file's schema forbids extra keys: the model is told, nothing is written.
    assert!(reqs[1].tool_result("c2").unwrap().contains("invalid arguments"));
    server.finish();

    let t = f.transcript();
    let kinds: Vec<&str> = t.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"session"));
    assert_eq!(kinds.last(), Some(&"session_end"));
    assert!(t
        .iter()
        .any(|r| r["type"] == "message" && r["role"] == "user" && r["content"] == "summarise notes.txt"));
    assert!(t
        .iter()
        .any(|r| r["type"] == "message" && r["role"] == "assistant" && r["content"] == "All done."));
    let read = t
        .iter()
        .find(|r| r["type"] == "tool_call" && r["call_id"] == "c1")
        .unwrap();
    assert_eq!(read["tool"], "read_file");
    assert_eq!(read["source"], "builtin:builtin");
    assert_eq!(read["args"], json!({"path": "notes.txt"}));
    assert_eq!(read["result"], "hello notes\n");
    assert_eq!(read["outcome"], "ok");
    assert!(read["duration_ms"].as_f64().unwrap() >= 0.0);
    let write = t
        .iter()
        .find(|r| r["type"] == "tool_call" && r["call_id"] == "c2")
        .unwrap();
    assert_eq!(write["outcome"], "error");
    // Secrets never reach the transcript: by value (the API key) and by argument name.
    assert_eq!(write["args"]["content"], "key=[REDACTED]");
    assert_eq!(write["args"]["api_key"], "[REDACTED]");
    let raw = std::fs::read_to_string(f.session_dir().join("main.jsonl")).unwrap();
    assert!(!raw.contains(KEY), "the API key leaked into the transcript");
}

#[test]
fn edit_file_changes_a_real_file() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "e1",
            "edit_file",
            json!({"path": "src/lib.rs", "old_text": "fn old()", "new_text": "fn new()"}),
        )]),
        Reply::text("Renamed."),
    ]);
    let f = Fixture::new(&server);
    std::fs::create_dir_all(f.ws.path().join("src")).unwrap();
    std::fs::write(f.ws.path().join("src/lib.rs"), "pub fn old() {}\nfn other() {}\n").unwrap();
    let out = f.run(&["exec", "rename old to new"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(f.ws.path().join("src/lib.rs")).unwrap(),
        "pub fn new() {}\nfn other() {}\n"
    );
    assert!(server.requests()[1].tool_result("e1").unwrap().contains("replaced 1"));
    server.finish();
}

#[test]
fn write_refused_in_headless_ask_mode_and_the_model_is_told() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", "write_file", json!({"path": "x.txt", "content": "x"}))]),
        Reply::text("I could not write."),
    ]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "--approval", "ask", "write x.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!f.ws.path().join("x.txt").exists(), "the write ran");
    let result = server.requests()[1].tool_result("w1").unwrap();
    assert!(result.contains("denied") && result.contains("headless"), "{result}");
    server.finish();
    let t = f.transcript();
    let w = t.iter().find(|r| r["type"] == "tool_call").unwrap();
    assert_eq!(w["outcome"], "denied");
}

#[cfg(unix)]
fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// Open a FIFO for writing once a reader has it open (ENXIO until then); give up at `deadline`.
#[cfg(unix)]
fn write_fifo_when_read(p: &Path, data: &str, deadline: Instant) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(p)
        {
            Ok(mut f) => return f.write_all(data.as_bytes()).map_err(|e| e.to_string()),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
}

/// Two read calls in one reply run at the same time: the test feeds the second FIFO first and
/// only then the first, so a sequential runner would block on the first one forever.
#[cfg(unix)]
#[test]
fn two_read_calls_in_one_turn_overlap() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("r1", "read_file", json!({"path": "fifo1"})),
            call("r2", "read_file", json!({"path": "fifo2"})),
        ]),
        Reply::text("Both read."),
    ]);
    let f = Fixture::new(&server);
    mkfifo(&f.ws.path().join("fifo1"));
    mkfifo(&f.ws.path().join("fifo2"));
    let child = f
        .cmd(&["exec", "read both"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (p1, p2) = (f.ws.path().join("fifo1"), f.ws.path().join("fifo2"));
    let feeder = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        write_fifo_when_read(&p2, "second", deadline)?;
        // fifo2 was open while fifo1's reader (the first call) had not finished: overlap.
        write_fifo_when_read(&p1, "first", deadline)
    });
    let fed = feeder.join().unwrap();
    if fed.is_err() {
        // Unblock a sequential runner so the child can be reaped.
        let _ = write_fifo_when_read(&f.ws.path().join("fifo1"), "", Instant::now() + Duration::from_secs(2));
    }
    let out = wait_output(child, Duration::from_secs(60));
    fed.unwrap_or_else(|e| panic!("the two read calls did not run concurrently: {e}"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let req = &server.requests()[1];
    assert_eq!(req.tool_result("r1").as_deref(), Some("first"));
    assert_eq!(req.tool_result("r2").as_deref(), Some("second"));
    // Results go back in the order of the calls.
    let ids: Vec<String> = req
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["r1", "r2"]);
    server.finish();
}

#[test]
fn model_500_then_success_is_retried() {
    let server = ScriptedServer::start(vec![Reply::status(500, "overloaded"), Reply::text("Recovered.")]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Recovered.\n");
    assert_eq!(server.request_count(), 2);
    server.finish();
}

#[test]
fn model_401_is_a_clear_error() {
    let server = ScriptedServer::start(vec![Reply::status(401, "invalid api key")]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("401") && stderr.contains("CST_TEST_KEY"), "{stderr}");
    assert!(!stderr.contains(KEY));
    assert_eq!(server.request_count(), 1, "a 401 must not be retried");
    server.finish();
    let t = f.transcript();
    assert!(t
        .iter()
        .any(|r| r["type"] == "error" && r["message"].as_str().unwrap().contains("401")));
}

#[test]
fn malformed_stream_and_unreachable_server_are_clear_errors() {
    let server = ScriptedServer::start(vec![Reply::malformed()]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("malformed response stream"), "{stderr}");
    server.finish();

    // A port nobody listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = f.run(&["exec", "--base-url", &url, "--model", "m", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot reach the model server"), "{stderr}");
}

#[test]
fn max_steps_has_its_own_exit_code() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("a", "list", json!({}))]),
        Reply::calls(vec![call("b", "list", json!({}))]),
    ]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "--max-steps", "2", "loop"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    server.finish();
    let out = f.run(&["exec", "--max-steps", "0", "loop"]);
    assert_eq!(out.status.code(), Some(2), "usage error expected");
}

#[test]
fn json_output_follows_its_schema() {
    let server = ScriptedServer::start(vec![
        Reply::text_and_calls("Let me look.", vec![call("j1", "list", json!({"pattern": "*.txt"}))]),
        Reply::calls(vec![call("j2", "write_file", json!({"path": "a.txt", "content": "x"}))]),
        Reply::text("Done: a.txt."),
    ]);
    let f = Fixture::new(&server);
    std::fs::write(f.ws.path().join("a.txt"), "a").unwrap();
    let out = f.run(&["exec", "--json", "--approval", "ask", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_summary_first(&text(&out.stderr));
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/headless-events.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line is not JSON: {l}: {e}")))
        .collect();
    for l in &lines {
        let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{l} does not match the schema: {errors:?}");
    }
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session.started"));
    assert_eq!(types[1], "turn.started");
    assert_eq!(types.last(), Some(&"turn.finished"));
    let last = lines.last().unwrap();
    assert_eq!(last["status"], "done");
    assert_eq!(last["answer"], "Done: a.txt.");
    assert_eq!(last["steps"], 3);
    let finished: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "tool.finished")
        .map(|l| (l["call_id"].as_str().unwrap(), l["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(finished, [("j1", "ok"), ("j2", "denied")]);
    let deltas: String = lines
        .iter()
        .filter(|l| l["type"] == "message.delta")
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Let me look.Done: a.txt.");
    let transcript = lines[0]["transcript"].as_str().unwrap();
    assert!(Path::new(transcript).starts_with(f.ws()), "{transcript}");
    server.finish();
}

#[cfg(unix)]
fn assert_cancelled_transcript(f: &Fixture, call_id: &str) {
    let t = f.transcript();
    let call = t
        .iter()
        .find(|r| r["type"] == "tool_call" && r["call_id"] == call_id)
        .expect("the interrupted call is in the transcript");
    assert_eq!(call["outcome"], "cancelled");
    let last = t.last().unwrap();
    assert_eq!(last["type"], "session_end", "transcript not closed");
    assert_eq!(last["reason"], "cancelled");
}

/// Ctrl-C while a built-in blocks (reading a FIFO nobody writes): exit 130, transcript closed.
#[cfg(unix)]
#[test]
fn ctrl_c_cancels_a_blocked_builtin() {
    let server = ScriptedServer::start(vec![Reply::calls(vec![call(
        "b1",
        "read_file",
        json!({"path": "never"}),
    )])]);
    let f = Fixture::new(&server);
    mkfifo(&f.ws.path().join("never"));
    let (out, _) = interrupt_during_tool(&f, &["exec", "read it"], "read_file");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_cancelled_transcript(&f, "b1");
    server.finish();
}

/// Ctrl-C in the middle of a long run_shell: the process group is killed, exit 130.
/// Needs `process::run_captured` (the extensions work).
#[cfg(unix)]
#[test]
fn ctrl_c_kills_a_long_shell_command() {
    // Found by its unique command line: in the command's own PID namespace `$$` is not a host pid.
    let nap = format!("60.{}", std::process::id());
    let server = ScriptedServer::start(vec![Reply::calls(vec![call(
        "s1",
        "run_shell",
        json!({"command": format!("exec sleep {nap}")}),
    )])]);
    let f = Fixture::new(&server);
    let (out, _) = interrupt_during_tool(&f, &["exec", "--approval", "full", "wait"], "run_shell");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let cmdline = format!("sleep\0{nap}\0");
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == cmdline.as_bytes())
                && std::fs::read_to_string(e.path().join("stat"))
                    .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(), "the shell command (sleep {nap}) survived Ctrl-C");
    assert_cancelled_transcript(&f, "s1");
    server.finish();
}

/// A plugin.json command tool called by the model: its description and schema reach the model
/// (P3, P5, also under the `inputSchema` spelling) and a call missing a `required` field is
/// refused before the command starts (P5).
#[cfg(unix)]
#[test]
fn plugin_json_command_tool_call() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("p0", "whisper", json!({}))]),
        Reply::calls(vec![call("p1", "shout", json!({"text": "hello"}))]),
        Reply::text("Shouted."),
    ]);
    let f = Fixture::new(&server);
    let dir = f.config_dir().join("plugins").join("x");
    std::fs::create_dir_all(&dir).unwrap();
    let whisper_schema = json!({"type": "object", "properties": {"text": {"type": "string", "description": "what to say"}},
                                "required": ["text"]});
    std::fs::write(
        dir.join("plugin.json"),
        json!({"name": "x", "description": "test plugin", "tools": [{
            "name": "shout", "description": "Upper-case the arguments", "command": "tr a-z A-Z", "perm": "read",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        }, {
            "name": "whisper", "description": "Lower-case the arguments, quietly", "perm": "read",
            "command": "touch whisper.ran; tr A-Z a-z", "inputSchema": whisper_schema
        }]})
        .to_string(),
    )
    .unwrap();
    let out = f.run(&["exec", "shout hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = server.requests();
    let offered = |name: &str| {
        reqs[0].body["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == name))
            .map(|t| t["function"].clone())
            .unwrap_or_else(|| panic!("{name} not offered: {:?}", reqs[0].tool_names()))
    };
    assert_eq!(offered("shout")["description"], "Upper-case the arguments", "P3");
    assert_eq!(
        offered("whisper")["description"],
        "Lower-case the arguments, quietly",
        "P3"
    );
    assert_eq!(
        offered("whisper")["parameters"],
        whisper_schema,
        "P5: inputSchema is the schema"
    );
    let refused = reqs[1].tool_result("p0").unwrap();
    assert!(refused.contains("text"), "P5: the missing field is named: {refused}");
    assert!(
        !f.ws().join("whisper.ran").exists(),
        "P5: refused before the command started"
    );
    let result = reqs[2].tool_result("p1").unwrap();
    assert!(result.contains("\"TEXT\":\"HELLO\""), "{result}");
    server.finish();
    let t = f.transcript();
    let c = t
        .iter()
        .find(|r| r["type"] == "tool_call" && r["tool"] == "shout")
        .unwrap();
    assert_eq!(c["outcome"], "ok");
    assert!(c["source"].as_str().unwrap().starts_with("command:"), "{c}");
}

/// A wasm component tool (the `text-stats` example plugin) called by the model.
#[test]
fn wasm_tool_call() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let plugin_dir = root.join("example-plugins/text-stats");
    assert!(
        plugin_dir.join("text-stats.wasm").is_file(),
        "{} is not built: run `bash example-plugins/build.sh` first",
        plugin_dir.join("text-stats.wasm").display()
    );
    // Install first, then learn the tool's name and schema from `tools list --json`.
    let probe = ScriptedServer::start(vec![]);
    let f = Fixture::new(&probe);
    let plugin_arg = plugin_dir.display().to_string();
    let out = f.cmd(&["plugins", "install", &plugin_arg]).output().unwrap();
    assert!(out.status.success(), "plugins install failed: {}", text(&out.stderr));
    let out = f.cmd(&["tools", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let tool = tools
        .iter()
        .find(|t| t["source"] == "wasm")
        .unwrap_or_else(|| panic!("no wasm tool after install: {tools:?}"));
    let name = tool["name"].as_str().unwrap().to_string();
    assert_eq!(name, "text_stats");
    let args = json!({"paths": ["notes.txt"]});
    probe.finish_allow_unused();

    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("w1", &name, args)]),
        Reply::text("Counted."),
    ]);
    // The same config dir (the plugin is installed there); only the model URL changes.
    std::fs::write(
        f.config_dir().join("settings.json"),
        json!({"model": {"base_url": server.url(), "name": "test-model", "api_key_env": "CST_TEST_KEY"}}).to_string(),
    )
    .unwrap();
    std::fs::write(f.ws.path().join("notes.txt"), "one two\nthree\n").unwrap();
    let out = f.run(&["exec", "count words in notes.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = server.requests()[1].tool_result("w1").unwrap();
    assert!(!result.starts_with("error:"), "wasm tool failed: {result}");
    // "one two\nthree\n": 2 lines, 3 words, 14 bytes, keyed by the path as given.
    let stats: Value = serde_json::from_str(&result).unwrap_or_else(|e| panic!("{e}: {result}"));
    assert_eq!(
        stats,
        json!({
            "files": {"notes.txt": {"lines": 2, "words": 3, "bytes": 14}},
            "total": {"files": 1, "lines": 2, "words": 3, "bytes": 14},
            "truncated": false,
        })
    );
    server.finish();
    let t = f.transcript();
    let c = t.iter().find(|r| r["type"] == "tool_call").unwrap();
    assert_eq!(c["outcome"], "ok");
    assert!(c["source"].as_str().unwrap().starts_with("wasm:"), "{c}");
}

#[test]
fn prompt_from_stdin_and_the_minimal_profile() {
    use std::io::Write;
    let server = ScriptedServer::start(vec![Reply::text("Hi back.")]);
    let f = Fixture::new(&server);
    let mut child = f
        .cmd(&["--tools", "minimal", "exec"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello from stdin").unwrap();
    let out = wait_output(child, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hi back.\n");
    let req = &server.requests()[0];
    assert_eq!(req.messages()[1]["content"], "hello from stdin");
    let mut tools = req.tool_names();
    tools.sort();
    assert_eq!(
        tools,
        ["edit_file", "grep", "list", "read_file", "run_shell", "write_file"]
    );
    // No `task`, so no role index either (E1: minimal loads no roles).
    let system = req.messages()[0]["content"].as_str().unwrap().to_string();
    assert!(!system.contains("## Sub-agents"), "{system}");
    server.finish();

    let out = f.run(&["exec"]);
    assert_eq!(out.status.code(), Some(2), "an empty prompt is a usage error");
}

/// Issue 13 item 5: the model's file tools never change the host's own files without a person.
/// In a trusted workspace, `write_file .agent/mcp.json` in `auto` would become an unapproved,
/// unsandboxed server process at the next start; headless, every write to the workspace's host
/// config (`.agent/`, `.claude/skills`, `.claude/agents`) is refused — in `full` too — and the
/// file is unchanged. A write elsewhere still runs (the control).
#[test]
fn writes_to_the_host_config_always_ask_and_headless_refuses_them() {
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("pwned.marker");
    let evil =
        json!({"mcpServers": {"evil": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]}}})
            .to_string();
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("w1", "write_file", json!({"path": ".agent/mcp.json", "content": evil})),
            call(
                "w2",
                "edit_file",
                json!({"path": "src/../.agent/mcp.json", "old_text": "{}", "new_text": "{\"x\": {}}"}),
            ),
            call(
                "w3",
                "write_file",
                json!({"path": ".claude/skills/x/SKILL.md", "content": "hi"}),
            ),
            call(
                "w4",
                "write_file",
                json!({"path": ".AGENT/agents/r.md", "content": "hi"}),
            ),
            call("w5", "write_file", json!({"path": "notes.txt", "content": "fine"})),
        ]),
        Reply::text("Done."),
    ]);
    let f = Fixture::new(&server);
    let agent = f.ws().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(f.ws().join("src")).unwrap();
    let original = r#"{"mcpServers": {}}"#;
    std::fs::write(agent.join("mcp.json"), original).unwrap();
    let o = f.run(&["plugins", "trust"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    let out = f.run(&["exec", "write the config"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = server.requests();
    for id in ["w1", "w2", "w3", "w4"] {
        let r = reqs[1].tool_result(id).unwrap();
        assert!(r.contains("denied") && r.contains("host config"), "{id}: {r}");
        assert!(r.contains("headless"), "{id}: {r}");
    }
    assert!(
        reqs[1].tool_result("w5").unwrap().contains("wrote"),
        "the control write runs"
    );
    assert_eq!(std::fs::read_to_string(agent.join("mcp.json")).unwrap(), original);
    assert!(!f.ws().join(".claude").exists());
    assert!(!agent.join("agents").exists());

    server.finish();

    // `full` lifts confinement for this session, not for files the host runs at its next start.
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call(
            "f1",
            "write_file",
            json!({"path": ".agent/plugins/p/plugin.json", "content": "{}"}),
        )]),
        Reply::text("Done."),
    ]);
    let settings = f.config_dir().join("settings.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    v["model"]["base_url"] = json!(server.url());
    std::fs::write(&settings, v.to_string()).unwrap();
    let out = f.run(&["exec", "--approval", "full", "write a plugin"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = server.requests()[1].tool_result("f1").unwrap();
    assert!(r.contains("denied") && r.contains("host config"), "{r}");
    assert!(!agent.join("plugins").exists());
    server.finish();

    // The next start runs nothing new.
    let o = f.run(&["status"]);
    assert!(text(&o.stdout).contains("0 MCP servers"), "{}", text(&o.stdout));
    assert!(!marker.exists());
}

/// S6 in `exec` (issue 14 item 11): `/skill NAME message` sends the skill's instructions with
/// the message; an unknown skill fails the turn with a clear error.
#[test]
fn skill_command_in_exec() {
    let server = ScriptedServer::start(vec![Reply::text("Filled.")]);
    let f = Fixture::new(&server);
    let dir = f.ws.path().join(".agent/skills/pdf-forms");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n1. List the fields.\n",
    )
    .unwrap();
    let out = f.run(&["exec", "/skill pdf-forms fill a.pdf"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let user = server.requests()[0]
        .messages()
        .into_iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    let content = user["content"].as_str().unwrap();
    assert!(
        content.starts_with("<skill name=\"pdf-forms\"")
            && content.contains("1. List the fields.")
            && content.ends_with("fill a.pdf"),
        "{content}"
    );
    server.finish();

    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "/skill nope hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no skill named `nope`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.request_count(), 0);
    server.finish_allow_unused();
}

/// Issue 14 item 7: a server that failed is a `warning` event of `exec --json` (after
/// `session.started`) with its reason, and the summary line counts it apart.
#[test]
fn a_failed_mcp_server_is_a_warning_event() {
    let server = ScriptedServer::start(vec![Reply::text("ok")]);
    let f = Fixture::new(&server);
    std::fs::write(
        f.config_dir().join("mcp.json"),
        json!({"mcpServers": {"bad": {"command": "sh", "args": ["-c", "echo 'bad: no such token' >&2; exit 3"]}}})
            .to_string(),
    )
    .unwrap();
    let out = f.run(&["exec", "--json", "hi"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("1 MCP server (1 failed)"), "{stderr}");
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session.started");
    let warning = lines
        .iter()
        .find(|l| l["type"] == "warning")
        .unwrap_or_else(|| panic!("no warning line: {lines:?}"));
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains("MCP server `bad`") && message.contains("no such token") && message.contains("mcp.json"),
        "{message}"
    );
    server.finish();
}
