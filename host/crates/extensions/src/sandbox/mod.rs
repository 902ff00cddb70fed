//! The process sandbox (P11, issue 13 items 2, 6 and 8) and the containment of every tool process.
//!
//! On Linux a sandboxed command runs under **bubblewrap** (`/usr/bin/bwrap`, never one found on
//! `PATH`) with a **seccomp** filter:
//!
//! - new user, mount, PID, IPC, UTS and cgroup namespaces, and a network namespace (loopback
//!   only) unless the tool's category is `net`; no capabilities, no nested user namespaces;
//! - the whole filesystem read-only — data and metadata (chmod, utimes, rename) — except the
//!   workspace (read-only too for a read-only scope) and a private, empty `/tmp`, `/var/tmp`,
//!   `$TMPDIR`; the workspace's `.agent/`, the config dir and the cache dir are bound read-only
//!   back over a writable root that holds them;
//! - a new session with no controlling terminal and a private `/dev` (a fresh `/dev/pts`, no
//!   host terminal); seccomp refuses `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` anyway;
//! - seccomp refuses `socket(AF_UNIX)` (so no Unix socket of the host — tmux, D-Bus, ssh-agent,
//!   docker — can be reached; `socketpair` still works) and io_uring (which could open sockets
//!   behind seccomp's back); abstract sockets live in the network namespace;
//! - the PID namespace dies with its first process, which dies with the host
//!   (`--die-with-parent`), so nothing the command starts outlives the call.
//!
//! Where bubblewrap cannot run (not installed, user namespaces disabled), Landlock (when the
//! kernel has it) still keeps writes to the workspace and the temp dirs; that is reported as a
//! partial sandbox and is not "available" for the approval gate, so `auto` asks before `shell`.
//!
//! Unsandboxed calls (`--approval full`, `cst-agent tools call`) run with the whole filesystem
//! writable and the network open, but still in a PID namespace of their own when bubblewrap can
//! run, so containment holds in every mode.
//!
//! Whether a call is sandboxed is decided by the approval gate; this module only knows how.

use std::fmt;
use std::path::{Path, PathBuf};

/// What a sandboxed process may do beyond reading and executing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The workspace (the process's cwd and its one writable root besides the private temp).
    pub workspace: PathBuf,
    /// `false` for a read-only scope (a `readonly: true` sub-agent role): the workspace is
    /// bound read-only too.
    pub write_workspace: bool,
    /// The network (the host's network namespace); only for `net` tools.
    pub network: bool,
    /// More paths shown read-only (a command tool's plugin folder, which may lie in a temp dir
    /// the sandbox replaces with its own).
    pub read_only: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// A `shell`-like call: the workspace writable, no network.
    pub fn workspace(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            write_workspace: true,
            network: false,
            read_only: Vec::new(),
        }
    }
}

/// The bubblewrap binary the host runs: a fixed system path, never one the workspace controls.
pub const BWRAP: &str = "/usr/bin/bwrap";

/// What this system can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxStatus {
    /// bubblewrap's version when it runs a sandbox here, else why not.
    pub bwrap: Result<String, String>,
    /// Whether the seccomp filter can be built for this architecture, else why not.
    pub seccomp: Result<(), String>,
    /// The Landlock ABI, else why not.
    pub landlock: Result<i32, String>,
}

impl SandboxStatus {
    /// The full sandbox (bubblewrap + seccomp): what the approval gate calls "a sandbox".
    pub fn available(&self) -> bool {
        self.bwrap.is_ok() && self.seccomp.is_ok()
    }

    /// Whether tool processes get a PID namespace of their own (containment in every mode).
    pub fn contains(&self) -> bool {
        self.bwrap.is_ok()
    }
}

impl fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.bwrap, &self.seccomp, &self.landlock) {
            (Ok(v), Ok(()), _) => write!(
                f,
                "bubblewrap {v} + seccomp (read-only filesystem outside the workspace and a private /tmp, \
                 no network unless `net`, no Unix sockets, no terminal, PID namespace)"
            ),
            (Ok(v), Err(why), _) => write!(
                f,
                "partial: bubblewrap {v} without seccomp ({why}): Unix sockets and TIOCSTI are not blocked; \
                 shell asks in auto"
            ),
            (Err(why), _, Ok(abi)) => write!(
                f,
                "partial: landlock ABI {abi} (writes only; no bubblewrap: {why}): metadata, Unix sockets, \
                 network, terminal and PID containment are not enforced; shell asks in auto"
            ),
            (Err(bwrap), _, Err(landlock)) => write!(f, "none (no bubblewrap: {bwrap}; no landlock: {landlock})"),
        }
    }
}

/// Whether the full sandbox is here (the approval gate's question, P11).
pub fn available() -> bool {
    status().available()
}

/// What this system enforces, probed once per process.
pub fn status() -> SandboxStatus {
    static STATUS: std::sync::OnceLock<SandboxStatus> = std::sync::OnceLock::new();
    STATUS
        .get_or_init(|| SandboxStatus {
            bwrap: probe_bwrap(),
            seccomp: seccomp_program().map(|_| ()),
            landlock: landlock_abi(),
        })
        .clone()
}

/// The kernel's Landlock ABI.
pub fn landlock_abi() -> Result<i32, String> {
    #[cfg(target_os = "linux")]
    {
        // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the ABI.
        // SAFETY: this query form reads and writes no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1u32,
            )
        };
        if v > 0 {
            return Ok(v as i32);
        }
        let err = std::io::Error::last_os_error();
        Err(match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => "landlock is built into the kernel but disabled at boot (lsm=)".into(),
            Some(libc::ENOSYS) => "the kernel has no landlock (needs Linux 5.13+)".into(),
            _ => format!("landlock query failed: {err}"),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("only Linux has landlock".into())
    }
}

/// Run a minimal sandbox once: bubblewrap present and user namespaces usable.
fn probe_bwrap() -> Result<String, String> {
    if !cfg!(target_os = "linux") {
        return Err("only Linux is supported".into());
    }
    if !Path::new(BWRAP).is_file() {
        return Err(format!("{BWRAP} not found (Debian: apt-get install bubblewrap)"));
    }
    let version = std::process::Command::new(BWRAP)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {BWRAP}: {e}"))?;
    let version = String::from_utf8_lossy(&version.stdout)
        .trim()
        .trim_start_matches("bubblewrap ")
        .to_string();
    let mut args = confined_args(&SandboxPolicy::workspace("/"), None, None);
    args.extend(["--".into(), "/bin/true".into()]);
    let out = std::process::Command::new(BWRAP)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {BWRAP}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{BWRAP} cannot create its namespaces here ({}); are unprivileged user namespaces disabled?",
            err.trim()
        ));
    }
    Ok(version)
}

/// The seccomp filter of a sandboxed command, as the bytes of a BPF program (bwrap `--seccomp`):
/// `socket(AF_UNIX, …)`, `ioctl(_, TIOCSTI | TIOCLINUX)` and io_uring fail with EPERM.
pub fn seccomp_program() -> Result<Vec<u8>, String> {
    #[cfg(target_os = "linux")]
    {
        use seccompiler::{
            BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
            TargetArch,
        };
        let e = |e: seccompiler::BackendError| format!("seccomp: {e}");
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(e)?;
        let arg_is = |arg: u8, value: u64| -> Result<SeccompRule, String> {
            SeccompRule::new(vec![SeccompCondition::new(
                arg,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                value,
            )
            .map_err(e)?])
            .map_err(e)
        };
        // The ioctl numbers are `c_ulong` on glibc but `c_int` on musl.
        #[allow(clippy::unnecessary_cast)]
        let (tiocsti, tioclinux) = (libc::TIOCSTI as u64, libc::TIOCLINUX as u64);
        let rules = [
            (libc::SYS_socket, vec![arg_is(0, libc::AF_UNIX as u64)?]),
            (libc::SYS_ioctl, vec![arg_is(1, tiocsti)?, arg_is(1, tioclinux)?]),
            // An empty list matches every call.
            (libc::SYS_io_uring_setup, vec![]),
            (libc::SYS_io_uring_enter, vec![]),
            (libc::SYS_io_uring_register, vec![]),
        ];
        let filter = SeccompFilter::new(
            rules.into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(e)?;
        let program: BpfProgram = filter.try_into().map_err(e)?;
        let mut bytes = Vec::with_capacity(program.len() * 8);
        for ins in program {
            bytes.extend_from_slice(&ins.code.to_ne_bytes());
            bytes.push(ins.jt);
            bytes.push(ins.jf);
            bytes.extend_from_slice(&ins.k.to_ne_bytes());
        }
        Ok(bytes)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("only Linux has seccomp".into())
    }
}

/// Paths a sandboxed command must never write even inside a writable root: the workspace's
/// `.agent/` (host files: plugins, mcp.json, roles, settings, transcripts), the config dir and the
/// cache dir (compiled components), each as its real path.
pub fn protected_paths(workspace: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let agent = workspace.join(".agent");
    out.push(agent);
    out.extend(cst_config::config_dir::config_dir().ok());
    out.extend(cst_config::config_dir::cache_dir().ok());
    out
}

/// The private temp dirs of a sandbox: `/tmp`, `/var/tmp` and `$TMPDIR` (absolute, existing).
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/tmp", "/var/tmp"].iter().map(PathBuf::from).collect();
    if let Some(t) = std::env::var_os("TMPDIR").map(PathBuf::from) {
        if t.is_absolute() && t.is_dir() && t != Path::new("/") {
            dirs.push(t);
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs.dedup();
    dirs
}

/// bubblewrap's arguments (before `--` and the command) for a sandboxed command.
/// `cwd`: where the command starts (the workspace when `None`); `seccomp_fd`: the descriptor the
/// BPF program can be read from in the child.
pub fn confined_args(policy: &SandboxPolicy, cwd: Option<&Path>, seccomp_fd: Option<i32>) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let p = |x: &Path| x.to_string_lossy().into_owned();
    let mut a: Vec<String> = [
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .iter()
    .map(|x| s(x))
    .collect();
    if !policy.network {
        a.push(s("--unshare-net"));
    }
    for t in temp_dirs() {
        a.extend([s("--tmpfs"), p(&t)]);
    }
    let ws = std::fs::canonicalize(&policy.workspace).unwrap_or_else(|_| policy.workspace.clone());
    if ws != Path::new("/") {
        let how = if policy.write_workspace { "--bind" } else { "--ro-bind" };
        a.extend([s(how), p(&ws), p(&ws)]);
        if policy.write_workspace {
            for protected in protected_paths(&ws) {
                let Ok(real) = std::fs::canonicalize(&protected) else {
                    continue;
                };
                if real.starts_with(&ws) {
                    a.extend([s("--ro-bind"), p(&real), p(&real)]);
                }
            }
        }
    }
    for extra in &policy.read_only {
        if let Ok(real) = std::fs::canonicalize(extra) {
            if !real.starts_with(&ws) {
                a.extend([s("--ro-bind"), p(&real), p(&real)]);
            }
        }
    }
    let dir = cwd.map_or_else(
        || ws.clone(),
        |c| std::fs::canonicalize(c).unwrap_or_else(|_| c.to_path_buf()),
    );
    a.extend([s("--chdir"), p(&dir)]);
    if let Some(fd) = seccomp_fd {
        a.extend([s("--seccomp"), fd.to_string()]);
    }
    a
}

/// bubblewrap's arguments for an unsandboxed command that is still contained: the whole
/// filesystem as it is (devices included), the host's network, but its own PID namespace (which
/// dies with the host) and a new session without a controlling terminal.
pub fn contained_args(cwd: &Path) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    // As root, bubblewrap can make the namespaces without a user namespace, and the command keeps
    // root's rights, as `full` promises; anyone else needs one.
    // SAFETY: geteuid never fails and touches no memory.
    #[cfg(unix)]
    let root = unsafe { libc::geteuid() } == 0;
    #[cfg(not(unix))]
    let root = false;
    if !root {
        a.push("--unshare-user".into());
    }
    for x in [
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
        "--dev-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--chdir",
    ] {
        a.push(x.into());
    }
    a.push(cwd.to_string_lossy().into_owned());
    a
}

/// The folders a command confined by Landlock alone may write: the workspace (unless read-only)
/// and the temp dirs that exist.
pub fn writable_dirs(workspace: &Path, write_workspace: bool) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if write_workspace {
        dirs.push(workspace.to_path_buf());
    }
    dirs.push(std::env::temp_dir());
    for d in ["/tmp", "/var/tmp", "/dev/shm"] {
        dirs.push(PathBuf::from(d));
    }
    dirs.retain(|d| d.exists());
    dirs.dedup();
    dirs
}

/// Device files every shell expects to write.
#[cfg(target_os = "linux")]
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/urandom",
];

/// The fallback without bubblewrap: arrange for `cmd`'s child to confine its writes with
/// Landlock before exec. The ruleset is built here, in the parent, so the child only makes the
/// final syscalls (no allocation after fork). Returns whether Landlock was applied.
#[cfg(target_os = "linux")]
pub(crate) fn landlock_writes(cmd: &mut tokio::process::Command, policy: &SandboxPolicy) -> std::io::Result<bool> {
    use landlock::{path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI};

    if landlock_abi().is_err() {
        return Ok(false);
    }
    let abi = ABI::V5;
    let to_io = |e: landlock::RulesetError| std::io::Error::other(format!("sandbox (landlock): {e}"));
    let ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(to_io)?
        .create()
        .map_err(to_io)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(to_io)?
        .add_rules(path_beneath_rules(
            writable_dirs(&policy.workspace, policy.write_workspace),
            AccessFs::from_all(abi),
        ))
        .map_err(to_io)?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, AccessFs::from_all(abi)))
        .map_err(to_io)?;
    let mut slot = Some(ruleset);
    // SAFETY: the closure runs in the forked child before exec; it only calls prctl and the
    // landlock syscalls through the prepared ruleset (its fd was opened in the parent).
    unsafe {
        cmd.pre_exec(move || {
            if let Some(r) = slot.take() {
                r.restrict_self()
                    .map_err(|e| std::io::Error::other(format!("sandbox (landlock): {e}")))?;
            }
            Ok(())
        });
    }
    Ok(true)
}

/// No sandbox outside Linux.
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn landlock_writes(cmd: &mut tokio::process::Command, policy: &SandboxPolicy) -> std::io::Result<bool> {
    let _ = (cmd, policy);
    Ok(false)
}
