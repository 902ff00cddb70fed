//! The system prompt: base instructions, the skills index (S3), AGENTS.md at the workspace root.
//! The sub-agent role index (A1) is appended here once roles exist.

use std::path::Path;

use crate::skills::{render_index, Skill};

/// Largest AGENTS.md taken into the prompt; the rest is cut with a note.
pub const MAX_AGENTS_MD_BYTES: usize = 32 * 1024;

const BASE: &str = "You are cst-agent, a coding agent working in a software workspace.
Use the tools to inspect and change files and to run commands; do not guess file contents.
Paths are relative to the workspace root unless absolute. Prefer edit_file for small changes.
Several read-only tool calls in one reply run at the same time.
When a tool call is refused or fails, read the message and adjust instead of repeating it.
When the task is done, reply with a short final answer and no tool calls.";

/// Build the system prompt for a session in `workspace`.
pub fn system_prompt(workspace: &Path, skills: &[Skill]) -> String {
    let mut out = String::from(BASE);
    out.push_str(&format!("\n\nWorkspace root: {}\n", workspace.display()));
    if !skills.is_empty() {
        let index = render_index(skills);
        out.push_str("\n## Skills\nCall the `skill` tool with a name to load a skill's instructions.\n");
        out.push_str(&index.text);
    }
    if let Some(agents) = read_agents_md(workspace) {
        out.push_str("\n## Project instructions (AGENTS.md)\n");
        out.push_str(&agents);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn read_agents_md(workspace: &Path) -> Option<String> {
    let text = std::fs::read_to_string(workspace.join("AGENTS.md")).ok()?;
    if text.len() <= MAX_AGENTS_MD_BYTES {
        return Some(text);
    }
    let mut cut = MAX_AGENTS_MD_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(format!(
        "{}\n[AGENTS.md cut at {MAX_AGENTS_MD_BYTES} bytes]\n",
        &text[..cut]
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
        }];
        let p = system_prompt(ws.path(), &skills);
        assert!(p.contains("- pdf-forms: Fill PDF forms"));
        assert!(p.contains("Always run the tests."));
        let bare = system_prompt(tempfile::tempdir().unwrap().path(), &[]);
        assert!(!bare.contains("AGENTS.md") && !bare.contains("## Skills"));
    }
}
