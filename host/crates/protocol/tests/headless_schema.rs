//! `docs/headless-events.schema.json` is the schema generated from `cst_protocol::headless`.

use std::path::Path;

use serde_json::Value;

const REGENERATE: &str = "cargo run -q -p cst-protocol --example headless_schema > docs/headless-events.schema.json";

#[test]
fn the_published_schema_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../docs/headless-events.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; regenerate it with `{REGENERATE}`", path.display()));
    let published: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}; regenerate it with `{REGENERATE}`", path.display()));
    assert!(
        published == cst_protocol::headless::schema(),
        "{} differs from cst_protocol::headless::schema(); regenerate it (from the repository root) with `{REGENERATE}`",
        path.display()
    );
}
