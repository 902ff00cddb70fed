//! Bench section of the extensions work (issue 3): discovery + `tools list` with 200 skills and
//! 50 plugins (target ≤ 30 ms), and a command tool's call overhead over the bare process.
//!
//! Run by `host/benches/tools.rs` (`cargo bench -p cst-agent --bench tools`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let _ = f(); // warm-up (page cache, lazy statics)
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                let _ = f();
                t.elapsed()
            })
            .collect(),
    )
}

fn write_skill(root: &Path, name: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: Benchmark skill {name}, does one small thing well.\n---\n# {name}\nBody.\n"),
    )
    .unwrap();
}

fn row(what: &str, d: Duration, note: &str) {
    println!("| {what:<58} | {:>9.2} ms | {note} |", d.as_secs_f64() * 1000.0);
}

pub fn run() {
    let root = tempfile::tempdir().unwrap();
    let config_home = root.path().join("config");
    let config = config_home.join("cst-agent");
    let ws = root.path().join("ws");
    for i in 0..100 {
        write_skill(&ws.join(".agent/skills"), &format!("ws-skill-{i:03}"));
        write_skill(&config.join("skills"), &format!("cfg-skill-{i:03}"));
    }
    for i in 0..50 {
        let dir = config.join("plugins").join(format!("plugin-{i:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        let tools: Vec<_> = (0..3)
            .map(|t| {
                json!({"name": format!("p{i:02}_tool{t}"), "description": "bench tool", "command": ["true"],
                       "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}})
            })
            .collect();
        std::fs::write(
            dir.join("plugin.json"),
            json!({"name": format!("plugin-{i:02}"), "tools": tools}).to_string(),
        )
        .unwrap();
    }
    // The bench is single-threaded here; the library reads the config dir from the env.
    std::env::set_var("XDG_CONFIG_HOME", &config_home);
    let opts = cst_agent::discovery::LoadOptions {
        workspace: std::fs::canonicalize(&ws).unwrap(),
        profile: cst_agent::discovery::ToolsProfile::Default,
    };

    println!("\n## extensions (issue 3)\n");
    println!("| {:<58} | {:>12} | note |", "what", "median");
    println!("|{}|{}|------|", "-".repeat(60), "-".repeat(14));

    let loaded = cst_agent::discovery::load(&opts);
    assert_eq!(loaded.skills.len(), 200);
    assert_eq!(loaded.plugins.len(), 50);
    let d = time(30, || cst_agent::discovery::load(&opts));
    row(
        "discovery::load, 200 skills + 50 plugins (150 tools)",
        d,
        "target ≤ 30 ms",
    );
    let d = time(30, || {
        let l = cst_agent::discovery::load(&opts);
        let mut out = String::new();
        for s in l.registry.specs() {
            out.push_str(&format!(
                "{:<32} {:<5} {:<8} {}\n",
                s.name,
                s.perm.as_str(),
                s.source.kind.as_str(),
                s.source.owner
            ));
        }
        out
    });
    row("discovery + `tools list` rendering (in process)", d, "target ≤ 30 ms");

    let bin = env!("CARGO_BIN_EXE_cst-agent");
    let d = time(10, || {
        let o = std::process::Command::new(bin)
            .env("XDG_CONFIG_HOME", &config_home)
            .arg("--workspace")
            .arg(&ws)
            .args(["tools", "list"])
            .output()
            .unwrap();
        assert!(o.status.success());
    });
    row("`cst-agent tools list` whole process", d, "includes process start");

    // Command tool call overhead over the bare process.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let bare = time(50, || std::process::Command::new("true").status().unwrap());
    row("bare spawn+wait of `true`", bare, "baseline");
    let ctx = cst_agent::tools::ToolContext::new(opts.workspace.clone());
    let via_tool = time(50, || {
        rt.block_on(loaded.registry.call("p00_tool0", json!({"x": 1}), &ctx))
            .unwrap()
    });
    row(
        "command tool `true` via Registry::call",
        via_tool,
        "validation, group, pipes, stdin",
    );
    // Signed: on a busy machine the two medians are within noise of each other.
    let diff_ms = (via_tool.as_secs_f64() - bare.as_secs_f64()) * 1000.0;
    println!(
        "| {:<58} | {diff_ms:>+9.2} ms | difference of the medians |",
        "command tool overhead over the bare process"
    );
}
