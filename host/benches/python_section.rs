//! Python section of the bench (issue 7): the csv-summary example as a wasm component (warm,
//! cached) against the same tool as a spawned `python3` process; compile vs cached load.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use cst_agent::plugins::{install, load_plugin_dir};
use cst_agent::tools::{Registry, ToolContext};
use cst_agent::wasm::{cache, engine};
use serde_json::json;

use super::{fmt, percentile, Bench};

pub fn run(b: &Bench) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-plugins/csv-summary");
    let wasm = example.join("wasm/csv_summary.wasm");
    assert!(
        wasm.is_file() && example.join("cst_plugin").is_dir(),
        "{} is missing: run scripts/test-deps.sh (it builds the Python example)",
        wasm.display()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    std::env::set_var("XDG_CONFIG_HOME", tmp.path().join("config"));
    std::env::set_var("XDG_CACHE_HOME", tmp.path().join("cache"));
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("data.csv"), "a,b\n1,2\n3,4\n").expect("csv");

    // One-time compile of the ~18 MB component vs its cached load.
    let engine = engine::engine().expect("engine");
    let bytes = std::fs::read(&wasm).expect("read wasm");
    let t = Instant::now();
    let component = cache::compile(engine, &wasm, &bytes, cache::Progress::Quiet).expect("compile");
    let compile = t.elapsed();
    let sha = cache::sha256_hex(&bytes);
    cache::store(&component, &cache::artifact_path(engine, &sha).expect("path")).expect("store");
    let mut loads = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        cache::load_or_compile(&wasm, &bytes, &sha, cache::Progress::Quiet).expect("load");
        loads.push(t.elapsed());
    }
    b.row(
        format!("python csv-summary ({} KiB): compile / cached load", bytes.len() / 1024),
        format!("{} / {}", fmt(compile), fmt(percentile(&mut loads, 50.0))),
        "componentize-py component",
    );

    // Warm call of the component through the registry.
    let plugins_dir = tmp.path().join("config/cst-agent/plugins");
    let installed =
        b.rt.block_on(install::install(&example.join("wasm"), &plugins_dir, &ws))
            .expect("install");
    let registry = Arc::new(Registry::new());
    load_plugin_dir(&installed.dir, &registry, &mut Vec::new()).expect("load");
    let ctx = ToolContext::new(ws.clone());
    let args = json!({"path": "data.csv", "rows": 1});
    let n = 200;
    let mut samples = Vec::new();
    b.rt.block_on(async {
        for i in 0..n + 20 {
            let t = Instant::now();
            let r = registry.call("csv_head", args.clone(), &ctx).await;
            assert!(r.is_ok(), "{r:?}");
            if i >= 20 {
                samples.push(t.elapsed());
            }
        }
    });
    let wasm_p50 = percentile(&mut samples, 50.0);
    b.row(
        "python tool as a component, warm call p50",
        fmt(wasm_p50),
        format!("n={n}"),
    );

    // The same tool as a classic plugin.json command: a spawned python3 process.
    let python = which_python();
    let n = 30;
    let mut spawns = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let mut child = Command::new(&python)
            .arg(example.join("app.py"))
            .arg("csv_head")
            .current_dir(&ws)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn python3");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(args.to_string().as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success());
        spawns.push(t.elapsed());
    }
    let spawn_p50 = percentile(&mut spawns, 50.0);
    b.row(
        "python tool as a spawned python3, p50",
        fmt(spawn_p50),
        format!(
            "n={n}; {}; ratio {:.1}x",
            python,
            spawn_p50.as_secs_f64() / wasm_p50.as_secs_f64()
        ),
    );
}

/// The real interpreter, not a version-manager shim (a pyenv shim adds ~80 ms per spawn).
fn which_python() -> String {
    Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "python3".into())
}
