//! Sub-agent roles (A1–A6, E6, E7): role files, the built-in roles, the role index of the main
//! agent's system prompt, the `task` tool ([`task_tool`]) and reading sub-agent transcripts
//! ([`transcripts`]). The sub-agent loop itself runs in the core (`core/subagent.rs`).
//!
//! | where | when |
//! |---|---|
//! | `<ws>/.agent/agents/*.md` | always (roles are text, T3) |
//! | `<ws>/.claude/agents/*.md` | always (same format, so existing files work) |
//! | `<config>/agents/*.md` | always |
//! | built-in `general`, `explore`, `plan` | unless a file of that name overrides it (A1) |
//!
//! On a name clash the first wins in that order (E7); the loser is a warning naming both files.

pub mod task_tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::skills::{first_text_line, one_line, render_named_index, split_frontmatter, SkillIndex};
use cst_protocol::{Diagnostic, DiagnosticKind};

/// One sub-agent role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    pub name: String,
    /// One line, shown in the main agent's role index.
    pub description: String,
    /// Allow-list of tool names; `None` = every tool the rules allow.
    pub tools: Option<Vec<String>>,
    /// Tools refused whatever else allows them (`disallowedTools` of a Claude Code role).
    pub disallowed: Vec<String>,
    /// Claude Code tool names in `tools` that have no equivalent here (left out, with a warning).
    pub unknown_tools: Vec<String>,
    /// No write, shell or non-read-only MCP tools (A3); tasks of this role may run in parallel.
    pub readonly: bool,
    /// Another model of the same provider; `None` = the session's model.
    pub model: Option<String>,
    /// Most model calls of one task; `None` = the session's step limit.
    pub max_steps: Option<u32>,
    /// The file's body, appended to the sub-agent's system prompt (A4).
    pub instructions: String,
    /// The role file; `None` for a built-in role.
    pub file: Option<PathBuf>,
}

impl Role {
    /// `explore (built-in)` or `reviewer (/ws/.agent/agents/reviewer.md)`.
    pub fn describe(&self) -> String {
        match &self.file {
            Some(f) => format!("{} ({})", self.name, f.display()),
            None => format!("{} (built-in)", self.name),
        }
    }
}

/// The built-in roles (A1), each overridable by a role file of the same name.
pub fn builtin_roles() -> Vec<Role> {
    let role = |name: &str, description: &str, readonly: bool, instructions: &str| Role {
        name: name.into(),
        description: description.into(),
        tools: None,
        disallowed: Vec::new(),
        unknown_tools: Vec::new(),
        readonly,
        model: None,
        max_steps: None,
        instructions: instructions.into(),
        file: None,
    };
    vec![
        role(
            "general",
            "General-purpose agent for multi-step work: research, edit files, run commands.",
            false,
            "Carry the task through to the end, then report what you did and what you found.",
        ),
        role(
            "explore",
            "Read-only search of the workspace: finds files, reads code, answers questions about it.",
            true,
            "Search broadly first (list, grep), then read the relevant parts. Report the answer with \
             the file paths and line numbers that support it. You cannot change anything.",
        ),
        role(
            "plan",
            "Read-only planner: studies the code and returns a step-by-step implementation plan.",
            true,
            "Study the code the task touches, then return a numbered plan: the files to change, what \
             to change in each, the risks, and how to test it. You cannot change anything.",
        ),
    ]
}

/// The roles of a session, by name.
#[derive(Debug, Clone)]
pub struct RoleSet {
    roles: BTreeMap<String, Role>,
}

impl Default for RoleSet {
    /// The built-in roles only.
    fn default() -> Self {
        Self::from_roles(builtin_roles())
    }
}

impl RoleSet {
    /// Roles in precedence order: the first of a name wins.
    pub fn from_roles(roles: impl IntoIterator<Item = Role>) -> Self {
        let mut map = BTreeMap::new();
        for r in roles {
            map.entry(r.name.clone()).or_insert(r);
        }
        Self { roles: map }
    }

    /// The role `name`; Claude Code's names of the built-in roles (`Explore`, `Plan`,
    /// `general-purpose`) find ours unless a role file took that name.
    pub fn get(&self, name: &str) -> Option<&Role> {
        self.roles.get(name).or_else(|| {
            let ours = match name {
                "Explore" => "explore",
                "Plan" => "plan",
                "general-purpose" => "general",
                _ => return None,
            };
            self.roles.get(ours)
        })
    }

    /// All roles, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Role> {
        self.roles.values()
    }

    pub fn names(&self) -> Vec<&str> {
        self.roles.keys().map(String::as_str).collect()
    }

    pub fn len(&self) -> usize {
        self.roles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }

    /// The role index for the main agent's system prompt (A1): `- name: description` lines,
    /// read-only roles marked, within the same 4 KB rule as the skills index (S3).
    pub fn index(&self) -> SkillIndex {
        let lines: Vec<(String, String)> = self
            .iter()
            .map(|r| {
                let d = if r.readonly {
                    format!("(read-only) {}", r.description)
                } else {
                    r.description.clone()
                };
                (r.name.clone(), d)
            })
            .collect();
        render_named_index(lines.iter().map(|(n, d)| (n.as_str(), d.as_str())))
    }
}

/// Role folders in precedence order (E6, E7).
pub fn role_dirs(workspace: &Path, config_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![
        workspace.join(".agent").join("agents"),
        workspace.join(".claude").join("agents"),
    ];
    if let Some(c) = config_dir {
        dirs.push(c.join("agents"));
    }
    dirs
}

/// Load the roles from `dirs` (in precedence order) plus the built-ins not overridden.
/// A broken file is a warning naming it; the others load.
pub fn load_roles(dirs: &[PathBuf], warnings: &mut Vec<Diagnostic>) -> RoleSet {
    load_roles_with_plugins(dirs, &[], warnings)
}

/// [`load_roles`] plus the `agents/` folders of Claude Code plugins (`(plugin, folder)`), after
/// every other role. A plugin role whose name is taken is named `plugin:name` instead, as Claude
/// Code namespaces them.
pub fn load_roles_with_plugins(
    dirs: &[PathBuf],
    plugins: &[(String, PathBuf)],
    warnings: &mut Vec<Diagnostic>,
) -> RoleSet {
    let mut roles = read_role_dirs(dirs, warnings);
    let builtin: Vec<String> = builtin_roles().into_iter().map(|r| r.name).collect();
    for (plugin, dir) in plugins {
        for mut role in read_role_dirs(std::slice::from_ref(dir), warnings) {
            if roles.iter().any(|r| r.name == role.name) || builtin.contains(&role.name) {
                role.name = format!("{plugin}:{}", role.name);
            }
            if let Some(first) = roles.iter().find(|r| r.name == role.name) {
                warnings.push(role_clash(&role, first));
                continue;
            }
            roles.push(role);
        }
    }
    roles.extend(builtin_roles());
    RoleSet::from_roles(roles)
}

/// E7: `role` is not loaded because `first`, of the same name, came first.
fn role_clash(role: &Role, first: &Role) -> Diagnostic {
    Diagnostic::in_file(
        DiagnosticKind::NameClash,
        role.file.as_deref().unwrap_or(Path::new("?")),
        format!(
            "sub-agent role `{}` clashes with the role of the same name in {}; the first one is kept",
            role.name,
            first.file.as_deref().unwrap_or(Path::new("?")).display()
        ),
    )
}

/// The role files of `dirs`, in precedence order; a clash keeps the first (E7).
fn read_role_dirs(dirs: &[PathBuf], warnings: &mut Vec<Diagnostic>) -> Vec<Role> {
    let mut roles: Vec<Role> = Vec::new();
    for dir in dirs {
        // Issue 13 item 7: a regular file inside the agents folder, at most MAX_ROLE_BYTES.
        for (file, text) in crate::bounded_read::read_md_files(dir, MAX_ROLE_BYTES, "role", warnings) {
            let role = match parse_role(&file, &text) {
                Ok(r) => r,
                Err(e) => {
                    warnings.push(Diagnostic::in_file(
                        DiagnosticKind::BrokenFile,
                        &file,
                        format!("{e}; the role is not loaded"),
                    ));
                    continue;
                }
            };
            if !role.unknown_tools.is_empty() {
                warnings.push(Diagnostic::in_file(
                    DiagnosticKind::Other,
                    &file,
                    format!(
                        "`tools` names {} with no equivalent here; left out of the role",
                        role.unknown_tools
                            .iter()
                            .map(|t| format!("`{t}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            // E7
            if let Some(first) = roles.iter().find(|r| r.name == role.name) {
                warnings.push(role_clash(&role, first));
                continue;
            }
            roles.push(role);
        }
    }
    roles
}

/// Largest role file read.
pub const MAX_ROLE_BYTES: u64 = 256 * 1024;

/// `tools:` as a YAML list or as one comma-separated string (Claude Code writes the latter).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
struct RoleFrontmatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<ToolList>,
    #[serde(rename = "disallowedTools", alias = "disallowed_tools")]
    disallowed_tools: Option<ToolList>,
    #[serde(alias = "read_only", alias = "readOnly")]
    readonly: Option<bool>,
    /// Claude Code: `plan` is read-only.
    #[serde(rename = "permissionMode")]
    permission_mode: Option<String>,
    model: Option<String>,
    #[serde(alias = "maxSteps", alias = "maxTurns")]
    max_steps: Option<u32>,
}

impl RoleFrontmatter {
    /// Claude Code's `/agents` wizard writes one-line descriptions holding `Examples:` and
    /// `<example>` blocks with `: ` in them, which YAML refuses; Claude Code reads them anyway.
    /// So do we, line by line: `key: value` at the start of a line, the value as written (`\n`
    /// escapes become spaces). Lists (`tools`) as comma-separated text.
    fn lenient(text: &str) -> Result<Self, String> {
        let mut fm = Self::default();
        for line in text.lines() {
            if line.starts_with([' ', '\t', '-', '#']) {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            let text = || Some(value.replace("\\n", " "));
            let number = || {
                value
                    .parse::<u32>()
                    .map(Some)
                    .map_err(|_| format!("`{}` must be a whole number", key.trim()))
            };
            match key.trim() {
                "name" => fm.name = text(),
                "description" => fm.description = text(),
                "tools" => fm.tools = Some(ToolList::Text(value.to_string())),
                "disallowedTools" | "disallowed_tools" => fm.disallowed_tools = Some(ToolList::Text(value.to_string())),
                "readonly" | "read_only" | "readOnly" => {
                    fm.readonly = Some(match value {
                        "true" => true,
                        "false" => false,
                        _ => return Err(format!("`{}` must be true or false", key.trim())),
                    })
                }
                "permissionMode" => fm.permission_mode = text(),
                "model" => fm.model = text(),
                "max_steps" | "maxSteps" | "maxTurns" => fm.max_steps = number()?,
                _ => {}
            }
        }
        Ok(fm)
    }
}

/// Tool names of a `tools`/`disallowedTools` entry, Claude Code's mapped to ours, in order, once
/// each; Claude Code names with no equivalent here are returned apart.
fn tool_names(list: ToolList) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = match list {
        ToolList::List(l) => l,
        ToolList::Text(s) => s.split(',').map(str::to_string).collect(),
    };
    let mut out: Vec<String> = Vec::new();
    let mut unknown = Vec::new();
    for n in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let n = match claude_tool_alias(n) {
            Some(ours) => ours.to_string(),
            // A Claude Code tool we have nothing like (`WebSearch`, `TodoWrite`).
            None if n.starts_with(|c: char| c.is_ascii_uppercase()) && !n.contains("__") => {
                unknown.push(n.to_string());
                continue;
            }
            None => n.to_string(),
        };
        if !out.contains(&n) {
            out.push(n);
        }
    }
    (out, unknown)
}

/// Parse one role file (A1). Unknown frontmatter keys are ignored (Claude Code files carry
/// `color` and the like); a key of the wrong type is an error.
pub fn parse_role(file: &Path, text: &str) -> Result<Role, String> {
    let (fm_text, body) = split_frontmatter(text);
    let fm = match fm_text {
        None => RoleFrontmatter::default(),
        Some(t) => match serde_yaml_ng::from_str::<Option<RoleFrontmatter>>(t) {
            Ok(fm) => fm.unwrap_or_default(),
            // Not YAML (as Claude Code's wizard writes it), or a key of the wrong type: read as
            // `key: value` lines; a wrong type is still an error.
            Err(e) => RoleFrontmatter::lenient(t).map_err(|l| format!("malformed frontmatter ({e}; {l})"))?,
        },
    };
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = fm
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or(stem);
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "role name `{name}` may hold only letters, digits, `_`, `-` and `.`"
        ));
    }
    if fm.max_steps == Some(0) {
        return Err("`max_steps` must be at least 1".into());
    }
    let mut unknown = Vec::new();
    let tools = fm.tools.map(|t| {
        let (names, missing) = tool_names(t);
        unknown.extend(missing);
        names
    });
    let disallowed = fm.disallowed_tools.map(|t| tool_names(t).0).unwrap_or_default();
    // `inherit` and Claude's model aliases mean "the session's model": those names do not
    // exist at an OpenAI-compatible provider.
    let model = fm
        .model
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty() && !matches!(m.as_str(), "inherit" | "sonnet" | "opus" | "haiku"));
    let description = fm
        .description
        .map(|d| one_line(&d))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| first_text_line(body));
    let plan = fm.permission_mode.as_deref().map(str::trim) == Some("plan");
    Ok(Role {
        name,
        description,
        tools,
        disallowed,
        unknown_tools: unknown,
        readonly: fm.readonly.unwrap_or(false) || plan,
        model,
        max_steps: fm.max_steps,
        instructions: body.trim().to_string(),
        file: Some(file.to_path_buf()),
    })
}

/// Claude Code's tool names in `.claude/agents` files, mapped to ours.
fn claude_tool_alias(name: &str) -> Option<&'static str> {
    Some(match name {
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Glob" | "LS" => "list",
        "Grep" => "grep",
        "Bash" => "run_shell",
        "Skill" => "skill",
        "Task" | "Agent" => "task",
        _ => return None,
    })
}

/// Tools never given to a sub-agent (A2): no nesting, and nobody to answer questions.
pub const NEVER_FOR_SUBAGENTS: &[&str] = &[task_tool::TASK_TOOL, "ask_user"];

pub use cst_registry::readonly_allows;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_defaults_and_aliases() {
        let f = Path::new("/x/reviewer.md");
        let r = parse_role(
            f,
            "---\ndescription: Reviews diffs\ntools: Read, Grep, Bash, mcp__gh__search\nreadonly: true\nmodel: inherit\nmax_steps: 7\ncolor: red\n---\nBe picky.\n",
        )
        .unwrap();
        assert_eq!(r.name, "reviewer");
        assert_eq!(r.description, "Reviews diffs");
        assert_eq!(
            r.tools.as_deref(),
            Some(
                &[
                    "read_file".to_string(),
                    "grep".into(),
                    "run_shell".into(),
                    "mcp__gh__search".into()
                ][..]
            )
        );
        assert!(r.readonly);
        assert_eq!(r.model, None);
        assert_eq!(r.max_steps, Some(7));
        assert_eq!(r.instructions, "Be picky.");

        let bare = parse_role(Path::new("/x/helper.md"), "# Helper\nDoes small jobs.\n").unwrap();
        assert_eq!(
            (bare.name.as_str(), bare.description.as_str()),
            ("helper", "Does small jobs.")
        );
        assert_eq!(bare.tools, None);

        assert!(parse_role(f, "---\nreadonly: maybe\n---\n")
            .unwrap_err()
            .contains("malformed"));
        assert!(parse_role(f, "---\nmax_steps: 0\n---\n")
            .unwrap_err()
            .contains("max_steps"));
        assert!(parse_role(f, "---\nname: a/b\n---\n")
            .unwrap_err()
            .contains("role name"));
    }

    #[test]
    fn readonly_scope_keeps_only_read_tools_and_read_only_mcp() {
        use cst_registry::{Perm, SourceKind, ToolScope, ToolSource, ToolSpec};
        let spec = |name: &str, perm: Perm, kind: SourceKind| ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            perm,
            source: ToolSource {
                kind,
                owner: "x".into(),
                file: None,
            },
            timeout: cst_registry::DEFAULT_TIMEOUT,
            confine_with: cst_registry::Confinement::None,
        };
        let scope = ToolScope {
            readonly: true,
            never: NEVER_FOR_SUBAGENTS.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        // M6: autoApprove MCP tools are registered as `read`; the others are `net`.
        assert!(scope
            .permits(&spec("mcp__s__auto", Perm::Read, SourceKind::Mcp))
            .is_ok());
        assert!(scope
            .permits(&spec("mcp__s__other", Perm::Net, SourceKind::Mcp))
            .is_err());
        assert!(scope.permits(&spec("fetch", Perm::Net, SourceKind::Wasm)).is_ok());
        assert!(scope.permits(&spec("w", Perm::Write, SourceKind::Wasm)).is_err());
        assert!(scope.permits(&spec("sh", Perm::Shell, SourceKind::Command)).is_err());
        assert!(scope.permits(&spec("task", Perm::Read, SourceKind::Builtin)).is_err());
        assert!(scope
            .permits(&spec("ask_user", Perm::Read, SourceKind::Builtin))
            .is_err());
    }

    #[test]
    fn index_marks_readonly_roles() {
        let idx = RoleSet::default().index();
        assert!(idx.text.contains("- explore: (read-only) "), "{}", idx.text);
        assert!(idx.text.contains("- general: General-purpose"), "{}", idx.text);
    }
}
