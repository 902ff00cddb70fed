//! The extensions a session loaded — skills, plugins and their tools, roles, MCP servers — kept
//! together so the session can reload them (E8, M11, T2) and stop them when it ends.

use std::time::Duration;

use cst_extensions::discovery::{self, LoadOptions, Loaded, ReloadReport};
use cst_extensions::mcp::{self, McpChanges, McpManager, ServerStatus};
use cst_protocol::{Changed, Diagnostic, DiagnosticKind, ExtensionKind, McpServerState, ReloadSummary, ReloadTarget};

/// Owned by one session.
pub struct SessionExtensions {
    pub opts: LoadOptions,
    pub loaded: Loaded,
    pub mcp: McpManager,
    /// After a reload that starts servers, wait this long for them (headless sessions, so the
    /// next turn sees their tools); `None`: tools appear when ready.
    pub mcp_wait: Option<Duration>,
}

impl SessionExtensions {
    /// Discover everything for `opts` and start the MCP servers in the background (M7).
    /// Returns the extensions and the problems found (each naming its file).
    pub fn load(opts: LoadOptions) -> (Self, Vec<Diagnostic>) {
        let loaded = discovery::load(&opts);
        let mut warnings = loaded.warnings.clone();
        // With the deployment config's HTTP servers (D5).
        let mcp = mcp::start_session(
            loaded.registry.clone(),
            &loaded.mcp_sources,
            &opts.workspace,
            &mut warnings,
        );
        let ext = Self {
            opts,
            loaded,
            mcp,
            mcp_wait: None,
        };
        (ext, warnings)
    }

    /// Reload `what`; returns what changed and the problems found.
    pub async fn reload(&mut self, what: &ReloadTarget) -> (ReloadSummary, Vec<Diagnostic>) {
        let mut summary = ReloadSummary::default();
        let mut warnings = Vec::new();
        let mcp_before = self.mcp.warnings();
        match what {
            ReloadTarget::Skills => {
                let report = discovery::reload_skills(&mut self.loaded, &self.opts);
                add_report(&mut summary, &mut warnings, ExtensionKind::Skill, report);
            }
            // A plugin's MCP servers start and stop with it; trust decides the workspace's
            // plugins and `.agent/mcp.json`, which `reload_plugins` reads again.
            ReloadTarget::Plugins | ReloadTarget::Trust => {
                let report = discovery::reload_plugins(&mut self.loaded, &self.opts);
                add_report(&mut summary, &mut warnings, ExtensionKind::Plugin, report);
                self.follow_mcp_sources(&mut summary, &mut warnings).await;
            }
            ReloadTarget::Mcp { server: Some(name) } => match self.mcp.reload(Some(name)).await {
                Ok(()) => summary.restarted.push(server(name)),
                Err(e) => warnings.push(Diagnostic::new(DiagnosticKind::McpServer, e)),
            },
            ReloadTarget::Mcp { server: None } => {
                warnings.extend(discovery::reload_mcp_sources(&mut self.loaded, &self.opts));
                self.follow_mcp_sources(&mut summary, &mut warnings).await;
            }
        }
        if let Some(wait) = self.mcp_wait {
            self.mcp.wait_ready(wait).await;
            warnings.extend(self.mcp.still_starting(wait));
        }
        // Tool-name clashes of servers that (re)started; those of servers that became ready
        // after this are in `McpManager::warnings` for the `/mcp` view.
        warnings.extend(self.mcp.warnings().into_iter().filter(|w| !mcp_before.contains(w)));
        (summary, warnings)
    }

    /// Make the running servers follow `loaded.mcp_sources`: added start, removed stop, changed
    /// restart, unchanged keep running — except those that exited, which restart (M11).
    async fn follow_mcp_sources(&self, summary: &mut ReloadSummary, warnings: &mut Vec<Diagnostic>) {
        let changes: McpChanges = mcp::reload_sources(&self.mcp, &self.loaded.mcp_sources, warnings).await;
        let touched: Vec<&String> = changes.added.iter().chain(&changes.changed).collect();
        for info in self.mcp.servers() {
            let down = matches!(info.status, ServerStatus::Exited(_));
            if down && !touched.contains(&&info.name) && self.mcp.reload(Some(&info.name)).await.is_ok() {
                summary.restarted.push(server(&info.name));
            }
        }
        summary.added.extend(changes.added.iter().map(|n| server(n)));
        summary.removed.extend(changes.removed.iter().map(|n| server(n)));
        summary.changed.extend(changes.changed.iter().map(|n| server(n)));
    }

    /// Stop the MCP servers (process groups killed and reaped).
    pub async fn shutdown(self) {
        self.mcp.shutdown().await;
    }
}

/// Every MCP server of `mcp` as a front end shows it (`Event::McpServers`, M11, M12).
pub fn mcp_server_states(mcp: &McpManager) -> Vec<McpServerState> {
    mcp.servers()
        .into_iter()
        .map(|info| McpServerState {
            detail: match &info.status {
                // Why it failed, or the last line an exited server wrote on stderr (M11).
                ServerStatus::Failed(why) | ServerStatus::Exited(why) => Some(why.clone()),
                _ => None,
            },
            status: info.status.label().to_string(),
            tools: info.tools.len(),
            name: info.name,
            origin: info.origin,
            file: info.file,
        })
        .collect()
}

fn server(name: &str) -> Changed {
    Changed {
        kind: ExtensionKind::McpServer,
        name: name.to_string(),
    }
}

fn add_report(summary: &mut ReloadSummary, warnings: &mut Vec<Diagnostic>, kind: ExtensionKind, report: ReloadReport) {
    let named = |names: Vec<String>| names.into_iter().map(|name| Changed { kind, name }).collect::<Vec<_>>();
    summary.added.extend(named(report.added));
    summary.removed.extend(named(report.removed));
    summary.changed.extend(named(report.changed));
    warnings.extend(report.warnings);
}
