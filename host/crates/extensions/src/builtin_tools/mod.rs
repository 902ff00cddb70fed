//! Built-in tools. Each is a [`ToolRunner`] registered with [`SourceKind::Builtin`] and a
//! permission category, and goes through the registry like every other tool.
//!
//! Profiles: `--tools minimal` registers read_file, write_file, edit_file, list, grep and
//! run_shell; `--tools default` adds ask_user and `task` (sub-agents, `subagents/task_tool.rs`),
//! and discovery adds `skill` and the extensions.
//!
//! File tools resolve paths against the workspace and refuse paths outside it (after resolving
//! symlinks) when the call's [`Confinement`] is `WorkspacePaths`: the gate gives that in every
//! approval mode but `full`, and the registry gives it to a call with no gate at all (the user's
//! own `tools call`). `run_shell` is a process: it gets `ProcessSandbox` (`shell.rs`).

mod fs;
mod shell;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use futures::future::BoxFuture;
use serde_json::{json, Value};

use cst_config::ToolsProfile;
use cst_protocol::Diagnostic;
use cst_registry::{
    Confinement, Failure, Invocation, Perm, Registry, ToolRunner, ToolSource, ToolSpec, DEFAULT_TIMEOUT,
};

/// Names of the built-ins in the `minimal` profile.
pub const MINIMAL: &[&str] = &["read_file", "write_file", "edit_file", "list", "grep", "run_shell"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ReadFile,
    WriteFile,
    EditFile,
    List,
    Grep,
    RunShell,
    AskUser,
}

struct Builtin(Kind);

impl ToolRunner for Builtin {
    fn run<'a>(&'a self, call: Invocation<'a>) -> BoxFuture<'a, Result<String, Failure>> {
        Box::pin(async move {
            match self.0 {
                Kind::RunShell => shell::run_shell(&call).await,
                Kind::AskUser => ask_user(&call).await,
                kind => {
                    let scope = Scope::of(&call);
                    let args = call.args.clone();
                    // Filesystem work can block (a FIFO, a slow disk): keep it off the async workers.
                    tokio::task::spawn_blocking(move || match kind {
                        Kind::ReadFile => fs::read_file(&scope, &args),
                        Kind::WriteFile => fs::write_file(&scope, &args),
                        Kind::EditFile => fs::edit_file(&scope, &args),
                        Kind::List => fs::list(&scope, &args),
                        Kind::Grep => fs::grep(&scope, &args),
                        Kind::RunShell | Kind::AskUser => Err(fail("unreachable")),
                    })
                    .await
                    .unwrap_or_else(|e| Err(fail(&format!("the tool crashed: {e}"))))
                }
            }
        })
    }
}

/// `ask_user`: the question goes to the session's front end and the answer comes back as the
/// result. Headless runs have no one to ask: the model is told to decide itself.
async fn ask_user(call: &Invocation<'_>) -> Result<String, Failure> {
    let Some(questions) = call.ctx.questions.clone() else {
        return Err(fail(
            "no person can answer questions in this session (headless run); \
             decide yourself, or put the question in your final answer",
        ));
    };
    let question = call.args.get("question").and_then(Value::as_str).unwrap_or_default();
    questions
        .ask(question)
        .await
        .map_err(|e| fail(&format!("no answer: {e}")))
}

pub(crate) fn fail(message: &str) -> Failure {
    Failure::Failed {
        message: message.to_string(),
        exit_code: None,
    }
}

/// Where a file tool may look.
pub(crate) struct Scope {
    workspace: PathBuf,
    confined: bool,
}

/// A folder handle and a path beneath it: file tools open through handles, never by a full name
/// checked earlier, so a symlink swapped into the path between the check and the open cannot
/// redirect them (cap-std: `openat2(RESOLVE_BENEATH)` on Linux, a checked walk elsewhere).
pub(crate) struct Beneath {
    pub dir: Dir,
    /// Relative to `dir`; `.` for `dir` itself.
    pub rel: PathBuf,
    /// The full path, for messages.
    pub full: PathBuf,
}

impl Scope {
    fn of(call: &Invocation<'_>) -> Self {
        let workspace = std::fs::canonicalize(&call.ctx.workspace).unwrap_or_else(|_| call.ctx.workspace.clone());
        let confined = match call.confinement {
            Confinement::WorkspacePaths => true,
            Confinement::None => false,
            // Never what the approval table gives a file tool; a gate that asks for the process
            // sandbox wants writes kept in the workspace, and checking paths is how we do that.
            Confinement::ProcessSandbox => true,
        };
        Self { workspace, confined }
    }

    /// Resolve `path` (relative to the workspace) and check it stays inside when confined.
    /// Works for paths that do not exist yet (write_file). The check gives good messages; what
    /// keeps a confined tool inside is that it then opens through [`Scope::beneath`].
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, Failure> {
        if path.is_empty() {
            return Err(fail("`path` is empty"));
        }
        let joined = self.workspace.join(path);
        if !self.confined {
            return Ok(joined);
        }
        // Canonicalize the longest existing prefix; the rest must be plain names.
        let mut existing = joined.as_path();
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
        let canon = loop {
            match std::fs::canonicalize(existing) {
                Ok(c) => break c,
                Err(_) => match (existing.parent(), existing.file_name()) {
                    (Some(parent), Some(name)) => {
                        rest.push(name);
                        existing = parent;
                    }
                    _ => return Err(fail(&format!("cannot resolve `{path}`"))),
                },
            }
        };
        if Path::new(path).components().any(|c| c == Component::ParentDir) && !rest.is_empty() {
            // `..` after a missing directory cannot be resolved safely.
            return Err(fail(&format!(
                "`{path}`: `..` through a missing directory is not allowed"
            )));
        }
        let mut full = canon;
        for name in rest.iter().rev() {
            full.push(name);
        }
        if !full.starts_with(&self.workspace) {
            return Err(fail(&format!(
                "`{path}` is outside the workspace {} (after resolving symlinks); file tools stay in the \
                 workspace unless the approval mode is `full`",
                // Windows: `C:\…` as the user knows it, not canonicalize's `\\?\C:\…`.
                dunce::simplified(&self.workspace).display()
            )));
        }
        // A dangling symlink would be followed by a write to wherever it points.
        if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(fail(&format!("`{path}` is a symlink that points nowhere; refused")));
        }
        Ok(full)
    }

    /// `path` as a handle and a path beneath it. Confined: the workspace's handle, and every
    /// later open stays beneath it (symlinks are followed only while they stay inside). Not
    /// confined (`full`): the ambient filesystem, the path's folder as the handle.
    pub(crate) fn beneath(&self, path: &str, create_parents: bool) -> Result<Beneath, Failure> {
        let full = self.resolve(path)?;
        if self.confined {
            let rel = full
                .strip_prefix(&self.workspace)
                .map_err(|_| fail(&format!("`{path}` is outside the workspace")))?;
            let rel = if rel.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                rel.to_path_buf()
            };
            let dir = Dir::open_ambient_dir(&self.workspace, ambient_authority())
                .map_err(|e| fail(&format!("cannot open the workspace {}: {e}", self.workspace.display())))?;
            return Ok(Beneath { dir, rel, full });
        }
        // Not confined: any target is allowed, so resolve symlinks first, then split.
        if create_parents {
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| fail(&format!("cannot create the folder of `{path}`: {e}")))?;
            }
        }
        let real = std::fs::canonicalize(&full)
            .or_else(|_| match (full.parent(), full.file_name()) {
                (Some(p), Some(n)) => std::fs::canonicalize(p).map(|p| p.join(n)),
                _ => Ok(full.clone()),
            })
            .unwrap_or_else(|_| full.clone());
        let (parent, rel) = match (real.parent(), real.file_name()) {
            (Some(p), Some(n)) => (p.to_path_buf(), PathBuf::from(n)),
            _ => (real.clone(), PathBuf::from(".")),
        };
        let dir = Dir::open_ambient_dir(&parent, ambient_authority())
            .map_err(|e| fail(&format!("cannot open `{path}`: {e}")))?;
        Ok(Beneath { dir, rel, full })
    }

    /// How a path is shown back to the model: relative to the workspace when inside it.
    pub(crate) fn show(&self, p: &Path) -> String {
        p.strip_prefix(&self.workspace).unwrap_or(p).display().to_string()
    }
}

fn spec(name: &str, description: &str, perm: Perm, schema: Value, timeout: Duration) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
        perm,
        source: ToolSource::builtin(),
        timeout,
        confine_with: Confinement::None,
    }
}

/// [`spec`] for a file tool: confining it checks its paths.
fn file_spec(name: &str, description: &str, perm: Perm, schema: Value, timeout: Duration) -> ToolSpec {
    ToolSpec {
        confine_with: Confinement::WorkspacePaths,
        ..spec(name, description, perm, schema, timeout)
    }
}

/// [`spec`] for a tool that runs a process: confining it is the Landlock write sandbox.
fn process_spec(name: &str, description: &str, perm: Perm, schema: Value, timeout: Duration) -> ToolSpec {
    ToolSpec {
        confine_with: Confinement::ProcessSandbox,
        ..spec(name, description, perm, schema, timeout)
    }
}

/// Every built-in as (spec, kind), in registration order.
fn all() -> Vec<(ToolSpec, Kind)> {
    let path = json!({"type": "string", "description": "File path, relative to the workspace root"});
    vec![
        (
            file_spec(
                "read_file",
                "Read a text file. Optional `offset` (first line, 1-based) and `limit` (number of lines).",
                Perm::Read,
                json!({"type": "object", "properties": {
                    "path": path, "offset": {"type": "integer", "minimum": 1}, "limit": {"type": "integer", "minimum": 1}
                }, "required": ["path"], "additionalProperties": false}),
                DEFAULT_TIMEOUT,
            ),
            Kind::ReadFile,
        ),
        (
            file_spec(
                "write_file",
                "Create or overwrite a file with `content` (parent folders are created).",
                Perm::Write,
                json!({"type": "object", "properties": {"path": path, "content": {"type": "string"}},
                       "required": ["path", "content"], "additionalProperties": false}),
                DEFAULT_TIMEOUT,
            ),
            Kind::WriteFile,
        ),
        (
            file_spec(
                "edit_file",
                "Replace `old_text` with `new_text` in a file. `old_text` must occur exactly once; include \
                 enough surrounding lines to make it unique.",
                Perm::Write,
                json!({"type": "object", "properties": {
                    "path": path, "old_text": {"type": "string", "minLength": 1}, "new_text": {"type": "string"}
                }, "required": ["path", "old_text", "new_text"], "additionalProperties": false}),
                DEFAULT_TIMEOUT,
            ),
            Kind::EditFile,
        ),
        (
            file_spec(
                "list",
                "List files matching a glob (default `**/*`) under `path` (default the workspace root). \
                 Folders end with `/`; `.git` is skipped.",
                Perm::Read,
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"}, "path": {"type": "string"}
                }, "additionalProperties": false}),
                DEFAULT_TIMEOUT,
            ),
            Kind::List,
        ),
        (
            file_spec(
                "grep",
                "Search files for a regular expression; prints `path:line:text`. Optional `path` (file or \
                 folder) and `glob` filter on file paths.",
                Perm::Read,
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"}
                }, "required": ["pattern"], "additionalProperties": false}),
                DEFAULT_TIMEOUT,
            ),
            Kind::Grep,
        ),
        (
            process_spec(
                "run_shell",
                "Run a shell command (`sh -c`) in the workspace root; prints stdout and stderr. A non-zero exit \
                 is a failure. `timeout_secs` defaults to 120 (at most 600).",
                Perm::Shell,
                json!({"type": "object", "properties": {
                    "command": {"type": "string", "minLength": 1},
                    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": cst_registry::MAX_TIMEOUT_SECS}
                }, "required": ["command"], "additionalProperties": false}),
                Duration::from_secs(cst_registry::MAX_TIMEOUT_SECS),
            ),
            Kind::RunShell,
        ),
        (
            spec(
                "ask_user",
                "Ask the person a question and wait for the answer. Only when a person is present (not in headless runs).",
                Perm::Read,
                json!({"type": "object", "properties": {"question": {"type": "string"}},
                       "required": ["question"], "additionalProperties": false}),
                // A person may take a while; the longest limit any tool gets.
                Duration::from_secs(cst_registry::MAX_TIMEOUT_SECS),
            ),
            Kind::AskUser,
        ),
    ]
}

/// Register the built-ins of `profile` (called first by `discovery::load`, so built-ins win a
/// name clash with an extension).
pub fn register_builtins(registry: &Registry, profile: ToolsProfile, warnings: &mut Vec<Diagnostic>) {
    for (spec, kind) in all() {
        if profile == ToolsProfile::Minimal && !MINIMAL.contains(&spec.name.as_str()) {
            continue;
        }
        // Native processes are POSIX-only (P12): off POSIX a shell tool could only ever fail, so
        // the model is not offered one.
        if kind == Kind::RunShell && !cfg!(unix) {
            continue;
        }
        if let Err(clash) = registry.register(spec, Arc::new(Builtin(kind))) {
            warnings.push(clash.into());
        }
    }
    if profile == ToolsProfile::Default {
        crate::subagents::task_tool::register(registry, warnings);
    }
}
