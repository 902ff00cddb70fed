//! Connecting to a server: the transport (how bytes move and what process, if any, backs it)
//! is separate from the MCP client on top. Only stdio exists today; an HTTP transport becomes a
//! second arm of [`connect`] whose [`Connection`] has no [`ProcessGuard`].
//!
//! stdio servers run in their own process group (a Job Object on Windows) so `npx`/`sh`/`uvx`
//! grandchildren die with them; the group is always killed and reaped (no zombies, no orphans).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, ProtocolVersion, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{Peer, RoleClient, ServiceExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, StdioConfig, TransportConfig};
use super::stderr::StderrTail;

/// How long a server gets to exit on its own after stdin closes before its group is killed.
const GRACE: Duration = Duration::from_millis(500);
/// Longest stdout line accepted (rmcp's default is 16 MiB).
const MAX_LINE: usize = 64 << 20;
/// A server that keeps sending `nextCursor` is cut off here.
const MAX_PAGES: usize = 1000;

/// Owns a server's process (group): kills and reaps it when asked or dropped.
pub struct ProcessGuard {
    pid: Option<u32>,
    kill: CancellationToken,
    /// `true` once the leader has exited (on its own or killed).
    exited: watch::Receiver<bool>,
    /// `true` once the whole group has been killed and the leader reaped.
    reaped: watch::Receiver<bool>,
}

impl ProcessGuard {
    fn spawn_reaper(mut child: Box<dyn ChildWrapper>) -> Self {
        let pid = child.id();
        let kill = CancellationToken::new();
        let (exited_tx, exited) = watch::channel(false);
        let (reaped_tx, reaped) = watch::channel(false);
        let k = kill.clone();
        tokio::spawn(async move {
            let by_itself = tokio::select! {
                _ = child.wait() => true,
                _ = k.cancelled() => false,
            };
            if !by_itself {
                // stdin is closed by now: give the server a moment to exit cleanly.
                if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            }
            let _ = exited_tx.send(true);
            // The leader is reaped; kill whatever is left in its group (grandchildren).
            let _ = child.start_kill();
            let _ = reaped_tx.send(true);
            drop(child);
        });
        Self {
            pid,
            kill,
            exited,
            reaped,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }

    pub async fn wait_exited(&self) {
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|e| *e).await;
    }

    /// Kill the group and wait until the leader is reaped.
    pub async fn kill_and_reap(&self) {
        self.kill.cancel();
        let mut rx = self.reaped.clone();
        let _ = rx.wait_for(|r| *r).await;
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        // The reaper task kills and reaps; KillOnDrop is the backstop when the runtime is gone.
        self.kill.cancel();
    }
}

/// A live session with one server.
pub struct Connection {
    pub peer: Peer<RoleClient>,
    pub(super) service: Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    pub process: Option<ProcessGuard>,
    pub stderr: StderrTail,
}

impl Connection {
    /// Has the server gone away (process exited or transport closed)?
    pub fn is_gone(&self) -> bool {
        self.process.as_ref().is_some_and(|p| p.has_exited()) || self.peer.is_transport_closed()
    }

    /// Resolves when the server has gone away.
    pub async fn gone(&self) {
        match &self.process {
            Some(p) => p.wait_exited().await,
            None => std::future::pending().await,
        }
    }

    /// Close stdin, then kill the group and reap it.
    pub async fn shutdown(&self) {
        let service = self.service.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(service) = service {
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        }
        if let Some(p) = &self.process {
            p.kill_and_reap().await;
        }
    }
}

/// Why a start failed, and the stderr tail collected so far.
pub struct StartError {
    pub reason: String,
}

/// Start a server: spawn, `initialize` handshake, then the whole paginated `tools/list`, all
/// within the start timeout. On failure everything that was started is killed and reaped.
pub async fn connect(cfg: &ServerConfig) -> Result<(Connection, Vec<Tool>), StartError> {
    let stdio = match &cfg.transport {
        TransportConfig::Stdio(stdio) => stdio,
        TransportConfig::Http(http) => {
            return super::http::connect(http, cfg.start_timeout)
                .await
                .map(|(conn, tools, _)| (conn, tools))
        }
    };
    let (guard, stdout, stdin, stderr) = spawn_stdio(stdio).map_err(|reason| StartError { reason })?;
    let transport = AsyncRwTransport::<RoleClient, _, _>::new_client(stdout, stdin).with_max_line_length(MAX_LINE);
    let started = tokio::time::timeout(cfg.start_timeout, async {
        // Plain `initialize` (not the discover probe): every stdio server accepts it (research §2.4).
        let service = client_config()
            .serve(transport)
            .await
            .map_err(|e| format!("initialize failed: {e}"))?;
        let tools = list_all_tools(service.peer())
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok::<_, String>((service, tools))
    });
    let exited = guard.wait_exited();
    let outcome = tokio::select! {
        r = started => match r {
            Ok(Ok(ok)) => Ok(ok),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!(
                "no answer to initialize and tools/list within {} s (start timeout)",
                cfg.start_timeout.as_secs_f64()
            )),
        },
        _ = exited => Err("exited during start-up".to_string()),
    };
    match outcome {
        Ok((service, tools)) => {
            let conn = Connection {
                peer: service.peer().clone(),
                service: Mutex::new(Some(service)),
                process: Some(guard),
                stderr,
            };
            Ok((conn, tools))
        }
        Err(reason) => {
            guard.kill_and_reap().await;
            stderr.settle(Duration::from_millis(300)).await;
            Err(StartError {
                reason: format!("{reason}; last stderr line: {}", stderr.last_line()),
            })
        }
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("cst-agent", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Follow every `nextCursor` (M7), with a page cap and a repeated-cursor check.
pub(super) async fn list_all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor.take())))
            .await?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(c) if !c.is_empty() && seen.insert(c.clone()) => cursor = Some(c),
            _ => break,
        }
    }
    Ok(tools)
}

type Pipes = (
    ProcessGuard,
    tokio::process::ChildStdout,
    tokio::process::ChildStdin,
    StderrTail,
);

fn spawn_stdio(cfg: &StdioConfig) -> Result<Pipes, String> {
    if !cfg.cwd.is_dir() {
        return Err(format!("working directory {} does not exist", cfg.cwd.display()));
    }
    let program = resolve_program(&cfg.command, &cfg.cwd)?;
    let mut cmd = tokio::process::Command::new(&program);
    // The host's environment without its secrets (so PATH, HOME and on Windows SystemRoot,
    // PATHEXT, APPDATA stay; the model key, `*_TOKEN`... do not), and the entry's `env` laid over
    // it (M3): a variable the entry names explicitly is passed.
    cmd.args(&cfg.args)
        .env_clear()
        .envs(crate::child_env::child_env(
            false,
            cfg.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ))
        .current_dir(&cfg.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut wrap = CommandWrap::from(cmd);
    #[cfg(unix)]
    wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
    // A Job Object that kills every process in it when its last handle closes (KillOnDrop), so
    // the server's children die with the host even when the host is killed; CREATE_NO_WINDOW so
    // a console server started from the TUI or a GUI does not open a console window.
    #[cfg(windows)]
    {
        wrap.wrap(process_wrap::tokio::JobObject);
        wrap.wrap(process_wrap::tokio::CreationFlags(
            windows::Win32::System::Threading::CREATE_NO_WINDOW,
        ));
    }
    wrap.wrap(KillOnDrop);
    let mut child = wrap
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", program.display()))?;
    let stdin = child.stdin().take();
    let stdout = child.stdout().take();
    let stderr = child.stderr().take();
    let guard = ProcessGuard::spawn_reaper(child);
    match (stdin, stdout, stderr) {
        (Some(i), Some(o), Some(e)) => Ok((guard, o, i, StderrTail::spawn(e))),
        _ => Err("the server's stdio pipes are missing".into()),
    }
}

/// A bare name is looked up on the absolute folders of the host's `PATH` (with `PATHEXT` on
/// Windows, so `npx` finds `npx.cmd`); a relative path with a separator is taken from the
/// server's `cwd` (never an untrusted workspace: see `discovery`).
fn resolve_program(command: &str, cwd: &Path) -> Result<PathBuf, String> {
    let has_sep = command.contains('/') || (cfg!(windows) && command.contains('\\'));
    if has_sep {
        let p = PathBuf::from(command);
        let p = if p.is_absolute() { p } else { cwd.join(p) };
        if p.exists() {
            return Ok(p);
        }
        return Err(format!("command `{command}` does not exist ({})", p.display()));
    }
    // Only the absolute folders of PATH: a relative entry (`.`, `bin`, an empty one) would be
    // taken from the host's current folder — often an untrusted workspace (T1).
    let path = std::env::var_os("PATH").unwrap_or_default();
    let absolute: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| d.is_absolute()).collect();
    let path = std::env::join_paths(absolute).unwrap_or_default();
    which::which_in(command, Some(path), cwd).map_err(|_| format!("command `{command}` not found on PATH"))
}
