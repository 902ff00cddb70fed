//! Shared helpers of the `mcp_*` tests: the test server binary, mcp.json files, process checks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

/// The repository root (the workspace of crates).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Path of `cst-mcp-test-server`: `$CST_MCP_TEST_SERVER`, else built once with cargo (it is a
/// binary of another package, so `cargo test -p cst-agent` does not build it by itself).
pub fn test_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(p) = std::env::var("CST_MCP_TEST_SERVER") {
            return PathBuf::from(p);
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["build", "-q", "-p", "cst-mcp-test-server", "--message-format=json"])
            .current_dir(repo_root())
            .output()
            .expect("run cargo build -p cst-mcp-test-server");
        assert!(
            out.status.success(),
            "cargo build -p cst-mcp-test-server failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["reason"] == "compiler-artifact" && v["target"]["name"] == "cst-mcp-test-server" {
                if let Some(exe) = v["executable"].as_str() {
                    return PathBuf::from(exe);
                }
            }
        }
        panic!("cargo build did not report the cst-mcp-test-server executable");
    })
    .clone()
}

/// Is `pid` a live (not zombie) process?
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(proc_state(&stat), Some('Z') | Some('X')),
        Err(_) => false,
    }
}

/// Is `pid` an unreaped child of this test process (a zombie we own)?
pub fn our_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.to_string()) else {
        return false;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields.first() == Some(&"Z") && fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(std::process::id())
}

fn proc_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next())
}

/// Live processes whose command line contains `needle`.
pub fn processes_with_arg(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle) && running(pid) {
            out.push(pid);
        }
    }
    out
}

/// Live processes in process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // fields after the name: state ppid pgrp ...
        if f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) && running(pid) {
            out.push(pid);
        }
    }
    out
}

/// Poll `cond` for up to `secs` seconds (process exits are asynchronous).
pub fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() > end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Where the third-party peers are installed: `$CST_MCP_PEERS`, else `<repo>/target/mcp-peers`.
pub fn peers_dir() -> PathBuf {
    std::env::var("CST_MCP_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target").join("mcp-peers"))
}
