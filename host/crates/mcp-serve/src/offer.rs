//! What the server offers: the registry's tools the policy serves, as MCP tools, and the watch
//! on the plugin folders that reloads them when a plugin is installed or removed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use tokio::sync::watch;

use crate::gate::ServePolicy;
use cst_core::hooks::{HookGate, HookSettings, SessionHooks};
use cst_extensions::discovery::{self, LoadOptions, Loaded};
use cst_registry::{Perm, PermissionGate, Registry, ToolSpec};

/// The loaded extensions and what follows them; shared by every client of one server.
pub struct Offer {
    pub registry: Arc<Registry>,
    pub policy: ServePolicy,
    /// The registry's gate for every call: the policy, then the deployment's `before_tool` /
    /// `before_write` hooks when it has any.
    pub gate: Arc<dyn PermissionGate>,
    /// The deployment's hooks (D14), for `after_tool` / `after_write`.
    pub hooks: Option<Arc<SessionHooks>>,
    pub workspace: PathBuf,
    pub page_size: usize,
    opts: LoadOptions,
    loaded: Mutex<Loaded>,
    /// Bumped whenever the offered list changed; each client's notifier waits on it.
    changed: watch::Sender<u64>,
}

impl Offer {
    pub fn new(opts: LoadOptions, loaded: Loaded, policy: ServePolicy, hooks: HookSettings, page_size: usize) -> Self {
        let hooks = (!hooks.is_empty()).then(|| {
            let run_id = format!("mcp-serve-{}", std::process::id());
            Arc::new(SessionHooks::outside_session(hooks, &run_id, opts.workspace.clone()))
        });
        let policy_gate: Arc<dyn PermissionGate> = Arc::new(policy.clone());
        let gate = match &hooks {
            Some(h) => Arc::new(HookGate::new(policy_gate, h.clone())),
            None => policy_gate,
        };
        Self {
            registry: loaded.registry.clone(),
            policy,
            gate,
            hooks,
            workspace: opts.workspace.clone(),
            page_size: page_size.max(1),
            opts,
            loaded: Mutex::new(loaded),
            changed: watch::channel(0).0,
        }
    }

    /// The offered tools, sorted by name (a deterministic order, as 2026-07-28 asks).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.registry
            .specs()
            .into_iter()
            .filter(|s| self.policy.offers(s).is_ok())
            .collect()
    }

    /// The skills index (`- name: description` lines) the `skill` tool's description carries: an
    /// MCP client has no system prompt of ours to find the names in.
    pub fn skill_index(&self) -> String {
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .skill_index
            .text
            .clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The folders whose plugins are loaded: the config dir's, and the workspace's when trusted.
    fn plugin_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Ok(c) = cst_config::config_dir::config_dir() {
            dirs.push(c.join("plugins"));
        }
        let trusted = self.loaded.lock().unwrap_or_else(|e| e.into_inner()).trusted;
        if trusted {
            dirs.push(self.workspace.join(".agent/plugins"));
        }
        dirs
    }

    /// Reload the plugins; tells the clients when the offered list is not what it was.
    pub fn reload(&self) {
        let before = signature(&self.specs());
        let report = {
            let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            discovery::reload_plugins(&mut loaded, &self.opts)
        };
        for w in &report.warnings {
            tracing::warn!("{w}");
        }
        if signature(&self.specs()) != before {
            tracing::info!("the offered tools changed ({}); telling the clients", report.describe());
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// Poll the plugin folders every `every` and reload when one changed. A poll reads only the
    /// folders' listings and each `plugin.json`'s size and time: cheap enough for once a second.
    pub async fn watch_plugins(self: Arc<Self>, every: Duration) {
        let mut seen = fingerprint(&self.plugin_dirs());
        loop {
            tokio::time::sleep(every).await;
            let now = fingerprint(&self.plugin_dirs());
            if now != seen {
                seen = now;
                let me = self.clone();
                // Loading compiles components: off the async threads.
                let _ = tokio::task::spawn_blocking(move || me.reload()).await;
            }
        }
    }
}

/// What a client sees of the list: names, descriptions, schemas and categories.
fn signature(specs: &[ToolSpec]) -> Vec<(String, String, String, Perm)> {
    specs
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.description.clone(),
                s.input_schema.to_string(),
                s.perm,
            )
        })
        .collect()
}

type Stamp = (PathBuf, Option<SystemTime>, u64);

/// Each plugin folder's entries with their `plugin.json`'s time and size, and the folder's own
/// time (an install that replaces files in place changes it).
fn fingerprint(dirs: &[PathBuf]) -> Vec<Stamp> {
    let mut out = Vec::new();
    for dir in dirs {
        out.push(stamp(dir));
        let Ok(rd) = std::fs::read_dir(dir) else { continue };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for e in entries {
            out.push(stamp(&e));
            out.push(stamp(&e.join("plugin.json")));
        }
    }
    out
}

fn stamp(p: &Path) -> Stamp {
    let meta = std::fs::metadata(p).ok();
    (
        p.to_path_buf(),
        meta.as_ref().and_then(|m| m.modified().ok()),
        meta.map_or(0, |m| m.len()),
    )
}

/// One registry tool as an MCP tool. The annotations come from the permission category; the
/// clients treat them as hints, the policy is what holds.
/// `skills`: the index the `skill` tool lists (empty for other tools).
pub fn to_tool(spec: &ToolSpec, skills: &str) -> Tool {
    let schema: JsonObject = match &spec.input_schema {
        Value::Object(m) => m.clone(),
        _ => JsonObject::new(),
    };
    let annotations = ToolAnnotations::new()
        .read_only(spec.perm == Perm::Read)
        .destructive(matches!(spec.perm, Perm::Write | Perm::Shell))
        .open_world(matches!(spec.perm, Perm::Net | Perm::Shell));
    let description = if skills.trim().is_empty() {
        spec.description.clone()
    } else {
        format!("{}\n\nSkills:\n{}", spec.description, skills.trim_end())
    };
    Tool::new(spec.name.clone(), description, Arc::new(schema)).annotate(annotations)
}
