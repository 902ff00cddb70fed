//! The host's Windows build, run for real (issue 20): `scripts/windows-tests.sh` cross-compiles
//! this suite and the `cst-agent.exe` it drives for x86_64-pc-windows-gnu and runs them under
//! Wine. Every test starts the Windows binary with `%APPDATA%` and `%LOCALAPPDATA%` in a temp dir
//! (E2), installs the example wasm components (H4), calls their tools, performs the sandbox's
//! attacks that Wine can judge (H2), runs an mcp.json stdio server (M1) and checks that its
//! processes die with the host (Job Object). docs/windows.md says what only real Windows proves.
//!
//! Inputs (Unix paths, as the script sets them): `CST_EXAMPLE_PLUGINS` (the example-plugins
//! folder, built for wasm32-wasip2) and `CST_MCP_TEST_SERVER` (the test server's .exe).
#![cfg(windows)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A Unix path seen from Wine (its `Z:` drive is `/`); a Windows path as it is.
fn win_path(p: &str) -> PathBuf {
    match p.strip_prefix('/') {
        Some(rest) => PathBuf::from(format!("Z:\\{}", rest.replace('/', "\\"))),
        None => PathBuf::from(p),
    }
}

fn agent_exe() -> PathBuf {
    win_path(env!("CARGO_BIN_EXE_cst-agent"))
}

fn examples_dir() -> PathBuf {
    let dir = std::env::var("CST_EXAMPLE_PLUGINS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../example-plugins").to_string());
    win_path(&dir)
}

/// An example plugin folder (plugin.json and its built .wasm).
fn example(name: &str) -> PathBuf {
    let dir = examples_dir().join(name);
    assert!(
        dir.join(format!("{name}.wasm")).is_file(),
        "{}\\{name}.wasm is missing: run example-plugins/build.sh first",
        dir.display()
    );
    dir
}

fn test_server() -> PathBuf {
    let p =
        win_path(&std::env::var("CST_MCP_TEST_SERVER").expect("CST_MCP_TEST_SERVER (set by scripts/windows-tests.sh)"));
    assert!(p.is_file(), "{} is missing", p.display());
    p
}

/// A temp "user profile": `%APPDATA%`, `%LOCALAPPDATA%`, a decoy `XDG_CONFIG_HOME` that Windows
/// must not read, and a workspace — all `C:\…` paths inside Wine's prefix.
struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["AppData\\Roaming", "AppData\\Local", "xdg", "ws", "src"] {
            std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
        }
        Env { tmp }
    }
    fn appdata(&self) -> PathBuf {
        self.tmp.path().join("AppData\\Roaming")
    }
    fn config(&self) -> PathBuf {
        self.appdata().join("cst-agent")
    }
    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    /// `cst-agent.exe` with this profile and no `--workspace`.
    fn bare(&self) -> Command {
        let mut c = Command::new(agent_exe());
        c.env("APPDATA", self.appdata())
            .env("LOCALAPPDATA", self.tmp.path().join("AppData\\Local"))
            .env("XDG_CONFIG_HOME", self.tmp.path().join("xdg"))
            .env("XDG_CACHE_HOME", self.tmp.path().join("xdg"))
            .env_remove("CST_LOG");
        c
    }

    /// `cst-agent.exe --workspace <ws> ARGS…`.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.bare();
        c.arg("--workspace").arg(self.ws()).args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        Run::within(&mut self.cmd(args))
    }

    fn install(&self, dir: &Path) {
        let r = self.run(&["plugins", "install", &dir.to_string_lossy()]);
        assert_eq!(r.code, 0, "install {}: {}", dir.display(), r.err);
    }

    /// Call `tool`; the host must end on its own with a code, never crash.
    fn call(&self, tool: &str, args: Value) -> Run {
        let r = self.run(&["tools", "call", tool, "--args", &args.to_string()]);
        assert!([0, 1, 2, 124].contains(&r.code), "{tool}: the host crashed: {r:?}");
        r
    }

    /// `hostile_echo` answers: the host and the plugin still work after `what`.
    fn echo_works(&self, what: &str) {
        let r = self.call("hostile_echo", json!({"text": "still alive"}));
        assert_eq!((r.code, r.out.trim()), (0, "still alive"), "after {what}: {}", r.err);
    }
}

#[derive(Debug)]
struct Run {
    code: i32,
    out: String,
    err: String,
}

/// How long one host run may take. A run that outlives it failed: e.g. a server's child that
/// escaped the Job Object holds the host's pipes, and the host never ends.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

impl Run {
    /// Run `cmd` to its end, within [`RUN_DEADLINE`]; its output is read until the process ends
    /// and its pipes close (a process still holding them fails the run too).
    fn within(cmd: &mut Command) -> Self {
        use std::io::Read;
        use std::process::Stdio;
        use std::sync::mpsc;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cst-agent.exe");
        let (tx, rx) = mpsc::channel();
        for (i, pipe) in [
            child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
            child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .enumerate()
        {
            let tx = tx.clone();
            let mut pipe = pipe.expect("piped");
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                let _ = tx.send((i, buf));
            });
        }
        let end = Instant::now() + RUN_DEADLINE;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for cst-agent.exe") {
                break status;
            }
            if Instant::now() > end {
                let _ = child.kill();
                panic!("{cmd:?} did not end within {} s", RUN_DEADLINE.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut streams = [Vec::new(), Vec::new()];
        for _ in 0..2 {
            let left = end
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(5));
            let (i, buf) = rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("{cmd:?} ended but something still holds its output pipes"));
            streams[i] = buf;
        }
        Run::of(Output {
            status,
            stdout: std::mem::take(&mut streams[0]),
            stderr: std::mem::take(&mut streams[1]),
        })
    }

    fn of(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            out: String::from_utf8_lossy(&o.stdout).into_owned(),
            err: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// H4, E2 on Windows: the three Rust examples install into `%APPDATA%\cst-agent\plugins` (never
/// the XDG dir), are listed, and every tool answers against a `C:\…` workspace.
#[test]
fn h4_examples_install_under_appdata_and_every_tool_answers() {
    let env = Env::new();
    for p in ["text-stats", "json-query", "regex-search"] {
        env.install(&example(p));
        assert!(
            env.config().join("plugins").join(p).join("plugin.json").is_file(),
            "{p} not under %APPDATA%\\cst-agent\\plugins"
        );
    }
    assert!(
        files_under(&env.tmp.path().join("xdg")).is_empty(),
        "XDG_CONFIG_HOME was used on Windows"
    );

    let r = env.run(&["tools", "list", "--json"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let list: Vec<Value> = serde_json::from_str(&r.out).expect("tools list --json");
    for (tool, owner) in [
        ("text_stats", "text-stats"),
        ("json_query", "json-query"),
        ("regex_search", "regex-search"),
    ] {
        let t = list
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap_or_else(|| panic!("{tool} not listed: {}", r.out));
        assert_eq!((t["source"].as_str(), t["owner"].as_str()), (Some("wasm"), Some(owner)));
    }
    let r = env.run(&["plugins", "list", "--json"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("regex-search"), "{}", r.out);

    let ws = env.ws();
    std::fs::write(ws.join("notes.txt"), "one two\r\nthree\r\n").unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src\\main.rs"), "fn main() {\n    // TODO: greet\n}\n").unwrap();
    std::fs::write(
        ws.join("package.json"),
        r#"{"name":"demo","deps":[{"n":"a"},{"n":"left-pad"}]}"#,
    )
    .unwrap();

    let r = env.call("text_stats", json!({"paths": ["notes.txt", "src"]}));
    assert_eq!(r.code, 0, "{}", r.err);
    let v: Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["files"]["notes.txt"]["words"], 3, "{v}");
    assert_eq!(v["total"]["files"], 2, "{v}");
    let r = env.call("json_query", json!({"file": "package.json", "path": "deps[1].n"}));
    assert_eq!((r.code, r.out.trim()), (0, "\"left-pad\""), "{}", r.err);
    let r = env.call("regex_search", json!({"pattern": "TODO"}));
    assert_eq!(
        (r.code, r.out.trim()),
        (0, "src/main.rs:2:     // TODO: greet"),
        "{}",
        r.err
    );
    // A tool failure and a schema refusal keep their exit codes.
    let r = env.call("text_stats", json!({"paths": ["nope.txt"]}));
    assert!(r.code == 1 && r.err.contains("nope.txt"), "{r:?}");
    let r = env.call("json_query", json!({"file": 3}));
    assert_eq!(r.code, 2, "{r:?}");
}

/// `--workspace` as Windows users type it: backslashes, forward slashes after the drive letter,
/// a trailing backslash, and a relative path; every form reaches the same files.
#[test]
fn workspace_paths_with_drive_letters_and_backslashes() {
    let env = Env::new();
    env.install(&example("text-stats"));
    std::fs::write(env.ws().join("notes.txt"), "a b c\n").unwrap();
    let native = env.ws().to_string_lossy().into_owned();
    assert!(
        native.as_bytes().get(1) == Some(&b':') && native.contains('\\'),
        "{native}"
    );
    let forms = [native.clone(), native.replace('\\', "/"), format!("{native}\\")];
    for ws in &forms {
        let r = Run::within(env.bare().args([
            "--workspace",
            ws,
            "tools",
            "call",
            "text_stats",
            "--args",
            r#"{"paths":["notes.txt"]}"#,
        ]));
        assert_eq!(r.code, 0, "--workspace {ws}: {}", r.err);
        let v: Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(v["files"]["notes.txt"]["words"], 3, "--workspace {ws}: {v}");
    }
    // Relative to the current folder.
    let r = Run::within(env.bare().current_dir(env.tmp.path()).args([
        "--workspace",
        "ws",
        "tools",
        "call",
        "text_stats",
        "--args",
        r#"{"paths":["notes.txt"]}"#,
    ]));
    assert_eq!(r.code, 0, "--workspace ws: {}", r.err);
}

/// The built-in file tools in a `C:\…` workspace: paths with `/` or `\\` inside it work; `..\`,
/// drive-letter and `\\?\` paths out of it are refused, the workspace named as users write it.
#[test]
fn builtin_file_tools_keep_to_a_windows_workspace() {
    let env = Env::new();
    let ws = env.ws();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src\\main.rs"), "fn main() {}\n").unwrap();
    let secret = env.tmp.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();

    for p in ["src/main.rs", "src\\main.rs", ".\\src\\..\\src\\main.rs"] {
        let r = env.call("read_file", json!({"path": p}));
        assert!(r.code == 0 && r.out.contains("fn main()"), "{p}: {r:?}");
    }
    let r = env.call("write_file", json!({"path": "out\\new.txt", "content": "written"}));
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(std::fs::read_to_string(ws.join("out\\new.txt")).unwrap(), "written");
    let r = env.call("list", json!({"path": "src"}));
    assert!(r.code == 0 && r.out.contains("main.rs"), "{r:?}");

    let outside = [
        "..\\secret.txt".to_string(),
        "../secret.txt".to_string(),
        "src\\..\\..\\secret.txt".to_string(),
        secret.to_string_lossy().into_owned(),
        secret.to_string_lossy().replace('\\', "/"),
        format!("\\\\?\\{}", secret.display()),
    ];
    for p in &outside {
        let r = env.call("read_file", json!({"path": p}));
        assert_eq!(r.code, 1, "{p}: read outside the workspace: {r:?}");
        assert!(
            !r.out.contains("TOP SECRET") && !r.err.contains("TOP SECRET"),
            "{p}: {r:?}"
        );
        let r = env.call("write_file", json!({"path": p, "content": "overwritten"}));
        assert_eq!(r.code, 1, "{p}: write outside the workspace: {r:?}");
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "TOP SECRET");
    // Messages name the workspace as users know it: `C:\…`, not canonicalize's `\\?\C:\…`.
    let r = env.call("read_file", json!({"path": "..\\secret.txt"}));
    let shown = format!("outside the workspace {} (", ws.display());
    assert!(r.err.contains(&shown), "{}", r.err);

    // P12: no shell off POSIX, so the model is not offered a tool that can only fail.
    let r = env.run(&["tools", "list", "--json"]);
    let list: Vec<Value> = serde_json::from_str(&r.out).unwrap();
    assert!(list.iter().any(|t| t["name"] == "read_file"), "{}", r.out);
    assert!(!list.iter().any(|t| t["name"] == "run_shell"), "{}", r.out);
}

/// The hostile plugin's attacks that Wine can judge (H2): every one refused, the secret never
/// shown, and the host and plugin still working after each. Symlinks are not probed: Wine shows
/// Unix symlinks as ordinary files (docs/windows.md).
#[test]
fn h2_sandbox_probes_under_windows() {
    let env = Env::new();
    env.install(&example("hostile-test"));
    let ws = env.ws();
    std::fs::write(ws.join("inside.txt"), "inside").unwrap();
    let secret = env.tmp.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();

    // Positive control: the workspace is readable.
    let r = env.call("hostile_read", json!({"path": "inside.txt"}));
    assert_eq!((r.code, r.out.trim()), (0, "inside"), "{}", r.err);
    let r = env.call("hostile_read", json!({"path": "/workspace/inside.txt"}));
    assert_eq!((r.code, r.out.trim()), (0, "inside"), "{}", r.err);

    // Out of the workspace: `..`, `..\`, a drive-letter path, a UNC-like path.
    let probes = [
        "../secret.txt".to_string(),
        "..\\secret.txt".to_string(),
        "/workspace/../secret.txt".to_string(),
        ".\\..\\secret.txt".to_string(),
        secret.to_string_lossy().into_owned(),
        secret.to_string_lossy().replace('\\', "/"),
        format!("\\\\?\\{}", secret.display()),
    ];
    for p in &probes {
        let r = env.call("hostile_read", json!({"path": p}));
        assert_eq!(r.code, 1, "{p}: read outside the workspace was not refused: {r:?}");
        assert!(
            !r.out.contains("TOP SECRET") && !r.err.contains("TOP SECRET"),
            "{p}: {r:?}"
        );
    }
    env.echo_works("the reads outside");

    // A write with only `workspace-read`, by a relative and a drive-letter path.
    for p in [
        "new.txt".to_string(),
        ws.join("new2.txt").to_string_lossy().into_owned(),
    ] {
        let r = env.call("hostile_write", json!({"path": p, "content": "x"}));
        assert_eq!(r.code, 1, "{p}: {r:?}");
    }
    assert!(!ws.join("new.txt").exists() && !ws.join("new2.txt").exists());

    // The host's environment is not the guest's.
    let mut c = env.cmd(&[
        "tools",
        "call",
        "hostile_env",
        "--args",
        r#"{"name":"CST_HOSTILE_SECRET"}"#,
    ]);
    let r = Run::within(c.env("CST_HOSTILE_SECRET", "leaked"));
    assert!(
        r.code == 1 && r.err.contains("vars=0 args=0") && !r.err.contains("leaked"),
        "{r:?}"
    );

    // No network, even to a listener of this machine.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let r = env.call("hostile_connect", json!({"addr": addr}));
    assert!(
        r.code == 1 && r.err.contains(&format!("connect {addr}: Permission denied")),
        "{r:?}"
    );
    assert!(listener.accept().is_err(), "the guest reached the listener");
    // Nor name lookups.
    let r = env.call("hostile_connect", json!({"addr": "localhost:80"}));
    assert!(r.code == 1 && r.err.contains("lookup"), "{r:?}");
    env.echo_works("the denied env and network");

    // An infinite loop stopped at its deadline (plugin.json: "timeout": 2).
    let started = Instant::now();
    let r = env.call("hostile_spin", json!({}));
    assert_eq!(r.code, 124, "{r:?}");
    assert!(r.err.contains("timed out after 2 s"), "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(60), "the loop was not stopped");
    env.echo_works("a timeout");

    // The memory cap (plugin.json: 64 MiB); under the cap is fine.
    let r = env.call("hostile_alloc", json!({"mib": 512}));
    assert!(
        r.code == 1 && r.err.contains("memory limit of 64 MiB exceeded"),
        "{r:?}"
    );
    env.echo_works("the memory cap");
    let r = env.call("hostile_alloc", json!({"mib": 16}));
    assert!(r.code == 0 && r.out.starts_with("allocated 16 MiB"), "{r:?}");

    // A stack overflow traps cleanly (Windows' guard pages, not Linux's signals).
    let r = env.call("hostile_recurse", json!({"n": 100_000_000u64}));
    assert!(r.code == 1 && r.err.contains("stack overflow"), "{r:?}");
    env.echo_works("a stack overflow");
}

/// P12: a plugin.json with command tools and a component: on Windows the command tools are
/// skipped with one message and the component's tools still load.
#[test]
fn p12_command_tools_skipped_with_one_message_wasm_tools_load() {
    let env = Env::new();
    let src = env.tmp.path().join("src\\mixed");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(
        example("json-query").join("json-query.wasm"),
        src.join("json-query.wasm"),
    )
    .unwrap();
    let manifest = json!({
        "name": "mixed",
        "description": "A component and two POSIX command tools.",
        "wasm": "json-query.wasm",
        "capabilities": ["workspace-read"],
        "tools": [
            {"name": "posix_one", "command": "echo one"},
            {"name": "posix_two", "command": ["sh", "two.sh"]}
        ]
    });
    std::fs::write(src.join("plugin.json"), manifest.to_string()).unwrap();
    env.install(&src);

    let r = env.run(&["tools", "list", "--json"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let list: Vec<Value> = serde_json::from_str(&r.out).unwrap();
    let names: Vec<&str> = list.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"json_query"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("posix_")), "{names:?}");
    let skipped: Vec<&str> = r.err.lines().filter(|l| l.contains("command tool")).collect();
    assert_eq!(skipped.len(), 1, "{}", r.err);
    assert!(
        skipped[0].contains("2 command tool(s) skipped")
            && skipped[0].contains("only on POSIX")
            && skipped[0].contains("plugin.json"),
        "{}",
        skipped[0]
    );
    let r = env.call("posix_one", json!({}));
    assert_ne!(r.code, 0, "{r:?}");
}

/// Is process `pid` still running? (Windows: its exit code is still STILL_ACTIVE.)
fn alive(pid: u32) -> bool {
    use windows::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows::Win32::System::Threading::{GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
    // SAFETY: plain Win32 calls on a handle this function opens and closes.
    unsafe {
        let Ok(h) = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, false, pid) else {
            return false;
        };
        let mut code = 0u32;
        let ok = GetExitCodeProcess(h, &mut code).is_ok();
        let _ = CloseHandle(h);
        ok && code == STILL_ACTIVE.0 as u32
    }
}

fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn write_mcp_json(env: &Env, server: Value) {
    std::fs::create_dir_all(env.config()).unwrap();
    std::fs::write(
        env.config().join("mcp.json"),
        json!({"mcpServers": {"t": server}}).to_string(),
    )
    .unwrap();
}

/// M1 on Windows: a Windows stdio server from `%APPDATA%\cst-agent\mcp.json` (its command a
/// `Z:\…` path with backslashes) is listed, its tools called, and a child it starts dies when
/// the host is done with it (the Job Object).
#[test]
fn mcp_stdio_server_listed_called_and_its_child_dies_with_the_host() {
    let env = Env::new();
    write_mcp_json(
        &env,
        json!({"command": test_server().to_string_lossy(), "autoApprove": true}),
    );

    let r = env.run(&["mcp", "list", "--json"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let list: Value = serde_json::from_str(&r.out).unwrap();
    let t = list
        .as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == "t"))
        .unwrap_or_else(|| panic!("server t not listed: {}", r.out));
    assert_eq!(t["status"], "ready", "{t}");
    assert!(t["tool_count"].as_u64().unwrap_or(0) > 10, "{t}");

    let r = env.run(&["tools", "list", "--json"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("mcp__t__echo"), "{}", r.out);
    let r = env.call("mcp__t__echo", json!({"text": "hi from Windows"}));
    assert_eq!((r.code, r.out.trim()), (0, "echo: hi from Windows"), "{}", r.err);
    let r = env.call("mcp__t__fail", json!({}));
    assert!(r.code == 1 && r.err.contains("it failed on purpose"), "{r:?}");
    // The server runs in its cwd (the workspace of a mcp.json in the config dir is not used).
    let r = env.call("mcp__t__cwd", json!({}));
    assert_eq!(r.code, 0, "{}", r.err);

    // A child the server starts and never waits for dies when the host shuts the server down.
    let r = env.call("mcp__t__grandchild", json!({}));
    assert_eq!(r.code, 0, "{}", r.err);
    let grandchild: u32 = r.out.trim().parse().expect("a pid");
    assert!(
        eventually(15, || !alive(grandchild)),
        "grandchild {grandchild} outlived the host"
    );
}

/// The Job Object holds even when the host is killed (no shutdown code runs): the server and the
/// child it started die with the host.
#[test]
fn mcp_server_and_its_child_die_when_the_host_is_killed() {
    let env = Env::new();
    let marker = env.tmp.path().join("pids.txt");
    write_mcp_json(
        &env,
        json!({
            "command": test_server().to_string_lossy(),
            "autoApprove": true,
            "env": {"CST_TEST_GRANDCHILD_MARKER": marker.to_string_lossy()}
        }),
    );
    let mut host = env
        .cmd(&["tools", "call", "mcp__t__slow", "--args", r#"{"secs":120}"#])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start cst-agent.exe");
    let read_pids = || -> Option<(u32, u32)> {
        let text = std::fs::read_to_string(&marker).ok()?;
        let (a, b) = text.trim().split_once(' ')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let mut pids = None;
    assert!(
        eventually(60, || {
            pids = read_pids();
            pids.is_some()
        }),
        "the server never started"
    );
    let (server, grandchild) = pids.unwrap();
    assert!(alive(server) && alive(grandchild));
    // Give the host a moment to be inside the call, then kill it outright (TerminateProcess).
    std::thread::sleep(Duration::from_millis(500));
    host.kill().expect("kill the host");
    let _ = host.wait();
    assert!(
        eventually(15, || !alive(server)),
        "server {server} outlived the killed host"
    );
    assert!(
        eventually(15, || !alive(grandchild)),
        "grandchild {grandchild} outlived the killed host"
    );
}

/// The same host process survives every trap on Windows (its exception handling, not Linux's
/// signals, catches them): one registry, the hostile component installed once, and after a
/// timeout, the memory cap and a stack overflow the next call of the same plugin still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_one_host_process_survives_every_trap() {
    use cst_agent::plugins::{install, load_plugin_dir};
    use cst_agent::tools::{CallError, Registry, ToolContext};

    let env = Env::new();
    // The compile cache of this process goes to the temp profile.
    std::env::set_var("LOCALAPPDATA", env.tmp.path().join("AppData\\Local"));
    std::env::set_var("APPDATA", env.appdata());
    let ws = env.ws();
    let done = install::install(&example("hostile-test"), &env.config().join("plugins"), &ws)
        .await
        .expect("install hostile-test");
    let registry = Registry::new();
    let mut warnings = Vec::new();
    load_plugin_dir(&done.dir, &registry, &mut warnings).expect("load hostile-test");
    assert!(warnings.is_empty(), "{warnings:?}");
    let ctx = ToolContext::new(ws);
    let echo = || registry.call("hostile_echo", json!({"text": "still alive"}), &ctx);

    match registry.call("hostile_spin", json!({}), &ctx).await {
        Err(CallError::TimedOut { message }) => assert_eq!(message, "timed out after 2 s"),
        other => panic!("spin: {other:?}"),
    }
    assert_eq!(echo().await, Ok("still alive".to_string()), "after a timeout");
    match registry.call("hostile_alloc", json!({"mib": 512}), &ctx).await {
        Err(CallError::Failed { message, .. }) => assert_eq!(message, "memory limit of 64 MiB exceeded"),
        other => panic!("alloc: {other:?}"),
    }
    assert_eq!(echo().await, Ok("still alive".to_string()), "after the memory cap");
    match registry
        .call("hostile_recurse", json!({"n": 100_000_000u64}), &ctx)
        .await
    {
        Err(CallError::Failed { message, .. }) => assert_eq!(message, "stack overflow"),
        other => panic!("recurse: {other:?}"),
    }
    assert_eq!(echo().await, Ok("still alive".to_string()), "after a stack overflow");
}
