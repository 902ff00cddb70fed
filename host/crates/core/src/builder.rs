//! [`SessionBuilder`]: how every front end gets a running session. It discovers the extensions
//! (E1–E7), starts the MCP servers (waiting for them when headless, M7), builds the prompts and
//! spawns the session, which then owns the extensions and stops them when it ends.
//!
//! ```no_run
//! # async fn demo(model: cst_core::model::ModelClient) {
//! use cst_core::builder::SessionBuilder;
//! let mut session = SessionBuilder::new("/work/repo".into(), model).headless(true).build().await;
//! eprintln!("{}", session.summary);
//! let _ = session.handle.ops.send(cst_core::Op::UserTurn { text: "hello".into() });
//! while let Some(event) = session.handle.events.recv().await {
//!     println!("{event:?}");
//! }
//! # }
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::approvals::ApprovalMode;
use crate::events::EventSink;
use crate::model::ModelClient;
use crate::prompt;
use crate::resume::Resumed;
use crate::session::{spawn, SessionConfig, SessionHandle, DEFAULT_MAX_STEPS};
use crate::session_extensions::SessionExtensions;
use cst_config::ToolsProfile;
use cst_extensions::discovery::{self, LoadOptions};
use cst_protocol::Diagnostic;

/// How long a headless session waits for MCP servers that are still starting (M7).
pub const HEADLESS_MCP_WAIT: Duration = cst_extensions::mcp::manager::HEADLESS_WAIT;

/// Settings of a session to be built; each has the default a user of `exec` gets.
pub struct SessionBuilder {
    workspace: PathBuf,
    model: ModelClient,
    profile: ToolsProfile,
    approval: ApprovalMode,
    headless: bool,
    max_steps: u32,
    transcript: bool,
    mcp_wait: Option<Duration>,
    mcp_notice: Option<McpNotice>,
    allowed: crate::approvals::AllowList,
    sinks: Vec<Arc<dyn EventSink>>,
    resumed: Option<Resumed>,
    hooks: crate::hooks::HookSettings,
    permission_profile: Option<cst_config::deployment::PermissionProfile>,
}

/// Told the names of the MCP servers a headless start is still waiting for (after 2 s).
pub type McpNotice = Arc<dyn Fn(&[String]) + Send + Sync>;

/// A built session: the handle to talk to it and what it loaded.
pub struct Session {
    pub handle: SessionHandle,
    /// E9's summary line, e.g. `2 skills · 1 plugin (3 tools) · 1 MCP server`.
    pub summary: String,
    /// Problems found while loading (broken files, clashes, servers that failed to start).
    pub warnings: Vec<Diagnostic>,
    /// T1's hint when the workspace has extensions that wait for trust.
    pub untrusted_hint: Option<String>,
    /// Names a person can type, for completion: `skill:NAME` and `command:NAME` (a plugin's
    /// slash command), as loaded at start.
    pub completions: Vec<String>,
}

impl SessionBuilder {
    /// `workspace` should be canonical (the builder does not resolve it).
    pub fn new(workspace: PathBuf, model: ModelClient) -> Self {
        Self {
            workspace,
            model,
            profile: ToolsProfile::Default,
            approval: ApprovalMode::default(),
            headless: false,
            max_steps: DEFAULT_MAX_STEPS,
            transcript: true,
            mcp_wait: None,
            mcp_notice: None,
            allowed: Default::default(),
            sinks: Vec::new(),
            resumed: None,
            hooks: Default::default(),
            permission_profile: Default::default(),
        }
    }

    /// A chosen permission profile (D2; the deployment file's, else the user's settings): the
    /// categories it refuses never run, approval mode `full` needs `autonomous` or
    /// `full_access`, and `auto` asks nobody (D19). Without it the approval mode alone decides.
    pub fn permission_profile(mut self, profile: Option<cst_config::deployment::PermissionProfile>) -> Self {
        self.permission_profile = profile;
        self
    }

    pub fn profile(mut self, profile: ToolsProfile) -> Self {
        self.profile = profile;
        self
    }

    pub fn approval(mut self, approval: ApprovalMode) -> Self {
        self.approval = approval;
        self
    }

    /// No person is present: calls that would ask are refused, `ask_user` says so, and the
    /// build waits up to [`HEADLESS_MCP_WAIT`] for MCP servers (M7).
    pub fn headless(mut self, headless: bool) -> Self {
        self.headless = headless;
        if headless && self.mcp_wait.is_none() {
            self.mcp_wait = Some(HEADLESS_MCP_WAIT);
        }
        self
    }

    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Write `.agent/sessions/<id>/main.jsonl` (default: yes).
    pub fn transcript(mut self, transcript: bool) -> Self {
        self.transcript = transcript;
        self
    }

    /// Wait this long for MCP servers before the session starts (`None`: do not wait; tools
    /// appear as servers become ready).
    pub fn mcp_wait(mut self, wait: Option<Duration>) -> Self {
        self.mcp_wait = wait;
        self
    }

    /// Who is told which MCP servers the start still waits for (exec prints "waiting for MCP
    /// servers: a, b" on stderr).
    pub fn mcp_notice(mut self, notice: McpNotice) -> Self {
        self.mcp_notice = Some(notice);
        self
    }

    /// Tools approved for the whole session (`exec --allow-tool`, `--allow-server`).
    pub fn allow(mut self, allowed: crate::approvals::AllowList) -> Self {
        self.allowed = allowed;
        self
    }

    /// The deployment's lifecycle hooks (D14–D18), from
    /// [`HookSettings::from_deployment`](crate::hooks::HookSettings::from_deployment); they run
    /// in the main agent only, never in sub-agents.
    pub fn hooks(mut self, hooks: crate::hooks::HookSettings) -> Self {
        self.hooks = hooks;
        self
    }

    /// Another sink for every event.
    pub fn sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Continue a session read with [`crate::resume::load`]: the main agent's history starts as
    /// the current system prompt followed by [`Resumed::history`]. The session gets a new id and
    /// a new transcript whose header says `resumed_from` and is followed by the old records, so
    /// it can be resumed in turn. The model is still the builder's: a front end that wants the
    /// old one passes `model.with_model(&resumed.model)` to [`SessionBuilder::new`].
    pub fn resume(mut self, resumed: Resumed) -> Self {
        self.resumed = Some(resumed);
        self
    }

    pub async fn build(self) -> Session {
        let (mut ext, mut warnings) = SessionExtensions::load(LoadOptions {
            workspace: self.workspace.clone(),
            profile: self.profile,
        });
        let mut summary = discovery::summary_line(&ext.loaded);
        let mut startup_warnings = Vec::new();
        if let Some(wait) = self.mcp_wait {
            match &self.mcp_notice {
                Some(notice) => ext.mcp.wait_ready_with_notice(wait, notice.as_ref()).await,
                None => ext.mcp.wait_ready(wait).await,
            };
            warnings.extend(ext.mcp.warnings());
            warnings.extend(ext.mcp.still_starting(wait));
            // Failed and exited servers are said as warning events of the session (stderr, and
            // `warning` lines of `exec --json`), and counted apart in the summary.
            startup_warnings.extend(ext.mcp.failures().iter().map(ToString::to_string));
            let failed = ext.mcp.failed_count();
            if failed > 0 {
                summary.push_str(&format!(" ({failed} failed)"));
            }
        }
        ext.mcp_wait = self.mcp_wait;
        // Read once (AGENTS.md, the skills index): the main prompt and every sub-agent's share it.
        let context = prompt::context(&self.workspace, &ext.loaded.skills);
        warnings.extend(prompt::agents_md_warning(&self.workspace));
        let system_prompt = prompt::system_prompt(&context, &ext.loaded.roles);
        let untrusted_hint = ext.loaded.untrusted_hint.clone();
        let completions = ext
            .loaded
            .skills
            .iter()
            .map(|s| format!("{}:{}", if s.command { "command" } else { "skill" }, s.name))
            .collect();
        let mut config = SessionConfig::new(self.workspace, ext.loaded.registry.clone(), self.model);
        config.approval = self.approval;
        config.headless = self.headless;
        config.max_steps = self.max_steps;
        config.system_prompt = system_prompt;
        config.transcript = self.transcript;
        config.roles = ext.loaded.roles.clone();
        config.subagent_context = context;
        config.sinks = self.sinks;
        config.startup_warnings = startup_warnings;
        config.allowed = self.allowed;
        config.permission_profile = self.permission_profile;
        config.resumed = self.resumed;
        config.hooks = self.hooks;
        config.extensions = Some(ext);
        Session {
            handle: spawn(config),
            summary,
            warnings,
            untrusted_hint,
            completions,
        }
    }
}
