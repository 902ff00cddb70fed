//! Wasm runtime section of the bench (issue 2, item 11).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cst_agent::plugins::{install, load_plugin_dir};
use cst_agent::tools::{Registry, ToolContext};
use cst_agent::wasm::{cache, engine};
use serde_json::json;

use super::{fmt, percentile, Bench};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-plugins")
}

fn built(crate_name: &str) -> PathBuf {
    let p = examples().join(format!("target/wasm32-wasip2/release/{crate_name}.wasm"));
    assert!(
        p.is_file(),
        "{} is missing: run example-plugins/build.sh first",
        p.display()
    );
    p
}

pub fn run(b: &Bench) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("config");
    let cache_dir = tmp.path().join("cache");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    // Before the engine or any path is created: everything lives in the temp dir.
    std::env::set_var("XDG_CONFIG_HOME", &config);
    std::env::set_var("XDG_CACHE_HOME", &cache_dir);
    let plugins_dir = config.join("cst-agent/plugins");
    b.row(
        "allocator",
        if engine::uses_pooling() { "pooling" } else { "on-demand" },
        "pooling falls back to on-demand when it cannot reserve memory",
    );

    // A hostile-test copy with a 1 s timeout: its echo is the tiny tool, its spin the loop.
    let src = tmp.path().join("src/hostile-test");
    std::fs::create_dir_all(&src).expect("src");
    std::fs::copy(built("hostile_test"), src.join("hostile-test.wasm")).expect("copy");
    std::fs::write(
        src.join("plugin.json"),
        json!({"name": "hostile-test", "wasm": "hostile-test.wasm", "timeout": 1}).to_string(),
    )
    .expect("plugin.json");
    let installed =
        b.rt.block_on(install::install(&src, &plugins_dir, &ws))
            .expect("install hostile-test");
    let registry = Arc::new(Registry::new());
    let mut warnings = Vec::new();
    load_plugin_dir(&installed.dir, &registry, &mut warnings).expect("load");
    let ctx = ToolContext::new(ws.clone());

    // 1. Warm call through the registry (lookup, schema validation, fresh Store, instantiate,
    // call) of a tiny tool: test-bad-tools' `good_tool` returns a constant, no I/O, no log.
    let tiny = tmp.path().join("src/tiny");
    std::fs::create_dir_all(&tiny).expect("src");
    std::fs::copy(built("test_bad_tools"), tiny.join("tiny.wasm")).expect("copy");
    std::fs::write(
        tiny.join("plugin.json"),
        json!({"name": "tiny", "wasm": "tiny.wasm"}).to_string(),
    )
    .expect("plugin.json");
    let tiny_dir =
        b.rt.block_on(install::install(&tiny, &plugins_dir, &ws))
            .expect("install tiny")
            .dir;
    load_plugin_dir(&tiny_dir, &registry, &mut warnings).expect("load tiny");
    let args = json!({"text": "{\"hello\":\"world\"}"});
    let n = 3000;
    let mut samples = Vec::with_capacity(n);
    b.rt.block_on(async {
        for i in 0..n + 300 {
            let t = Instant::now();
            let r = registry.call("good_tool", args.clone(), &ctx).await;
            let d = t.elapsed();
            assert!(r.is_ok(), "{r:?}");
            if i >= 300 {
                samples.push(d);
            }
        }
    });
    let wasm_p50 = percentile(&mut samples, 50.0);
    b.row(
        "wasm tool call via registry, p50",
        fmt(wasm_p50),
        format!("n={n}; target ≤ 50 µs"),
    );
    b.row(
        "wasm tool call via registry, p99",
        fmt(percentile(&mut samples, 99.0)),
        "",
    );

    // 2. The same work by spawning a native process: /bin/cat fed the JSON.
    if Path::new("/bin/cat").exists() {
        let payload = args.to_string();
        let n = 300;
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let mut child = Command::new("/bin/cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn cat");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(payload.as_bytes())
                .expect("write");
            let mut out = String::new();
            child
                .stdout
                .take()
                .expect("stdout")
                .read_to_string(&mut out)
                .expect("read");
            child.wait().expect("wait");
            samples.push(t.elapsed());
        }
        let p50 = percentile(&mut samples, 50.0);
        b.row("spawn /bin/cat with the JSON, p50", fmt(p50), format!("n={n}"));
        b.row(
            "spawn /bin/cat with the JSON, p99",
            fmt(percentile(&mut samples, 99.0)),
            "",
        );
        b.row(
            "ratio spawn / wasm call (p50)",
            format!("{:.1}x", p50.as_secs_f64() / wasm_p50.as_secs_f64()),
            "",
        );
    }

    // 3. Compile vs cached load of each example component.
    let engine = engine::engine().expect("engine");
    for (name, krate) in [
        ("text-stats", "text_stats"),
        ("json-query", "json_query"),
        ("regex-search", "regex_search"),
        ("hostile-test", "hostile_test"),
    ] {
        let path = built(krate);
        let bytes = std::fs::read(&path).expect("read wasm");
        let sha = cache::sha256_hex(&bytes);
        let t = Instant::now();
        let component = cache::compile(engine, &path, &bytes, cache::Progress::Quiet).expect("compile");
        let compile = t.elapsed();
        let artifact = cache::artifact_path(engine, &sha).expect("artifact path");
        cache::store(&component, &artifact).expect("store");
        let mut loads = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            let (_, origin) = cache::load_or_compile(&path, &bytes, &sha, cache::Progress::Quiet).expect("load");
            loads.push(t.elapsed());
            assert_eq!(origin, cache::Origin::Cached);
        }
        b.row(
            format!("{name} ({} KiB): compile / cached load", bytes.len() / 1024),
            format!("{} / {}", fmt(compile), fmt(percentile(&mut loads, 50.0))),
            "cached load = checksum check + deserialize_file",
        );
    }

    // 4. How long after its deadline an infinite loop is stopped (timeout 1 s).
    let mut late = Vec::new();
    b.rt.block_on(async {
        for _ in 0..5 {
            let t = Instant::now();
            let r = registry.call("hostile_spin", json!({}), &ctx).await;
            let d = t.elapsed();
            assert!(r.is_err());
            late.push(d.saturating_sub(Duration::from_secs(1)));
        }
    });
    let worst = *late.iter().max().unwrap_or(&Duration::ZERO);
    b.row(
        "infinite loop stopped after its deadline, median / max",
        format!("{} / {}", fmt(percentile(&mut late, 50.0)), fmt(worst)),
        "n=5; target ≤ 20 ms",
    );

    // 5. `cst-agent tools list` wall time with 50 installed plugins.
    let base =
        b.rt.block_on(install::install(&examples().join("text-stats"), &plugins_dir, &ws))
            .expect("install text-stats");
    std::fs::remove_dir_all(&installed.dir).expect("remove hostile copy");
    std::fs::remove_dir_all(&tiny_dir).expect("remove tiny");
    for i in 0..50 {
        let name = format!("stats-{i:02}");
        let dir = plugins_dir.join(&name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in ["plugin.json", "text-stats.wasm", "installed.json"] {
            let text_or_bytes = std::fs::read(base.dir.join(f)).expect("read");
            std::fs::write(dir.join(f), text_or_bytes).expect("write");
        }
        // A distinct plugin and tool name each, as 50 real plugins would have.
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("plugin.json")).expect("read")).expect("json");
        m["name"] = json!(name);
        std::fs::write(dir.join("plugin.json"), m.to_string()).expect("write");
        let mut r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("installed.json")).expect("read")).expect("json");
        r["name"] = json!(name);
        r["tools"][0]["name"] = json!(format!("text_stats_{i:02}"));
        // The copy has a new mtime: record it as install would.
        let meta = std::fs::metadata(dir.join("text-stats.wasm")).expect("meta");
        let mt = meta
            .modified()
            .expect("mtime")
            .duration_since(std::time::UNIX_EPOCH)
            .expect("epoch");
        r["mtime"] = json!([mt.as_secs(), mt.subsec_nanos()]);
        std::fs::write(dir.join("installed.json"), r.to_string()).expect("write");
    }
    std::fs::remove_dir_all(&base.dir).expect("remove base");
    let bin = env!("CARGO_BIN_EXE_cst-agent");
    let mut samples = Vec::new();
    for i in 0..21 {
        let t = Instant::now();
        let out = Command::new(bin)
            .args(["--workspace", &ws.to_string_lossy(), "tools", "list"])
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_CACHE_HOME", &cache_dir)
            .output()
            .expect("run tools list");
        let d = t.elapsed();
        assert!(out.status.success());
        if i == 0 {
            let listed = String::from_utf8_lossy(&out.stdout).lines().count();
            assert!(
                listed >= 50,
                "expected 50 wasm tools, got {listed}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            samples.push(d);
        }
    }
    b.row(
        "`cst-agent tools list`, 50 wasm plugins, median",
        fmt(percentile(&mut samples, 50.0)),
        "n=20; target ≤ 30 ms; reads install records only",
    );
}
