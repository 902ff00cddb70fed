//! Approvals by permission category (P6, P11, M8): the one [`PermissionGate`] every tool call of
//! every source goes through. `docs/approvals.md` holds the same table, and a test checks the
//! two agree.
//!
//! Two rules, each decided once:
//! - whether a call asks ([`verdict`]): by category and mode, below;
//! - what a call that runs is confined to ([`confinement`]): outside `full`, the tool's own
//!   [`ToolSpec::confine_with`] (paths kept in the workspace for the built-in file tools, the
//!   process sandbox for `run_shell` and plugin.json command tools, nothing more for wasm, MCP,
//!   `ask_user`, `skill` and `task`), whether the table let it run or a person approved it; in
//!   `full`, [`Confinement::None`]. So `ask` is `auto` plus asking, never less confined.
//!
//! | perm  | `ask`                | `auto` (default)                                  | `full` |
//! |-------|----------------------|---------------------------------------------------|--------|
//! | read  | runs, confined       | runs, confined                                    | runs   |
//! | write | asks; then confined  | runs, confined                                    | runs   |
//! | shell | asks; then confined  | with a sandbox: runs, confined; else asks         | runs   |
//! | net   | asks; then confined  | asks; then confined                               | runs   |

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::pending::Pending;
use cst_config::deployment::PermissionProfile;
use cst_protocol::ApprovalDecision;
use cst_registry::{Confinement, Decision, Perm, PermissionGate, SourceKind, ToolSpec};

/// The approval mode of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ApprovalMode {
    /// Everything but reads asks.
    Ask,
    /// Reads and workspace writes run, shell runs sandboxed where possible, net asks.
    #[default]
    Auto,
    /// Everything runs, unsandboxed; file tools may leave the workspace.
    Full,
}

impl ApprovalMode {
    /// Every mode, in the order front ends list them.
    pub const ALL: [ApprovalMode; 3] = [ApprovalMode::Ask, ApprovalMode::Auto, ApprovalMode::Full];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::Full => "full",
        }
    }

    /// `ask`, `auto` or `full` (surrounding spaces and case ignored: a person typed it after
    /// `/approval`); anything else is `None`.
    pub fn parse(s: &str) -> Option<ApprovalMode> {
        let s = s.trim();
        Self::ALL.into_iter().find(|m| m.as_str().eq_ignore_ascii_case(s))
    }
}

/// What the table says for one call, before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Run { confinement: Confinement },
    Ask,
}

/// The mode table for a tool of category `perm` whose runner enforces `confine_with` when
/// confined. `sandbox` says whether this system has the full process sandbox (bubblewrap +
/// seccomp, `cst_extensions::sandbox::available`), not a partial one (P11).
pub fn verdict(mode: ApprovalMode, perm: Perm, confine_with: Confinement, sandbox: bool) -> Verdict {
    use ApprovalMode::*;
    let runs = match (mode, perm) {
        (_, Perm::Read) | (Full, _) | (Auto, Perm::Write) => true,
        // P11: `auto` runs shell commands only where it can sandbox them.
        (Auto, Perm::Shell) => sandbox,
        (Ask, _) | (Auto, Perm::Net) => false,
    };
    if runs {
        Verdict::Run {
            confinement: confinement(mode, confine_with),
        }
    } else {
        Verdict::Ask
    }
}

/// What a call runs under in `mode` once it runs, whether the table let it or a person approved
/// it: the tool's own `confine_with`, except in `full`.
pub fn confinement(mode: ApprovalMode, confine_with: Confinement) -> Confinement {
    match mode {
        ApprovalMode::Full => Confinement::None,
        ApprovalMode::Ask | ApprovalMode::Auto => confine_with,
    }
}

/// The table of `docs/approvals.md`, rendered from [`verdict`] and [`confinement`] so the docs
/// cannot drift from the code: one row per category, one column per mode (`auto` twice: with
/// and without a process sandbox on the system).
pub fn markdown_table() -> String {
    use ApprovalMode::*;
    let columns = [(Ask, true), (Auto, true), (Auto, false), (Full, true)];
    let mut out = String::from(
        "| Category | `ask` | `auto` (default), sandbox | `auto`, no sandbox | `full` |\n|---|---|---|---|---|\n",
    );
    for perm in [Perm::Read, Perm::Write, Perm::Shell, Perm::Net] {
        out.push_str(&format!("| `{perm}` |"));
        for (mode, sandbox) in columns {
            // Any confinement stands for "the tool's own"; which one is the tool's business.
            let cell = match verdict(mode, perm, Confinement::WorkspacePaths, sandbox) {
                Verdict::Run {
                    confinement: Confinement::None,
                } => "runs, unconfined",
                Verdict::Run { .. } => "runs, confined",
                Verdict::Ask => match confinement(mode, Confinement::WorkspacePaths) {
                    Confinement::None => "asks; approved: unconfined",
                    _ => "asks; approved: confined",
                },
            };
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}

/// D2: what a deployment's permission profile refuses outright — no person is asked, whatever
/// the approval mode. `None`: the approval mode decides as usual. The two restricting profiles
/// also keep every call inside the sandbox (no unconfined approval mode `full`).
pub fn profile_refusal(profile: PermissionProfile, perm: Perm) -> Option<String> {
    let refused = match profile {
        PermissionProfile::ReadOnly => perm != Perm::Read,
        PermissionProfile::WorkspaceWrite => perm == Perm::Net,
        PermissionProfile::Autonomous | PermissionProfile::FullAccess => false,
    };
    refused.then(|| {
        format!(
            "the deployment's permission profile `{}` does not allow {perm} tools; the call was not run",
            profile.as_str()
        )
    })
}

/// D2: whether `profile` allows approval mode `mode`: `full` runs unconfined, so `read_only` and
/// `workspace_write` do not allow it. `autonomous` (the default, also with no deployment) and
/// `full_access` leave the choice to the user's approval mode (P11), adding no confirmation of
/// their own (D19).
pub fn profile_allows_mode(profile: PermissionProfile, mode: ApprovalMode) -> bool {
    mode != ApprovalMode::Full || matches!(profile, PermissionProfile::Autonomous | PermissionProfile::FullAccess)
}

/// D19: a call that `auto` would ask about, under a chosen profile that allows its category.
/// Ordinary execution asks nobody: it runs with the confinement `auto` gives it — except a
/// process that needs the sandbox on a system without the full one, which is refused rather than
/// run half-confined, since every profile stays inside the sandbox (D2). Writes to the host's own
/// files are not ordinary execution and still ask ([`host_file_write`]).
pub fn autonomy(spec: &ToolSpec, sandbox: bool, confinement: Confinement) -> Decision {
    if spec.confine_with == Confinement::ProcessSandbox && !sandbox {
        return Decision::Deny {
            reason: format!(
                "`{}` runs a process, and under the permission profile this system has no full \
                 process sandbox to run it in (`cst-agent status` says what is missing); the call \
                 was not run",
                spec.name
            ),
        };
    }
    Decision::Allow { confinement }
}

/// What the gate does with a call before `--allow-tool`, "always" answers and the host-file rule
/// are considered: the rendering of [`ApprovalGate`]'s order (profile refusal, the mode table,
/// then a chosen profile's autonomy) for docs and tests. `profile`: the chosen one, if any.
pub fn outcome(
    profile: Option<PermissionProfile>,
    mode: ApprovalMode,
    perm: Perm,
    confine_with: Confinement,
    sandbox: bool,
) -> &'static str {
    let mode = match profile {
        Some(p) if !profile_allows_mode(p, mode) => ApprovalMode::Auto,
        _ => mode,
    };
    if profile.is_some_and(|p| profile_refusal(p, perm).is_some()) {
        return "refused";
    }
    let confined = |c: Confinement| {
        if c == Confinement::None {
            "runs, unconfined"
        } else {
            "runs, confined"
        }
    };
    match verdict(mode, perm, confine_with, sandbox) {
        Verdict::Run { confinement } => confined(confinement),
        Verdict::Ask if profile.is_some() && mode == ApprovalMode::Auto => {
            if confine_with == Confinement::ProcessSandbox && !sandbox {
                "refused"
            } else {
                confined(confinement(mode, confine_with))
            }
        }
        Verdict::Ask => "asks",
    }
}

/// The profile table of docs/approvals.md, rendered from [`outcome`]: what a call of each category
/// does in the default mode `auto` under each profile (a shell tool with and without the full
/// process sandbox), and which modes the profile allows.
pub fn profile_markdown_table() -> String {
    let mut out = String::from(
        "| profile | read | write | shell, sandbox | shell, no sandbox | net | approval modes |\n|---|---|---|---|---|---|---|\n",
    );
    let rows = std::iter::once(None).chain(PermissionProfile::ALL.map(Some));
    for profile in rows {
        match profile {
            Some(p) => out.push_str(&format!("| `{}` |", p.as_str())),
            None => out.push_str("| none chosen |"),
        }
        let cells = [
            (Perm::Read, true),
            (Perm::Write, true),
            (Perm::Shell, true),
            (Perm::Shell, false),
            (Perm::Net, true),
        ];
        for (perm, sandbox) in cells {
            let confine_with = if perm == Perm::Shell {
                Confinement::ProcessSandbox
            } else {
                Confinement::WorkspacePaths
            };
            out.push_str(&format!(
                " {} |",
                outcome(profile, ApprovalMode::Auto, perm, confine_with, sandbox)
            ));
        }
        let modes: Vec<&str> = ApprovalMode::ALL
            .iter()
            .filter(|m| profile.is_none_or(|p| profile_allows_mode(p, **m)))
            .map(|m| m.as_str())
            .collect();
        out.push_str(&format!(" {} |\n", modes.join(", ")));
    }
    out
}

/// A call that needs a person's decision, as the gate hands it to whoever shows it (the session
/// turns it into an `ApprovalRequested` event). Answer with [`ApprovalGate::answer`].
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub request_id: u64,
    pub tool: String,
    pub perm: Perm,
    pub args: Value,
    pub reason: String,
    /// The sub-agent that asks (its N); `None` for the main agent.
    pub subagent: Option<u32>,
}

/// Shows a request to a person; returns false when nobody is listening.
pub type RequestSink = Box<dyn Fn(ApprovalRequest) -> bool + Send + Sync>;

/// A person's answer as the gate receives it: a decision, or a refusal with the reason typed
/// after it (`Op::Refuse`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Decision(ApprovalDecision),
    Refused(String),
}

/// The session's gate: applies the table, asks a person through events when needed, remembers
/// "always" answers per tool for the session.
pub struct ApprovalGate {
    /// Changed at once by `/approval MODE` (`Op::SetApproval`), also for calls already asking.
    mode: RwLock<ApprovalMode>,
    sandbox: bool,
    /// No person can answer: a call that would ask is refused and the model is told.
    headless: bool,
    always: Mutex<HashSet<String>>,
    pending: Pending<Answer>,
    requests: Option<RequestSink>,
    /// The workspace and the host's own folders (config dir, cache dir) whose files the model's
    /// file tools never write without a person ([`host_file_write`]).
    host_files: Option<(PathBuf, Vec<PathBuf>)>,
    /// Tools approved for the whole run (`--allow-tool`, `--allow-server`).
    allowed: AllowList,
    /// The permission profile in force (D2): categories it refuses never run, and in `auto`
    /// nothing asks (D19). `None`: nobody chose one, the approval mode alone decides (P11).
    profile: Option<PermissionProfile>,
}

/// Tools a run approves up front, as `claude -p --allowedTools` does (issue 14 item 8): names or
/// globs (`mcp__github__*`) and whole MCP servers. They run without asking in any mode, with
/// their own confinement; writes to the host's files still ask.
#[derive(Default)]
pub struct AllowList {
    tools: Option<globset::GlobSet>,
    servers: HashSet<String>,
}

impl AllowList {
    /// `tools`: names or globs (each may also be a comma-separated list); `servers`: MCP server
    /// names. A bad glob is an error naming it.
    pub fn new(tools: &[String], servers: &[String]) -> Result<Self, String> {
        let split = |items: &[String]| -> Vec<String> {
            items
                .iter()
                .flat_map(|i| i.split(','))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        let mut b = globset::GlobSetBuilder::new();
        let tool_names = split(tools);
        for t in &tool_names {
            let glob = globset::GlobBuilder::new(t)
                .literal_separator(false)
                .build()
                .map_err(|e| format!("--allow-tool `{t}`: {e}"))?;
            b.add(glob);
        }
        let tools = if tool_names.is_empty() {
            None
        } else {
            Some(b.build().map_err(|e| format!("--allow-tool: {e}"))?)
        };
        Ok(Self {
            tools,
            servers: split(servers).into_iter().collect(),
        })
    }

    pub fn allows(&self, spec: &ToolSpec) -> bool {
        self.tools.as_ref().is_some_and(|g| g.is_match(&spec.name))
            || (spec.source.kind == SourceKind::Mcp && self.servers.contains(&spec.source.owner))
    }
}

/// Issue 13 item 5: a built-in `write` tool (`write_file`, `edit_file`) whose `path` lands in the
/// host's own files — the workspace's `.agent/` (plugins, `mcp.json`, roles, skills, settings),
/// `.claude/skills`, `.claude/agents`, the config dir, the cache dir — would change what the host
/// runs or reads at its next start. Such a call always asks, in every mode (`full` too: the mode
/// is about this session, these files outlive it) and never on an earlier "always"; headless it
/// is refused. Returns what the path is, for the reason.
pub fn host_file_write(workspace: &Path, others: &[PathBuf], spec: &ToolSpec, args: &Value) -> Option<String> {
    if spec.source.kind != SourceKind::Builtin || spec.perm != Perm::Write {
        return None;
    }
    let path = args.get("path").and_then(Value::as_str)?;
    cst_config::host_files::host_file(workspace, others, path).map(|h| h.what)
}

impl ApprovalGate {
    /// `requests` shows a request to a person; `None` (or `headless`) refuses what would ask.
    pub fn new(mode: ApprovalMode, headless: bool, requests: Option<RequestSink>) -> Self {
        Self {
            mode: RwLock::new(mode),
            sandbox: cst_extensions::sandbox::available(),
            headless,
            always: Mutex::default(),
            pending: Pending::default(),
            requests,
            host_files: None,
            allowed: AllowList::default(),
            profile: None,
        }
    }

    /// Enforce a chosen permission profile (a deployment's, or the user's settings): the
    /// categories it refuses never run, a mode it does not allow (`full` outside `autonomous` and
    /// `full_access`) becomes `auto`, and in `auto` no call asks a person (D19, [`autonomy`]).
    pub fn with_profile(mut self, profile: PermissionProfile) -> Self {
        self.profile = Some(profile);
        let mode = self.mode();
        if !profile_allows_mode(profile, mode) {
            self.set_mode(ApprovalMode::Auto);
        }
        self
    }

    /// The profile in force; `autonomous` when nobody chose one.
    pub fn profile(&self) -> PermissionProfile {
        self.profile.unwrap_or_default()
    }

    /// Approve these tools for the whole session (see [`AllowList`]).
    pub fn with_allowed(mut self, allowed: AllowList) -> Self {
        self.allowed = allowed;
        self
    }

    /// Guard the host's files of `workspace` (and the config and cache dirs) against the model's
    /// file tools: see [`host_file_write`].
    pub fn with_host_files(mut self, workspace: &Path) -> Self {
        let others = [
            cst_config::config_dir::config_dir(),
            cst_config::config_dir::cache_dir(),
        ]
        .into_iter()
        .filter_map(Result::ok)
        .collect();
        self.host_files = Some((workspace.to_path_buf(), others));
        self
    }

    /// Same, with the sandbox availability given (tests, platforms).
    pub fn with_sandbox(mut self, sandbox: bool) -> Self {
        self.sandbox = sandbox;
        self
    }

    pub fn mode(&self) -> ApprovalMode {
        *self.mode.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Switch the mode for every later decision (`/approval MODE`). Requests already shown to a
    /// person keep waiting for their answer; "always" answers stay remembered.
    pub fn set_mode(&self, mode: ApprovalMode) {
        *self.mode.write().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// Deliver a person's answer. Unknown ids (already answered, cancelled) are ignored.
    pub fn answer(&self, request_id: u64, decision: ApprovalDecision) {
        self.pending.answer(request_id, Answer::Decision(decision));
    }

    /// Refuse a request and tell the model why: the call is denied with `the user declined this
    /// call: <reason>`. An empty reason is a plain "no". Unknown ids are ignored.
    pub fn refuse(&self, request_id: u64, reason: &str) {
        let reason = reason.trim();
        let answer = if reason.is_empty() {
            Answer::Decision(ApprovalDecision::No)
        } else {
            Answer::Refused(reason.to_string())
        };
        self.pending.answer(request_id, answer);
    }

    /// Refuse every open request (the turn was cancelled).
    pub fn cancel_pending(&self) {
        self.pending.withdraw_all();
    }

    /// `subagent`: the sub-agent making the call, named in the approval request.
    async fn decide(&self, spec: &ToolSpec, args: &Value, subagent: Option<u32>) -> Decision {
        // The profile comes first: what it refuses is refused in every mode, allowed or not.
        if let Some(reason) = profile_refusal(self.profile(), spec.perm) {
            return Decision::Deny { reason };
        }
        // One reading for the whole decision, so a mode switch mid-way cannot mix two modes.
        let mode = self.mode();
        let host_file = self
            .host_files
            .as_ref()
            .and_then(|(ws, others)| host_file_write(ws, others, spec, args));
        if host_file.is_none() {
            if let Verdict::Run { confinement } = verdict(mode, spec.perm, spec.confine_with, self.sandbox) {
                return Decision::Allow { confinement };
            }
        }
        let confinement = confinement(mode, spec.confine_with);
        if host_file.is_none() && self.allowed.allows(spec) {
            return Decision::Allow { confinement };
        }
        if host_file.is_none() && self.profile.is_some() && mode == ApprovalMode::Auto {
            return autonomy(spec, self.sandbox, confinement);
        }
        if host_file.is_none()
            && self
                .always
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&spec.name)
        {
            return Decision::Allow { confinement };
        }
        let why = match &host_file {
            Some(what) => format!(
                "`{}` would write {what}, which the host runs or reads at its next start, so it \
                 always needs a person's approval, whatever the approval mode",
                spec.name
            ),
            None => self.why(spec, mode),
        };
        let Some(requests) = self.requests.as_ref().filter(|_| !self.headless) else {
            let rerun = match host_file {
                Some(_) => "the user can make this change by hand",
                None => "the user can rerun with --approval full",
            };
            return Decision::Deny {
                reason: format!("{why}, and this headless run cannot ask; the call was not run ({rerun})"),
            };
        };
        self.ask(requests, spec, args, why, subagent, confinement, host_file.is_none())
            .await
    }

    fn why(&self, spec: &ToolSpec, mode: ApprovalMode) -> String {
        format!(
            "`{}` is a {} tool and the approval mode is `{}`{}",
            spec.name,
            spec.perm,
            mode.as_str(),
            if spec.perm == Perm::Shell && mode == ApprovalMode::Auto {
                " with no shell sandbox on this system"
            } else {
                ""
            }
        ) + ", so it needs a person's approval"
    }

    /// Show the request and wait for the answer; `remember` lets an "always" answer stick.
    #[allow(clippy::too_many_arguments)]
    async fn ask(
        &self,
        requests: &RequestSink,
        spec: &ToolSpec,
        args: &Value,
        why: String,
        subagent: Option<u32>,
        confinement: Confinement,
        remember: bool,
    ) -> Decision {
        let (id, rx) = self.pending.open();
        let shown = requests(ApprovalRequest {
            request_id: id,
            tool: spec.name.clone(),
            perm: spec.perm,
            args: args.clone(),
            reason: why,
            subagent,
        });
        if !shown {
            self.pending.forget(id);
            return Decision::Deny {
                reason: "no front end is listening to approve the call".into(),
            };
        }
        match rx.await {
            Ok(Answer::Decision(ApprovalDecision::Yes)) => Decision::Allow { confinement },
            Ok(Answer::Decision(ApprovalDecision::Always)) => {
                if remember {
                    self.always
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(spec.name.clone());
                }
                Decision::Allow { confinement }
            }
            Ok(Answer::Decision(ApprovalDecision::No)) => Decision::Deny {
                reason: "the user declined this call".into(),
            },
            Ok(Answer::Refused(reason)) => Decision::Deny {
                reason: format!("the user declined this call: {reason}"),
            },
            Err(_) => Decision::Deny {
                reason: "the approval request was withdrawn (turn cancelled)".into(),
            },
        }
    }
}

impl PermissionGate for ApprovalGate {
    fn check<'a>(&'a self, spec: &'a ToolSpec, args: &'a Value) -> BoxFuture<'a, Decision> {
        Box::pin(self.decide(spec, args, None))
    }
}

/// The session's gate as seen by sub-agent `n`: the same mode, the same remembered answers, the
/// same front end; its requests say which sub-agent asks.
pub struct SubAgentGate {
    pub gate: std::sync::Arc<ApprovalGate>,
    pub n: u32,
}

impl PermissionGate for SubAgentGate {
    fn check<'a>(&'a self, spec: &'a ToolSpec, args: &'a Value) -> BoxFuture<'a, Decision> {
        Box::pin(self.gate.decide(spec, args, Some(self.n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cst_registry::ToolSource;

    fn spec(name: &str, perm: Perm) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            perm,
            source: ToolSource::builtin(),
            timeout: cst_registry::DEFAULT_TIMEOUT,
            confine_with: Confinement::None,
        }
    }

    #[test]
    fn table() {
        use ApprovalMode::*;
        // What was `sandboxed: true` is the tool's own confinement, whichever it is.
        for tool in [Confinement::WorkspacePaths, Confinement::ProcessSandbox] {
            let confined = Verdict::Run { confinement: tool };
            let free = Verdict::Run {
                confinement: Confinement::None,
            };
            assert_eq!(verdict(Ask, Perm::Read, tool, false), confined);
            assert_eq!(verdict(Ask, Perm::Write, tool, true), Verdict::Ask);
            assert_eq!(verdict(Auto, Perm::Write, tool, false), confined);
            assert_eq!(verdict(Auto, Perm::Shell, tool, true), confined);
            assert_eq!(verdict(Auto, Perm::Shell, tool, false), Verdict::Ask);
            assert_eq!(verdict(Auto, Perm::Net, tool, true), Verdict::Ask);
            assert_eq!(verdict(Full, Perm::Net, tool, false), free);
            assert_eq!(verdict(Full, Perm::Write, tool, false), free);
        }
        // A tool nothing more can confine runs unconfined wherever it runs.
        assert_eq!(
            verdict(Auto, Perm::Read, Confinement::None, true),
            Verdict::Run {
                confinement: Confinement::None
            }
        );
    }

    #[test]
    fn approved_calls_keep_the_confinement_of_their_tool() {
        use ApprovalMode::*;
        let paths = Confinement::WorkspacePaths;
        let landlock = Confinement::ProcessSandbox;
        // An approved call is confined as one the table let run: `ask` is `auto` plus asking.
        assert_eq!(confinement(Ask, paths), paths);
        assert_eq!(confinement(Ask, landlock), landlock);
        assert_eq!(confinement(Auto, landlock), landlock);
        // Only `full` lifts it.
        assert_eq!(confinement(Full, paths), Confinement::None);
        assert_eq!(confinement(Full, landlock), Confinement::None);
    }

    /// D2: what each profile refuses outright, whatever the mode, and which modes it allows.
    #[test]
    fn d2_profiles_refuse_categories_and_cap_the_mode() {
        use PermissionProfile as P;
        assert!(profile_refusal(P::ReadOnly, Perm::Read).is_none());
        for perm in [Perm::Write, Perm::Shell, Perm::Net] {
            assert!(profile_refusal(P::ReadOnly, perm).is_some_and(|r| r.contains("read_only")));
        }
        assert!(profile_refusal(P::WorkspaceWrite, Perm::Net).is_some());
        assert!(profile_refusal(P::WorkspaceWrite, Perm::Write).is_none());
        for perm in [Perm::Read, Perm::Write, Perm::Shell, Perm::Net] {
            assert!(profile_refusal(P::Autonomous, perm).is_none());
            assert!(profile_refusal(P::FullAccess, perm).is_none());
        }
        for (profile, mode) in [
            (P::ReadOnly, ApprovalMode::Auto),
            (P::WorkspaceWrite, ApprovalMode::Auto),
            (P::Autonomous, ApprovalMode::Full),
            (P::FullAccess, ApprovalMode::Full),
        ] {
            let gate = ApprovalGate::new(ApprovalMode::Full, true, None).with_profile(profile);
            assert_eq!(gate.mode(), mode, "{profile:?}");
        }
    }

    #[tokio::test]
    async fn d2_a_refused_category_is_refused_even_in_full_and_when_allowed() {
        let gate = ApprovalGate::new(ApprovalMode::Full, true, None)
            .with_profile(PermissionProfile::ReadOnly)
            .with_allowed(AllowList::new(&["write_file".into()], &[]).unwrap());
        match gate.check(&spec("write_file", Perm::Write), &Value::Null).await {
            Decision::Deny { reason } => assert!(reason.contains("permission profile `read_only`"), "{reason}"),
            d => panic!("{d:?}"),
        }
        assert!(matches!(
            gate.check(&spec("read_file", Perm::Read), &Value::Null).await,
            Decision::Allow { .. }
        ));
    }

    /// D2, D19: every approval mode under every profile (and none chosen), for every category and
    /// kind of confinement, with and without the sandbox: the real gate does what [`outcome`]
    /// (and so the docs table) says. A person who is asked answers "no".
    #[tokio::test]
    async fn d19_every_mode_under_every_profile() {
        let profiles = std::iter::once(None).chain(PermissionProfile::ALL.map(Some));
        let mut checked = 0;
        for profile in profiles {
            for mode in ApprovalMode::ALL {
                for perm in [Perm::Read, Perm::Write, Perm::Shell, Perm::Net] {
                    for confine_with in [
                        Confinement::WorkspacePaths,
                        Confinement::ProcessSandbox,
                        Confinement::None,
                    ] {
                        for sandbox in [true, false] {
                            let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                            let flag = asked.clone();
                            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ApprovalRequest>();
                            let sink: RequestSink = Box::new(move |r| {
                                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                                tx.send(r).is_ok()
                            });
                            let mut gate = ApprovalGate::new(mode, false, Some(sink)).with_sandbox(sandbox);
                            if let Some(p) = profile {
                                gate = gate.with_profile(p);
                            }
                            let gate = std::sync::Arc::new(gate);
                            let g2 = gate.clone();
                            let answerer = tokio::spawn(async move {
                                while let Some(r) = rx.recv().await {
                                    g2.answer(r.request_id, ApprovalDecision::No);
                                }
                            });
                            let mut tool = spec("t", perm);
                            tool.confine_with = confine_with;
                            let decision = gate.check(&tool, &Value::Null).await;
                            answerer.abort();
                            let got = match decision {
                                _ if asked.load(std::sync::atomic::Ordering::SeqCst) => "asks",
                                Decision::Deny { .. } => "refused",
                                Decision::Allow {
                                    confinement: Confinement::None,
                                } => "runs, unconfined",
                                Decision::Allow { .. } => "runs, confined",
                            };
                            let want = outcome(profile, mode, perm, confine_with, sandbox);
                            assert_eq!(
                                got, want,
                                "{profile:?} {mode:?} {perm:?} {confine_with:?} sandbox={sandbox}"
                            );
                            // D19: a chosen profile never asks in `auto`; D2: every profile but
                            // `full_access`/`autonomous` keeps calls confined.
                            if profile.is_some() && mode == ApprovalMode::Auto {
                                assert_ne!(got, "asks", "{profile:?} {perm:?}");
                            }
                            if matches!(
                                profile,
                                Some(PermissionProfile::ReadOnly | PermissionProfile::WorkspaceWrite)
                            ) && confine_with != Confinement::None
                            {
                                assert_ne!(got, "runs, unconfined", "{profile:?} {mode:?} {perm:?}");
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 5 * 3 * 4 * 3 * 2);
    }

    #[test]
    fn docs_show_the_profile_table_of_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../docs/approvals.md");
        let docs = std::fs::read_to_string(path).unwrap();
        let table = profile_markdown_table();
        assert!(
            docs.contains(&table),
            "docs/approvals.md does not hold the profile table of the code; put this in it:\n{table}"
        );
    }

    #[test]
    fn docs_show_the_table_of_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../docs/approvals.md");
        let docs = std::fs::read_to_string(path).unwrap();
        let table = markdown_table();
        assert!(
            docs.contains(&table),
            "docs/approvals.md does not hold the approval table of the code; put this in it:\n{table}"
        );
    }

    #[tokio::test]
    async fn headless_refuses_and_always_is_remembered() {
        let gate = ApprovalGate::new(ApprovalMode::Ask, true, None);
        match gate.check(&spec("write_file", Perm::Write), &Value::Null).await {
            Decision::Deny { reason } => assert!(reason.contains("headless"), "{reason}"),
            d => panic!("{d:?}"),
        }

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ApprovalRequest>();
        let sink: RequestSink = Box::new(move |r| tx.send(r).is_ok());
        let gate = std::sync::Arc::new(ApprovalGate::new(ApprovalMode::Auto, false, Some(sink)).with_sandbox(false));
        let g2 = gate.clone();
        let answerer = tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                g2.answer(r.request_id, ApprovalDecision::Always);
            }
        });
        let net = spec("fetch", Perm::Net);
        assert_eq!(
            gate.check(&net, &Value::Null).await,
            Decision::Allow {
                confinement: Confinement::None
            }
        );
        // Remembered: answered without a new request even with nobody listening.
        answerer.abort();
        let _ = answerer.await;
        assert_eq!(
            gate.check(&net, &Value::Null).await,
            Decision::Allow {
                confinement: Confinement::None
            }
        );
        let other = spec("other", Perm::Net);
        assert!(matches!(gate.check(&other, &Value::Null).await, Decision::Deny { .. }));
    }

    #[test]
    fn modes_parse_as_a_person_types_them() {
        assert_eq!(ApprovalMode::parse("ask"), Some(ApprovalMode::Ask));
        assert_eq!(ApprovalMode::parse(" Full "), Some(ApprovalMode::Full));
        assert_eq!(ApprovalMode::parse("auto"), Some(ApprovalMode::Auto));
        for bad in ["", "yolo", "au to", "askx"] {
            assert_eq!(ApprovalMode::parse(bad), None, "{bad:?}");
        }
    }

    /// A gate whose requests are answered by `answer` (request id → what the person does).
    fn answered_gate(
        mode: ApprovalMode,
        answer: impl Fn(&ApprovalGate, u64) + Send + 'static,
    ) -> std::sync::Arc<ApprovalGate> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ApprovalRequest>();
        let sink: RequestSink = Box::new(move |r| tx.send(r).is_ok());
        let gate = std::sync::Arc::new(ApprovalGate::new(mode, false, Some(sink)).with_sandbox(true));
        let g2 = gate.clone();
        tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                answer(&g2, r.request_id);
            }
        });
        gate
    }

    #[tokio::test]
    async fn a_refusal_tells_the_model_the_reason() {
        let gate = answered_gate(ApprovalMode::Ask, |g, id| g.refuse(id, "  use the staging bucket  "));
        match gate.check(&spec("upload", Perm::Net), &Value::Null).await {
            Decision::Deny { reason } => {
                assert_eq!(reason, "the user declined this call: use the staging bucket")
            }
            d => panic!("{d:?}"),
        }
        // An empty reason is a plain no.
        let gate = answered_gate(ApprovalMode::Ask, |g, id| g.refuse(id, " "));
        match gate.check(&spec("upload", Perm::Net), &Value::Null).await {
            Decision::Deny { reason } => assert_eq!(reason, "the user declined this call"),
            d => panic!("{d:?}"),
        }
    }

    #[tokio::test]
    async fn the_mode_changes_at_once() {
        let gate = answered_gate(ApprovalMode::Auto, |g, id| g.answer(id, ApprovalDecision::No));
        let write = spec("write_file", Perm::Write);
        assert!(matches!(gate.check(&write, &Value::Null).await, Decision::Allow { .. }));
        gate.set_mode(ApprovalMode::Ask);
        assert_eq!(gate.mode(), ApprovalMode::Ask);
        match gate.check(&write, &Value::Null).await {
            Decision::Deny { reason } => assert_eq!(reason, "the user declined this call"),
            d => panic!("{d:?}"),
        }
        gate.set_mode(ApprovalMode::Full);
        assert_eq!(
            gate.check(&spec("fetch", Perm::Net), &Value::Null).await,
            Decision::Allow {
                confinement: Confinement::None
            }
        );
    }
}
