//! The MCP manager: server states, background start, tool registration, calls, reload and
//! shutdown (M7–M12).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use super::config::{ParsedServer, ServerConfig, ServerKind, TransportConfig};
use super::result::render;
use super::transport::{connect, Connection};
use cst_config::Origin;
use cst_protocol::{Diagnostic, DiagnosticKind};
use cst_registry::{
    fit_tool_name, Confinement, Failure, Invocation, Perm, Registry, SourceKind, ToolRunner, ToolSource, ToolSpec,
};

/// How long a headless run (`exec`, `mcp list`, `tools list|call`) waits for servers that are
/// still starting before it goes on (M7). A server's own `startTimeout` decides when it fails;
/// it does not lengthen this wait. The TUI does not wait at all.
pub const HEADLESS_WAIT: Duration = Duration::from_secs(30);

/// How long a headless run waits quietly before it names the MCP servers it is waiting for.
pub const WAITING_NOTICE_AFTER: Duration = Duration::from_secs(2);

/// A server's state (M11, M12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub enum ServerStatus {
    Starting,
    Ready,
    Failed(String),
    /// The last stderr line.
    Exited(String),
    Disabled,
}

impl ServerStatus {
    pub fn label(&self) -> &'static str {
        match self {
            ServerStatus::Starting => "starting",
            ServerStatus::Ready => "ready",
            ServerStatus::Failed(_) => "failed",
            ServerStatus::Exited(_) => "exited",
            ServerStatus::Disabled => "disabled",
        }
    }

    /// `failed (reason)`, `exited (last line)`, or the bare label.
    pub fn describe(&self) -> String {
        match self {
            ServerStatus::Failed(r) | ServerStatus::Exited(r) => format!("{} ({r})", self.label()),
            _ => self.label().to_string(),
        }
    }
}

/// What the CLI, the TUI sidebar and `/mcp` show about one server.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub name: String,
    pub file: std::path::PathBuf,
    pub origin: String,
    #[serde(flatten)]
    pub status: ServerStatus,
    /// Registered tool names (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    pub pid: Option<u32>,
}

/// What [`McpManager::apply`] did, by server name (each list sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpChanges {
    /// New names: created and started in the background.
    pub added: Vec<String>,
    /// Names no longer configured: stopped and dropped.
    pub removed: Vec<String>,
    /// Same name, different config: stopped and started again with the new config.
    pub changed: Vec<String>,
}

impl McpChanges {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

struct SlotState {
    status: ServerStatus,
    conn: Option<Arc<Connection>>,
    tools: Vec<String>,
    /// Tool-name clashes of the current registration. Per server so that a reload does not
    /// repeat them and a removed server does not leave them behind.
    warnings: Vec<Diagnostic>,
}

/// One configured server. Its config never changes: a changed server gets a new slot.
struct Slot {
    parsed: ParsedServer,
    /// Bumped on every (re)start and stop so a stale start task cannot overwrite a newer one.
    /// Changed only with `state` locked, so a start task that checks it under that lock sees
    /// a stop either entirely before or entirely after its own registration.
    generation: AtomicU64,
    state: Mutex<SlotState>,
}

impl Slot {
    fn new(parsed: ParsedServer) -> Arc<Self> {
        let status = match &parsed.kind {
            ServerKind::Start(_) => ServerStatus::Starting,
            ServerKind::Disabled => ServerStatus::Disabled,
            ServerKind::Invalid(r) => ServerStatus::Failed(r.clone()),
        };
        Arc::new(Slot {
            parsed,
            generation: AtomicU64::new(0),
            state: Mutex::new(SlotState {
                status,
                conn: None,
                tools: Vec::new(),
                warnings: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_startable(&self) -> bool {
        matches!(self.parsed.kind, ServerKind::Start(_))
    }
}

struct Inner {
    registry: Arc<Registry>,
    /// Replaced by [`McpManager::apply`]. A std lock, never held across an `.await`: readers
    /// clone the `Arc`s out first.
    slots: RwLock<Vec<Arc<Slot>>>,
    /// Serialises apply, reload and shutdown, so that one cannot restart a server that
    /// another is removing (which would leave its process and tools behind).
    ops: tokio::sync::Mutex<()>,
    /// Bumped on every state change (wait_ready, the TUI).
    changed: watch::Sender<u64>,
}

/// Starts and owns the MCP servers of a session. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl McpManager {
    /// Create the manager; nothing starts until [`McpManager::start_all`].
    pub fn new(registry: Arc<Registry>, servers: Vec<ParsedServer>) -> Self {
        let slots = first_of_each_name(servers).into_iter().map(Slot::new).collect();
        let (changed, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                registry,
                slots: RwLock::new(slots),
                ops: tokio::sync::Mutex::new(()),
                changed,
            }),
        }
    }

    /// The current slots, cloned out so no lock is held afterwards.
    fn slots(&self) -> Vec<Arc<Slot>> {
        self.inner.slots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Start every startable server in the background, in parallel (M7). Returns at once.
    pub fn start_all(&self) {
        for slot in self.slots() {
            if slot.is_startable() {
                self.spawn_start(slot);
            }
        }
    }

    /// Bring the running servers in line with a new list (the mcp.json files were re-read,
    /// E8), by server name: added servers are started in the background, removed ones are
    /// stopped (group killed and reaped, tools unregistered), changed ones (any difference in
    /// their [`ParsedServer`]) are stopped and started with the new config, and unchanged ones
    /// keep running untouched. Disabled and invalid servers get their status as in
    /// [`McpManager::new`]. [`McpManager::servers`] follows the order of `servers`; on a
    /// repeated name the first entry wins (E7). Returns once the stops are done.
    pub async fn apply(&self, servers: Vec<ParsedServer>) -> McpChanges {
        let _ops = self.inner.ops.lock().await;
        let old = self.slots();
        let by_name: HashMap<&str, &Arc<Slot>> = old.iter().map(|s| (s.parsed.name.as_str(), s)).collect();
        let mut changes = McpChanges::default();
        let mut next = Vec::new();
        let mut to_stop = Vec::new();
        let mut to_start = Vec::new();
        for parsed in first_of_each_name(servers) {
            match by_name.get(parsed.name.as_str()) {
                Some(slot) if slot.parsed == parsed => next.push(Arc::clone(slot)),
                found => {
                    if let Some(slot) = found {
                        changes.changed.push(parsed.name.clone());
                        to_stop.push(Arc::clone(slot));
                    } else {
                        changes.added.push(parsed.name.clone());
                    }
                    let slot = Slot::new(parsed);
                    to_start.push(slot.clone());
                    next.push(slot);
                }
            }
        }
        let kept: HashSet<&str> = next.iter().map(|s| s.parsed.name.as_str()).collect();
        for slot in &old {
            if !kept.contains(slot.parsed.name.as_str()) {
                changes.removed.push(slot.parsed.name.clone());
                to_stop.push(slot.clone());
            }
        }
        changes.added.sort();
        changes.removed.sort();
        changes.changed.sort();

        *self.inner.slots.write().unwrap_or_else(|e| e.into_inner()) = next;
        self.bump();
        // Stop before starting: tools are unregistered by server name, so the old instance of
        // a changed server must be gone before the new one registers.
        futures::future::join_all(to_stop.iter().map(|slot| self.stop_slot(slot))).await;
        for slot in to_start {
            if slot.is_startable() {
                self.spawn_start(slot);
            }
        }
        changes
    }

    /// The configs of the deployment config's servers (origin `deployment`), to keep them across
    /// an [`McpManager::apply`] of re-read mcp.json sources.
    pub fn deployment_servers(&self) -> Vec<ParsedServer> {
        self.slots()
            .iter()
            .filter(|s| s.parsed.origin == Origin::Deployment)
            .map(|s| s.parsed.clone())
            .collect()
    }

    /// Every server with its status and tools, in precedence order.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.slots()
            .iter()
            .map(|slot| {
                let st = slot.lock();
                ServerInfo {
                    name: slot.parsed.name.clone(),
                    file: slot.parsed.file.clone(),
                    origin: origin_label(&slot.parsed.origin),
                    status: st.status.clone(),
                    tools: st.tools.clone(),
                    pid: st.conn.as_ref().and_then(|c| c.process.as_ref()).and_then(|p| p.pid()),
                }
            })
            .collect()
    }

    /// Tool-name clashes and other problems found while registering (each names the server).
    pub fn warnings(&self) -> Vec<Diagnostic> {
        self.slots()
            .iter()
            .flat_map(|slot| slot.lock().warnings.clone())
            .collect()
    }

    /// A receiver that changes whenever a server changes state (for the TUI sidebar, M12).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Wait until no server is `starting`, or `timeout` passes; true when none is starting.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut rx = self.inner.changed.subscribe();
        loop {
            if !self.any_starting() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, rx.changed()).await.is_err() {
                return !self.any_starting();
            }
        }
    }

    /// Servers that failed to start or exited, each as a warning with its reason (the error, or
    /// the last line it wrote to stderr), for headless runs (issue 14 item 7).
    pub fn failures(&self) -> Vec<Diagnostic> {
        self.slots()
            .iter()
            .filter_map(|s| {
                let st = s.lock();
                let what = match &st.status {
                    ServerStatus::Failed(r) => format!("failed: {r}"),
                    ServerStatus::Exited(r) => format!("exited: {r}"),
                    _ => return None,
                };
                Some(Diagnostic::in_file(
                    DiagnosticKind::McpServer,
                    &s.parsed.file,
                    format!("MCP server `{}` {what}; its tools are not available", s.parsed.name),
                ))
            })
            .collect()
    }

    /// Names of the servers still `starting`.
    pub fn starting(&self) -> Vec<String> {
        self.slots()
            .iter()
            .filter(|s| matches!(s.lock().status, ServerStatus::Starting))
            .map(|s| s.parsed.name.clone())
            .collect()
    }

    /// Wait as headless runs do (M7, up to `timeout`): after [`WAITING_NOTICE_AFTER`], `notice`
    /// gets the names of the servers still starting, once, so a slow server is not a silent
    /// pause.
    pub async fn wait_ready_with_notice(&self, timeout: Duration, notice: &(dyn Fn(&[String]) + Send + Sync)) -> bool {
        let first = WAITING_NOTICE_AFTER.min(timeout);
        if self.wait_ready(first).await {
            return true;
        }
        let names = self.starting();
        if !names.is_empty() {
            notice(&names);
        }
        self.wait_ready(timeout.saturating_sub(first)).await
    }

    /// How many servers failed or exited (the summary line counts them apart).
    pub fn failed_count(&self) -> usize {
        self.slots()
            .iter()
            .filter(|s| matches!(s.lock().status, ServerStatus::Failed(_) | ServerStatus::Exited(_)))
            .count()
    }

    /// The servers still `starting`, as warnings that say the run goes on without them; for
    /// headless runs after their wait of `waited` (M7).
    pub fn still_starting(&self, waited: Duration) -> Vec<Diagnostic> {
        self.slots()
            .iter()
            .filter(|s| matches!(s.lock().status, ServerStatus::Starting))
            .map(|s| {
                Diagnostic::in_file(
                    DiagnosticKind::McpServer,
                    &s.parsed.file,
                    format!(
                        "MCP server `{}` has not finished starting after {} s; going on without it \
                         (its tools are added once it is ready)",
                        s.parsed.name,
                        waited.as_secs()
                    ),
                )
            })
            .collect()
    }

    fn any_starting(&self) -> bool {
        self.slots()
            .iter()
            .any(|s| matches!(s.lock().status, ServerStatus::Starting))
    }

    /// Restart one server (`Some(name)`) or all (E8, M11): stop it, drop its tools, start it
    /// again in the background. Unknown name → error. Disabled and invalid servers stay as
    /// they are.
    pub async fn reload(&self, name: Option<&str>) -> Result<(), String> {
        let _ops = self.inner.ops.lock().await;
        let slots = self.slots();
        let targets: Vec<Arc<Slot>> = match name {
            Some(n) => match slots.iter().find(|s| s.parsed.name == n) {
                Some(s) => vec![s.clone()],
                None => return Err(format!("no MCP server named `{n}`")),
            },
            None => slots,
        };
        let stops = targets.iter().map(|slot| self.stop_slot(slot));
        futures::future::join_all(stops).await;
        for slot in targets {
            if slot.is_startable() {
                self.set_status(&slot, ServerStatus::Starting);
                self.spawn_start(slot);
            }
        }
        Ok(())
    }

    /// Stop every server: close stdin, kill each process group and reap it. Tools are removed.
    pub async fn shutdown(&self) {
        let _ops = self.inner.ops.lock().await;
        let slots = self.slots();
        futures::future::join_all(slots.iter().map(|slot| self.stop_slot(slot))).await;
    }

    async fn stop_slot(&self, slot: &Arc<Slot>) {
        let conn = {
            let mut st = slot.lock();
            // A running start task sees the new generation and discards its result.
            slot.generation.fetch_add(1, Ordering::SeqCst);
            st.tools.clear();
            st.warnings.clear();
            if matches!(st.status, ServerStatus::Ready | ServerStatus::Starting) {
                st.status = ServerStatus::Exited("stopped by the host".into());
            }
            st.conn.take()
        };
        let name = slot.parsed.name.clone();
        self.inner
            .registry
            .remove_where(|s| s.source.kind == SourceKind::Mcp && s.source.owner == name);
        if let Some(conn) = conn {
            conn.shutdown().await;
        }
        self.bump();
    }

    fn spawn_start(&self, slot: Arc<Slot>) {
        let ServerKind::Start(cfg) = slot.parsed.kind.clone() else {
            return;
        };
        let generation = {
            let _st = slot.lock();
            slot.generation.fetch_add(1, Ordering::SeqCst) + 1
        };
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let result = connect(&cfg).await;
            let Some(inner) = weak.upgrade() else {
                if let Ok((conn, _)) = result {
                    conn.shutdown().await;
                }
                return;
            };
            let mgr = McpManager { inner };
            match result {
                Err(e) => {
                    mgr.set_status_if(&slot, generation, ServerStatus::Failed(e.reason));
                }
                Ok((conn, tools)) => {
                    let conn = Arc::new(conn);
                    let current = {
                        // Check and register under the state lock: a stop cannot slip in
                        // between and leave these tools registered for a stopped server.
                        let mut st = slot.lock();
                        let current = slot.generation.load(Ordering::SeqCst) == generation;
                        if current {
                            let (names, warnings) = mgr.register_tools(&slot, &cfg, &conn, tools);
                            st.conn = Some(conn.clone());
                            st.tools = names;
                            st.warnings = warnings;
                            st.status = ServerStatus::Ready;
                        }
                        current
                    };
                    if !current {
                        conn.shutdown().await;
                        return;
                    }
                    mgr.bump();
                    mgr.watch_exit(slot, generation, conn);
                }
            }
        });
    }

    /// Mark the server `exited (last stderr line)` when its process goes away (M11).
    fn watch_exit(&self, slot: Arc<Slot>, generation: u64, conn: Arc<Connection>) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            conn.gone().await;
            conn.stderr.settle(Duration::from_millis(500)).await;
            let Some(inner) = weak.upgrade() else { return };
            let mgr = McpManager { inner };
            // A stopped or restarted server is not `exited`: its stop reaps the process.
            if !mgr.set_status_if(&slot, generation, ServerStatus::Exited(conn.stderr.last_line())) {
                return;
            }
            // Kill what is left of the group and reap (the tools stay: calls fail at once).
            conn.shutdown().await;
        });
    }

    /// Register the tools; returns the registered names and the clash warnings.
    fn register_tools(
        &self,
        slot: &Arc<Slot>,
        cfg: &ServerConfig,
        conn: &Arc<Connection>,
        tools: Vec<rmcp::model::Tool>,
    ) -> (Vec<String>, Vec<Diagnostic>) {
        let server = &slot.parsed.name;
        let mut names = Vec::new();
        let mut warnings = Vec::new();
        for tool in tools {
            let registered = fit_tool_name(&format!("mcp__{server}__{}", tool.name));
            // A deployment server's tool policy decides instead of `autoApprove` (D12).
            let policy = match &cfg.transport {
                TransportConfig::Http(http) => Some(http.policy_of(&tool.name)),
                TransportConfig::Stdio(_) => None,
            };
            if policy.is_some_and(|p| !p.enabled) {
                continue;
            }
            let read = match policy {
                Some(p) => p.read_only,
                None => cfg.auto_approve.covers(&tool.name, &registered),
            };
            let perm = if read { Perm::Read } else { Perm::Net };
            let description = tool
                .description
                .as_deref()
                .map(str::to_string)
                .or_else(|| tool.title.clone())
                .unwrap_or_default();
            let spec = ToolSpec {
                name: registered.clone(),
                description,
                // Given to the model unchanged (M8); the registry validates arguments against it.
                input_schema: Value::Object((*tool.input_schema).clone()),
                perm,
                source: ToolSource {
                    kind: SourceKind::Mcp,
                    owner: server.clone(),
                    file: Some(slot.parsed.file.clone()),
                },
                timeout: cfg.call_timeout,
                // The server is a process the user configured; the host does not confine it.
                confine_with: Confinement::None,
            };
            let runner = Arc::new(McpToolRunner {
                server: server.clone(),
                tool: tool.name.to_string(),
                conn: Arc::downgrade(conn),
                slot: Arc::downgrade(slot),
                call_timeout: cfg.call_timeout,
                idle_timeout: match &cfg.transport {
                    TransportConfig::Http(http) => Some(http.idle_timeout),
                    TransportConfig::Stdio(_) => None,
                },
            });
            match self.inner.registry.register(spec, runner) {
                Ok(()) => names.push(registered),
                Err(clash) => {
                    let mut d = Diagnostic::from(clash);
                    d.message = format!("MCP server `{server}`: {}", d.message);
                    warnings.push(d);
                }
            }
        }
        (names, warnings)
    }

    fn set_status(&self, slot: &Slot, status: ServerStatus) {
        slot.lock().status = status;
        self.bump();
    }

    /// Set the status unless the server was stopped or restarted since `generation`.
    fn set_status_if(&self, slot: &Slot, generation: u64, status: ServerStatus) -> bool {
        {
            let mut st = slot.lock();
            if slot.generation.load(Ordering::SeqCst) != generation {
                return false;
            }
            st.status = status;
        }
        self.bump();
        true
    }

    fn bump(&self) {
        self.inner.changed.send_modify(|n| *n += 1);
    }
}

/// Names are the key of a slot; on a repeat the first entry wins, as between files (E7).
fn first_of_each_name(servers: Vec<ParsedServer>) -> Vec<ParsedServer> {
    let mut seen = HashSet::new();
    servers.into_iter().filter(|s| seen.insert(s.name.clone())).collect()
}

fn origin_label(o: &Origin) -> String {
    match o {
        Origin::Workspace => "workspace".into(),
        Origin::ConfigDir => "config".into(),
        Origin::Plugin(p) => format!("plugin {p}"),
        Origin::Deployment => "deployment".into(),
    }
}

/// Runs `tools/call` for one MCP tool.
struct McpToolRunner {
    server: String,
    /// The server's own name for the tool.
    tool: String,
    conn: Weak<Connection>,
    slot: Weak<Slot>,
    call_timeout: Duration,
    /// An HTTP server's `timeout_seconds` (D6), for the message of a call it cut.
    idle_timeout: Option<Duration>,
}

impl McpToolRunner {
    fn exited_message(&self, conn: Option<&Connection>) -> String {
        let from_status = self.slot.upgrade().and_then(|slot| match &slot.lock().status {
            ServerStatus::Exited(line) => Some(line.clone()),
            _ => None,
        });
        let line = from_status
            .or_else(|| conn.map(|c| c.stderr.last_line()))
            .unwrap_or_else(|| "(no stderr output)".into());
        format!("server {} exited: {line}", self.server)
    }
}

impl ToolRunner for McpToolRunner {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            match call.confinement {
                // The call runs in the server, a process the user configured and the host does
                // not confine; the gate's approval is all there is.
                Confinement::None | Confinement::WorkspacePaths | Confinement::ProcessSandbox => {}
            }
            let Some(conn) = self.conn.upgrade() else {
                return Err(failed(self.exited_message(None)));
            };
            if conn.is_gone() {
                conn.stderr.settle(Duration::from_millis(300)).await;
                return Err(failed(self.exited_message(Some(&conn))));
            }
            let mut params = rmcp::model::CallToolRequestParams::new(self.tool.clone());
            match call.args {
                Value::Object(m) => params = params.with_arguments(m.clone()),
                Value::Null => {}
                other => return Err(failed(format!("arguments must be a JSON object, got {other}"))),
            }
            // Dropping the call future (our timeout, or the registry dropping this future when
            // `ToolContext::cancel` fires or its caller goes away) makes rmcp send
            // `notifications/cancelled` for the request (M10).
            let request = conn.peer.call_tool(params);
            let outcome = tokio::select! {
                r = tokio::time::timeout(self.call_timeout, request) => r,
                _ = conn.gone() => {
                    conn.stderr.settle(Duration::from_millis(500)).await;
                    return Err(failed(self.exited_message(Some(&conn))));
                }
            };
            match outcome {
                Err(_) => Err(Failure::TimedOut {
                    message: format!(
                        "MCP tool {} timed out after {} s; notifications/cancelled sent",
                        call.spec.name,
                        self.call_timeout.as_secs_f64()
                    ),
                }),
                Ok(Ok(result)) => {
                    let text = render(&result);
                    if result.is_error == Some(true) {
                        Err(failed(text))
                    } else {
                        Ok(text)
                    }
                }
                Ok(Err(rmcp::service::ServiceError::TransportClosed)) => {
                    conn.wait_gone_briefly().await;
                    Err(failed(self.exited_message(Some(&conn))))
                }
                // D6: a silent HTTP server was cut by its idle timeout (a read that timed out).
                Ok(Err(e)) if self.idle_timeout.is_some() && super::http::is_idle_cut(&e) => Err(Failure::TimedOut {
                    message: super::http::idle_cut_message(&self.server, self.idle_timeout.unwrap_or_default()),
                }),
                // No URL in the message (D10: an HTTP error names the request's URL).
                Ok(Err(e)) => Err(failed(super::http::scrub_urls(&format!(
                    "MCP server {}: {e}",
                    self.server
                )))),
            }
        })
    }
}

fn failed(message: String) -> Failure {
    Failure::Failed {
        message,
        exit_code: None,
    }
}

impl Connection {
    /// After a closed transport, give the process and its stderr a moment so the error can
    /// carry the last stderr line.
    async fn wait_gone_briefly(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.gone()).await;
        self.stderr.settle(Duration::from_millis(500)).await;
    }
}
