//! The system prompts. The main agent's: base instructions, then the context (workspace root,
//! skills index (S3), AGENTS.md at the workspace root), then the sub-agent role index (A1).
//! A sub-agent's: its own base instructions, the same context, then its role's body (A4).

use std::path::Path;

use cst_extensions::bounded_read::{read_beneath, BoundedReadError};
use cst_extensions::skills::{render_index, Skill};
use cst_extensions::subagents::{Role, RoleSet};
use cst_protocol::{Diagnostic, DiagnosticKind};

/// Largest AGENTS.md taken into the prompt; the rest is cut with a note.
pub const MAX_AGENTS_MD_BYTES: usize = 32 * 1024;

const BASE: &str = "You are cst-agent, a coding agent working in a software workspace.
Use the tools to inspect and change files and to run commands; do not guess file contents.
Paths are relative to the workspace root unless absolute. Prefer edit_file for small changes.
Several read-only tool calls in one reply run at the same time.
When a tool call is refused or fails, read the message and adjust instead of repeating it.
When the task is done, reply with a short final answer and no tool calls.";

const SUBAGENT_BASE: &str = "You are a sub-agent of cst-agent, a coding agent. The main agent gave you one task.
Work on it with the tools, then reply with a final report and no tool calls. The main agent sees only
that report, not your tool calls, so put in it everything it needs: findings, file paths, what you changed.
Paths are relative to the workspace root unless absolute. Several read-only tool calls in one reply run at
the same time. When a tool call is refused or fails, read the message and adjust instead of repeating it.";

/// Build the main agent's system prompt from the session's [`context`] (shared with the
/// sub-agents' prompts, so it is built once). `roles` empty (the `minimal` tools profile has no
/// `task` tool) leaves the role index out.
pub fn system_prompt(context: &str, roles: &RoleSet) -> String {
    let mut out = String::from(BASE);
    out.push_str(context);
    if !roles.is_empty() {
        out.push_str(
            "\n## Sub-agents\nCall `task` with `description`, `prompt` and `agent` (one of these roles) to hand \
             a self-contained piece of work to a sub-agent; you get its final report back.\n",
        );
        out.push_str(&roles.index().text);
    }
    out
}

/// A sub-agent's system prompt: its base instructions, the session's context, its role (A4).
pub fn subagent_prompt(context: &str, role: &Role) -> String {
    let mut out = String::from(SUBAGENT_BASE);
    out.push_str(context);
    out.push_str(&format!("\n## Your role: {}\n", role.name));
    if role.readonly {
        out.push_str(
            "You are read-only: you cannot write files, run shell commands or use tools that change things.\n",
        );
    }
    if !role.instructions.is_empty() {
        out.push_str(&role.instructions);
        out.push('\n');
    }
    out
}

/// What both prompts say about the session: workspace root, skills index, AGENTS.md.
pub fn context(workspace: &Path, skills: &[Skill]) -> String {
    let mut out = String::new();
    out.push_str(&format!("\n\nWorkspace root: {}\n", workspace.display()));
    if !skills.is_empty() {
        let index = render_index(skills);
        out.push_str("\n## Skills\nCall the `skill` tool with a name to load a skill's instructions.\n");
        out.push_str(&index.text);
    }
    if let Ok(Some((name, text))) = load_instructions(workspace) {
        out.push_str(&format!("\n## Project instructions ({name})\n"));
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The project's instruction files, in the order they are looked for: `AGENTS.md`, else
/// `CLAUDE.md` (Claude Code's name for the same thing; issue 14 item 12).
const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// The first instruction file of the workspace that exists: a regular file inside it, read up
/// to the cap (issue 13 item 7: a link to `/proc/self/environ`, `/dev/zero` or a file outside is
/// refused — see [`agents_md_warning`] — and a huge file is never read whole).
fn load_instructions(workspace: &Path) -> Result<Option<(&'static str, String)>, (&'static str, BoundedReadError)> {
    for name in INSTRUCTION_FILES {
        match read_beneath(workspace, Path::new(name), MAX_AGENTS_MD_BYTES as u64, true) {
            Ok(b) if b.cut => {
                return Ok(Some((
                    name,
                    format!(
                        "{}\n[{name} cut at {MAX_AGENTS_MD_BYTES} bytes]\n",
                        b.text().trim_end_matches('\u{fffd}')
                    ),
                )))
            }
            Ok(b) => return Ok(Some((name, b.text()))),
            Err(BoundedReadError::NotFound) => continue,
            Err(e) => return Err((name, e)),
        }
    }
    Ok(None)
}

/// The warning for an instruction file that was refused (not a regular file inside the
/// workspace), if any.
pub fn agents_md_warning(workspace: &Path) -> Option<Diagnostic> {
    let (name, e) = load_instructions(workspace).err()?;
    Some(Diagnostic::in_file(
        DiagnosticKind::BrokenFile,
        workspace.join(name),
        format!("{e}; it is not put into the prompt"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_skills_and_agents_md() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("AGENTS.md"), "Always run the tests.").unwrap();
        let skills = vec![Skill {
            name: "pdf-forms".into(),
            description: "Fill PDF forms".into(),
            dir: ws.path().into(),
            file: ws.path().join("SKILL.md"),
            model_invocable: true,
            command: false,
        }];
        let roles = RoleSet::default();
        let p = system_prompt(&context(ws.path(), &skills), &roles);
        assert!(p.contains("- pdf-forms: Fill PDF forms"));
        assert!(p.contains("Always run the tests."));
        assert!(p.contains("## Sub-agents") && p.contains("- plan: (read-only)"), "{p}");
        let bare = system_prompt(
            &context(tempfile::tempdir().unwrap().path(), &[]),
            &RoleSet::from_roles(Vec::new()),
        );
        assert!(!bare.contains("AGENTS.md") && !bare.contains("## Skills") && !bare.contains("## Sub-agents"));
        let explore = roles.get("explore").unwrap();
        let sub = subagent_prompt(&context(ws.path(), &skills), explore);
        assert!(
            sub.contains("You are read-only") && sub.contains("Always run the tests."),
            "{sub}"
        );
        assert!(sub.contains(&explore.instructions));
    }

    /// Issue 14 item 12: `CLAUDE.md` is read when there is no `AGENTS.md`; `AGENTS.md` wins.
    #[test]
    fn claude_md_when_there_is_no_agents_md() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("CLAUDE.md"), "Use pnpm, never npm.").unwrap();
        let c = context(ws.path(), &[]);
        assert!(
            c.contains("## Project instructions (CLAUDE.md)") && c.contains("Use pnpm"),
            "{c}"
        );
        std::fs::write(ws.path().join("AGENTS.md"), "Always run the tests.").unwrap();
        let c = context(ws.path(), &[]);
        assert!(c.contains("Always run the tests.") && !c.contains("Use pnpm"), "{c}");
    }
}
