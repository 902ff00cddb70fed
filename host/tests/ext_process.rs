//! The native process runner (P7, P10): order, cap, bounded memory, deadline, no survivors.
//! Linux only because survivors are found through /proc (by a marker in their environment: where
//! bubblewrap runs, a command's `$$` is a pid of its own PID namespace).
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use cst_agent::process::{run_captured, ProcessOutput, ProcessSpec};
use tokio_util::sync::CancellationToken;

static MARKS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn spec(script: &str, dir: &Path, timeout_ms: u64) -> ProcessSpec {
    let n = MARKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        cwd: dir.to_path_buf(),
        env: vec![
            ("EXT_TEST".into(), "yes".into()),
            ("EXT_MARK".into(), format!("{}-{n}", std::process::id())),
        ],
        stdin: Vec::new(),
        timeout: Duration::from_millis(timeout_ms),
        sandbox: None,
        cancel: CancellationToken::new(),
    }
}

/// Run with a hang guard: a runner that hangs fails the test instead of blocking CI.
async fn run(s: ProcessSpec) -> ProcessOutput {
    tokio::time::timeout(Duration::from_secs(30), run_captured(s))
        .await
        .expect("the runner hung")
        .expect("the runner failed")
}

/// The marker in the environment of every process `s` starts.
fn mark(s: &ProcessSpec) -> String {
    s.env
        .iter()
        .find(|(k, _)| k == "EXT_MARK")
        .map(|(k, v)| format!("{k}={v}"))
        .expect("spec() sets EXT_MARK")
}

/// Processes carrying `mark` in their environment that are still running (zombies waiting for a
/// reaper don't count).
fn live_marked(mark: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if !env.split(|b| *b == 0).any(|v| v == mark.as_bytes()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else { continue };
        if !stat[close + 2..].starts_with('Z') {
            out.push(stat.clone());
        }
    }
    out
}

#[tokio::test]
async fn p10_stdout_and_stderr_in_order_with_stdin_and_env() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec(
        "echo one; echo two >&2; echo three; cat; echo \" $EXT_TEST\" >&2; pwd",
        d.path(),
        10_000,
    );
    s.stdin = br#"{"k":1}"#.to_vec();
    let out = run(s).await;
    let cwd = std::fs::canonicalize(d.path()).unwrap();
    assert_eq!(
        out.output,
        format!("one\ntwo\nthree\n{{\"k\":1}} yes\n{}\n", cwd.display())
    );
    assert_eq!(out.exit_code, Some(0));
    assert!(!out.timed_out && !out.cancelled);
}

#[tokio::test]
async fn p10_nonzero_exit_code_and_signal() {
    let d = tempfile::tempdir().unwrap();
    let out = run(spec("echo bad; exit 3", d.path(), 10_000)).await;
    assert_eq!((out.output.as_str(), out.exit_code), ("bad\n", Some(3)));
    let out = run(spec("kill -9 $$", d.path(), 10_000)).await;
    assert_eq!(out.exit_code, Some(128 + 9));
}

#[tokio::test]
async fn p10_fifty_megabytes_are_capped_with_marker() {
    let d = tempfile::tempdir().unwrap();
    // 50 MiB on stdout and 1 MiB on stderr.
    let out = run(spec(
        "head -c 52428800 /dev/zero | tr '\\0' 'x'; head -c 1048576 /dev/zero | tr '\\0' 'y' >&2",
        d.path(),
        60_000,
    ))
    .await;
    assert_eq!(out.exit_code, Some(0));
    let total: u64 = 52_428_800 + 1_048_576;
    let kept = cst_agent::process::BODY_CAP as u64;
    assert!(
        out.output.len() <= cst_agent::tools::output::MAX_OUTPUT_BYTES,
        "{}",
        out.output.len()
    );
    let marker = format!("[output truncated: {} more bytes dropped", total - kept);
    assert!(
        out.output.ends_with(&format!("{marker}; limit is 524288 bytes]")),
        "{}",
        &out.output[out.output.len() - 200..]
    );
    assert!(out.output.starts_with("xxxx"));
}

#[tokio::test]
async fn p7_timeout_kills_the_whole_group_with_no_survivors() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let script = format!("echo $$ > {}; echo started; sleep 1000 & sleep 1000", pidfile.display());
    let s = spec(&script, d.path(), 700);
    let m = mark(&s);
    let out = run(s).await;
    assert!(out.timed_out);
    assert_eq!(out.exit_code, Some(124));
    assert_eq!(out.output, "started\n");
    assert!(live_marked(&m).is_empty(), "{:?}", live_marked(&m));
}

#[tokio::test]
async fn p7_a_tool_ignoring_sigterm_is_killed() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let script = format!(
        "trap '' TERM; echo $$ > {}; sleep 1000 & while true; do sleep 1; done",
        pidfile.display()
    );
    let s = spec(&script, d.path(), 700);
    let m = mark(&s);
    let out = run(s).await;
    assert!(out.timed_out);
    assert_eq!(out.exit_code, Some(124));
    assert!(live_marked(&m).is_empty(), "{:?}", live_marked(&m));
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_hang_the_host_and_dies() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    // The main process exits at once; its background child keeps the output pipe open.
    let script = format!("echo $$ > {}; sleep 1000 & echo done", pidfile.display());
    let s = spec(&script, d.path(), 60_000);
    let m = mark(&s);
    let out = run(s).await;
    assert!(!out.timed_out);
    assert_eq!((out.output.as_str(), out.exit_code), ("done\n", Some(0)));
    assert!(live_marked(&m).is_empty(), "{:?}", live_marked(&m));
}

#[tokio::test]
async fn cancellation_kills_the_group() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let mut s = spec(
        &format!("echo $$ > {}; sleep 1000 & sleep 1000", pidfile.display()),
        d.path(),
        60_000,
    );
    let m = mark(&s);
    let cancel = s.cancel.clone();
    s.cancel = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        cancel.cancel();
    });
    let out = run(s).await;
    assert!(out.cancelled && !out.timed_out);
    assert!(live_marked(&m).is_empty(), "{:?}", live_marked(&m));
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let s = spec(
        &format!("echo $$ > {}; sleep 1000 & sleep 1000", pidfile.display()),
        d.path(),
        60_000,
    );
    let m = mark(&s);
    let task = tokio::spawn(run_captured(s));
    // Wait until the script is running, then drop the future.
    for _ in 0..200 {
        if pidfile.exists() && std::fs::read_to_string(&pidfile).unwrap().ends_with('\n') {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The check below would see these processes: it finds them running now.
    assert!(!live_marked(&m).is_empty());
    task.abort();
    let _ = task.await;
    // SIGKILL is immediate, but give the kernel a moment to finish the exits.
    for _ in 0..100 {
        if live_marked(&m).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(live_marked(&m).is_empty(), "{:?}", live_marked(&m));
}

#[tokio::test]
async fn a_missing_program_is_an_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec("", d.path(), 1000);
    s.argv = vec!["/nonexistent/cst-no-such-program".into()];
    let e = run_captured(s).await.unwrap_err();
    assert!(e.to_string().contains("cst-no-such-program"), "{e}");
}
