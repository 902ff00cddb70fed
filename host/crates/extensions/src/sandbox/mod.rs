//! The shell sandbox (P11). On Linux it is Landlock: the command may write only the workspace and
//! the temp dirs (plus a few harmless device files); reading stays open everywhere. It is applied
//! in the child between fork and exec, so the host itself is never confined.
//!
//! Whether a call runs sandboxed is decided by the approval gate (`perm` `shell` + approval mode
//! `auto`); this module only knows how.

use std::fmt;
use std::path::{Path, PathBuf};

/// What sandbox this system offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Landlock with this ABI version.
    Landlock { abi: i32 },
    /// No sandbox, and why.
    Unavailable(String),
}

impl SandboxStatus {
    pub fn available(&self) -> bool {
        matches!(self, SandboxStatus::Landlock { .. })
    }
}

impl fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxStatus::Landlock { abi } => write!(f, "landlock ABI {abi}"),
            SandboxStatus::Unavailable(why) => write!(f, "none ({why})"),
        }
    }
}

/// Whether shell commands can run sandboxed here (the approval gate's question, P11).
pub fn available() -> bool {
    status().available()
}

/// Ask the kernel which sandbox it offers.
pub fn status() -> SandboxStatus {
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
            return SandboxStatus::Landlock { abi: v as i32 };
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => {
                SandboxStatus::Unavailable("landlock is built into the kernel but disabled at boot (lsm=)".into())
            }
            Some(libc::ENOSYS) => SandboxStatus::Unavailable("the kernel has no landlock (needs Linux 5.13+)".into()),
            _ => SandboxStatus::Unavailable(format!("landlock query failed: {err}")),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        SandboxStatus::Unavailable("only Linux (landlock) is supported".into())
    }
}

/// The folders a sandboxed command may write: the workspace and the temp dirs that exist.
pub fn writable_dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![workspace.to_path_buf(), std::env::temp_dir()];
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
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/urandom",
];

/// Arrange for `cmd`'s child to confine itself before exec. The ruleset is built here, in the
/// parent, so the child only makes the final syscalls (no allocation after fork).
#[cfg(target_os = "linux")]
pub(crate) fn confine(cmd: &mut tokio::process::Command, workspace: &Path) -> std::io::Result<()> {
    use landlock::{path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI};

    if !status().available() {
        // P11 sandboxes only "when the system has a sandbox"; `status()` tells the user.
        return Ok(());
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
        .add_rules(path_beneath_rules(writable_dirs(workspace), AccessFs::from_all(abi)))
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
    Ok(())
}

/// No sandbox outside Linux: the command runs unconfined and `status()` says so.
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn confine(cmd: &mut tokio::process::Command, workspace: &Path) -> std::io::Result<()> {
    let _ = (cmd, workspace);
    Ok(())
}
