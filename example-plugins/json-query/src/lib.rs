//! `json_query`: the value at a path in a JSON file of the workspace.

use cst_plugin::{Perm, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// JSON file, relative to the workspace root.
    pub file: String,
    /// Where to look: `a.b[0].c` (dots and [index]) or a JSON Pointer `/a/b/0/c`. Empty = the whole document.
    #[serde(default)]
    pub path: String,
}

pub struct JsonQuery;

impl Tool for JsonQuery {
    const NAME: &'static str = "json_query";
    const DESCRIPTION: &'static str =
        "Read a JSON file of the workspace and return the value at a path (`a.b[0].c` or `/a/b/0/c`), pretty-printed.";
    const PERM: Perm = Perm::Read;
    type Args = Args;

    fn call(args: Args) -> Result<String, String> {
        let text = std::fs::read_to_string(&args.file).map_err(|e| format!("{}: {e}", args.file))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", args.file))?;
        let pointer = if args.path.is_empty() || args.path.starts_with('/') {
            args.path.clone()
        } else {
            dotted_to_pointer(&args.path)?
        };
        match doc.pointer(&pointer) {
            Some(v) => Ok(serde_json::to_string_pretty(v).unwrap_or_default()),
            None => Err(format!("{}: nothing at `{}`", args.file, args.path)),
        }
    }
}

/// `a.b[0].c` → `/a/b/0/c` (with `~` and `/` escaped as JSON Pointer says).
fn dotted_to_pointer(path: &str) -> Result<String, String> {
    let mut out = String::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            out.push('/');
            out.push_str(&key.replace('~', "~0").replace('/', "~1"));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped
                .find(']')
                .ok_or_else(|| format!("unclosed `[` in path `{path}`"))?;
            let idx = &stripped[..end];
            if idx.parse::<usize>().is_err() {
                return Err(format!("`[{idx}]` in path `{path}` is not an array index"));
            }
            out.push('/');
            out.push_str(idx);
            rest = &stripped[end + 1..];
        }
        if !rest.is_empty() {
            return Err(format!("cannot parse `{part}` in path `{path}`"));
        }
    }
    Ok(out)
}

cst_plugin::export_plugin!(JsonQuery);
