//! The one tool registry. Every tool — built-in, wasm, plugin.json command, MCP — is called
//! through [`Registry::call`]: name lookup, JSON-Schema validation of the arguments, the
//! permission gate, the time limit, cancellation and the output cap. A tool source only says how
//! to run a call (a [`ToolRunner`]).

pub mod names;
pub mod output;
pub mod question;
pub mod schema;
pub mod task;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use names::{fit_tool_name, is_valid_tool_name, sanitize_tool_name, MAX_TOOL_NAME_BYTES};
use schema::InputSchema;

/// The permission category lives in the protocol: approval requests carry it to front ends.
pub use cst_protocol::Perm;
use cst_protocol::{Diagnostic, DiagnosticKind};

/// Default per-call time limit (P7).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest per-call time limit a tool may ask for (P7).
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// What kind of source a tool comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Builtin,
    Wasm,
    Command,
    Mcp,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Builtin => "builtin",
            SourceKind::Wasm => "wasm",
            SourceKind::Command => "command",
            SourceKind::Mcp => "mcp",
        }
    }
}

/// Where a tool was declared: its kind, the plugin or server it belongs to, and the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolSource {
    pub kind: SourceKind,
    /// Plugin name, MCP server name, or `builtin`.
    pub owner: String,
    /// The file that declared the tool (plugin.json, mcp.json, a .wasm), when there is one.
    pub file: Option<PathBuf>,
}

impl ToolSource {
    pub fn builtin() -> Self {
        Self {
            kind: SourceKind::Builtin,
            owner: "builtin".into(),
            file: None,
        }
    }

    /// `wasm plugin text-stats (/path/plugin.json)` — used in warnings and listings.
    pub fn describe(&self) -> String {
        match &self.file {
            Some(f) => format!("{} {} ({})", self.kind.as_str(), self.owner, f.display()),
            None => format!("{} {}", self.kind.as_str(), self.owner),
        }
    }
}

/// Everything the registry and the model need to know about one tool.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub perm: Perm,
    pub source: ToolSource,
    #[serde(serialize_with = "ser_secs")]
    pub timeout: Duration,
    /// What this tool's runner enforces when the approval table confines a call: the built-in
    /// file tools check paths, native processes get Landlock; `None` for tools nothing more can
    /// confine (a wasm component reaches only its granted capabilities anyway; an MCP server is
    /// a process the user configured; `ask_user`, `skill`, `task`). Not part of `tools list`.
    #[serde(skip)]
    pub confine_with: Confinement,
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Per-call context handed to the runner.
#[derive(Clone)]
pub struct ToolContext {
    /// Workspace root (canonical when it exists).
    pub workspace: PathBuf,
    /// Cancelled when the turn is cancelled (Ctrl-C, Esc); runners stop their work.
    pub cancel: CancellationToken,
    /// Decides whether a call may run (approvals). `None` = allowed (the user ran it directly).
    pub gate: Option<Arc<dyn PermissionGate>>,
    /// The tools this caller may use (a sub-agent's); `None` = every tool.
    pub scope: Option<Arc<ToolScope>>,
    /// The session that can run sub-agents for `task`; `None` outside a session.
    pub subagents: Option<Arc<dyn task::SubAgentHost>>,
    /// Who answers `ask_user`; `None` when no person can (headless).
    pub questions: Option<Arc<dyn question::Questions>>,
    /// The model's id for this call, when a model made it.
    pub call_id: Option<String>,
}

impl ToolContext {
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            cancel: CancellationToken::new(),
            gate: None,
            scope: None,
            subagents: None,
            questions: None,
            call_id: None,
        }
    }
}

/// What a restricted caller (a sub-agent) may use. The registry checks it on every call, so a
/// tool left out of the model's list is refused even if the model names it (A2, A3).
#[derive(Debug, Clone, Default)]
pub struct ToolScope {
    /// Allow-list of names; `None` = every tool not excluded below.
    pub allowed: Option<std::collections::BTreeSet<String>>,
    /// Names refused whatever the allow-list says.
    pub never: Vec<String>,
    /// Names the caller's own definition refuses (a role's `disallowedTools`).
    pub denied: Vec<String>,
    /// Refuse write and shell tools and MCP tools that are not read-only (A3, M6, D12).
    pub readonly: bool,
    /// Who is restricted, for messages: `read-only sub-agent role `explore``.
    pub who: String,
}

impl ToolScope {
    /// `Err(reason)` when the caller may not use `spec`.
    pub fn permits(&self, spec: &ToolSpec) -> Result<(), String> {
        if self.never.contains(&spec.name) {
            // A2: `task` and `ask_user` (the rule ids stay out of what people read).
            return Err(format!("`{}` is never available to a sub-agent", spec.name));
        }
        if self.denied.contains(&spec.name) {
            return Err(format!("`{}` is disallowed for the {}", spec.name, self.who));
        }
        // A3: no write or shell tools for a read-only role.
        if self.readonly && !crate::readonly_allows(spec) {
            return Err(format!(
                "the {} is read-only: `{}` is a {} tool{}",
                self.who,
                spec.name,
                spec.perm,
                if spec.source.kind == SourceKind::Mcp {
                    " of an MCP server without autoApprove"
                } else {
                    ""
                }
            ));
        }
        if let Some(allowed) = &self.allowed {
            if !allowed.contains(&spec.name) {
                return Err(format!(
                    "`{}` is not in the `tools` list of the {}",
                    spec.name, self.who
                ));
            }
        }
        Ok(())
    }
}

/// Whether a read-only caller (a read-only sub-agent role) may use a tool (A3, M6, D12): no
/// write or shell category, and MCP tools only when they are read-only (`autoApprove`, which
/// registers them as `read`).
pub fn readonly_allows(spec: &ToolSpec) -> bool {
    match spec.perm {
        Perm::Write | Perm::Shell => false,
        Perm::Net => spec.source.kind != SourceKind::Mcp,
        Perm::Read => true,
    }
}

/// What an allowed call is confined to, as the permission gate decides it from the approval
/// mode and the permission category (the table is in `cst_core::approvals` and
/// `docs/approvals.md`). Each variant names one mechanism; the real gate hands a tool only `None`
/// or its own [`ToolSpec::confine_with`], and each runner says what it does with the others.
///
/// No `Default`: every tool source and every gate states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// Nothing beyond the tool's own limits (time limit, output cap, a wasm component's
    /// capabilities).
    None,
    /// Built-in file tools: every path must resolve, symlinks followed, inside the workspace.
    WorkspacePaths,
    /// Native processes (`run_shell`, plugin.json command tools): the process sandbox (P11,
    /// bubblewrap + seccomp: read-only outside the workspace, no network unless `net`, no Unix
    /// sockets, no terminal, a PID namespace). Where the system cannot give it, Landlock writes
    /// only, or nothing (`cst-agent status` says which).
    ProcessSandbox,
}

/// The answer of the permission gate for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it, under `confinement`.
    Allow {
        confinement: Confinement,
    },
    Deny {
        reason: String,
    },
}

/// One permission check for all tool sources (approvals live behind this trait).
pub trait PermissionGate: Send + Sync {
    fn check<'a>(&'a self, spec: &'a ToolSpec, args: &'a Value) -> BoxFuture<'a, Decision>;
}

/// What a runner is given for one call. Arguments are already validated.
pub struct Invocation<'a> {
    pub spec: &'a ToolSpec,
    pub args: &'a Value,
    pub ctx: &'a ToolContext,
    /// What the call is confined to, as the gate decided (see [`Confinement`]).
    pub confinement: Confinement,
}

/// How a tool failed, as a runner reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The tool ran and failed (non-zero exit, `isError`, a trap, a tool error).
    Failed { message: String, exit_code: Option<i32> },
    /// The time limit was reached; `message` says what was stopped and may carry partial output.
    TimedOut { message: String },
}

/// A tool source: it only says how to run a call.
pub trait ToolRunner: Send + Sync {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>>;
}

/// Why a call through the registry did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("call to `{tool}` denied: {reason}")]
    Denied { tool: String, reason: String },
    #[error("{message}")]
    Failed { message: String, exit_code: Option<i32> },
    #[error("{message}")]
    TimedOut { message: String },
    #[error("call to `{0}` cancelled")]
    Cancelled(String),
}

impl CallError {
    /// Exit code of `cst-agent tools call` for this error: 1 failure, 2 usage/unknown/invalid,
    /// 124 timeout.
    pub fn exit_code(&self) -> i32 {
        match self {
            CallError::UnknownTool(_) | CallError::InvalidArguments { .. } => 2,
            CallError::Denied { .. } | CallError::Failed { .. } => 1,
            CallError::TimedOut { .. } => 124,
            CallError::Cancelled(_) => 130,
        }
    }
}

/// Refused registration: the name is taken (E7: the first wins).
#[derive(Debug, Clone, thiserror::Error)]
#[error("tool `{name}` from {} clashes with the tool of the same name from {winner}; the first one is kept", .loser.describe())]
pub struct NameClash {
    pub name: String,
    /// Where the tool that keeps the name comes from ([`ToolSource::describe`]).
    pub winner: String,
    /// Where the refused tool comes from; its file is what the diagnostic is about.
    pub loser: ToolSource,
}

impl From<NameClash> for Diagnostic {
    /// About the refused tool's file when it has one (that file is then not repeated in the
    /// message), else the whole sentence.
    fn from(clash: NameClash) -> Self {
        match &clash.loser.file {
            Some(file) => Diagnostic::in_file(
                DiagnosticKind::NameClash,
                file.clone(),
                format!(
                    "tool `{}` from {} {} clashes with the tool of the same name from {}; the first one is kept",
                    clash.name,
                    clash.loser.kind.as_str(),
                    clash.loser.owner,
                    clash.winner
                ),
            ),
            None => Diagnostic::new(DiagnosticKind::NameClash, clash.to_string()),
        }
    }
}

struct Entry {
    spec: ToolSpec,
    runner: Arc<dyn ToolRunner>,
    schema: OnceLock<Result<InputSchema, String>>,
}

/// The tool registry. Internally synchronised so MCP servers can add tools while calls run;
/// a lock is never held across an `.await`.
#[derive(Default)]
pub struct Registry {
    tools: RwLock<BTreeMap<String, Arc<Entry>>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a tool. The name must already satisfy P2 (sources sanitise first); a taken name is
    /// refused and the existing tool stays.
    pub fn register(&self, spec: ToolSpec, runner: Arc<dyn ToolRunner>) -> Result<(), NameClash> {
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = tools.get(&spec.name) {
            return Err(NameClash {
                name: spec.name.clone(),
                winner: existing.spec.source.describe(),
                loser: spec.source.clone(),
            });
        }
        tools.insert(
            spec.name.clone(),
            Arc::new(Entry {
                spec,
                runner,
                schema: OnceLock::new(),
            }),
        );
        Ok(())
    }

    /// Remove every tool for which `pred` is true; returns the removed names (for reloads).
    pub fn remove_where(&self, pred: impl Fn(&ToolSpec) -> bool) -> Vec<String> {
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<String> = tools
            .values()
            .filter(|e| pred(&e.spec))
            .map(|e| e.spec.name.clone())
            .collect();
        for name in &gone {
            tools.remove(name);
        }
        gone
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).contains_key(name)
    }

    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .map(|e| e.spec.clone())
    }

    /// All tools, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|e| e.spec.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Run one tool call through the common path.
    pub async fn call(&self, name: &str, mut args: Value, ctx: &ToolContext) -> Result<String, CallError> {
        let entry = self
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| CallError::UnknownTool(name.to_string()))?;
        let spec = &entry.spec;
        // A restricted caller is refused before anything else looks at the call.
        if let Some(scope) = &ctx.scope {
            scope.permits(spec).map_err(|reason| CallError::Denied {
                tool: name.to_string(),
                reason,
            })?;
        }

        schema::coerce(&spec.input_schema, &mut args); // P8
        let schema = entry.schema.get_or_init(|| InputSchema::compile(&spec.input_schema));
        match schema {
            Ok(schema) => schema.check(&args).map_err(|message| CallError::InvalidArguments {
                tool: name.to_string(),
                message,
            })?,
            Err(e) => {
                return Err(CallError::InvalidArguments {
                    tool: name.to_string(),
                    message: format!("the tool's input schema is broken: {e}"),
                })
            }
        }

        let confinement = match &ctx.gate {
            // No gate: the user runs the tool directly (`cst-agent tools call`). File tools still
            // keep to the workspace, so a typo cannot write elsewhere; a process runs as the
            // user's own shell would.
            None => match spec.confine_with {
                Confinement::WorkspacePaths => Confinement::WorkspacePaths,
                Confinement::None | Confinement::ProcessSandbox => Confinement::None,
            },
            Some(gate) => match gate.check(spec, &args).await {
                Decision::Allow { confinement } => confinement,
                Decision::Deny { reason } => {
                    return Err(CallError::Denied {
                        tool: name.to_string(),
                        reason,
                    })
                }
            },
        };

        let run = entry.runner.run(Invocation {
            spec,
            args: &args,
            ctx,
            confinement,
        });
        // Runners enforce their own deadline precisely (process-group kill, epoch trap, MCP
        // cancel); this is the backstop for one that does not return in time.
        let backstop = spec.timeout + Duration::from_secs(5);
        let result = tokio::select! {
            r = tokio::time::timeout(backstop, run) => match r {
                Ok(r) => r,
                Err(_) => Err(Failure::TimedOut { message: format!("timed out after {} s", spec.timeout.as_secs()) }),
            },
            _ = ctx.cancel.cancelled() => return Err(CallError::Cancelled(name.to_string())),
        };
        // A runner that noticed the cancel first and failed because of it was still cancelled.
        if result.is_err() && ctx.cancel.is_cancelled() {
            return Err(CallError::Cancelled(name.to_string()));
        }
        match result {
            Ok(text) => Ok(output::cap_output(text)),
            Err(Failure::Failed { message, exit_code }) => Err(CallError::Failed {
                message: output::cap_output(message),
                exit_code,
            }),
            Err(Failure::TimedOut { message }) => Err(CallError::TimedOut {
                message: output::cap_output(message),
            }),
        }
    }
}

/// Parse a `timeout` in seconds as P7 says: default 60, at most 600.
pub fn timeout_from_secs(secs: Option<u64>) -> Result<Duration, String> {
    match secs {
        None => Ok(DEFAULT_TIMEOUT),
        Some(0) => Err("timeout must be at least 1 second".into()),
        Some(s) if s > MAX_TIMEOUT_SECS => Err(format!("timeout {s} s is over the limit of {MAX_TIMEOUT_SECS} s")),
        Some(s) => Ok(Duration::from_secs(s)),
    }
}
