//! Running a native child process the way tools need it (POSIX): its own session and process
//! group, stdin fed, stdout+stderr captured in the order produced with a byte cap, a deadline that
//! kills everything it started, cancellation, and the process sandbox (P11).
//! Used by plugin.json command tools and by the built-in `run_shell`.
//!
//! How the rules are met:
//! - stdout and stderr are the two ends of ONE pipe, so the bytes arrive in exactly the order the
//!   process wrote them;
//! - the host keeps at most [`BODY_CAP`] bytes and only counts the rest, so memory stays bounded
//!   however much a tool prints; the result ends with a marker saying how much was dropped;
//! - containment (issue 13 item 6): where bubblewrap runs (see [`crate::sandbox`]) every command,
//!   sandboxed or not, runs in a PID namespace of its own, so when the call ends (exit, deadline,
//!   cancel, the future dropped) everything it started dies with it, `setsid` and `set -m`
//!   included; the namespace also dies with the host (`--die-with-parent`, and the process the host
//!   starts has `PR_SET_PDEATHSIG`). Without bubblewrap the child leads a new session and process
//!   group, and the group is killed (TERM, then KILL);
//! - the child has no controlling terminal (a new session), so it cannot push keystrokes into the
//!   user's terminal through `/dev/tty`;
//! - the deadline holds while output is drained: once the main process has exited, what is left in
//!   the pipe is read for a bounded time only;
//! - a killed-by-signal exit is reported as `128 + signal`, as shells do; a timeout as 124 (P7).

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use cst_registry::{Confinement, Invocation, Perm};

pub use crate::sandbox::SandboxPolicy;

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Program and arguments; `argv[0]` is looked up on PATH.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Laid over the host's environment without its secrets (and without the IPC variables
    /// when sandboxed): see [`crate::child_env`].
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Run in the process sandbox (P11) when `Some`; else unconfined (but still contained).
    pub sandbox: Option<SandboxPolicy>,
    pub cancel: CancellationToken,
}

/// What happened.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// stdout and stderr interleaved in the order produced, capped at 512 KB with a marker.
    pub output: String,
    /// Exit code; 124 after a timeout (P7); `128 + N` when killed by signal N.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// [`ProcessSpec::sandbox`] for one call, shared by every process runner (`run_shell`, command
/// tools) so they cannot disagree:
/// - the gate's confinement: [`Confinement::ProcessSandbox`] (the process sandbox) or `None`;
/// - a read-only scope (a `readonly: true` sub-agent role, item 8 of issue 13) always runs the
///   process sandboxed with the workspace read-only, whatever the approval mode;
/// - the network only for `net` tools.
pub fn sandbox_policy(call: &Invocation<'_>) -> Option<SandboxPolicy> {
    let readonly = call.ctx.scope.as_ref().is_some_and(|s| s.readonly);
    let confined = match call.confinement {
        Confinement::None => false,
        // Never what the approval table gives a process; a gate that asks to keep paths in the
        // workspace gets the nearest thing a process has.
        Confinement::ProcessSandbox | Confinement::WorkspacePaths => true,
    };
    (confined || readonly).then(|| SandboxPolicy {
        workspace: call.ctx.workspace.clone(),
        write_workspace: !readonly,
        network: call.spec.perm == Perm::Net,
        read_only: Vec::new(),
    })
}

/// Exit code reported after a timeout (P7).
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// How long a group gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_millis(500);

/// Output bytes kept. Less than the registry's 512 KB cap so the closing marker (and a short
/// status line a caller may add) still fit and the registry never cuts our marker off.
pub const BODY_CAP: usize = cst_registry::output::MAX_OUTPUT_BYTES - 512;

/// Run `spec` to completion, deadline or cancellation. No process of the group survives.
#[cfg(unix)]
pub async fn run_captured(spec: ProcessSpec) -> std::io::Result<ProcessOutput> {
    unix::run(spec).await
}

/// Native tool processes are POSIX-only (P12).
#[cfg(not(unix))]
pub async fn run_captured(spec: ProcessSpec) -> std::io::Result<ProcessOutput> {
    let _ = spec;
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "native tool processes are POSIX-only",
    ))
}

/// Bounded output buffer: keeps the first `cap` bytes and counts the rest.
#[cfg_attr(not(unix), allow(dead_code))]
struct Capped {
    data: Vec<u8>,
    cap: usize,
    dropped: u64,
}

#[cfg_attr(not(unix), allow(dead_code))]
impl Capped {
    fn new(cap: usize) -> Self {
        Self {
            data: Vec::with_capacity(cap.min(64 * 1024)),
            cap,
            dropped: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.data.len());
        let take = room.min(bytes.len());
        self.data.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }

    fn finish(self) -> String {
        let mut dropped = self.dropped;
        let mut text = String::from_utf8_lossy(&self.data).into_owned();
        // Replacement characters can make the text a little longer than the bytes kept.
        if text.len() > self.cap {
            let mut cut = self.cap;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            dropped += (text.len() - cut) as u64;
            text.truncate(cut);
        }
        if dropped > 0 {
            text.push_str(&cst_registry::output::truncation_marker(dropped));
        }
        text
    }
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::process::Stdio;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::unix::pipe;
    use tokio::process::Child;

    use super::{Capped, ProcessOutput, ProcessSpec, BODY_CAP, GRACE, TIMEOUT_EXIT_CODE};

    /// How long output is still read once the main process has exited.
    const DRAIN: Duration = Duration::from_millis(250);

    /// Kills the group with SIGKILL when dropped (the caller's future was dropped mid-run).
    struct GroupGuard {
        pgid: i32,
        armed: bool,
    }

    impl Drop for GroupGuard {
        fn drop(&mut self) {
            if self.armed {
                signal_group(self.pgid, libc::SIGKILL);
            }
        }
    }

    fn signal_group(pgid: i32, sig: i32) -> bool {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
        unsafe { libc::kill(-pgid, sig) == 0 }
    }

    fn group_alive(pgid: i32) -> bool {
        signal_group(pgid, 0)
    }

    /// TERM the group, give it [`GRACE`] to go, then KILL. Reaps the main child meanwhile so
    /// its zombie does not keep the group "alive".
    async fn kill_group(pgid: i32, child: &mut Child) {
        if !group_alive(pgid) {
            return;
        }
        signal_group(pgid, libc::SIGTERM);
        let until = tokio::time::Instant::now() + GRACE;
        while tokio::time::Instant::now() < until {
            let _ = child.try_wait();
            if !group_alive(pgid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        signal_group(pgid, libc::SIGKILL);
    }

    enum End {
        Exited,
        TimedOut,
        Cancelled,
    }

    /// How the command is started: through bubblewrap (sandboxed or only contained), or
    /// directly (no bubblewrap here), maybe with Landlock.
    fn command(spec: &ProcessSpec, program: &str) -> io::Result<(tokio::process::Command, Option<OwnedFd>)> {
        let status = crate::sandbox::status();
        if status.contains() {
            // bubblewrap reports a missing program only on its stderr: say it the usual way.
            if !program_exists(program, spec) {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("cannot start `{program}`: No such file or directory"),
                ));
            }
            let mut seccomp = None;
            let mut args = match &spec.sandbox {
                Some(policy) => {
                    if policy.write_workspace {
                        // `.agent/` is bound read-only; it must exist to be a mount point, else
                        // the command could create it (and host files in it).
                        let _ = std::fs::create_dir(policy.workspace.join(".agent"));
                    }
                    if let Ok(program) = &crate::sandbox::seccomp_program() {
                        seccomp = Some(memfd_with(program)?);
                    }
                    crate::sandbox::confined_args(policy, Some(&spec.cwd), seccomp.as_ref().map(|fd| fd.as_raw_fd()))
                }
                None => crate::sandbox::contained_args(&spec.cwd),
            };
            args.push("--".into());
            args.extend(spec.argv.iter().cloned());
            let mut cmd = tokio::process::Command::new(crate::sandbox::BWRAP);
            cmd.args(args);
            return Ok((cmd, seccomp));
        }
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&spec.argv[1..]);
        if let Some(policy) = &spec.sandbox {
            let applied = crate::sandbox::landlock_writes(&mut cmd, policy)?;
            if !applied && !policy.write_workspace {
                return Err(io::Error::other(
                    "cannot run a command with the workspace read-only: this system has no process sandbox \
                     (see `cst-agent status`)",
                ));
            }
        }
        Ok((cmd, None))
    }

    /// Whether `program` names an executable file: a path (relative to the cwd), else on PATH.
    fn program_exists(program: &str, spec: &ProcessSpec) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let is_exe = |p: &std::path::Path| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        if program.contains('/') {
            return is_exe(&spec.cwd.join(program));
        }
        let path = spec
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| std::ffi::OsString::from(v))
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        std::env::split_paths(&path).any(|d| is_exe(&spec.cwd.join(d).join(program)))
    }

    /// A sealed-off in-memory file holding `data`, read from its start (bwrap `--seccomp FD`).
    fn memfd_with(data: &[u8]) -> io::Result<OwnedFd> {
        use std::io::{Seek, Write};
        // SAFETY: the name is a NUL-terminated literal; the returned fd is owned below.
        let fd = unsafe { libc::memfd_create(c"cst-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and belongs to nobody else.
        let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.write_all(data)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        Ok(OwnedFd::from(file))
    }

    pub(super) async fn run(spec: ProcessSpec) -> io::Result<ProcessOutput> {
        let Some(program) = spec.argv.first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command line"));
        };
        // One pipe for both streams keeps the order the bytes were produced in.
        let (reader, writer) = io::pipe()?;
        let writer2 = writer.try_clone()?;
        let (mut cmd, seccomp) = command(&spec, program)?;
        let keep_fd = seccomp.as_ref().map_or(-1, |fd| fd.as_raw_fd());
        let host = std::process::id();
        cmd.current_dir(&spec.cwd)
            .env_clear()
            .envs(crate::child_env::child_env(
                spec.sandbox.is_some(),
                spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2))
            .kill_on_drop(true);
        // SAFETY: runs in the forked child before exec and makes only async-signal-safe
        // syscalls (setsid, prctl, getppid, close_range, fcntl); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                // A new session: a new process group, and no controlling terminal.
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                // Die with the host (bubblewrap passes it on with --die-with-parent).
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::getppid() as u32 != host {
                    return Err(io::Error::other("the host exited"));
                }
                // No descriptor of the host but stdin/stdout/stderr (and the seccomp program).
                #[cfg(target_os = "linux")]
                {
                    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC);
                }
                if keep_fd >= 0 && libc::fcntl(keep_fd, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = cmd.spawn();
        // Our copies of the pipe's write end live in `cmd`; close them so EOF can happen.
        drop(cmd);
        drop(seccomp);
        let mut child = spawned.map_err(|e| io::Error::new(e.kind(), format!("cannot start `{program}`: {e}")))?;
        let pgid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| io::Error::other("child exited before its id was read"))?;
        let mut guard = GroupGuard { pgid, armed: true };

        let stdin_task = child.stdin.take().map(|mut w| {
            let data = spec.stdin.clone();
            tokio::spawn(async move {
                // A tool that does not read stdin closes it; that is not an error.
                let _ = w.write_all(&data).await;
                let _ = w.shutdown().await;
            })
        });

        let mut rx = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
        let mut buf = Capped::new(BODY_CAP);
        let mut chunk = vec![0u8; 64 * 1024];
        let mut eof = false;
        let mut status = None;
        let deadline = tokio::time::sleep(spec.timeout);
        tokio::pin!(deadline);

        let end = loop {
            if status.is_some() {
                break End::Exited;
            }
            tokio::select! {
                r = rx.read(&mut chunk), if !eof => match r {
                    Ok(0) => eof = true,
                    Ok(n) => buf.push(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => eof = true,
                },
                st = child.wait() => status = Some(st?),
                _ = &mut deadline => break End::TimedOut,
                _ = spec.cancel.cancelled() => break End::Cancelled,
            }
        };

        match end {
            End::Exited => {
                // Take what is already in the pipe. A process left behind (in the group, or one
                // that left it without a PID namespace to hold it) may keep the pipe open and keep
                // writing: read for a bounded time only, then kill the group and stop.
                let until = tokio::time::Instant::now() + DRAIN;
                let mut killed = false;
                while !eof {
                    match tokio::time::timeout_at(until, rx.read(&mut chunk)).await {
                        Ok(Ok(0)) | Ok(Err(_)) => eof = true,
                        Ok(Ok(n)) => buf.push(&chunk[..n]),
                        Err(_) if !killed => {
                            kill_group(pgid, &mut child).await;
                            killed = true;
                            drain(&mut rx, &mut buf, &mut chunk, eof).await;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                if !killed && group_alive(pgid) {
                    kill_group(pgid, &mut child).await;
                }
            }
            End::TimedOut | End::Cancelled => {
                kill_group(pgid, &mut child).await;
                let _ = tokio::time::timeout(GRACE, child.wait()).await;
                drain(&mut rx, &mut buf, &mut chunk, eof).await;
            }
        }
        guard.armed = false;
        if let Some(t) = stdin_task {
            t.abort();
        }

        let exit_code = match end {
            End::TimedOut => Some(TIMEOUT_EXIT_CODE),
            _ => status.as_ref().and_then(exit_code_of),
        };
        Ok(ProcessOutput {
            output: buf.finish(),
            exit_code,
            timed_out: matches!(end, End::TimedOut),
            cancelled: matches!(end, End::Cancelled),
        })
    }

    /// Read what the (now killed) group left in the pipe, for a bounded time.
    async fn drain(rx: &mut pipe::Receiver, buf: &mut Capped, chunk: &mut [u8], mut eof: bool) {
        let until = tokio::time::Instant::now() + Duration::from_millis(200);
        while !eof {
            match tokio::time::timeout_at(until, rx.read(chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => eof = true,
                Ok(Ok(n)) => buf.push(&chunk[..n]),
            }
        }
    }

    fn exit_code_of(st: &std::process::ExitStatus) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        st.code().or_else(|| st.signal().map(|s| 128 + s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_counts_dropped_bytes() {
        let mut c = Capped::new(10);
        c.push(b"0123456789abc");
        c.push(b"def");
        let s = c.finish();
        assert!(s.starts_with("0123456789"));
        assert!(s.contains("6 more bytes dropped"), "{s}");
    }
}
