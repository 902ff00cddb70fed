//! The output cap every tool result goes through (P10: at most 512 KB).

/// Largest tool result handed back, in bytes (P10).
pub const MAX_OUTPUT_BYTES: usize = 512 * 1024;

/// The closing marker added when output was dropped.
pub fn truncation_marker(dropped_bytes: u64) -> String {
    format!("\n[output truncated: {dropped_bytes} more bytes dropped; limit is {MAX_OUTPUT_BYTES} bytes]")
}

/// Cut `text` so that it and the marker saying how much was dropped fit in the cap together,
/// on a character boundary.
pub fn cap_output(mut text: String) -> String {
    if text.len() <= MAX_OUTPUT_BYTES {
        return text;
    }
    // The marker for the whole length is at least as long as the final one (fewer bytes dropped
    // means no more digits), so room for it is room enough.
    let room = truncation_marker(text.len() as u64).len();
    let mut cut = MAX_OUTPUT_BYTES.saturating_sub(room);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let dropped = (text.len() - cut) as u64;
    text.truncate(cut);
    text.push_str(&truncation_marker(dropped));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_char_boundary_with_marker_inside_the_cap() {
        // P10: the marker counts inside the 512 KB.
        for extra in [1, 2, 3, 1000, 10 * MAX_OUTPUT_BYTES] {
            let s = "a".repeat(MAX_OUTPUT_BYTES + extra);
            let len = s.len();
            let out = cap_output(s);
            assert!(out.len() <= MAX_OUTPUT_BYTES, "{} > cap", out.len());
            let body = out.find("\n[output truncated").unwrap();
            assert!(
                out.ends_with(&truncation_marker((len - body) as u64)),
                "the count is right"
            );
        }
        let out = cap_output("é".repeat(MAX_OUTPUT_BYTES));
        assert!(out.len() <= MAX_OUTPUT_BYTES && out.contains("output truncated"));
        let exact = "b".repeat(MAX_OUTPUT_BYTES);
        assert_eq!(cap_output(exact.clone()), exact, "at the cap nothing is cut");
        assert_eq!(cap_output("short".into()), "short");
    }
}
