//! plugin.json command tools through `cst-agent tools list|call` (P1–P10, E7, P2).
#![cfg(unix)]

mod ext_support;

use ext_support::{plugin, stderr, stdout, Env};
use serde_json::{json, Value};

/// The jira plugin in the config dir, with the workspace trusted: until then (T1) a config-dir
/// command tool runs in its own folder, not the workspace P9 names (tested in `secrets.rs`).
fn jira(env: &Env) -> std::path::PathBuf {
    let o = env.cli().args(["plugins", "trust"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    plugin(
        &env.config().join("plugins"),
        "jira",
        json!({
            "name": "jira",
            "description": "Read Jira issues.",
            "tools": [
                {
                    "name": "jira_issue",
                    "description": "Fetch one Jira issue.",
                    "command": ["sh", "issue.sh"],
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "key": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
                            "comments": {"type": "integer", "minimum": 0}
                        },
                        "required": ["key"]
                    },
                    "perm": "net",
                    "timeout": 30
                },
                {"name": "piped", "command": "printf 'a\\nb\\nc\\n' | wc -l | tr -d ' '", "perm": "read"},
                {"name": "fails", "command": "echo partial; echo oops >&2; exit 7"},
                {"name": "slow", "command": "echo $$ > slow.pid; sleep 1000 & sleep 1000", "timeout": 1},
                {"name": "jira.search v2", "command": "echo ok"}
            ]
        }),
        &[(
            "issue.sh",
            "touch ran.marker\necho \"args=$(cat)\"\necho \"dir=$CST_PLUGIN_DIR ws=$CST_WORKSPACE tool=$CST_TOOL cwd=$(pwd)\"\n",
        )],
    )
}

fn call(env: &Env, tool: &str, args: &str) -> std::process::Output {
    env.cli()
        .args(["tools", "call", tool, "--args", args])
        .output()
        .unwrap()
}

#[test]
fn p4_p8_p9_argv_file_made_absolute_stdin_json_cwd_and_env() {
    let env = Env::new();
    let dir = std::fs::canonicalize(jira(&env)).unwrap();
    // P8: `"3"` becomes the integer the schema asks for before it reaches stdin.
    let o = call(&env, "jira_issue", r#"{"key":"CST-42","comments":"3"}"#);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(r#"args={"comments":3,"key":"CST-42"}"#), "{out}");
    let ws = env.ws.display();
    assert!(
        out.contains(&format!("dir={} ws={ws} tool=jira_issue cwd={ws}", dir.display())),
        "{out}"
    );
    // cwd is the workspace: the script's relative `touch` lands there, not in the plugin folder.
    assert!(env.ws.join("ran.marker").exists());
}

#[test]
fn p5_full_json_schema_is_checked_before_the_process_starts() {
    let env = Env::new();
    jira(&env);
    for bad in [
        r#"{"comments":1}"#,
        r#"{"key":"nope"}"#,
        r#"{"key":"CST-1","comments":-1}"#,
        r#"{"key":"CST-1","comments":"three"}"#,
    ] {
        let o = call(&env, "jira_issue", bad);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("invalid arguments"), "{}", stderr(&o));
    }
    assert!(
        !env.ws.join("ran.marker").exists(),
        "the tool ran despite invalid arguments"
    );
}

#[test]
fn p4_string_command_runs_under_sh_with_pipes() {
    let env = Env::new();
    jira(&env);
    let o = call(&env, "piped", "{}");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "3");
}

#[test]
fn p10_nonzero_exit_is_a_failure_with_the_output_and_code() {
    let env = Env::new();
    jira(&env);
    let o = call(&env, "fails", "{}");
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("partial\noops") && err.contains("exit code 7"), "{err}");
}

// Survivors are found through /proc.
#[cfg(target_os = "linux")]
#[test]
fn p7_timeout_is_124_and_the_group_is_gone() {
    let env = Env::new();
    jira(&env);
    let o = call(&env, "slow", "{}");
    assert_eq!(o.status.code(), Some(124), "{}", stderr(&o));
    assert!(stderr(&o).contains("timed out after 1 s"), "{}", stderr(&o));
    let pgid: i32 = std::fs::read_to_string(env.ws.join("slow.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // No process of the group is left running (zombies awaiting a reaper do not count).
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else { continue };
        let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        assert!(!(f[2] == pgid.to_string() && f[0] != "Z"), "survivor: {stat}");
    }
}

#[test]
fn p2_p6_names_sanitised_perm_recorded_and_listed() {
    let env = Env::new();
    jira(&env);
    let o = env.cli().args(["tools", "list", "--json"]).output().unwrap();
    assert!(o.status.success());
    let list: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let get = |n: &str| list.iter().find(|t| t["name"] == n).cloned();
    let issue = get("jira_issue").unwrap();
    assert_eq!(
        (issue["perm"].as_str(), issue["source"].as_str()),
        (Some("net"), Some("command"))
    );
    assert_eq!(issue["timeout_secs"], 30);
    assert_eq!(get("piped").unwrap()["perm"], "read");
    assert_eq!(get("fails").unwrap()["perm"], "shell", "default perm is shell (P6)");
    // P7: no `timeout` means 60 s — the limit the runner enforces, as `slow`'s 1 s shows in
    // p7_timeout_is_124_and_the_group_is_gone.
    assert_eq!(get("fails").unwrap()["timeout_secs"], 60);
    assert_eq!(get("slow").unwrap()["timeout_secs"], 1);
    assert!(get("jira_search_v2").is_some(), "P2 sanitising");
    assert!(
        stderr(&o).contains("`jira.search v2` registered as `jira_search_v2`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn p2_e7_clash_is_refused_with_both_files_named_never_renamed() {
    let env = Env::new();
    let first = jira(&env);
    // A second config plugin (sorted after "jira") declares the same tool name.
    let second = plugin(
        &env.config().join("plugins"),
        "later",
        json!({"name": "later", "tools": [{"name": "jira_issue", "command": "echo second"}, {"name": "fresh", "command": "echo fresh"}]}),
        &[],
    );
    let o = env.cli().args(["tools", "list"]).output().unwrap();
    let err = stderr(&o);
    assert!(
        err.contains(&second.join("plugin.json").display().to_string())
            && err.contains(&first.join("plugin.json").display().to_string())
            && err.contains("clashes"),
        "{err}"
    );
    let out = stdout(&o);
    assert!(
        out.contains("fresh") && !out.contains("jira_issue_"),
        "no suffix rename: {out}"
    );
    let o = call(&env, "jira_issue", r#"{"key":"CST-1"}"#);
    assert!(stdout(&o).contains("args="), "the first plugin keeps the name");
}

#[test]
fn p7_timeout_over_600_is_an_error_naming_the_file() {
    let env = Env::new();
    let dir = plugin(
        &env.config().join("plugins"),
        "long",
        json!({"name": "long", "tools": [{"name": "too_long", "command": "true", "timeout": 601},
                                          {"name": "ok_tool", "command": "true", "timeout": 600}]}),
        &[],
    );
    let o = env.cli().args(["tools", "list"]).output().unwrap();
    let err = stderr(&o);
    assert!(
        err.contains(&dir.join("plugin.json").display().to_string()) && err.contains("600"),
        "{err}"
    );
    assert!(!stdout(&o).contains("too_long") && stdout(&o).contains("ok_tool"));
    let o = env.cli().args(["tools", "list", "--json"]).output().unwrap();
    let list: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let ok = list.iter().find(|t| t["name"] == "ok_tool").unwrap();
    assert_eq!(ok["timeout_secs"], 600, "600 is the largest allowed");
}

#[test]
fn p1_a_broken_plugin_json_is_reported_and_others_still_load() {
    let env = Env::new();
    jira(&env);
    let bad = env.config().join("plugins").join("broken");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("plugin.json"), "{\n \"name\": \"x\",\n oops }").unwrap();
    let o = env.cli().args(["tools", "list"]).output().unwrap();
    assert!(stderr(&o).contains(&bad.join("plugin.json").display().to_string()) && stderr(&o).contains("line 3"));
    assert!(stdout(&o).contains("jira_issue"));
}

#[test]
fn e1_minimal_profile_loads_no_extension() {
    let env = Env::new();
    jira(&env);
    ext_support::skill(
        &env.config().join("skills"),
        "s",
        "---\nname: s\ndescription: d\n---\nbody\n",
    );
    let o = env
        .cli()
        .args(["--tools", "minimal", "tools", "list"])
        .output()
        .unwrap();
    assert!(o.status.success());
    // Built-in tools stay; no extension (command, wasm, skill tool) is loaded.
    let out = stdout(&o);
    assert!(
        out.lines().all(|l| l.contains(" builtin ")) && !out.contains("jira") && !out.contains("skill "),
        "minimal loads no extension: {out}"
    );
    let o = env.cli().args(["--tools", "minimal", "status"]).output().unwrap();
    assert!(
        stdout(&o).starts_with("0 skills · 0 plugins (0 tools) · 0 MCP servers"),
        "{}",
        stdout(&o)
    );
    let o = env.cli().args(["status"]).output().unwrap();
    assert!(
        stdout(&o).starts_with("1 skill · 1 plugin (5 tools) · 0 MCP servers"),
        "{}",
        stdout(&o)
    );
}
