//! `regex_search`: search workspace files with a regular expression, bounded results.

use std::path::{Path, PathBuf};

use cst_plugin::{Perm, Tool};
use schemars::JsonSchema;
use serde::Deserialize;

const MAX_FILE_BYTES: u64 = 2 << 20;
const MAX_LINE_CHARS: usize = 300;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// File or folder to search, relative to the workspace root (default: the whole workspace).
    #[serde(default)]
    pub path: Option<String>,
    /// Stop after this many matching lines (default 100, at most 1000).
    #[serde(default)]
    pub max_results: Option<u32>,
    /// Match without regard to case.
    #[serde(default)]
    pub case_insensitive: bool,
}

pub struct RegexSearch;

impl Tool for RegexSearch {
    const NAME: &'static str = "regex_search";
    const DESCRIPTION: &'static str =
        "Search workspace files with a regular expression. Returns `file:line: text` lines \
         (hidden entries, target/ and node_modules/ and binary files are skipped).";
    const PERM: Perm = Perm::Read;
    type Args = Args;

    fn call(args: Args) -> Result<String, String> {
        let re = regex::RegexBuilder::new(&args.pattern)
            .case_insensitive(args.case_insensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("bad pattern: {e}"))?;
        let max = args.max_results.unwrap_or(100).clamp(1, 1000) as usize;
        let root = PathBuf::from(args.path.as_deref().unwrap_or("."));
        let mut files = Vec::new();
        walk(&root, &mut files).map_err(|e| format!("{}: {e}", root.display()))?;
        let mut out = Vec::new();
        'files: for f in files {
            let Ok(bytes) = std::fs::read(&f) else { continue };
            if bytes.contains(&0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
                    let name = f.strip_prefix("./").unwrap_or(&f);
                    out.push(format!("{}:{}: {}", name.display(), i + 1, shown));
                    if out.len() >= max {
                        out.push(format!("(stopped after {max} results)"));
                        break 'files;
                    }
                }
            }
        }
        if out.is_empty() {
            return Ok("no matches".into());
        }
        Ok(out.join("\n"))
    }
}

fn walk(p: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(p)?;
    if meta.is_file() {
        if meta.len() <= MAX_FILE_BYTES {
            out.push(p.to_path_buf());
        }
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(p)?.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for e in entries {
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        // An unreadable entry is skipped, not fatal.
        let _ = walk(&e, out);
    }
    Ok(())
}

cst_plugin::export_plugin!(RegexSearch);
