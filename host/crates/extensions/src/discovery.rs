//! Discovery: find every extension (E1–E7, T1–T3) and build the registry a session uses.
//!
//! | where | what | when |
//! |---|---|---|
//! | `<ws>/.agent/skills/*/SKILL.md`, `<ws>/.agents/skills/*/SKILL.md`, `<ws>/.claude/skills/*/SKILL.md` | skills | always |
//! | `<config>/skills/*/SKILL.md` | skills | always |
//! | `<ws>/.agent/plugins/*/plugin.json` | plugins | only when the workspace is trusted |
//! | `<config>/plugins/*/plugin.json` | plugins | always |
//! | `<ws>/.agent/mcp.json` | MCP servers | only when the workspace is trusted |
//! | `<config>/mcp.json` | MCP servers | always |
//! | a plugin's `skills` folder and `mcpServers` | skills, MCP servers | with the plugin |
//! | `<ws>/.agent/agents/*.md`, `<ws>/.claude/agents/*.md`, `<config>/agents/*.md` | sub-agent roles | always |
//!
//! `--tools minimal` loads none of them. On a name clash the first wins — workspace, then config
//! dir, then plugins — and the loser is a [`Diagnostic`] naming both files; nothing is renamed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::plugins::{self, LoadedPlugin, PluginManifest, PluginPlace};
use crate::skills::{self, SharedSkills, Skill, SkillIndex};
use cst_config::settings::SettingsError;
use cst_config::trust::TrustState;
use cst_protocol::{Diagnostic, DiagnosticKind};
use cst_registry::{Registry, SourceKind};

/// Discovery's vocabulary, defined below it in the config layer.
pub use cst_config::{sorted_subdirs, McpSource, Origin, ToolsProfile};

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub workspace: PathBuf,
    pub profile: ToolsProfile,
}

/// What a session loaded.
pub struct Loaded {
    pub registry: Arc<Registry>,
    pub plugins: Vec<LoadedPlugin>,
    pub skills: Vec<crate::skills::Skill>,
    /// mcp.json files and plugins' `mcpServers`, in precedence order (E5, E7); the MCP layer
    /// parses and starts them. A server name that appears in an earlier source wins (a warning
    /// names both files).
    pub mcp_sources: Vec<McpSource>,
    /// Problems that did not stop loading (broken files, clashes), each naming its file.
    pub warnings: Vec<Diagnostic>,
    /// The same skills, shared with the `skill` tool so a reload updates it in place.
    pub shared_skills: SharedSkills,
    /// The index for the system prompt (S3).
    pub skill_index: SkillIndex,
    /// Sub-agent roles (E6, A1): role files plus the built-ins; empty with `--tools minimal`
    /// (no `task` tool).
    pub roles: Arc<crate::subagents::RoleSet>,
    /// Whether the workspace is trusted (T2).
    pub trusted: bool,
    /// T1: set when the workspace is untrusted and has `.agent/plugins` or `.agent/mcp.json`.
    pub untrusted_hint: Option<String>,
    /// Content fingerprints by `plugin:NAME` / `skill:NAME`, to report what a reload changed.
    fingerprints: BTreeMap<String, String>,
}

/// The T1 hint, exactly.
pub const UNTRUSTED_HINT: &str = "untrusted workspace: /plugins trust";

/// Load everything for a session.
pub fn load(opts: &LoadOptions) -> Loaded {
    let mut loaded = Loaded {
        registry: Arc::new(Registry::new()),
        plugins: Vec::new(),
        skills: Vec::new(),
        mcp_sources: Vec::new(),
        warnings: Vec::new(),
        shared_skills: Arc::new(RwLock::new(Vec::new())),
        skill_index: SkillIndex::default(),
        roles: Arc::new(crate::subagents::RoleSet::from_roles(Vec::new())),
        trusted: false,
        untrusted_hint: None,
        fingerprints: BTreeMap::new(),
    };
    crate::builtin_tools::register_builtins(&loaded.registry, opts.profile, &mut loaded.warnings);
    if opts.profile == ToolsProfile::Minimal {
        return loaded;
    }
    let mut warnings = Vec::new();
    load_plugins_into(&mut loaded, opts, &mut warnings);
    load_skills_into(&mut loaded, opts, &mut warnings);
    load_roles_into(&mut loaded, opts, &mut warnings);
    loaded.warnings.extend(warnings);
    loaded
}

/// Sub-agent roles (E6, A1); text, so not subject to trust (T3).
fn load_roles_into(loaded: &mut Loaded, opts: &LoadOptions, warnings: &mut Vec<Diagnostic>) {
    let config = config_dir(&mut Vec::new()); // already reported by the plugin loader
    let dirs = crate::subagents::role_dirs(&opts.workspace, config.as_deref());
    // Claude Code plugins' `agents/` folders (issue 14 item 9).
    let plugin_dirs: Vec<(String, PathBuf)> = loaded
        .plugins
        .iter()
        .filter_map(|p| {
            let dir = p.manifest.claude.as_ref()?.agents.clone()?;
            inside_plugin(p, &dir, warnings).then(|| (p.name.clone(), dir))
        })
        .collect();
    let roles = crate::subagents::load_roles_with_plugins(&dirs, &plugin_dirs, warnings);
    for name in roles.index().left_out {
        let message = format!(
            "sub-agent role `{name}` left out of the role index: the index is limited to {} bytes; \
             `task` can still run it by name",
            skills::MAX_INDEX_BYTES
        );
        // Built-in roles have no file.
        warnings.push(match roles.get(&name).and_then(|r| r.file.clone()) {
            Some(file) => Diagnostic::in_file(DiagnosticKind::LeftOutOfIndex, file, message),
            None => Diagnostic::new(DiagnosticKind::LeftOutOfIndex, message),
        });
    }
    loaded.roles = Arc::new(roles);
}

fn config_dir(warnings: &mut Vec<Diagnostic>) -> Option<PathBuf> {
    match cst_config::config_dir::config_dir() {
        Ok(d) => Some(d),
        Err(e) => {
            warnings.push(Diagnostic::new(DiagnosticKind::Config, format!("config dir: {e}")));
            None
        }
    }
}

/// Whether the workspace is trusted (T2). A settings file that cannot be read is reported and
/// the workspace counts as untrusted (fail closed); so does a workspace whose host config
/// changed since it was trusted (issue 13 item 5), with a warning saying to trust it again.
fn read_trust(ws: &Path, warnings: &mut Vec<Diagnostic>) -> bool {
    match cst_config::trust::state(ws) {
        Ok(TrustState::Trusted) => true,
        Ok(TrustState::Untrusted) => false,
        Ok(TrustState::Changed { why }) => {
            warnings.push(Diagnostic::in_file(
                DiagnosticKind::Config,
                ws.join(".agent"),
                format!(
                    "the workspace needs trust again: {why}; its plugins and MCP servers are not \
                     loaded until you trust it again (`cst-agent plugins trust`, /plugins trust)"
                ),
            ));
            false
        }
        Err(e) => {
            warnings.push(settings_diagnostic(&e, "workspace treated as untrusted"));
            false
        }
    }
}

/// A [`SettingsError`] as a diagnostic about its file, with what the loader did about it. Its
/// message already starts with the path when it has one; the text people read stays the same.
fn settings_diagnostic(e: &SettingsError, consequence: &str) -> Diagnostic {
    let prefix = format!("{}: ", e.path.display());
    match e.message.strip_prefix(&prefix) {
        Some(rest) => Diagnostic::in_file(DiagnosticKind::Config, &e.path, format!("{rest} ({consequence})")),
        None => Diagnostic::new(DiagnosticKind::Config, format!("{} ({consequence})", e.message)),
    }
}

/// Trust, plugins (their tools) and MCP sources.
fn load_plugins_into(loaded: &mut Loaded, opts: &LoadOptions, warnings: &mut Vec<Diagnostic>) {
    let ws = &opts.workspace;
    loaded.trusted = read_trust(ws, warnings);
    let agent = ws.join(".agent");
    let has_ws_extensions = agent.join("plugins").is_dir() || agent.join("mcp.json").is_file();
    loaded.untrusted_hint = (!loaded.trusted && has_ws_extensions).then(|| UNTRUSTED_HINT.to_string());

    let config = config_dir(warnings);
    // E4: the workspace's plugins only when trusted, and first (E7).
    let mut plugin_roots = Vec::new();
    if loaded.trusted {
        plugin_roots.push((agent.join("plugins"), PluginPlace::Workspace(ws)));
    }
    if let Some(c) = &config {
        // T1: an untrusted workspace is no place to run the user's command tools in.
        plugin_roots.push((
            c.join("plugins"),
            PluginPlace::Installed {
                contained: !loaded.trusted,
            },
        ));
    }
    let mut by_name: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (root, place) in plugin_roots {
        for plugin_dir in sorted_subdirs(&root) {
            // Ours, or a Claude Code / Codex plugin (issue 14 item 9).
            let Some(file) = crate::plugin_manifest::manifest_file(&plugin_dir) else {
                continue;
            };
            if let PluginPlace::Workspace(ws) = place {
                if let Err(e) = inside_workspace(ws, &plugin_dir, &file) {
                    warnings.push(Diagnostic::in_file(DiagnosticKind::BrokenFile, &file, e));
                    continue;
                }
            }
            // Read the name first so a clashing plugin registers nothing (E7).
            let manifest = match PluginManifest::load_dir(&plugin_dir) {
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    warnings.push(e.into());
                    continue;
                }
                None => continue,
            };
            if let Some(hooks) = manifest.claude.as_ref().and_then(|c| c.hooks.as_ref()) {
                warnings.push(Diagnostic::in_file(
                    DiagnosticKind::Other,
                    hooks,
                    "plugin hooks are not loaded: hooks come from the deployment config",
                ));
            }
            if let Some(first) = by_name.get(&manifest.name) {
                warnings.push(name_clash("plugin", &manifest.name, &file, first));
                continue;
            }
            match plugins::load_plugin(&plugin_dir, manifest, place, &loaded.registry, warnings) {
                Ok(p) => {
                    by_name.insert(p.name.clone(), p.file.clone());
                    loaded
                        .fingerprints
                        .insert(format!("plugin:{}", p.name), plugin_fingerprint(&p));
                    loaded.plugins.push(p);
                }
                Err(e) => warnings.push(e.into()),
            }
        }
    }

    collect_mcp_sources(loaded, opts, config.as_deref(), warnings);
}

/// A workspace plugin (the workspace is hostile) is read only from inside the workspace: its
/// folder's real path must be inside the workspace's, and its plugin.json inside the folder.
fn inside_workspace(ws: &Path, plugin_dir: &Path, file: &Path) -> Result<(), String> {
    let real = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let (real_ws, real_dir, real_file) = (real(ws)?, real(plugin_dir)?, real(file)?);
    if !real_dir.starts_with(&real_ws) {
        return Err(format!(
            "the plugin folder leads outside the workspace (to {}); not loaded",
            real_dir.display()
        ));
    }
    if !real_file.starts_with(&real_dir) {
        return Err(format!(
            "leads outside the plugin folder (to {}); not loaded",
            real_file.display()
        ));
    }
    Ok(())
}

/// Whether a part of a plugin (`agents/`, `commands/`) is inside the plugin folder, symlinks
/// resolved; a part leading outside is a warning and is not read.
fn inside_plugin(p: &LoadedPlugin, part: &Path, warnings: &mut Vec<Diagnostic>) -> bool {
    match (std::fs::canonicalize(part), std::fs::canonicalize(&p.dir)) {
        (Ok(real), Ok(root)) if real.starts_with(&root) => true,
        _ => {
            warnings.push(Diagnostic::in_file(
                DiagnosticKind::BrokenFile,
                part,
                "leads outside the plugin folder; not loaded",
            ));
            false
        }
    }
}

/// A workspace plugin's `skills` folder: a relative path inside the plugin folder (no `..`, no
/// symlink out of it).
fn workspace_skills_dir(p: &LoadedPlugin, sub: &str) -> Result<PathBuf, String> {
    let rel = Path::new(sub);
    let refused =
        || format!("`skills` must be a folder inside the plugin folder, not `{sub}`; its skills are not loaded");
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(refused());
    }
    let dir = p.dir.join(rel);
    if let (Ok(real), Ok(real_plugin)) = (std::fs::canonicalize(&dir), std::fs::canonicalize(&p.dir)) {
        if !real.starts_with(&real_plugin) {
            return Err(refused());
        }
    }
    Ok(dir)
}

/// MCP sources in precedence order (E5, E7): the workspace's `mcp.json` when trusted, the config
/// dir's, then the plugins' `mcpServers`. While the workspace is untrusted the config dir's and
/// the plugins' sources are `contained` (T1): their servers run in their own folder (relative
/// `cwd`s too) with `PYTHONSAFEPATH=1`.
fn collect_mcp_sources(loaded: &mut Loaded, opts: &LoadOptions, config: Option<&Path>, warnings: &mut Vec<Diagnostic>) {
    let ws = &opts.workspace;
    let agent = ws.join(".agent");
    let mut sources = Vec::new();
    if loaded.trusted {
        push_mcp_json(
            &agent.join("mcp.json"),
            Origin::Workspace,
            ws,
            ws,
            &mut sources,
            warnings,
        );
    }
    if let Some(c) = &config {
        // T1: until the workspace is trusted, the user's own servers run in the config dir, not
        // in the workspace (`python3 -m pkg` would run the workspace's `pkg.py`).
        let base = if loaded.trusted {
            ws.to_path_buf()
        } else {
            c.to_path_buf()
        };
        let before = sources.len();
        push_mcp_json(
            &c.join("mcp.json"),
            Origin::ConfigDir,
            &base,
            ws,
            &mut sources,
            warnings,
        );
        for s in &mut sources[before..] {
            s.contained = !loaded.trusted;
        }
    }
    for p in &loaded.plugins {
        if let Some(servers) = &p.manifest.mcp_servers {
            // P1
            if !servers.is_object() {
                warnings.push(Diagnostic::in_file(
                    DiagnosticKind::BrokenFile,
                    &p.file,
                    "`mcpServers` must be an object",
                ));
                continue;
            }
            sources.push(McpSource {
                file: p.file.clone(),
                servers: servers.clone(),
                // M4: a relative `cwd` is the workspace's; only the default is the plugin folder.
                // T1: the plugin folder's while the workspace is untrusted.
                cwd_base: if loaded.trusted {
                    ws.to_path_buf()
                } else {
                    p.dir.clone()
                },
                default_cwd: p.dir.clone(),
                workspace: ws.to_path_buf(),
                contained: !loaded.trusted,
                origin: Origin::Plugin(p.name.clone()),
            });
        }
    }
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for s in &sources {
        for name in server_names(s) {
            match seen.get(&name) {
                Some(first) => warnings.push(name_clash("MCP server", &name, &s.file, first)),
                None => {
                    seen.insert(name, s.file.clone());
                }
            }
        }
    }
    loaded.mcp_sources = sources;
}

/// `/mcp reload` (E8): read the `mcp.json` files again (and trust, for the workspace's); the
/// plugins stay as they are. Returns the problems found.
pub fn reload_mcp_sources(loaded: &mut Loaded, opts: &LoadOptions) -> Vec<Diagnostic> {
    let mut warnings = Vec::new();
    if opts.profile == ToolsProfile::Minimal {
        return warnings;
    }
    loaded.trusted = read_trust(&opts.workspace, &mut warnings);
    let config = config_dir(&mut warnings);
    collect_mcp_sources(loaded, opts, config.as_deref(), &mut warnings);
    warnings
}

fn push_mcp_json(
    file: &Path,
    origin: Origin,
    ws: &Path,
    ws_root: &Path,
    out: &mut Vec<McpSource>,
    warnings: &mut Vec<Diagnostic>,
) {
    match crate::mcp::read_mcp_json(file, origin, ws) {
        Ok(Some(mut source)) => {
            source.workspace = ws_root.to_path_buf();
            out.push(source)
        }
        Ok(None) => {}
        Err(e) => warnings.push(e),
    }
}

/// E7: `what` `name` from `loser` is not loaded because the one in `winner` came first.
fn name_clash(what: &str, name: &str, loser: &Path, winner: &Path) -> Diagnostic {
    Diagnostic::in_file(
        DiagnosticKind::NameClash,
        loser,
        format!(
            "{what} `{name}` clashes with the {what} of the same name in {}; the first one is kept",
            winner.display()
        ),
    )
}

/// The server names of one source (the keys of its `mcpServers` object).
pub fn server_names(source: &McpSource) -> Vec<String> {
    source
        .servers
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Skills (E3, T3: trust does not matter), plugin skills after them, the `skill` tool, the index.
fn load_skills_into(loaded: &mut Loaded, opts: &LoadOptions, warnings: &mut Vec<Diagnostic>) {
    let ws = &opts.workspace;
    // `.agents/skills` is where Codex and `npx skills` install a project's skills.
    let mut roots = vec![
        ws.join(".agent").join("skills"),
        ws.join(".agents").join("skills"),
        ws.join(".claude").join("skills"),
    ];
    if let Some(c) = config_dir(warnings) {
        roots.push(c.join("skills"));
    }
    for p in &loaded.plugins {
        if let Some(sub) = &p.manifest.skills {
            if !p.from_workspace {
                roots.push(p.dir.join(sub));
                continue;
            }
            match workspace_skills_dir(p, sub) {
                Ok(dir) => roots.push(dir),
                Err(e) => warnings.push(Diagnostic::in_file(DiagnosticKind::BrokenFile, &p.file, e)),
            }
        }
    }
    let mut found: Vec<Vec<Skill>> = roots.iter().map(|r| skills::load_dir(r, warnings)).collect();
    // Claude Code plugins' slash commands, after every skill.
    for p in &loaded.plugins {
        if let Some(dir) = p.manifest.claude.as_ref().and_then(|c| c.commands.as_ref()) {
            if inside_plugin(p, dir, warnings) {
                found.push(skills::load_commands(dir, warnings));
            }
        }
    }
    let mut list: Vec<Skill> = Vec::new();
    for batch in found {
        for s in batch {
            if let Some(first) = list.iter().find(|k| k.name == s.name) {
                warnings.push(name_clash("skill", &s.name, &s.file, &first.file));
                continue;
            }
            list.push(s);
        }
    }
    loaded.fingerprints.retain(|k, _| !k.starts_with("skill:"));
    for s in &list {
        loaded
            .fingerprints
            .insert(format!("skill:{}", s.name), skill_fingerprint(s));
    }
    let index = skills::render_index(&list);
    // S3
    for name in &index.left_out {
        if let Some(s) = list.iter().find(|s| &s.name == name) {
            warnings.push(Diagnostic::in_file(
                DiagnosticKind::LeftOutOfIndex,
                &s.file,
                format!(
                    "skill `{name}` left out of the skills index: the index is limited to {} bytes; it can \
                     still be loaded with skill(name)",
                    skills::MAX_INDEX_BYTES
                ),
            ));
        }
    }
    *loaded.shared_skills.write().unwrap_or_else(|e| e.into_inner()) = list.clone();
    if !list.is_empty() {
        skills::register_skill_tool(&loaded.registry, &loaded.shared_skills, warnings);
    }
    loaded.skills = list;
    loaded.skill_index = index;
}

fn hash(parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(&h.finalize()[..8])
}

fn file_stamp(p: &Path) -> Vec<u8> {
    match std::fs::metadata(p) {
        Ok(m) => format!("{}:{:?}", m.len(), m.modified().ok()).into_bytes(),
        Err(_) => Vec::new(),
    }
}

fn plugin_fingerprint(p: &LoadedPlugin) -> String {
    let manifest = std::fs::read(&p.file).unwrap_or_default();
    let wasm = p
        .manifest
        .wasm
        .as_ref()
        .map(|w| file_stamp(&p.dir.join(w)))
        .unwrap_or_default();
    hash(&[
        p.file.as_os_str().as_encoded_bytes(),
        &manifest,
        &wasm,
        p.tools.join(",").as_bytes(),
    ])
}

fn skill_fingerprint(s: &Skill) -> String {
    let text = std::fs::read(&s.file).unwrap_or_default();
    hash(&[s.file.as_os_str().as_encoded_bytes(), &text])
}

/// What a reload changed (E8), by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    pub warnings: Vec<Diagnostic>,
}

impl ReloadReport {
    /// `added a, b · removed c · changed d`, or `no changes`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (label, list) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("changed", &self.changed),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label} {}", list.join(", ")));
            }
        }
        if parts.is_empty() {
            "no changes".into()
        } else {
            parts.join(" · ")
        }
    }
}

fn diff(kind: &str, before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> ReloadReport {
    let prefix = format!("{kind}:");
    let pick = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter()
            .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|n| (n.to_string(), v.clone())))
            .collect()
    };
    let (b, a) = (pick(before), pick(after));
    let names: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
    let mut r = ReloadReport::default();
    for n in names {
        match (b.get(n), a.get(n)) {
            (None, Some(_)) => r.added.push(n.clone()),
            (Some(_), None) => r.removed.push(n.clone()),
            (Some(x), Some(y)) if x != y => r.changed.push(n.clone()),
            _ => {}
        }
    }
    r
}

/// `/skills reload` (E8): re-read every skill folder; the `skill` tool sees the new list at once.
pub fn reload_skills(loaded: &mut Loaded, opts: &LoadOptions) -> ReloadReport {
    if opts.profile == ToolsProfile::Minimal {
        return ReloadReport::default();
    }
    let before = loaded.fingerprints.clone();
    let mut warnings = Vec::new();
    load_skills_into(loaded, opts, &mut warnings);
    let mut r = diff("skill", &before, &loaded.fingerprints);
    r.warnings = warnings;
    r
}

/// `/plugins reload` (E8), also what `/plugins trust` calls to load at once (T2): the plugins'
/// tools are unregistered and loaded again, MCP sources and plugin skills are recomputed.
/// The report names plugins; skills that changed with them are reloaded silently.
pub fn reload_plugins(loaded: &mut Loaded, opts: &LoadOptions) -> ReloadReport {
    if opts.profile == ToolsProfile::Minimal {
        return ReloadReport::default();
    }
    let before = loaded.fingerprints.clone();
    loaded
        .registry
        .remove_where(|s| matches!(s.source.kind, SourceKind::Command | SourceKind::Wasm));
    loaded.plugins.clear();
    loaded.fingerprints.retain(|k, _| !k.starts_with("plugin:"));
    let mut warnings = Vec::new();
    load_plugins_into(loaded, opts, &mut warnings);
    load_skills_into(loaded, opts, &mut warnings);
    let mut r = diff("plugin", &before, &loaded.fingerprints);
    r.warnings = warnings;
    r
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// E9's summary line from counts: `2 skills · 1 plugin (3 tools) · 1 MCP server`.
pub fn format_summary(skills: usize, plugins: usize, plugin_tools: usize, mcp_servers: usize) -> String {
    format!(
        "{} · {} ({}) · {}",
        plural(skills, "skill", "skills"),
        plural(plugins, "plugin", "plugins"),
        plural(plugin_tools, "tool", "tools"),
        plural(mcp_servers, "MCP server", "MCP servers")
    )
}

/// How many distinct MCP servers the sources declare (by name; a clash counts once).
pub fn mcp_server_count(sources: &[McpSource]) -> usize {
    sources.iter().flat_map(server_names).collect::<BTreeSet<_>>().len()
}

/// E9's summary line for what a session loaded.
pub fn summary_line(loaded: &Loaded) -> String {
    format_summary(
        loaded.skills.len(),
        loaded.plugins.len(),
        loaded.plugins.iter().map(|p| p.tools.len()).sum(),
        mcp_server_count(&loaded.mcp_sources),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule id of `REQUIREMENTS.md` (E7, P2, …) as a word: never in text people read.
    fn rule_ids(text: &str) -> Vec<String> {
        let re = regex::Regex::new(r"\b[ESPMTADH][0-9]{1,2}\b").expect("valid regex");
        re.find_iter(text).map(|m| m.as_str().to_string()).collect()
    }

    /// Each kind of name clash: typed, about the file that lost, naming the one that won, and
    /// free of rule ids.
    #[test]
    fn name_clash_diagnostics_name_both_files_and_no_rule_ids() {
        let (loser, winner) = (
            Path::new("/cfg/plugins/b/plugin.json"),
            Path::new("/ws/.agent/plugins/a/plugin.json"),
        );
        let mut clashes = vec![
            name_clash("plugin", "jira", loser, winner),
            name_clash("skill", "pdf", loser, winner),
            name_clash("MCP server", "gh", loser, winner),
        ];

        // Sub-agent roles, from their loader.
        let dirs = tempfile::tempdir().expect("tempdir");
        let (first, second) = (dirs.path().join("ws"), dirs.path().join("cfg"));
        for d in [&first, &second] {
            std::fs::create_dir_all(d).expect("mkdir");
            std::fs::write(d.join("dup.md"), "---\ndescription: a role\n---\nbody\n").expect("write");
        }
        let mut warnings = Vec::new();
        crate::subagents::load_roles(&[first.clone(), second.clone()], &mut warnings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        clashes.extend(warnings);

        // Tools, from the registry's typed error.
        let registry = Registry::new();
        crate::builtin_tools::register_builtins(&registry, ToolsProfile::Minimal, &mut Vec::new());
        let mut spec = registry.spec("grep").expect("grep is a built-in");
        spec.source = cst_registry::ToolSource {
            kind: SourceKind::Command,
            owner: "b".into(),
            file: Some(loser.to_path_buf()),
        };
        let runner = Arc::new(crate::command_tools::CommandTool {
            argv: vec!["true".into()],
            plugin_dir: PathBuf::from("/cfg/plugins/b"),
            contained: false,
        });
        let clash = registry.register(spec, runner).expect_err("the name is taken");
        clashes.push(clash.into());

        // MCP servers, from the MCP config parser.
        let source = |file: &Path| McpSource {
            file: file.to_path_buf(),
            servers: serde_json::json!({"gh": {"command": "gh-mcp"}}),
            cwd_base: PathBuf::from("/ws"),
            default_cwd: PathBuf::from("/ws"),
            workspace: PathBuf::from("/ws"),
            contained: false,
            origin: Origin::ConfigDir,
        };
        let mut warnings = Vec::new();
        crate::mcp::parse_sources(&[source(winner), source(loser)], &|_| None, &mut warnings);
        clashes.extend(warnings);

        for d in &clashes {
            let text = d.to_string();
            assert_eq!(d.kind, DiagnosticKind::NameClash, "{text}");
            assert!(
                text.contains("clashes") && text.contains("the first one is kept"),
                "{text}"
            );
            assert!(rule_ids(&text).is_empty(), "rule ids {:?} in: {text}", rule_ids(&text));
            let role_file = second.join("dup.md");
            let (lost, won) = if d.file.as_deref() == Some(role_file.as_path()) {
                (role_file, first.join("dup.md"))
            } else {
                (loser.to_path_buf(), winner.to_path_buf())
            };
            assert_eq!(
                d.file.as_deref(),
                Some(lost.as_path()),
                "about the one that lost: {text}"
            );
            assert!(text.starts_with(&format!("{}: ", lost.display())), "{text}");
            if d.message.starts_with("tool ") {
                // A built-in has no file: the winner is named by its source.
                assert!(text.contains("from builtin builtin"), "{text}");
            } else {
                assert!(
                    d.message.contains(&won.display().to_string()),
                    "names the winner: {text}"
                );
            }
        }
        assert_eq!(
            clashes[0].to_string(),
            "/cfg/plugins/b/plugin.json: plugin `jira` clashes with the plugin of the same name in \
             /ws/.agent/plugins/a/plugin.json; the first one is kept"
        );
    }

    #[test]
    fn e9_summary_singular_and_plural() {
        assert_eq!(
            format_summary(2, 1, 3, 1),
            "2 skills · 1 plugin (3 tools) · 1 MCP server"
        );
        assert_eq!(
            format_summary(1, 0, 1, 0),
            "1 skill · 0 plugins (1 tool) · 0 MCP servers"
        );
        assert_eq!(
            format_summary(0, 2, 0, 3),
            "0 skills · 2 plugins (0 tools) · 3 MCP servers"
        );
    }
}
