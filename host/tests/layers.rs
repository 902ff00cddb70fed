//! The layering of docs/architecture.md, checked on the source: no crate depends on a crate of a
//! layer above it, and inside a crate no two top-level modules import each other (directly or
//! through others).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top.
const LAYERS: &[(&str, &str)] = &[
    ("cst-protocol", "crates/protocol"),
    ("cst-config", "crates/config"),
    ("cst-registry", "crates/registry"),
    ("cst-wasm", "crates/wasm"),
    ("cst-extensions", "crates/extensions"),
    ("cst-core", "crates/core"),
    ("cst-tui", "crates/tui"),
    // A front end beside the TUI: it may use protocol and config, nothing above (checked below).
    ("cst-admin", "crates/admin"),
    ("cst-mcp-serve", "crates/mcp-serve"),
    ("cst-agent", "."),
];

fn host() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `cst-*` crates named under `[dependencies]` (not dev-dependencies) of a Cargo.toml.
fn our_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]" || section.ends_with(".dependencies]") && !section.contains("dev-") {
            if let Some(name) = line.split([' ', '=']).next().filter(|n| n.starts_with("cst-")) {
                out.push(name.to_string());
            }
        }
    }
    out
}

#[test]
fn no_crate_depends_on_a_layer_above_it() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, (n, _))| (*n, i)).collect();
    for (i, (name, dir)) in LAYERS.iter().enumerate() {
        for dep in our_dependencies(&host().join(dir).join("Cargo.toml")) {
            let r = rank.get(dep.as_str()).copied();
            assert!(
                r.is_some_and(|r| r < i),
                "{name} depends on {dep}, which is not a layer below it"
            );
        }
    }
}

/// Top-level module of `file` under `src`, or `None` for the crate root.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib" && name != "main").then_some(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Module → the sibling modules it names as `crate::x` (or `super::x` from a file at the top).
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let path = regex::Regex::new(r"\b(crate|super)::(\{[^}]*\}|[a-z_][a-z0-9_]*)").unwrap();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let Some(m) = module_of(src, &f) else { continue };
        let top_level = f.parent() == Some(src);
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            let code = line.split("//").next().unwrap_or("");
            for c in path.captures_iter(code) {
                if &c[1] == "super" && !top_level {
                    continue; // a submodule's `super` is its own module
                }
                // `crate::{a::X, b}` names a and b; items (`crate::Event`) are not modules.
                let names = c[2].trim_matches(['{', '}']).to_string();
                for d in names.split(',').filter_map(|p| p.trim().split("::").next()) {
                    if d != m && d.starts_with(|ch: char| ch.is_ascii_lowercase()) && d != "self" {
                        graph.entry(m.clone()).or_default().insert(d.to_string());
                    }
                }
            }
        }
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in graph.get(n).into_iter().flatten() {
            if let Some(c) = walk(d, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| walk(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_import_circles_between_modules() {
    for (name, dir) in LAYERS {
        let graph = imports(&host().join(dir).join("src"));
        if let Some(cycle) = find_cycle(&graph) {
            panic!("{name}: modules import each other: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn the_scan_sees_imports() {
    let core = imports(&host().join("crates/core/src"));
    assert!(
        core["session"].contains("agent") && core["session"].contains("subagent"),
        "{core:?}"
    );
    let wasm = imports(&host().join("crates/wasm/src"));
    assert!(
        wasm["runner"].contains("engine") && wasm["runner"].contains("inspect"),
        "{wasm:?}"
    );
}

#[test]
fn the_cycle_finder_finds_one() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).map(|c| c.len()), Some(4));
}

#[test]
fn the_admin_front_end_uses_only_protocol_and_config() {
    // It edits config files; it never builds a session, so core and extensions are not its to use.
    for dep in our_dependencies(&host().join("crates/admin/Cargo.toml")) {
        assert!(
            dep == "cst-protocol" || dep == "cst-config",
            "cst-admin depends on {dep}"
        );
    }
}
