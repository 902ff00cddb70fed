//! Skills (S1–S6): folders with a SKILL.md, the index in the system prompt, the `skill` tool.

use std::path::PathBuf;

/// One loaded skill.
#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill folder.
    pub dir: PathBuf,
    /// Its SKILL.md.
    pub file: PathBuf,
}

/// The index for the system prompt (S3) and the skills that did not fit.
#[derive(Debug, Clone, Default)]
pub struct SkillIndex {
    /// `- name: description` lines, at most 4096 bytes.
    pub text: String,
    pub left_out: Vec<String>,
}

/// Render the index of S3.
pub fn render_index(skills: &[Skill]) -> SkillIndex {
    let mut text = String::new();
    for s in skills {
        text.push_str(&format!("- {}: {}\n", s.name, s.description));
    }
    SkillIndex {
        text,
        left_out: Vec::new(),
    }
}
