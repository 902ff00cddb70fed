//! Turning a `tools/call` result into the text the model sees (M9).

use rmcp::model::{CallToolResult, ContentBlock};

/// Text contents concatenated; images and audio as `[image: image/png, 12345 bytes]`; embedded
/// resources by their text or URI; structured content as JSON when there is no text.
pub fn render(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut has_text = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                has_text = true;
                parts.push(t.text.clone());
            }
            ContentBlock::Image(i) => parts.push(format!("[image: {}, {} bytes]", i.mime_type, b64_len(&i.data))),
            ContentBlock::Audio(a) => parts.push(format!("[audio: {}, {} bytes]", a.mime_type, b64_len(&a.data))),
            ContentBlock::Resource(r) => {
                has_text = true;
                parts.push(r.get_text());
            }
            ContentBlock::ResourceLink(l) => parts.push(format!("[resource: {}]", l.uri)),
            // A content type newer than this host: say so rather than drop it silently.
            _ => parts.push("[unsupported content]".into()),
        }
    }
    if !has_text {
        if let Some(s) = &result.structured_content {
            parts.insert(0, serde_json::to_string(s).unwrap_or_default());
        }
    }
    parts.join("\n")
}

/// Decoded size of base64 data, without decoding it.
fn b64_len(data: &str) -> usize {
    let clean = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let pad = data.trim_end().bytes().rev().take_while(|&b| b == b'=').count().min(2);
    (clean / 4) * 3
        + match clean % 4 {
            2 => 1,
            3 => 2,
            _ => 0,
        }
        - if clean % 4 == 0 { pad } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_structured() {
        assert_eq!(b64_len("iVBORw0KGgoAAAAN"), 12);
        assert_eq!(b64_len("YQ=="), 1);
        assert_eq!(b64_len("YWI="), 2);
        assert_eq!(b64_len("YWJj"), 3);
        assert_eq!(b64_len("YQ"), 1);
        let mut r = CallToolResult::success(vec![ContentBlock::image("YWJj", "image/png")]);
        r.structured_content = Some(serde_json::json!({"a": 1}));
        assert_eq!(render(&r), "{\"a\":1}\n[image: image/png, 3 bytes]");
        let r = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(render(&r), "a\nb");
    }
}
