//! The policy of `mcp serve`: which tools are offered and which calls may run. No person can
//! approve anything here, so the categories given with `--allow` are the approval, decided up
//! front: an offered tool runs under its own confinement (as an approved call of the `auto`
//! mode does), anything else is refused before it runs. The deployment's permission profile
//! comes first, as in a session (D2).

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use serde_json::Value;

use cst_config::deployment::PermissionProfile;
use cst_core::approvals::{self, ApprovalMode};
use cst_extensions::skills::SKILL_TOOL;
use cst_registry::{Decision, Perm, PermissionGate, SourceKind, ToolSpec};

/// Every category, in the order `--allow` lists them.
pub const ALL: [Perm; 4] = [Perm::Read, Perm::Write, Perm::Net, Perm::Shell];

/// `read,write` → the categories; `all` is every one. An unknown word is an error naming it.
pub fn parse_allow(text: &str) -> Result<BTreeSet<Perm>, String> {
    let mut out = BTreeSet::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word == "all" {
            out.extend(ALL);
            continue;
        }
        let perm = Perm::parse(word)
            .ok_or_else(|| format!("--allow: unknown category `{word}` (use read, write, net, shell or all)"))?;
        out.insert(perm);
    }
    if out.is_empty() {
        return Err("--allow: name at least one category (read, write, net, shell or all)".into());
    }
    Ok(out)
}

/// `read,write`, for messages.
pub fn allow_text(allow: &BTreeSet<Perm>) -> String {
    ALL.iter()
        .filter(|p| allow.contains(p))
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// What is served and what runs.
#[derive(Debug, Clone)]
pub struct ServePolicy {
    pub allow: BTreeSet<Perm>,
    pub profile: PermissionProfile,
}

impl ServePolicy {
    /// `Err(reason)` when `spec` is not offered to MCP clients. Only plugin tools (wasm and
    /// plugin.json commands) and the `skill` tool are: the built-in file and shell tools act
    /// for a model inside a session, and MCP tools belong to other servers.
    pub fn offers(&self, spec: &ToolSpec) -> Result<(), String> {
        let served_kind = match spec.source.kind {
            SourceKind::Wasm | SourceKind::Command => true,
            SourceKind::Builtin => spec.name == SKILL_TOOL,
            SourceKind::Mcp => false,
        };
        if !served_kind {
            return Err(format!("`{}` is not offered by `cst-agent mcp serve`", spec.name));
        }
        if let Some(reason) = approvals::profile_refusal(self.profile, spec.perm) {
            return Err(reason);
        }
        if !self.allow.contains(&spec.perm) {
            return Err(format!(
                "`{}` is a {} tool and this server offers only {} tools (--allow {}); the call was not run",
                spec.name,
                spec.perm,
                allow_text(&self.allow),
                allow_text(&self.allow)
            ));
        }
        Ok(())
    }
}

/// How an offered call runs: as the agent's `auto` mode under a chosen profile runs it (D19,
/// `approvals::autonomy`) — `--allow` is the approval given up front — so always with the tool's
/// own confinement, never unconfined, and a process that needs the full sandbox is refused on a
/// system without it rather than run half-confined.
fn run(spec: &ToolSpec, sandbox: bool) -> Decision {
    match approvals::verdict(ApprovalMode::Auto, spec.perm, spec.confine_with, sandbox) {
        approvals::Verdict::Run { confinement } => Decision::Allow { confinement },
        approvals::Verdict::Ask => approvals::autonomy(
            spec,
            sandbox,
            approvals::confinement(ApprovalMode::Auto, spec.confine_with),
        ),
    }
}

impl PermissionGate for ServePolicy {
    fn check<'a>(&'a self, spec: &'a ToolSpec, _args: &'a Value) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            match self.offers(spec) {
                // Always the tool's own confinement (never the unconfined `full` mode): paths kept
                // in the workspace, the process sandbox for command tools.
                Ok(()) => run(spec, cst_extensions::sandbox::available()),
                Err(reason) => Decision::Deny { reason },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P11: without the full sandbox, a shell command tool is refused (nobody can approve it
    /// here); a write command tool runs confined as far as the system can, as in `auto`; a wasm
    /// tool has no process to sandbox and runs; nothing runs unconfined.
    #[test]
    fn a_process_that_auto_would_ask_about_needs_the_full_sandbox() {
        use cst_registry::Confinement;
        let tool = |perm, confine_with| ToolSpec {
            name: "t".into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            perm,
            source: cst_registry::ToolSource::builtin(),
            timeout: cst_registry::DEFAULT_TIMEOUT,
            confine_with,
        };
        let sandboxed = Decision::Allow {
            confinement: Confinement::ProcessSandbox,
        };
        let shell_process = tool(Perm::Shell, Confinement::ProcessSandbox);
        assert!(matches!(run(&shell_process, false), Decision::Deny { reason } if reason.contains("sandbox")));
        assert_eq!(run(&shell_process, true), sandboxed);
        assert_eq!(run(&tool(Perm::Write, Confinement::ProcessSandbox), false), sandboxed);
        let own = Decision::Allow {
            confinement: Confinement::None,
        };
        assert_eq!(run(&tool(Perm::Shell, Confinement::None), false), own);
        assert_eq!(run(&tool(Perm::Net, Confinement::None), true), own);
    }

    #[test]
    fn allow_parses_lists_and_refuses_unknown_words() {
        assert_eq!(parse_allow("read").unwrap(), BTreeSet::from([Perm::Read]));
        assert_eq!(
            parse_allow("read, write").unwrap(),
            BTreeSet::from([Perm::Read, Perm::Write])
        );
        assert_eq!(parse_allow("all").unwrap().len(), 4);
        let e = parse_allow("read,admin").unwrap_err();
        assert!(e.contains("`admin`"), "{e}");
        assert!(parse_allow(" , ").is_err());
    }
}
