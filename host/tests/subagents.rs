//! Sub-agents (A1–A6, E6, E7) end to end: `cst-agent exec` against the scripted model server,
//! one scripted conversation for the main agent and one per sub-agent (picked by the first user
//! message, which for a sub-agent is its `task` prompt). The server checks each conversation's
//! invariants on every request. The in-process approval round trip of a sub-agent is in
//! `core_session.rs`.

use std::path::Path;
use std::time::Duration;

use cst_agent::core;
use cst_agent::protocol::DiagnosticKind;
use cst_agent::subagents::{load_roles, role_dirs};
use cst_test_support::{call, main_delegates, Recorded, Reply, ScriptedServer};
use serde_json::{json, Value};

mod exec_support;
use exec_support::*;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn role_file(dir: &Path, file: &str, frontmatter: &str, body: &str) {
    write(&dir.join(file), &format!("---\n{frontmatter}\n---\n{body}\n"));
}

fn conversation(reqs: &[Recorded], i: usize) -> Vec<Recorded> {
    reqs.iter().filter(|r| r.conversation == i).cloned().collect()
}

fn system_prompt(r: &Recorded) -> String {
    r.messages()[0]["content"].as_str().unwrap_or_default().to_string()
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l}: {e}")))
        .collect()
}

#[test]
fn role_files_from_each_location_with_precedence_and_builtin_override() {
    let server = ScriptedServer::start(vec![Reply::text("ok")]);
    let f = Fixture::new(&server);
    let ws = f.ws();
    let cfg = f.config_dir();
    role_file(
        &ws.join(".agent/agents"),
        "dup.md",
        "description: from the workspace",
        "ws body",
    );
    role_file(
        &ws.join(".agent/agents"),
        "ws-only.md",
        "description: workspace role",
        "",
    );
    role_file(
        &ws.join(".claude/agents"),
        "claude-style.md",
        "name: claude-style\ndescription: A Claude Code file\ntools: Read, Grep\nmodel: sonnet\ncolor: blue",
        "",
    );
    role_file(
        &cfg.join("agents"),
        "dup.md",
        "description: from the config dir",
        "cfg body",
    );
    role_file(
        &cfg.join("agents"),
        "cfg-only.md",
        "description: config role\nreadonly: true",
        "",
    );
    // A1: a file named like a built-in replaces it.
    role_file(
        &cfg.join("agents"),
        "explore.md",
        "description: Custom explorer\nreadonly: true",
        "",
    );
    write(
        &cfg.join("agents/broken.md"),
        "---\nreadonly: [not, a, bool]\n---\nbody\n",
    );

    // The library view.
    let mut warnings = Vec::new();
    let roles = load_roles(&role_dirs(&ws, Some(&cfg)), &mut warnings);
    assert_eq!(
        roles.names(),
        [
            "cfg-only",
            "claude-style",
            "dup",
            "explore",
            "general",
            "plan",
            "ws-only"
        ]
    );
    assert_eq!(roles.get("dup").unwrap().description, "from the workspace");
    assert_eq!(roles.get("dup").unwrap().instructions, "ws body");
    assert_eq!(roles.get("explore").unwrap().description, "Custom explorer");
    let claude = roles.get("claude-style").unwrap();
    assert_eq!(
        claude.tools.as_deref(),
        Some(&["read_file".to_string(), "grep".into()][..])
    );
    assert_eq!(claude.model, None, "Claude's model aliases mean the session's model");
    assert!(
        warnings
            .iter()
            .map(ToString::to_string)
            .any(|w| w.contains("broken.md") && w.contains("malformed")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.kind == DiagnosticKind::NameClash && w.to_string().contains("`dup`")),
        "{warnings:?}"
    );

    // The main agent's system prompt carries the role index (A1).
    let out = f.run(&["exec", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("broken.md"), "the broken role file is named: {stderr}");
    let prompt = system_prompt(&server.requests()[0]);
    assert!(prompt.contains("## Sub-agents"), "{prompt}");
    for line in [
        "- dup: from the workspace",
        "- ws-only: workspace role",
        "- claude-style: A Claude Code file",
        "- cfg-only: (read-only) config role",
        "- explore: (read-only) Custom explorer",
        "- general: General-purpose",
        "- plan: (read-only) ",
    ] {
        assert!(prompt.contains(line), "missing {line:?} in\n{prompt}");
    }
    assert!(!prompt.contains("from the config dir") && !prompt.contains("broken"));
    // `task` is offered to the main agent.
    assert!(server.requests()[0].tool_names().contains(&"task".to_string()));
    server.finish();
}

#[test]
fn task_runs_a_role_with_its_model_tools_and_transcript() {
    let server = ScriptedServer::start_conversations(vec![
        (
            "MAIN:",
            vec![
                Reply::calls(vec![
                    call(
                        "t1",
                        "task",
                        json!({"description": "review a.txt", "prompt": "SUB-A: review a.txt", "agent": "reviewer"}),
                    ),
                    call(
                        "t2",
                        "task",
                        json!({"description": "nobody", "prompt": "SUB-NONE", "agent": "nope"}),
                    ),
                ]),
                Reply::text("all done"),
            ],
        ),
        (
            "SUB-A:",
            vec![
                Reply::text_and_calls(
                    "reading",
                    vec![
                        call("s1", "read_file", json!({"path": "a.txt"})),
                        call("s2", "task", json!({"description": "nested", "prompt": "x"})),
                        call("s3", "ask_user", json!({"question": "?"})),
                    ],
                ),
                Reply::text("a.txt says hello"),
            ],
        ),
    ]);
    let f = Fixture::new(&server);
    let ws = f.ws();
    write(&ws.join("a.txt"), "hello\n");
    role_file(
        &ws.join(".agent/agents"),
        "reviewer.md",
        "description: Reviews files\nmodel: small-model\nmax_steps: 5",
        "REVIEWER-INSTRUCTIONS: be thorough.",
    );
    let out = f.run(&["exec", "--json", "MAIN: delegate the review"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reqs = server.requests();

    // The main agent got the report as the `task` result; an unknown role is a clear error.
    let main = conversation(&reqs, 0);
    assert_eq!(main.len(), 2);
    assert_eq!(main[1].tool_result("t1").as_deref(), Some("a.txt says hello"));
    let unknown = main[1].tool_result("t2").unwrap();
    assert!(
        unknown.contains("unknown sub-agent role `nope`") && unknown.contains("reviewer"),
        "{unknown}"
    );

    // The sub-agent: its role's model (A1), its body in the system prompt (A4), no task/ask_user (A2).
    let sub = conversation(&reqs, 1);
    assert_eq!(sub.len(), 2);
    for r in &sub {
        assert_eq!(r.model(), "small-model");
        let names = r.tool_names();
        assert!(names.contains(&"read_file".to_string()) && names.contains(&"write_file".to_string()));
        assert!(
            !names.contains(&"task".to_string()) && !names.contains(&"ask_user".to_string()),
            "{names:?}"
        );
    }
    assert_eq!(main[0].model(), "test-model");
    let sp = system_prompt(&sub[0]);
    assert!(
        sp.contains("REVIEWER-INSTRUCTIONS: be thorough.") && sp.contains("sub-agent"),
        "{sp}"
    );
    assert_eq!(sub[0].messages()[1]["content"], "SUB-A: review a.txt");
    assert_eq!(sub[1].tool_result("s1").as_deref(), Some("hello\n"));
    for id in ["s2", "s3"] {
        let r = sub[1].tool_result(id).unwrap();
        assert!(r.contains("never available to a sub-agent"), "{id}: {r}");
    }

    // --json: sub-agent events, each line valid against the published schema.
    let lines = json_lines(&out.stdout);
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/headless-events.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for l in &lines {
        let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{l} does not match the schema: {errors:?}");
    }
    let started = lines
        .iter()
        .find(|l| l["type"] == "subagent.started")
        .expect("subagent.started");
    assert_eq!(
        (started["subagent"].as_u64(), started["role"].as_str()),
        (Some(1), Some("reviewer"))
    );
    assert_eq!(started["model"], "small-model");
    assert!(lines.iter().any(|l| l["type"] == "tool.finished"
        && l["subagent"] == 1
        && l["tool"] == "read_file"
        && l["outcome"] == "ok"));
    assert!(lines
        .iter()
        .any(|l| l["type"] == "subagent.finished" && l["subagent"] == 1 && l["status"] == "done"));

    // A6: sub-1.jsonl with role, prompt, every tool call and the report; main.jsonl names it.
    let main_t = f.transcript();
    let entry = main_t
        .iter()
        .find(|r| r["type"] == "tool_call" && r["call_id"] == "t1")
        .expect("the task call in main.jsonl");
    assert_eq!(entry["subagent_transcript"], "sub-1.jsonl");
    assert_eq!(entry["result"], "a.txt says hello");
    let sub_t = f.transcript_file("sub-1.jsonl");
    assert_eq!(sub_t[0]["type"], "subagent");
    assert_eq!(sub_t[0]["role"], "reviewer");
    assert_eq!(sub_t[0]["prompt"], "SUB-A: review a.txt");
    assert_eq!(sub_t[0]["parent_call_id"], "t1");
    let tools: Vec<&str> = sub_t
        .iter()
        .filter(|r| r["type"] == "tool_call")
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "task", "ask_user"]);
    let report = sub_t.iter().find(|r| r["type"] == "report").expect("report record");
    assert_eq!(
        (report["report"].as_str(), report["end"].as_str()),
        (Some("a.txt says hello"), Some("done"))
    );
    assert_eq!(sub_t.last().unwrap()["type"], "session_end");

    // The core's listing/loading functions (the TUI's `/agents`).
    let session_id = f.session_dir().file_name().unwrap().to_string_lossy().into_owned();
    let listed = core::subagent_transcripts(&ws, &session_id);
    assert_eq!(listed.len(), 1);
    let one = core::load_subagent_transcript(&listed[0].path).unwrap();
    assert_eq!(
        (one.n, one.role.as_str(), one.prompt.as_str()),
        (1, "reviewer", "SUB-A: review a.txt")
    );
    assert_eq!(one.tool_calls.len(), 3);
    assert_eq!(one.report.as_deref(), Some("a.txt says hello"));
    assert_eq!(one.end.as_deref(), Some("done"));

    // The same through the command line: roles, the latest session's sub-agents, one of them.
    let out = f.run(&["agents", "list", "--json"]);
    let roles: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reviewer = roles
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "reviewer")
        .unwrap();
    assert_eq!(
        (reviewer["model"].as_str(), reviewer["max_steps"].as_u64()),
        (Some("small-model"), Some(5))
    );
    let out = f.run(&["agents", "transcripts", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["role"], "reviewer");
    assert_eq!(list[0]["tool_calls"], 3);
    let out = f.run(&["agents", "show", "1"]);
    let shown = text(&out.stdout);
    assert!(
        shown.contains("SUB-A: review a.txt") && shown.contains("- read_file") && shown.contains("a.txt says hello"),
        "{shown}"
    );
    server.finish();
}

#[test]
fn readonly_subagent_is_refused_writes_even_when_its_tools_list_names_them() {
    let server = ScriptedServer::start_conversations(vec![
        main_delegates("try to write", "SUB-RO: write b.txt", "ro"),
        (
            "SUB-RO:",
            vec![
                Reply::calls(vec![
                    call("w1", "write_file", json!({"path": "b.txt", "content": "x"})),
                    call("w2", "run_shell", json!({"command": "touch c.txt"})),
                    call("w3", "grep", json!({"pattern": "x"})),
                ]),
                Reply::text("could not write"),
            ],
        ),
    ]);
    let f = Fixture::new(&server);
    let ws = f.ws();
    role_file(
        &ws.join(".agent/agents"),
        "ro.md",
        "description: read-only\nreadonly: true\ntools: [read_file, write_file, run_shell]",
        "",
    );
    // `--approval full` would run anything: the refusal comes from the role, not the approval mode.
    let out = f.run(&["exec", "--approval", "full", "MAIN: go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sub = conversation(&server.requests(), 1);
    assert_eq!(
        sub[0].tool_names(),
        ["read_file"],
        "A3 removes write/shell; the list removes grep"
    );
    for id in ["w1", "w2"] {
        let r = sub[1].tool_result(id).unwrap();
        assert!(r.contains("denied") && r.contains("read-only"), "{id}: {r}");
    }
    assert!(sub[1].tool_result("w3").unwrap().contains("not in the `tools` list"));
    assert!(!ws.join("b.txt").exists() && !ws.join("c.txt").exists());
    let sub_t = f.transcript_file("sub-1.jsonl");
    let outcomes: Vec<&str> = sub_t
        .iter()
        .filter(|r| r["type"] == "tool_call")
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["denied", "denied", "denied"]);
    server.finish();
}

#[test]
fn readonly_tasks_run_together_and_others_one_after_another() {
    // Each sub-agent answers slowly (a chunk every 200 ms, about 1.2 s in all), so overlap or its
    // absence shows even on a loaded machine.
    let slow = |t: &str| Reply::text(t).slow(Duration::from_millis(200));
    let task = |id: &str, prompt: &str, agent: &str| {
        call(
            id,
            "task",
            json!({"description": prompt, "prompt": prompt, "agent": agent}),
        )
    };
    let server = ScriptedServer::start_conversations(vec![
        (
            "MAIN:",
            vec![
                Reply::calls(vec![task("e1", "SUB-X", "explore"), task("e2", "SUB-Y", "explore")]),
                Reply::calls(vec![task("g1", "SUB-G1", "general"), task("g2", "SUB-G2", "general")]),
                Reply::text("done"),
            ],
        ),
        ("SUB-X", vec![slow("x report")]),
        ("SUB-Y", vec![slow("y report")]),
        ("SUB-G1", vec![slow("g1 report")]),
        ("SUB-G2", vec![slow("g2 report")]),
    ]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "MAIN: four tasks"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = server.requests();
    let one = |i: usize| {
        let c = conversation(&reqs, i);
        assert_eq!(c.len(), 1);
        c[0].clone()
    };
    let (x, y, g1, g2) = (one(1), one(2), one(3), one(4));
    let end = |r: &Recorded| r.finished.expect("stream finished");
    // Read-only (explore): each request arrived while the other's answer was still streaming.
    assert!(x.at < end(&y) && y.at < end(&x), "explore tasks did not overlap");
    // general is not read-only: the second starts after the first has ended.
    assert!(g2.at > end(&g1), "general tasks overlapped");
    let main = conversation(&reqs, 0);
    assert_eq!(main[1].tool_result("e1").as_deref(), Some("x report"));
    assert_eq!(main[1].tool_result("e2").as_deref(), Some("y report"));
    assert_eq!(main[2].tool_result("g2").as_deref(), Some("g2 report"));
    // Four transcripts, numbered in start order.
    let session = f.session_dir();
    for n in 1..=4 {
        assert!(session.join(format!("sub-{n}.jsonl")).is_file(), "sub-{n}.jsonl");
    }
    server.finish();
}

#[test]
fn max_steps_stops_the_subagent_with_a_note() {
    let server = ScriptedServer::start_conversations(vec![
        main_delegates("long job", "SUB-LONG: keep going", "short"),
        (
            "SUB-LONG:",
            vec![
                Reply::text_and_calls("looked at a", vec![call("r1", "list", json!({}))]),
                Reply::text_and_calls("halfway there", vec![call("r2", "list", json!({}))]),
            ],
        ),
    ]);
    let f = Fixture::new(&server);
    role_file(
        &f.ws().join(".agent/agents"),
        "short.md",
        "description: short\nmax_steps: 2",
        "",
    );
    let out = f.run(&["exec", "--json", "MAIN: go"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the main agent still finishes: {}",
        text(&out.stderr)
    );
    let reqs = server.requests();
    assert_eq!(
        conversation(&reqs, 1).len(),
        2,
        "max_steps bounds the sub-agent's model calls"
    );
    let report = conversation(&reqs, 0)[1].tool_result("t1").unwrap();
    assert!(report.starts_with("halfway there\n\n"), "{report}");
    assert!(report.contains("stopped at its step limit (2 model calls)"), "{report}");
    let lines = json_lines(&out.stdout);
    assert!(lines
        .iter()
        .any(|l| l["type"] == "subagent.finished" && l["status"] == "max_steps" && l["steps"] == 2));
    let sub_t = f.transcript_file("sub-1.jsonl");
    assert_eq!(
        sub_t.iter().find(|r| r["type"] == "report").unwrap()["end"],
        "max_steps"
    );
    server.finish();
}

#[test]
fn headless_subagent_follows_the_main_agents_approval_rules() {
    let server = ScriptedServer::start_conversations(vec![
        main_delegates("write", "SUB-W: write b.txt", "general"),
        (
            "SUB-W:",
            vec![
                Reply::calls(vec![call("w1", "write_file", json!({"path": "b.txt", "content": "x"}))]),
                Reply::text("refused"),
            ],
        ),
    ]);
    let f = Fixture::new(&server);
    let out = f.run(&["exec", "--approval", "ask", "MAIN: go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = conversation(&server.requests(), 1)[1].tool_result("w1").unwrap();
    assert!(r.contains("headless run cannot ask"), "{r}");
    assert!(!f.ws().join("b.txt").exists());
    server.finish();
}

/// Ctrl-C while a sub-agent waits for its model: exit 130, and its transcript still ends with a
/// `cancelled` report and a closing line (nothing already written is lost).
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_subagent_closes_its_transcript() {
    let server = ScriptedServer::start_conversations(vec![
        (
            "MAIN:",
            vec![Reply::calls(vec![call(
                "t1",
                "task",
                json!({"description": "hang", "prompt": "SUB-HANG: wait", "agent": "explore"}),
            )])],
        ),
        ("SUB-HANG:", vec![Reply::hang()]),
    ]);
    let f = Fixture::new(&server);
    let (out, _) = interrupt_during_tool(&f, &["exec", "MAIN: go"], "task");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let sub_t = f.transcript_file("sub-1.jsonl");
    let report = sub_t.iter().find(|r| r["type"] == "report").expect("report record");
    assert_eq!(report["end"], "cancelled");
    let last = sub_t.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["reason"].as_str()),
        (Some("session_end"), Some("cancelled"))
    );
    let main_t = f.transcript();
    let entry = main_t
        .iter()
        .find(|r| r["type"] == "tool_call" && r["call_id"] == "t1")
        .unwrap();
    assert_eq!(entry["outcome"], "cancelled");
    assert_eq!(entry["subagent_transcript"], "sub-1.jsonl");
    server.finish();
}

/// Issue 14 item 10: a role file as Claude Code's `/agents` wizard writes it (a one-line
/// description with `Examples:` and `<example>` blocks, invalid YAML) loads; `disallowedTools`
/// is honoured; `permissionMode: plan` is read-only; `maxTurns` is the step limit; Claude Code
/// tools without an equivalent are named in a warning; `Explore` names the built-in role.
#[test]
fn role_files_as_claude_code_writes_them() {
    let server = ScriptedServer::start_conversations(vec![
        (
            "MAIN:",
            vec![
                Reply::calls(vec![call(
                    "t1",
                    "task",
                    json!({"description": "review", "prompt": "SUB-REVIEW: review a.txt", "agent": "code-reviewer"}),
                )]),
                Reply::calls(vec![call(
                    "t2",
                    "task",
                    json!({"description": "look", "prompt": "SUB-EXPLORE: find it", "agent": "Explore"}),
                )]),
                Reply::text("done"),
            ],
        ),
        (
            "SUB-REVIEW:",
            vec![
                Reply::calls(vec![
                    call("w1", "write_file", json!({"path": "b.txt", "content": "x"})),
                    call("r1", "read_file", json!({"path": "a.txt"})),
                ]),
                Reply::text("reviewed"),
            ],
        ),
        ("SUB-EXPLORE:", vec![Reply::text("found")]),
    ]);
    let f = Fixture::new(&server);
    let ws = f.ws();
    std::fs::write(ws.join("a.txt"), "hello").unwrap();
    write(
        &ws.join(".claude/agents/code-reviewer.md"),
        "---\nname: code-reviewer\ndescription: Use this agent when you need to review recently written code. \
         Examples:\\n\\n<example>\\nContext: The user has just implemented a feature.\\nuser: \"I've added the login endpoint\"\\n\
         assistant: \"Let me use the code-reviewer agent\"\\n</example>\ntools: Glob, Grep, Read, Write, WebSearch, TodoWrite\n\
         disallowedTools: Write, Edit, Bash\nmaxTurns: 4\nmodel: sonnet\ncolor: red\n---\n\nYou are a senior code reviewer.\n",
    );
    write(
        &ws.join(".claude/agents/planner.md"),
        "---\nname: planner\ndescription: Plans changes.\npermissionMode: plan\n---\nPlan only.\n",
    );
    let mut warnings = Vec::new();
    let roles = load_roles(&role_dirs(&ws, None), &mut warnings);
    let reviewer = roles.get("code-reviewer").expect("the wizard's file loads");
    assert!(
        reviewer
            .description
            .starts_with("Use this agent when you need to review"),
        "{}",
        reviewer.description
    );
    assert_eq!(reviewer.max_steps, Some(4));
    assert_eq!(reviewer.model, None, "`sonnet` is the session's model");
    assert!(roles.get("planner").unwrap().readonly);
    assert_eq!(roles.get("Explore").map(|r| r.name.as_str()), Some("explore"));
    let w: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter()
            .any(|w| w.contains("code-reviewer.md") && w.contains("`WebSearch`") && w.contains("`TodoWrite`")),
        "{w:?}"
    );

    let out = f.run(&["exec", "--approval", "full", "MAIN: go"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sub = conversation(&server.requests(), 1);
    assert_eq!(
        sub[0].tool_names(),
        ["grep", "list", "read_file"],
        "Write is disallowed"
    );
    let refused = sub[1].tool_result("w1").unwrap();
    assert!(refused.contains("disallowed"), "{refused}");
    assert!(sub[1].tool_result("r1").unwrap().contains("hello"));
    assert!(!ws.join("b.txt").exists());
    assert_eq!(
        conversation(&server.requests(), 2).len(),
        1,
        "`Explore` ran the built-in role"
    );
    server.finish();
}
