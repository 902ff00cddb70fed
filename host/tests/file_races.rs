//! Issue 13 items 1 and 7: the file tools are race-free and bounded. A swapper thread flips a
//! path component between a real folder and a symlink to an outside folder (an atomic
//! `renameat2(RENAME_EXCHANGE)`) while hundreds of calls run: none writes or reads outside.
#![cfg(target_os = "linux")]

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use cst_agent::approvals::{ApprovalGate, ApprovalMode};
use cst_agent::builtin_tools::register_builtins;
use cst_agent::discovery::ToolsProfile;
use cst_agent::tools::{PermissionGate, Registry, ToolContext};

const CALLS: usize = 400;
/// edit_file's window (between its read and its write) is narrower: more tries.
const EDITS: usize = 400;

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Registry, ToolContext) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let reg = Registry::new();
    let mut w = Vec::new();
    register_builtins(&reg, ToolsProfile::Minimal, &mut w);
    let mut c = ToolContext::new(std::fs::canonicalize(ws.path()).unwrap());
    c.gate = Some(Arc::new(ApprovalGate::new(ApprovalMode::Auto, true, None)) as Arc<dyn PermissionGate>);
    (ws, outside, reg, c)
}

/// Swap `a` and `b` atomically, over and over, until `stop`.
fn swapper(a: &Path, b: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let a = CString::new(a.as_os_str().as_encoded_bytes()).unwrap();
    let b = CString::new(b.as_os_str().as_encoded_bytes()).unwrap();
    std::thread::spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let r = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
            n += 1;
        }
        n
    })
}

/// `ws/sub` flips between a real folder and a symlink to `outside` (via `ws/swap`).
fn flipping(ws: &Path, outside: &Path) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside, ws.join("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let h = swapper(&ws.join("sub"), &ws.join("swap"), stop.clone());
    (stop, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_racing_a_symlink_swap_never_writes_outside() {
    let (ws, outside, reg, c) = setup();
    let (stop, h) = flipping(ws.path(), outside.path());
    let mut inside = 0;
    // At least CALLS writes; more while none has got through yet (on a loaded machine the
    // swapper can hold `sub` as the symlink through a whole run of calls).
    let mut i = 0;
    while i < CALLS || (inside == 0 && i < 20 * CALLS) {
        i += 1;
        let r = reg
            .call(
                "write_file",
                json!({"path": format!("sub/f{i}.txt"), "content": "pwned"}),
                &c,
            )
            .await;
        inside += r.is_ok() as usize;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = h.join().unwrap();
    let escaped: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        escaped.is_empty(),
        "{} of {CALLS} writes landed outside: {escaped:?}",
        escaped.len()
    );
    assert!(
        swaps > 100 && inside > 0,
        "the race did not run: {swaps} swaps, {inside} writes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_file_racing_a_symlink_swap_never_edits_outside() {
    let (ws, outside, reg, c) = setup();
    // Large files widen the window between edit_file's check and its write.
    let text = format!("{}keep", "x".repeat(256 * 1024));
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    for i in 0..EDITS {
        std::fs::write(ws.path().join(format!("sub/f{i}.txt")), &text).unwrap();
        std::fs::write(outside.path().join(format!("f{i}.txt")), &text).unwrap();
    }
    std::os::unix::fs::symlink(outside.path(), ws.path().join("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let h = swapper(&ws.path().join("sub"), &ws.path().join("swap"), stop.clone());
    for i in 0..EDITS {
        let _ = reg
            .call(
                "edit_file",
                json!({"path": format!("sub/f{i}.txt"), "old_text": "keep", "new_text": "pwned"}),
                &c,
            )
            .await;
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    for i in 0..EDITS {
        let p = outside.path().join(format!("f{i}.txt"));
        assert!(
            std::fs::read_to_string(&p).unwrap() == text,
            "{} was edited",
            p.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_racing_a_symlink_swap_never_read_outside() {
    let (ws, outside, reg, c) = setup();
    std::fs::write(outside.path().join("outside-only.txt"), "CANARY-SECRET-7d1f").unwrap();
    let (stop, h) = flipping(ws.path(), outside.path());
    let mut leaked = Vec::new();
    for _ in 0..CALLS {
        for (tool, args) in [
            ("read_file", json!({"path": "sub/outside-only.txt"})),
            ("grep", json!({"pattern": "CANA.Y", "path": "sub"})),
            ("grep", json!({"pattern": "CANA.Y"})),
            ("list", json!({"path": "sub"})),
        ] {
            // Error messages name the path asked for; only content and listed names count.
            let out = reg.call(tool, args, &c).await.unwrap_or_default();
            if out.contains("CANARY-SECRET") || out.contains("outside-only") {
                leaked.push(format!("{tool}: {out}"));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert!(
        leaked.is_empty(),
        "{} reads saw the outside folder: {:?}",
        leaked.len(),
        &leaked[..leaked.len().min(3)]
    );
}

/// Item 7: a 1 GiB sparse file is read in bounded memory and promptly, with a note where to go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_of_a_1_gib_sparse_file_is_bounded() {
    let (ws, _outside, reg, c) = setup();
    let f = std::fs::File::create(ws.path().join("big.bin")).unwrap();
    f.set_len(1 << 30).unwrap();
    let t = Instant::now();
    let out = reg.call("read_file", json!({"path": "big.bin"}), &c).await.unwrap();
    assert!(out.len() <= 512 * 1024, "{} bytes returned", out.len());
    assert!(
        out.contains("read_file stopped after"),
        "no note: …{}",
        &out[out.len() - 200..]
    );
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    // A window past the first (only) line: the whole file is streamed, nothing kept.
    let out = reg
        .call("read_file", json!({"path": "big.bin", "offset": 2, "limit": 1}), &c)
        .await
        .unwrap();
    assert!(out.is_empty(), "{} bytes", out.len());
}

mod exec_support;

/// Item 7 through the real binary: SKILL.md, a role file and AGENTS.md symlinked to
/// `/proc/self/environ` (the host's environment carries a canary) or `/dev/zero` are refused
/// with a warning naming each file; the good skill and role still load; `exec` ends promptly.
#[test]
fn host_read_files_linked_to_proc_environ_or_dev_zero_are_refused() {
    use cst_test_support::{Reply, ScriptedServer};
    use std::os::unix::fs::symlink;
    const CANARY: &str = "canary-4f1e9c-host-env";
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let f = exec_support::Fixture::new(&server);
    let ws = f.ws();
    let skills = ws.join(".agent/skills");
    for (name, target) in [("leak", "/proc/self/environ"), ("zero", "/dev/zero")] {
        std::fs::create_dir_all(skills.join(name)).unwrap();
        symlink(target, skills.join(name).join("SKILL.md")).unwrap();
    }
    std::fs::create_dir_all(skills.join("fine")).unwrap();
    std::fs::write(
        skills.join("fine/SKILL.md"),
        "---\nname: fine\ndescription: A fine skill\n---\nBody\n",
    )
    .unwrap();
    let agents = ws.join(".agent/agents");
    std::fs::create_dir_all(&agents).unwrap();
    symlink("/proc/self/environ", agents.join("leak.md")).unwrap();
    symlink("/dev/zero", agents.join("zero.md")).unwrap();
    std::fs::write(
        agents.join("okrole.md"),
        "---\nname: okrole\ndescription: An ok role\n---\nDo it.\n",
    )
    .unwrap();
    symlink("/proc/self/environ", ws.join("AGENTS.md")).unwrap();
    let t = Instant::now();
    let out = f.cmd(&["exec", "hi"]).env("CST_CANARY", CANARY).output().unwrap();
    let stderr = exec_support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    let system = server.requests()[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains(CANARY), "the host's environment reached the prompt");
    assert!(
        system.contains("- fine: A fine skill") && system.contains("okrole"),
        "{system}"
    );
    for file in ["leak/SKILL.md", "zero/SKILL.md", "leak.md", "zero.md", "AGENTS.md"] {
        assert!(
            stderr.lines().any(|l| l.contains(file) && l.contains("refused")),
            "no warning naming {file}:\n{stderr}"
        );
    }
    server.finish();

    // AGENTS.md → /dev/zero: refused at once, not read (it grew to 2 GB before).
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let f2 = exec_support::Fixture::with_ws(&server, tempfile::tempdir().unwrap());
    symlink("/dev/zero", f2.ws().join("AGENTS.md")).unwrap();
    let t = Instant::now();
    let out = f2.run(&["exec", "hi"]);
    let stderr = exec_support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    assert!(stderr.contains("AGENTS.md") && stderr.contains("refused"), "{stderr}");
    server.finish();
}

/// Item 8: a symlinked `.agent/sessions` is refused (nothing is written where it points); a
/// normal run creates the session folder 0700, the transcript 0600 and `sessions/.gitignore`.
#[test]
fn transcripts_refuse_a_symlinked_sessions_folder_and_are_private() {
    use cst_test_support::{Reply, ScriptedServer};
    use std::os::unix::fs::PermissionsExt;
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let f = exec_support::Fixture::new(&server);
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(f.ws().join(".agent")).unwrap();
    std::os::unix::fs::symlink(outside.path(), f.ws().join(".agent/sessions")).unwrap();
    let out = f.run(&["exec", "hi"]);
    let stderr = exec_support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "the transcript went through the symlink: {written:?}"
    );
    assert!(stderr.contains("symlink"), "no warning: {stderr}");
    server.finish();

    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let f = exec_support::Fixture::new(&server);
    let out = f.run(&["exec", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", exec_support::text(&out.stderr));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = f.session_dir();
    assert_eq!(mode(&dir), 0o700, "session folder");
    assert_eq!(mode(dir.parent().unwrap()), 0o700, "sessions folder");
    assert_eq!(mode(&dir.join("main.jsonl")), 0o600, "transcript");
    let ignore = std::fs::read_to_string(f.ws().join(".agent/sessions/.gitignore")).unwrap();
    assert_eq!(ignore.trim(), "*");
    server.finish();
}
