//! `mcp-serve` section of the tools bench: tool calls per second through `cst-agent mcp serve`
//! for a wasm tool (the text-stats example), side by side with the same work served by a Python
//! MCP server (`mcp` SDK 2.3, `MCPServer`: tests/mcp-serve/text_stats_server.py). Both are
//! stdio servers driven by the host's own MCP client (rmcp), one call at a time and 8 at once.
//!
//! `cargo bench -p cst-agent --bench tools -- mcp-serve`. The Python server needs
//! `target/mcp-clients/venv` (scripts/test-deps.sh); without it that row is skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cst_agent::discovery::{McpSource, Origin};
use cst_agent::mcp::{config::process_env, parse_sources, McpManager};
use cst_agent::tools::{Registry, ToolContext};
use serde_json::{json, Value};

const CALLS: usize = 500;
const PARALLEL: usize = 8;

pub fn run() {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-serve bench: no runtime: {e}");
            return;
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let Ok(tmp) = tempfile::tempdir() else { return };
    let (config, cache, ws) = (
        tmp.path().join("config"),
        tmp.path().join("cache"),
        tmp.path().join("ws"),
    );
    for d in [&config, &cache, &ws] {
        let _ = std::fs::create_dir_all(d);
    }
    let text: String = (0..100).map(|i| format!("line {i} of the benchmark file\n")).collect();
    let _ = std::fs::write(ws.join("notes.txt"), text);
    let cst = PathBuf::from(env!("CARGO_BIN_EXE_cst-agent"));
    let installed = std::process::Command::new(&cst)
        .env("XDG_CONFIG_HOME", &config)
        .env("XDG_CACHE_HOME", &cache)
        .args(["plugins", "install"])
        .arg(root.join("example-plugins/text-stats"))
        .output();
    if !installed.is_ok_and(|o| o.status.success()) {
        eprintln!("mcp-serve bench: cannot install text-stats (run example-plugins/build.sh); section skipped");
        return;
    }
    let mut servers = serde_json::Map::new();
    servers.insert(
        "cst".into(),
        json!({"command": cst, "args": ["--workspace", ws, "mcp", "serve"],
               "env": {"XDG_CONFIG_HOME": config, "XDG_CACHE_HOME": cache}}),
    );
    let python = root.join("target/mcp-clients/venv/bin/python");
    if python.is_file() {
        servers.insert(
            "py".into(),
            json!({"command": python, "args": [root.join("tests/mcp-serve/text_stats_server.py"), ws]}),
        );
    } else {
        eprintln!(
            "mcp-serve bench: {} missing; the Python row is skipped",
            python.display()
        );
    }
    rt.block_on(async {
        let registry = Arc::new(Registry::new());
        let m = manager(tmp.path(), servers, registry.clone());
        m.start_all();
        m.wait_ready(Duration::from_secs(60)).await;
        println!("## mcp serve: text_stats of one 100-line file over stdio (calls/s)");
        println!("| server | 1 at a time | {PARALLEL} at once | p50 latency | n |");
        println!("|---|---|---|---|---|");
        for (server, label) in [
            ("cst", "cst-agent mcp serve (wasm component)"),
            ("py", "Python mcp 2.3 MCPServer (same work in Python)"),
        ] {
            let tool = format!("mcp__{server}__text_stats");
            if registry.contains(&tool) {
                measure(&registry, &tool, &ws, label).await;
            }
        }
        println!("| Wassette | not run here (see docs/performance.md) | | | |");
        m.shutdown().await;
    });
}

fn manager(dir: &Path, servers: serde_json::Map<String, Value>, registry: Arc<Registry>) -> McpManager {
    let source = McpSource {
        file: dir.join("bench-mcp.json"),
        servers: Value::Object(servers),
        cwd_base: dir.to_path_buf(),
        default_cwd: dir.to_path_buf(),
        workspace: dir.to_path_buf(),
        contained: false,
        origin: Origin::ConfigDir,
    };
    let parsed = parse_sources(&[source], &process_env, &mut Vec::new());
    McpManager::new(registry, parsed)
}

async fn measure(registry: &Arc<Registry>, tool: &str, ws: &Path, label: &str) {
    let ctx = ToolContext::new(ws.to_path_buf());
    let args = json!({"paths": ["notes.txt"]});
    for _ in 0..20 {
        if let Err(e) = registry.call(tool, args.clone(), &ctx).await {
            eprintln!("mcp-serve bench: {tool} failed: {e}");
            return;
        }
    }
    let mut samples = Vec::with_capacity(CALLS);
    let start = Instant::now();
    for _ in 0..CALLS {
        let t = Instant::now();
        let _ = registry.call(tool, args.clone(), &ctx).await;
        samples.push(t.elapsed());
    }
    let serial = CALLS as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..PARALLEL {
        let (registry, ctx, args, tool) = (registry.clone(), ctx.clone(), args.clone(), tool.to_string());
        tasks.push(tokio::spawn(async move {
            for _ in 0..CALLS / PARALLEL {
                let _ = registry.call(&tool, args.clone(), &ctx).await;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let parallel = (CALLS / PARALLEL * PARALLEL) as f64 / start.elapsed().as_secs_f64();
    samples.sort();
    let p50 = samples[samples.len() / 2];
    println!(
        "| {label} | {serial:.0} | {parallel:.0} | {:.2} ms | {CALLS} |",
        p50.as_secs_f64() * 1e3
    );
}
