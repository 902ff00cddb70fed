//! The output cap every tool result goes through (P10: at most 512 KB).

/// Largest tool result handed back, in bytes (P10).
pub const MAX_OUTPUT_BYTES: usize = 512 * 1024;

/// The closing marker added when output was dropped.
pub fn truncation_marker(dropped_bytes: u64) -> String {
    format!("\n[output truncated: {dropped_bytes} more bytes dropped; limit is {MAX_OUTPUT_BYTES} bytes]")
}

/// Cut `text` to the cap on a character boundary and add the marker saying how much was dropped.
pub fn cap_output(mut text: String) -> String {
    if text.len() <= MAX_OUTPUT_BYTES {
        return text;
    }
    let mut cut = MAX_OUTPUT_BYTES;
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
    fn caps_on_char_boundary_with_marker() {
        let s = "é".repeat(MAX_OUTPUT_BYTES);
        let out = cap_output(s);
        assert!(out.contains("output truncated"));
        assert!(out.len() < MAX_OUTPUT_BYTES + 200);
        assert_eq!(cap_output("short".into()), "short");
    }
}
