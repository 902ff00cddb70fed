//! MCP section of the tools bench: one stdio `tools/call` round trip through the registry
//! (p50/p99), and the time for 1 vs 5 servers to become ready in parallel (M7).
//!
//! Run alone with `cargo bench -p cst-agent --bench mcp_section`; `benches/tools.rs` may also
//! include it as a module and call [`run`]. The test server comes from `$CST_MCP_TEST_SERVER`
//! or is built with `cargo build --release -p cst-mcp-test-server`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cst_agent::discovery::{McpSource, Origin};
use cst_agent::mcp::{config::process_env, parse_sources, McpManager};
use cst_agent::tools::{Registry, ToolContext};
use serde_json::{json, Value};

const CALLS: usize = 1000;
const READY_ROUNDS: usize = 5;

pub fn run() {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp bench: no runtime: {e}");
            return;
        }
    };
    let Some(server) = test_server() else {
        eprintln!("mcp bench: cst-mcp-test-server not available; section skipped");
        return;
    };
    rt.block_on(async {
        println!("## MCP (stdio, cst-mcp-test-server)");
        println!("| measurement | p50 | p99 / max | n |");
        println!("|---|---|---|---|");
        round_trip(&server).await;
        for n in [1usize, 5] {
            ready_time(&server, n).await;
        }
    });
}

fn test_server() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CST_MCP_TEST_SERVER") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent()?.to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "cst-mcp-test-server",
            "--message-format=json",
        ])
        .current_dir(&root)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).lines().find_map(|line| {
        let v: Value = serde_json::from_str(line).ok()?;
        (v["target"]["name"] == "cst-mcp-test-server")
            .then(|| v["executable"].as_str().map(PathBuf::from))
            .flatten()
    })
}

fn manager(server: &Path, n: usize, registry: Arc<Registry>) -> McpManager {
    let mut servers = serde_json::Map::new();
    for i in 0..n {
        servers.insert(format!("s{i}"), json!({"command": server.to_string_lossy()}));
    }
    let dir = std::env::temp_dir();
    let source = McpSource {
        file: dir.join("bench-mcp.json"),
        servers: Value::Object(servers),
        cwd_base: dir.clone(),
        default_cwd: dir.clone(),
        workspace: dir,
        contained: false,
        origin: Origin::ConfigDir,
    };
    let parsed = parse_sources(&[source], &process_env, &mut Vec::new());
    McpManager::new(registry, parsed)
}

async fn round_trip(server: &Path) {
    let registry = Arc::new(Registry::new());
    let m = manager(server, 1, registry.clone());
    m.start_all();
    m.wait_ready(Duration::from_secs(30)).await;
    let ctx = ToolContext::new(std::env::temp_dir());
    let args = json!({"text": "benchmark payload"});
    for _ in 0..50 {
        let _ = registry.call("mcp__s0__echo", args.clone(), &ctx).await;
    }
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        if registry.call("mcp__s0__echo", args.clone(), &ctx).await.is_err() {
            eprintln!("mcp bench: call failed");
            break;
        }
        samples.push(t.elapsed());
    }
    row("stdio tools/call round trip (echo, via Registry::call)", &mut samples);
    println!("| wasm call of the same work | see the wasm rows (tiny tool via Registry::call) | | |");
    m.shutdown().await;
}

async fn ready_time(server: &Path, n: usize) {
    let mut samples = Vec::new();
    for _ in 0..READY_ROUNDS {
        let registry = Arc::new(Registry::new());
        let m = manager(server, n, registry);
        let t = Instant::now();
        m.start_all();
        m.wait_ready(Duration::from_secs(30)).await;
        samples.push(t.elapsed());
        m.shutdown().await;
    }
    row(
        &format!("{n} server(s) ready (spawn + initialize + tools/list, parallel)"),
        &mut samples,
    );
}

fn row(label: &str, samples: &mut [Duration]) {
    if samples.is_empty() {
        return;
    }
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "| {label} | {:.3} ms | {:.3} ms | {} |",
        pick(0.5).as_secs_f64() * 1e3,
        pick(0.99).as_secs_f64() * 1e3,
        samples.len()
    );
}
