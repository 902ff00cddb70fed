//! The scripted server speaking the Anthropic Messages API: which conversation a request belongs to, the
//! invariants every request must keep, and a [`crate::Reply`] written as that API streams it.
//! (Being written.)

use serde_json::Value;

use crate::Body_;

/// The first user message's text (picks the conversation).
pub(crate) fn first_user(body: &Value) -> String {
    let _ = body;
    String::new()
}

/// What is wrong with a request; `issued`: tool call ids handed out before.
pub(crate) fn check_request(body: &Value, issued: &[String]) -> Vec<String> {
    let _ = (body, issued);
    Vec::new()
}

/// The SSE events (each ending in a blank line) of one reply.
pub(crate) fn render(body: &Body_, model: &str) -> Vec<String> {
    let _ = (body, model);
    Vec::new()
}

/// The first events of a stream that then never ends.
pub(crate) fn hang(model: &str) -> Vec<String> {
    let _ = model;
    Vec::new()
}
