//! The shell sandbox (P11): under Landlock a command may write only the workspace and the temp
//! dirs; reads stay open; the host itself is not confined.
#![cfg(target_os = "linux")]

mod ext_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use cst_agent::process::{run_captured, ProcessSpec};
use cst_agent::sandbox::{status, SandboxStatus};
use cst_agent::tools::{Confinement, Decision, PermissionGate, ToolContext, ToolSpec};
use tokio_util::sync::CancellationToken;

/// Skip (with the reason printed) only when the kernel has no Landlock.
fn landlock_or_skip() -> bool {
    match status() {
        SandboxStatus::Landlock { abi } => {
            eprintln!("sandbox: landlock ABI {abi}");
            true
        }
        SandboxStatus::Unavailable(why) => {
            eprintln!("SKIPPED: this kernel has no usable landlock: {why}");
            false
        }
    }
}

/// A folder outside every temp dir (under $HOME), so "writable" is not explained by /tmp.
fn home_scratch() -> Option<(tempfile::TempDir, PathBuf)> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let temp_dirs = cst_agent::sandbox::writable_dirs(Path::new("/nonexistent-ws"));
    if temp_dirs.iter().any(|t| home.starts_with(t)) {
        eprintln!(
            "SKIPPED: $HOME ({}) is inside a temp dir, which the sandbox may write",
            home.display()
        );
        return None;
    }
    let d = tempfile::Builder::new()
        .prefix(".cst-ext-sandbox-")
        .tempdir_in(&home)
        .ok()?;
    Some((d, home))
}

fn spec(script: &str, ws: &Path, sandbox: bool) -> ProcessSpec {
    ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        cwd: ws.to_path_buf(),
        env: Vec::new(),
        stdin: Vec::new(),
        timeout: Duration::from_secs(20),
        sandbox: sandbox.then(|| ws.to_path_buf()),
        cancel: CancellationToken::new(),
    }
}

#[test]
fn p11_status_names_the_landlock_abi() {
    let s = status();
    let text = s.to_string();
    match s {
        SandboxStatus::Landlock { abi } => assert_eq!(text, format!("landlock ABI {abi}")),
        SandboxStatus::Unavailable(_) => assert!(text.starts_with("none (")),
    }
}

#[tokio::test]
async fn p11_writes_only_in_workspace_and_temp_reads_open() {
    if !landlock_or_skip() {
        return;
    }
    let Some((scratch, home)) = home_scratch() else { return };
    let ws = scratch.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let outside = home.join(format!(".cst-ext-sandbox-escape-{}", std::process::id()));
    let tmp_file = std::env::temp_dir().join(format!("cst-ext-sandbox-{}", std::process::id()));
    let script = format!(
        "echo in > inside.txt && echo ws-ok; \
         echo out > {out} && echo home-WRITTEN || echo home-denied; \
         echo t > {tmp} && echo tmp-ok; \
         head -c 5 /etc/passwd >/dev/null && echo read-ok; \
         echo x > /dev/null && echo devnull-ok",
        out = outside.display(),
        tmp = tmp_file.display()
    );
    let out = run_captured(spec(&script, &ws, true)).await.unwrap();
    let _ = std::fs::remove_file(&tmp_file);
    let escaped = outside.exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!escaped, "sandboxed command wrote to $HOME: {}", out.output);
    for want in ["ws-ok", "home-denied", "tmp-ok", "read-ok", "devnull-ok"] {
        assert!(out.output.contains(want), "{want} missing in {}", out.output);
    }
    assert_eq!(std::fs::read_to_string(ws.join("inside.txt")).unwrap(), "in\n");

    // Without the sandbox the same write succeeds (so the test above proves the sandbox).
    let out = run_captured(spec(&format!("echo out > {}", outside.display()), &ws, false))
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert!(outside.exists(), "the host (and unsandboxed commands) are not confined");
    std::fs::remove_file(&outside).unwrap();
}

/// The gate the approval layer will provide: here it always asks for the sandbox.
struct SandboxAll;
impl PermissionGate for SandboxAll {
    fn check<'a>(&'a self, _spec: &'a ToolSpec, _args: &'a Value) -> BoxFuture<'a, Decision> {
        Box::pin(async {
            Decision::Allow {
                confinement: Confinement::LandlockWrites,
            }
        })
    }
}

#[tokio::test]
async fn p11_command_tool_runs_sandboxed_when_the_gate_says_so() {
    if !landlock_or_skip() {
        return;
    }
    let Some((scratch, home)) = home_scratch() else { return };
    let lock = ext_support::env_lock();
    let config_home = scratch.path().join("config");
    std::env::set_var("XDG_CONFIG_HOME", &config_home);
    let ws = scratch.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let outside = home.join(format!(".cst-ext-sandbox-tool-{}", std::process::id()));
    ext_support::plugin(
        &config_home.join("cst-agent/plugins"),
        "writer",
        json!({"name": "writer", "tools": [{"name": "write_both",
            "command": format!("echo a > in-ws.txt; echo b > {} || echo denied", outside.display())}]}),
        &[],
    );
    let l = cst_agent::discovery::load(&cst_agent::discovery::LoadOptions {
        workspace: ws.clone(),
        profile: cst_agent::discovery::ToolsProfile::Default,
    });
    // The config dir is read only while loading.
    drop(lock);
    let mut ctx = ToolContext::new(ws.clone());
    ctx.gate = Some(Arc::new(SandboxAll));
    let out = l.registry.call("write_both", json!({}), &ctx).await.unwrap();
    let escaped = outside.exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!escaped && out.contains("denied"), "{out}");
    assert!(ws.join("in-ws.txt").exists());
}
