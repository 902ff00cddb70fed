//! read_file, write_file, edit_file, list, grep. Blocking code; run on the blocking pool.

use std::io::Read;

use serde_json::Value;

use super::{fail, Scope};
use cst_registry::Failure;

/// Most entries `list` prints.
const MAX_LIST: usize = 2000;
/// Most matches `grep` prints.
const MAX_MATCHES: usize = 500;
/// Files larger than this are skipped by `grep`.
const MAX_GREP_FILE: u64 = 8 * 1024 * 1024;

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn io_fail(what: &str, path: &str, e: std::io::Error) -> Failure {
    fail(&format!("cannot {what} `{path}`: {e}"))
}

pub fn read_file(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let path = str_arg(args, "path").unwrap_or_default();
    let full = scope.resolve(path)?;
    if full.is_dir() {
        return Err(fail(&format!("`{path}` is a folder; use `list`")));
    }
    // Read through `File` rather than `fs::read_to_string` so special files (FIFOs) work too.
    let mut bytes = Vec::new();
    std::fs::File::open(&full)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| io_fail("read", path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
    let limit = args.get("limit").and_then(Value::as_u64).map(|l| l as usize);
    if offset == 1 && limit.is_none() {
        return Ok(text.into_owned());
    }
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .skip(offset - 1)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    Ok(lines.concat())
}

pub fn write_file(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let path = str_arg(args, "path").unwrap_or_default();
    let content = str_arg(args, "content").unwrap_or_default();
    let full = scope.resolve(path)?;
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_fail("create the folder of", path, e))?;
    }
    std::fs::write(&full, content).map_err(|e| io_fail("write", path, e))?;
    Ok(format!("wrote {} bytes to {}", content.len(), scope.show(&full)))
}

pub fn edit_file(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let path = str_arg(args, "path").unwrap_or_default();
    let old = str_arg(args, "old_text").unwrap_or_default();
    let new = str_arg(args, "new_text").unwrap_or_default();
    if old.is_empty() {
        return Err(fail("`old_text` is empty"));
    }
    let full = scope.resolve(path)?;
    let text = std::fs::read_to_string(&full).map_err(|e| io_fail("read", path, e))?;
    let count = text.matches(old).count();
    match count {
        0 => Err(fail(&format!(
            "`old_text` was not found in `{path}`; read the file and copy the text exactly"
        ))),
        1 => {
            let updated = text.replacen(old, new, 1);
            std::fs::write(&full, &updated).map_err(|e| io_fail("write", path, e))?;
            Ok(format!("edited {}: replaced 1 occurrence", scope.show(&full)))
        }
        n => Err(fail(&format!(
            "`old_text` occurs {n} times in `{path}`; add surrounding lines so it occurs once"
        ))),
    }
}

pub fn list(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let pattern = str_arg(args, "pattern").unwrap_or("**/*");
    let base_arg = str_arg(args, "path").unwrap_or(".");
    let base = scope.resolve(base_arg)?;
    let glob = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| fail(&format!("bad glob `{pattern}`: {e}")))?
        .compile_matcher();
    let mut out = Vec::new();
    let mut more = 0usize;
    let walker = walkdir::WalkDir::new(&base)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git");
    for entry in walker {
        let Ok(entry) = entry else { continue };
        let rel = entry.path().strip_prefix(&base).unwrap_or(entry.path());
        if !glob.is_match(rel) {
            continue;
        }
        if out.len() >= MAX_LIST {
            more += 1;
            continue;
        }
        let mut shown = scope.show(entry.path());
        if entry.file_type().is_dir() {
            shown.push('/');
        }
        out.push(shown);
    }
    let mut text = out.join("\n");
    if more > 0 {
        text.push_str(&format!("\n[{more} more entries not shown; narrow the pattern]"));
    }
    if text.is_empty() {
        text = format!("no entries match `{pattern}` under `{base_arg}`");
    }
    Ok(text)
}

pub fn grep(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let pattern = str_arg(args, "pattern").unwrap_or_default();
    let re = regex::Regex::new(pattern).map_err(|e| fail(&format!("bad regular expression: {e}")))?;
    let base = scope.resolve(str_arg(args, "path").unwrap_or("."))?;
    let filter = match str_arg(args, "glob") {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| fail(&format!("bad glob `{g}`: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let mut out = Vec::new();
    let mut truncated = false;
    let walker = walkdir::WalkDir::new(&base)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git");
    'files: for entry in walker {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_file() || entry.metadata().map(|m| m.len() > MAX_GREP_FILE).unwrap_or(true) {
            continue;
        }
        let shown = scope.show(entry.path());
        if let Some(f) = &filter {
            if !f.is_match(&shown) && !f.is_match(entry.file_name()) {
                continue;
            }
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            continue; // binary
        }
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if re.is_match(line) {
                if out.len() >= MAX_MATCHES {
                    truncated = true;
                    break 'files;
                }
                out.push(format!("{shown}:{}:{line}", n + 1));
            }
        }
    }
    let mut text = out.join("\n");
    if truncated {
        text.push_str(&format!("\n[stopped after {MAX_MATCHES} matches; narrow the search]"));
    }
    if text.is_empty() {
        text = format!("no matches for `{pattern}`");
    }
    Ok(text)
}
