//! TEST ONLY: `list-tools` returns a bad list chosen by the environment variable
//! `CST_BAD_TOOLS` (granted with `env:CST_BAD_TOOLS`): `name` (invalid P2 name), `dup` (the same
//! name twice), `schema` (not JSON Schema), `json` (not JSON), `empty` (no tools); anything else
//! gives one good tool. Install must refuse each bad list.
wit_bindgen::generate!({ path: "../../wit/v0.1.0", world: "plugin" });

use exports::cst::plugin::tool::{Guest, Perm, ToolInfo};

fn tool(name: &str, schema: &str) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        description: "test".into(),
        input_schema: schema.into(),
        perm: Perm::Read,
    }
}

const OK: &str = r#"{"type":"object"}"#;

struct Bad;
impl Guest for Bad {
    fn list_tools() -> Vec<ToolInfo> {
        match std::env::var("CST_BAD_TOOLS").unwrap_or_default().as_str() {
            "name" => vec![tool("has space.and dot", OK)],
            "dup" => vec![tool("same", OK), tool("same", OK)],
            "schema" => vec![tool("bad_schema", r#"{"type":"no-such-type"}"#)],
            "json" => vec![tool("bad_json", "{not json")],
            "empty" => Vec::new(),
            _ => vec![tool("good_tool", OK)],
        }
    }
    fn call_tool(name: String, _arguments: String) -> Result<String, String> {
        Ok(format!("called {name}"))
    }
}
export!(Bad);
