//! `text_stats`: lines, words and bytes of workspace files (folders are walked, bounded).

use std::path::{Path, PathBuf};

use cst_plugin::{Perm, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map};

const MAX_FILES: usize = 2000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Files or folders, relative to the workspace root. Folders are walked (hidden entries,
    /// `target` and `node_modules` skipped).
    pub paths: Vec<String>,
}

pub struct TextStats;

impl Tool for TextStats {
    const NAME: &'static str = "text_stats";
    const DESCRIPTION: &'static str =
        "Count lines, words and bytes of workspace files or folders. Returns JSON with one entry per file and a total.";
    const PERM: Perm = Perm::Read;
    type Args = Args;

    fn call(args: Args) -> Result<String, String> {
        if args.paths.is_empty() {
            return Err("`paths` is empty".into());
        }
        let mut files = Vec::new();
        for p in &args.paths {
            collect(Path::new(p), &mut files).map_err(|e| format!("{p}: {e}"))?;
        }
        let mut per_file = Map::new();
        let (mut tl, mut tw, mut tb) = (0u64, 0u64, 0u64);
        for f in files.iter().take(MAX_FILES) {
            let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            let lines = bytes.iter().filter(|b| **b == b'\n').count() as u64
                + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
            let words = text.split_whitespace().count() as u64;
            let n = bytes.len() as u64;
            tl += lines;
            tw += words;
            tb += n;
            per_file.insert(
                f.display().to_string(),
                json!({"lines": lines, "words": words, "bytes": n}),
            );
        }
        let out = json!({
            "files": per_file,
            "total": {"files": per_file.len(), "lines": tl, "words": tw, "bytes": tb},
            "truncated": files.len() > MAX_FILES,
        });
        Ok(serde_json::to_string_pretty(&out).unwrap_or_default())
    }
}

fn collect(p: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(p)?;
    if meta.is_file() {
        out.push(p.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(p)?.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for e in entries {
        if out.len() > MAX_FILES {
            break;
        }
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        collect(&e, out)?;
    }
    Ok(())
}

cst_plugin::export_plugin!(TextStats);
