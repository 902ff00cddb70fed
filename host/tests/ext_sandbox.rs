//! The shell sandbox (P11): a sandboxed command may write only the workspace and temp dirs; reads
//! stay open; the host itself is not confined. Checked in folders outside every temp dir, on the
//! process runner, through a gate, and end to end through `cst-agent exec`. Without the full
//! sandbox (bubblewrap + seccomp) the tests skip loudly, except under `CI` (set by `.ci/run`),
//! where they fail. The attacks of issue 13 are in `sandbox_escapes.rs`.
#![cfg(target_os = "linux")]

mod exec_support;
mod ext_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cst_test_support::{call, Reply, ScriptedServer};
use futures::future::BoxFuture;
use serde_json::{json, Value};

use cst_agent::process::{run_captured, ProcessSpec, SandboxPolicy};
use cst_agent::sandbox::status;
use cst_agent::tools::{Confinement, Decision, PermissionGate, ToolContext, ToolSpec};
use tokio_util::sync::CancellationToken;

/// `.ci/run` sets `CI=true`: CI machines have Landlock, bubblewrap and user namespaces, so there a
/// test that cannot run fails instead of skipping.
fn in_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok(v) if !v.is_empty() && v != "false" && v != "0")
}

/// A test that cannot run here: fails under CI, else says so loudly and returns false (skip).
fn cannot_run(why: &str) -> bool {
    assert!(!in_ci(), "{why} (CI is set, where this test must run)");
    eprintln!("\n*** SKIPPED (outside CI only): {why} ***\n");
    false
}

/// Whether the full sandbox runs here (else skip, or fail under CI).
fn landlock_or_skip() -> bool {
    let st = status();
    if st.available() {
        eprintln!("sandbox: {st}");
        true
    } else {
        cannot_run(&format!("this machine has no full process sandbox: {st}"))
    }
}

/// A fresh folder outside every folder the sandbox lets a command write, so a write there
/// succeeding or failing is the sandbox's doing, not /tmp's: under the target dir
/// (`CARGO_TARGET_TMPDIR`), else under `$HOME`. Workspaces of these tests live in it too.
fn scratch() -> Option<tempfile::TempDir> {
    let writable: Vec<PathBuf> = cst_agent::sandbox::writable_dirs(Path::new("/nonexistent-ws"), true)
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect();
    let target_tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let _ = std::fs::create_dir_all(&target_tmp);
    let candidates = [Some(target_tmp), std::env::var_os("HOME").map(PathBuf::from)];
    for base in candidates.into_iter().flatten() {
        let Ok(real) = std::fs::canonicalize(&base) else {
            continue;
        };
        if writable.iter().any(|w| real.starts_with(w)) {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new().prefix(".cst-ext-sandbox-").tempdir_in(&real) {
            return Some(dir);
        }
    }
    cannot_run("the target dir and $HOME are both inside a temp dir (or not writable)");
    None
}

fn spec(script: &str, ws: &Path, sandbox: bool) -> ProcessSpec {
    ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        cwd: ws.to_path_buf(),
        env: Vec::new(),
        stdin: Vec::new(),
        timeout: Duration::from_secs(20),
        sandbox: sandbox.then(|| SandboxPolicy::workspace(ws)),
        cancel: CancellationToken::new(),
    }
}

/// The kernel's Landlock ABI, asked here rather than through `cst_agent::sandbox`:
/// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION).
fn kernel_landlock_abi() -> Option<i64> {
    // SAFETY: this query form reads and writes no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v as i64)
}

#[test]
fn p11_status_says_what_is_enforced() {
    let out = ext_support::Env::new().cli().arg("status").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("sandbox: "))
        .unwrap_or_else(|| panic!("no sandbox line in `cst-agent status`: {stdout}"));
    let kernel = kernel_landlock_abi();
    // bubblewrap runs here when its probe (namespaces, no capabilities) succeeds.
    let bwrap = std::process::Command::new("/usr/bin/bwrap")
        .args([
            "--unshare-all",
            "--unshare-user",
            "--ro-bind",
            "/",
            "/",
            "--",
            "/bin/true",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if bwrap {
        assert!(
            line.starts_with("sandbox: bubblewrap ") && line.contains(" + seccomp ("),
            "{line}"
        );
    } else {
        assert!(!in_ci(), "CI machines have bubblewrap and user namespaces: {line}");
        match kernel {
            Some(abi) => assert!(
                line.starts_with(&format!("sandbox: partial: landlock ABI {abi} ")),
                "{line}"
            ),
            None => assert!(line.starts_with("sandbox: none ("), "{line}"),
        }
    }
    assert!(
        kernel.is_some() || !in_ci(),
        "CI machines have Landlock; the kernel says none here"
    );
    // Where securityfs is mounted, the list of active LSMs must agree with the kernel's answer.
    if let Ok(lsm) = std::fs::read_to_string("/sys/kernel/security/lsm") {
        assert_eq!(
            lsm.trim().split(',').any(|m| m == "landlock"),
            kernel.is_some(),
            "active LSMs: {lsm}"
        );
    }
}

#[tokio::test]
async fn p11_writes_only_in_workspace_and_temp_reads_open() {
    if !landlock_or_skip() {
        return;
    }
    let Some(scratch) = scratch() else { return };
    let ws = scratch.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let outside = scratch.path().join("escape.txt");
    let tmp_file = std::env::temp_dir().join(format!("cst-ext-sandbox-{}", std::process::id()));
    let script = format!(
        "echo in > inside.txt && echo ws-ok; \
         echo out > '{out}' && echo outside-WRITTEN || echo outside-denied; \
         echo t > '{tmp}' && echo tmp-ok; \
         head -c 5 /etc/passwd >/dev/null && echo read-ok; \
         echo x > /dev/null && echo devnull-ok",
        out = outside.display(),
        tmp = tmp_file.display()
    );
    let out = run_captured(spec(&script, &ws, true)).await.unwrap();
    let _ = std::fs::remove_file(&tmp_file);
    let escaped = outside.exists();
    let _ = std::fs::remove_file(&outside);
    assert!(!escaped, "sandboxed command wrote outside: {}", out.output);
    for want in ["ws-ok", "outside-denied", "tmp-ok", "read-ok", "devnull-ok"] {
        assert!(out.output.contains(want), "{want} missing in {}", out.output);
    }
    assert_eq!(std::fs::read_to_string(ws.join("inside.txt")).unwrap(), "in\n");

    // Without the sandbox the same write succeeds (so the test above proves the sandbox).
    let out = run_captured(spec(&format!("echo out > '{}'", outside.display()), &ws, false))
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
                confinement: Confinement::ProcessSandbox,
            }
        })
    }
}

#[tokio::test]
async fn p11_command_tool_runs_sandboxed_when_the_gate_says_so() {
    if !landlock_or_skip() {
        return;
    }
    let Some(scratch) = scratch() else { return };
    let lock = ext_support::env_lock();
    let config_home = scratch.path().join("config");
    std::env::set_var("XDG_CONFIG_HOME", &config_home);
    let ws = scratch.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let outside = scratch.path().join("escape.txt");
    ext_support::plugin(
        &config_home.join("cst-agent/plugins"),
        "writer",
        json!({"name": "writer", "tools": [{"name": "write_both",
            "command": format!("echo a > \"$CST_WORKSPACE/in-ws.txt\"; echo b > '{}' || echo denied", outside.display())}]}),
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

/// What one `cst-agent exec --approval MODE` run left behind: its model called a config-dir
/// plugin.json command tool of `perm` `shell` (`p1`) and `run_shell` (`s1`), each writing one
/// file in the workspace and one in `outside` (neither the workspace nor a temp dir).
struct ExecWrites {
    fixture: exec_support::Fixture,
    outside: PathBuf,
    plugin_result: String,
    shell_result: String,
}

fn exec_writing_both(scratch: &Path, mode: &str) -> ExecWrites {
    let outside = scratch.join(format!("outside-{mode}"));
    std::fs::create_dir_all(&outside).unwrap();
    let script = |who: &str| {
        format!(
            "printf {who} > in-ws-{who}.txt && echo inside-ok; \
             printf {who} > '{out}/{who}.txt' && echo outside-written || echo outside-denied",
            out = outside.display()
        )
    };
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![
            call("p1", "write_both", json!({})),
            call("s1", "run_shell", json!({"command": script("shell")})),
        ]),
        Reply::text("Written."),
    ]);
    let ws = tempfile::Builder::new().prefix("ws-").tempdir_in(scratch).unwrap();
    let fixture = exec_support::Fixture::with_ws(&server, ws);
    ext_support::plugin(
        &fixture.config_dir().join("plugins"),
        "writer",
        json!({"name": "writer", "description": "writes files", "tools": [{"name": "write_both",
            "description": "Write a file in the workspace and one outside it",
            "perm": "shell", "command": script("plugin")}]}),
        &[],
    );
    // Trusted, so the command tool starts in the workspace (P9) as `run_shell` does.
    let trusted = fixture.run(&["plugins", "trust"]);
    assert!(trusted.status.success(), "{}", exec_support::text(&trusted.stderr));
    let out = fixture.run(&["exec", "--approval", mode, "write the files"]);
    assert_eq!(out.status.code(), Some(0), "{}", exec_support::text(&out.stderr));
    let reqs = server.requests();
    let result = |id: &str| {
        reqs.get(1)
            .and_then(|r| r.tool_result(id))
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    let (plugin_result, shell_result) = (result("p1"), result("s1"));
    server.finish();
    ExecWrites {
        fixture,
        outside,
        plugin_result,
        shell_result,
    }
}

/// P11 end to end, through the real approval gate of a headless session: in `auto` a `shell`
/// command tool and `run_shell` run without asking but may write only the workspace (and temp);
/// `--approval full` runs them unconfined, so the same writes outside do happen.
#[test]
fn p11_exec_auto_sandboxes_shell_calls_and_full_does_not() {
    if !landlock_or_skip() {
        return;
    }
    let Some(scratch) = scratch() else { return };

    let auto = exec_writing_both(scratch.path(), "auto");
    let ws = auto.fixture.ws();
    for (who, result) in [("plugin", &auto.plugin_result), ("shell", &auto.shell_result)] {
        assert!(
            result.contains("inside-ok") && result.contains("outside-denied"),
            "{who} in auto: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join(format!("in-ws-{who}.txt"))).unwrap(),
            who
        );
        assert!(
            !auto.outside.join(format!("{who}.txt")).exists(),
            "P11: the {who} call in auto wrote outside the workspace: {result}"
        );
    }

    let full = exec_writing_both(scratch.path(), "full");
    for (who, result) in [("plugin", &full.plugin_result), ("shell", &full.shell_result)] {
        assert!(
            result.contains("inside-ok") && result.contains("outside-written"),
            "{who} in full: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(full.outside.join(format!("{who}.txt"))).unwrap(),
            who,
            "--approval full runs unsandboxed"
        );
    }
}
