//! Tool names (rule P2): characters outside `[A-Za-z0-9_-]` become `_`, at most 63 bytes.

/// Longest tool name, in bytes (P2).
pub const MAX_TOOL_NAME_BYTES: usize = 63;

/// Apply P2: every character outside `[A-Za-z0-9_-]` becomes one `_`; then cut to 63 bytes.
/// The result is pure ASCII, so the cut never splits a UTF-8 character.
pub fn sanitize_tool_name(raw: &str) -> String {
    let mut out = replace_disallowed(raw);
    out.truncate(MAX_TOOL_NAME_BYTES);
    out
}

/// P2's character rule alone: every character outside `[A-Za-z0-9_-]` becomes one `_`.
fn replace_disallowed(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Sanitize, and when the result is longer than 63 bytes keep a readable prefix plus a short
/// stable hash of the whole raw name, so two long names that share a prefix stay distinct
/// (used for `mcp__<server>__<tool>`, M8).
pub fn fit_tool_name(raw: &str) -> String {
    let full = replace_disallowed(raw);
    if full.len() <= MAX_TOOL_NAME_BYTES {
        return full;
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(raw.as_bytes());
    let hash = hex::encode(&digest[..4]); // 8 hex chars
    let keep = MAX_TOOL_NAME_BYTES - hash.len() - 1;
    format!("{}_{}", &full[..keep], hash)
}

/// True when `name` already satisfies P2.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_TOOL_NAME_BYTES && sanitize_tool_name(name) == name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p2_replaces_and_cuts() {
        assert_eq!(sanitize_tool_name("jira.issue v2"), "jira_issue_v2");
        assert_eq!(sanitize_tool_name("héllo"), "h_llo");
        let long = "é".repeat(80);
        let s = sanitize_tool_name(&long);
        assert_eq!(s.len(), 63);
        assert!(s.chars().all(|c| c == '_'));
        assert!(is_valid_tool_name("ok-name_1"));
        assert!(!is_valid_tool_name("no spaces"));
        assert!(!is_valid_tool_name(""));
    }

    #[test]
    fn long_names_keep_prefix_and_hash() {
        let a = fit_tool_name(&format!("mcp__server__{}", "a".repeat(70)));
        let b = fit_tool_name(&format!("mcp__server__{}b", "a".repeat(70)));
        assert_eq!(a.len(), 63);
        assert!(a.starts_with("mcp__server__aaa"));
        assert_ne!(a, b);
        assert_eq!(fit_tool_name("mcp__s__t"), "mcp__s__t");
    }
}
