//! Skills (S1–S6): folders with a SKILL.md, the index in the system prompt, the `skill` tool and
//! the `/skill NAME message` expansion.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::bounded_read::{read_beneath, BoundedReadError};
use cst_protocol::{Diagnostic, DiagnosticKind};
use cst_registry::{Confinement, Failure, Invocation, Perm, Registry, SourceKind, ToolRunner, ToolSource, ToolSpec};

/// One loaded skill.
#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill folder.
    pub dir: PathBuf,
    /// Its SKILL.md.
    pub file: PathBuf,
    /// `false` with `disable-model-invocation: true`: left out of the index and refused by the
    /// `skill` tool; only a person runs it (`/skill NAME message`).
    pub model_invocable: bool,
    /// A Claude Code plugin's slash command (`commands/NAME.md`, `file` is it): run as
    /// `/NAME arguments`, `$ARGUMENTS` replaced; never in the index.
    pub command: bool,
}

/// The index for the system prompt (S3) and the skills that did not fit.
#[derive(Debug, Clone, Default)]
pub struct SkillIndex {
    /// `- name: description` lines, at most 4096 bytes.
    pub text: String,
    pub left_out: Vec<String>,
}

/// Largest index, in bytes (S3).
pub const MAX_INDEX_BYTES: usize = 4096;
/// Longest description kept in one index line, in bytes (longer ones end with `…`).
pub const MAX_INDEX_DESCRIPTION_BYTES: usize = 256;

/// Render the index of S3.
///
/// The rule for what does not fit (deterministic, documented in docs/extensions.md): skills are
/// taken in discovery order (workspace `.agent/skills`, `.claude/skills`, config dir, plugins;
/// each folder sorted by name); each description is cut to 256 bytes; lines are added while the
/// total stays within 4096 bytes; the first skill whose line does not fit, and every skill after
/// it, is left out (so the index is always a prefix of the list). Left-out skills can still be
/// loaded with `skill(name)`; the caller warns about each one.
pub fn render_index(skills: &[Skill]) -> SkillIndex {
    render_named_index(
        skills
            .iter()
            .filter(|s| s.model_invocable)
            .map(|s| (s.name.as_str(), s.description.as_str())),
    )
}

/// The same rule for any `(name, description)` list (the sub-agent role index uses it too).
pub fn render_named_index<'a>(items: impl IntoIterator<Item = (&'a str, &'a str)>) -> SkillIndex {
    let mut text = String::new();
    let mut left_out = Vec::new();
    for (name, description) in items {
        if !left_out.is_empty() {
            left_out.push(name.to_string());
            continue;
        }
        let line = format!("- {}: {}\n", name, shorten(description));
        if text.len() + line.len() > MAX_INDEX_BYTES {
            left_out.push(name.to_string());
        } else {
            text.push_str(&line);
        }
    }
    SkillIndex { text, left_out }
}

/// Where a description says when to use the skill ("Use when…", "Use this skill when…",
/// "When Claude needs to…"): the part an agent chooses by, kept when the rest is cut.
const WHEN_CLAUSES: [&str; 7] = [
    "use when",
    "use this when",
    "use this skill when",
    "use it when",
    "when claude needs",
    "when the user",
    "use for",
];

/// Room for a kept "use when…" clause, beyond [`MAX_INDEX_DESCRIPTION_BYTES`] for the rest.
const MAX_WHEN_CLAUSE_BYTES: usize = 256;

/// A description for the index: whole when it fits in [`MAX_INDEX_DESCRIPTION_BYTES`]; else the
/// start cut to fit and the "use when…" clause kept (itself cut at [`MAX_WHEN_CLAUSE_BYTES`]),
/// so the index still says when to use each skill (13 of Anthropic's 17 public skills lost it
/// to a plain cut). The whole index stays within S3's 4096 bytes.
fn shorten(description: &str) -> String {
    if description.len() <= MAX_INDEX_DESCRIPTION_BYTES {
        return description.to_string();
    }
    let lower = description.to_ascii_lowercase();
    let when = WHEN_CLAUSES
        .iter()
        .filter_map(|c| lower.find(c))
        .filter(|at| *at > 0)
        .min();
    match when {
        Some(at) => {
            let (head, clause) = description.split_at(at);
            let head = head.trim_end();
            let head = if head.len() <= MAX_INDEX_DESCRIPTION_BYTES / 2 {
                head.to_string()
            } else {
                cut(head, MAX_INDEX_DESCRIPTION_BYTES / 2)
            };
            format!("{head} {}", cut(clause, MAX_WHEN_CLAUSE_BYTES))
        }
        None => cut(description, MAX_INDEX_DESCRIPTION_BYTES),
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[derive(Debug, Default, Deserialize)]
struct Frontmatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "disable-model-invocation")]
    disable_model_invocation: bool,
}

/// A SKILL.md split into frontmatter text (if any) and body.
pub(crate) fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = t.strip_prefix("---\n").or_else(|| t.strip_prefix("---\r\n")) else {
        return (None, t);
    };
    // The closing `---` on a line of its own.
    let mut pos = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..pos]), &rest[pos + line.len()..]);
        }
        pos += line.len();
    }
    (None, t)
}

/// The body of a SKILL.md without its frontmatter.
pub fn skill_body(text: &str) -> &str {
    split_frontmatter(text).1
}

/// Parse one SKILL.md (S2, S5). A malformed frontmatter is a warning naming the file and the
/// fallbacks apply: name = folder name, description = first non-heading line of the body.
pub fn parse_skill(dir: &Path, file: &Path, text: &str, warnings: &mut Vec<Diagnostic>) -> Skill {
    let (fm_text, body) = split_frontmatter(text);
    let mut fm = Frontmatter::default();
    if let Some(fm_text) = fm_text {
        match serde_yaml_ng::from_str::<Option<Frontmatter>>(fm_text) {
            Ok(Some(f)) => fm = f,
            Ok(None) => {}
            // S5
            Err(e) => warnings.push(Diagnostic::in_file(
                DiagnosticKind::BrokenFile,
                file,
                format!("malformed frontmatter ({e}); using the folder name and the first line of the body"),
            )),
        }
    }
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = fm
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or(folder);
    let description = fm
        .description
        .map(|d| one_line(&d))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| first_text_line(body));
    Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        file: file.to_path_buf(),
        model_invocable: !fm.disable_model_invocation,
        command: false,
    }
}

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// S5: the first line of the body that is neither empty nor a heading.
pub(crate) fn first_text_line(body: &str) -> String {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .map(one_line)
        .unwrap_or_default()
}

/// Load every `*/SKILL.md` under `root` (folders sorted by name). A missing root is no skills.
pub fn load_dir(root: &Path, warnings: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut out = Vec::new();
    for dir in cst_config::sorted_subdirs(root) {
        let file = dir.join("SKILL.md");
        match read_skill_md(&dir) {
            Ok(text) => out.push(parse_skill(&dir, &file, &text, warnings)),
            Err(BoundedReadError::NotFound) => {}
            Err(e) => warnings.push(Diagnostic::in_file(
                DiagnosticKind::BrokenFile,
                &file,
                format!("{e}; the skill is not loaded"),
            )),
        }
    }
    out
}

/// A skill folder's SKILL.md: a regular file inside the folder, at most [`MAX_FILE_BYTES`]
/// (issue 13 item 7: a link to `/proc/self/environ` or `/dev/zero` is refused, not read).
fn read_skill_md(dir: &Path) -> Result<String, BoundedReadError> {
    read_beneath(dir, Path::new("SKILL.md"), MAX_FILE_BYTES, false).map(|b| b.text())
}

/// Skills shared by the `skill` tool and the session (reloads replace the list in place).
pub type SharedSkills = Arc<RwLock<Vec<Skill>>>;

/// Find a skill by name.
pub fn find<'a>(skills: &'a [Skill], name: &str) -> Option<&'a Skill> {
    skills.iter().find(|s| s.name == name)
}

/// Files of a skill folder, relative, sorted; SKILL.md itself is left out. Symlinks are listed
/// but not followed.
pub fn list_files(skill: &Skill) -> Vec<String> {
    let mut files: Vec<String> = walkdir::WalkDir::new(&skill.dir)
        .follow_links(false)
        .max_depth(8)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_type().is_dir())
        .filter_map(|e| {
            e.path()
                .strip_prefix(&skill.dir)
                .ok()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
        })
        .filter(|p| p != "SKILL.md")
        .take(500)
        .collect();
    files.sort();
    files
}

/// Why a skill file was not returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillFileError {
    #[error("no skill named `{0}`")]
    UnknownSkill(String),
    // S4
    #[error("`{0}` is outside the skill's folder (only files inside it can be read)")]
    Outside(String),
    #[error("`{file}`: {message}")]
    Unreadable { file: String, message: String },
}

/// The largest skill file returned (the registry caps results at 512 KB anyway).
const MAX_FILE_BYTES: u64 = 512 * 1024;

/// S4: a file of the skill, only from inside its folder. Paths are compared after
/// canonicalising both sides, so `..`, absolute paths and symlinks resolving outside are refused.
pub fn read_skill_file(skill: &Skill, file: &str) -> Result<String, SkillFileError> {
    let rel = Path::new(file);
    if file.is_empty() || rel.is_absolute() || rel.has_root() {
        return Err(SkillFileError::Outside(file.to_string()));
    }
    let root = std::fs::canonicalize(&skill.dir).map_err(|e| SkillFileError::Unreadable {
        file: skill.dir.display().to_string(),
        message: e.to_string(),
    })?;
    let target = match std::fs::canonicalize(root.join(rel)) {
        Ok(t) => t,
        Err(e) => {
            // Say "outside" rather than "not found" for a path that lexically leaves the folder.
            if rel.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
                return Err(SkillFileError::Outside(file.to_string()));
            }
            return Err(SkillFileError::Unreadable {
                file: file.to_string(),
                message: e.to_string(),
            });
        }
    };
    if !target.starts_with(&root) || target == root {
        return Err(SkillFileError::Outside(file.to_string()));
    }
    // Opened beneath the folder's handle: a symlink swapped in after the check above cannot
    // lead outside, and only a regular file is read, at most MAX_FILE_BYTES of it.
    let rel = target.strip_prefix(&root).unwrap_or(rel);
    match read_beneath(&root, rel, MAX_FILE_BYTES, true) {
        Ok(b) => Ok(b.text()),
        Err(BoundedReadError::Refused { .. }) => Err(SkillFileError::Outside(file.to_string())),
        Err(e) => Err(SkillFileError::Unreadable {
            file: file.to_string(),
            message: e.to_string(),
        }),
    }
}

/// S4: `skill(name)` = the body plus the list of the skill's files.
pub fn skill_overview(skill: &Skill) -> Result<String, SkillFileError> {
    let text = read_skill_md(&skill.dir).map_err(|e| SkillFileError::Unreadable {
        file: skill.file.display().to_string(),
        message: e.to_string(),
    })?;
    let mut out = skill_body(&text).trim().to_string();
    let files = list_files(skill);
    out.push_str("\n\nFiles in this skill (read one with skill(name, file)):\n");
    if files.is_empty() {
        out.push_str("(none)\n");
    }
    for f in files {
        out.push_str(&format!("- {f}\n"));
    }
    Ok(out)
}

/// The built-in `skill(name, file?)` tool.
pub struct SkillTool {
    pub skills: SharedSkills,
}

/// Name of the built-in tool.
pub const SKILL_TOOL: &str = "skill";

impl SkillTool {
    pub fn spec() -> ToolSpec {
        ToolSpec {
            name: SKILL_TOOL.into(),
            description: "Load a skill from the skills index: its instructions and the list of its files; \
                          with `file`, one of those files."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "skill name from the index"},
                    "file": {"type": "string", "description": "a file of the skill, relative to its folder"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
            perm: Perm::Read,
            source: ToolSource::builtin(),
            timeout: cst_registry::DEFAULT_TIMEOUT,
            // It reads only inside a skill's folder, whatever the gate decides (S4).
            confine_with: Confinement::None,
        }
    }
}

impl ToolRunner for SkillTool {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            let name = call.args.get("name").and_then(Value::as_str).unwrap_or_default();
            let file = call.args.get("file").and_then(Value::as_str);
            let skill = {
                let skills = self.skills.read().unwrap_or_else(|e| e.into_inner());
                find(&skills, name).cloned()
            };
            let fail = |e: SkillFileError| Failure::Failed {
                message: e.to_string(),
                exit_code: None,
            };
            let skill = skill.ok_or_else(|| fail(SkillFileError::UnknownSkill(name.to_string())))?;
            if skill.command {
                return Err(Failure::Failed {
                    message: format!("`{name}` is a slash command for the user (`/{name}`), not a skill"),
                    exit_code: None,
                });
            }
            if !skill.model_invocable {
                return Err(Failure::Failed {
                    message: format!(
                        "skill `{name}` is for the user only (disable-model-invocation); it is run with `/skill {name}`"
                    ),
                    exit_code: None,
                });
            }
            match file {
                Some(f) => read_skill_file(&skill, f).map_err(fail),
                None => skill_overview(&skill).map_err(fail),
            }
        })
    }
}

/// Register the `skill` tool (built-in, perm read) unless it is there already.
pub fn register_skill_tool(registry: &Registry, skills: &SharedSkills, warnings: &mut Vec<Diagnostic>) {
    if registry.contains(SKILL_TOOL) {
        return;
    }
    let runner = Arc::new(SkillTool { skills: skills.clone() });
    if let Err(clash) = registry.register(SkillTool::spec(), runner) {
        warnings.push(clash.into());
    }
}

/// Whether a registered tool is the built-in `skill` tool.
pub fn is_skill_tool(spec: &ToolSpec) -> bool {
    spec.name == SKILL_TOOL && spec.source.kind == SourceKind::Builtin
}

/// A Claude Code plugin's `commands/*.md` (issue 14 item 9), sorted by name: user-invoked
/// skills named by the file. The description is the frontmatter's, else the first line.
pub fn load_commands(dir: &Path, warnings: &mut Vec<Diagnostic>) -> Vec<Skill> {
    let mut out = Vec::new();
    for (file, text) in crate::bounded_read::read_md_files(dir, MAX_FILE_BYTES, "command", warnings) {
        let (fm, body) = split_frontmatter(&text);
        let description = fm
            .and_then(|t| serde_yaml_ng::from_str::<Option<Frontmatter>>(t).ok().flatten())
            .and_then(|f| f.description)
            .map(|d| one_line(&d))
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| first_text_line(body));
        out.push(Skill {
            name: file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            description,
            dir: dir.to_path_buf(),
            file,
            model_invocable: false,
            command: true,
        });
    }
    out
}

/// A plugin slash command: `/NAME arguments` for a command skill `NAME` becomes the command's
/// body with `$ARGUMENTS` replaced by the arguments (appended when the body has none). `None`
/// when `input` names no command.
pub fn expand_command(input: &str, skills: &[Skill]) -> Option<Result<String, String>> {
    let rest = input.strip_prefix('/')?;
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let skill = skills.iter().find(|s| s.command && s.name == name)?;
    let file = skill.file.file_name().map(PathBuf::from).unwrap_or_default();
    let text = match read_beneath(&skill.dir, &file, MAX_FILE_BYTES, false) {
        Ok(b) => b.text(),
        Err(e) => return Some(Err(format!("{}: {e}", skill.file.display()))),
    };
    let body = skill_body(&text).trim();
    Some(Ok(if body.contains("$ARGUMENTS") {
        body.replace("$ARGUMENTS", args)
    } else if args.is_empty() {
        body.to_string()
    } else {
        format!("{body}\n\n{args}")
    }))
}

/// S6: expand `/skill NAME message` into the message sent to the model, with the skill's body
/// put into it. `None` when `input` is not a `/skill` command; `Err` for an unknown skill or a
/// missing name.
pub fn expand_skill_command(input: &str, skills: &[Skill]) -> Option<Result<String, String>> {
    let rest = input.strip_prefix("/skill")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let rest = rest.trim_start();
    let (name, message) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    if name.is_empty() {
        return Some(Err("usage: /skill NAME message".into()));
    }
    let Some(skill) = find(skills, name) else {
        return Some(Err(format!("no skill named `{name}`")));
    };
    let text = match read_skill_md(&skill.dir) {
        Ok(t) => t,
        Err(e) => return Some(Err(format!("{}: {e}", skill.file.display()))),
    };
    let body = skill_body(&text).trim();
    Some(Ok(format!(
        "<skill name=\"{}\" dir=\"{}\">\n{body}\n</skill>\n\n{message}",
        skill.name,
        skill.dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_and_fallbacks() {
        let mut w = Vec::new();
        let d = Path::new("/s/pdf-forms");
        let f = d.join("SKILL.md");
        let s = parse_skill(
            d,
            &f,
            "---\nname: pdf\ndescription: Fill\n  forms.\n---\n# T\nbody\n",
            &mut w,
        );
        assert_eq!((s.name.as_str(), s.description.as_str()), ("pdf", "Fill forms."));
        let s = parse_skill(d, &f, "# Title\n\nFirst line.\nSecond.\n", &mut w);
        assert_eq!((s.name.as_str(), s.description.as_str()), ("pdf-forms", "First line."));
        assert!(w.is_empty());
        let s = parse_skill(d, &f, "---\nname: [unclosed\n---\n# H\nText here\n", &mut w);
        assert_eq!((s.name.as_str(), s.description.as_str()), ("pdf-forms", "Text here"));
        let text = w[0].to_string();
        assert!(
            text.contains("/s/pdf-forms/SKILL.md") && text.contains("malformed"),
            "{w:?}"
        );
    }

    #[test]
    fn skill_command_expansion() {
        assert!(expand_skill_command("hello", &[]).is_none());
        assert!(expand_skill_command("/skills reload", &[]).is_none());
        assert!(expand_skill_command("/skill nope hi", &[]).unwrap().is_err());
    }
}
