//! Running a native child process the way tools need it (POSIX): its own process group, stdin
//! fed, stdout+stderr captured in the order produced with a byte cap, a deadline that kills the
//! whole group (TERM, then KILL), cancellation, and the optional shell sandbox (P11).
//! Used by plugin.json command tools and by the built-in `run_shell`.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Program and arguments; `argv[0]` is looked up on PATH.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Confine writes to the workspace and temp dirs (P11) when `Some(workspace)`.
    pub sandbox: Option<PathBuf>,
    pub cancel: CancellationToken,
}

/// What happened.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// stdout and stderr interleaved in the order produced, capped at 512 KB with a marker.
    pub output: String,
    /// Exit code; 124 after a timeout (P7).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// Run `spec` to completion, deadline or cancellation. No process of the group survives.
pub async fn run_captured(spec: ProcessSpec) -> std::io::Result<ProcessOutput> {
    let _ = spec;
    Err(std::io::Error::other("process runner not built yet (issue 3)"))
}

/// Whether `Duration` is used (keeps the import when the body is filled in).
#[allow(dead_code)]
const _GRACE: Duration = Duration::from_millis(500);
