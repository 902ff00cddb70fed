//! TEST ONLY: `list-tools` returns a bad list chosen by a mode written into the component itself
//! (install runs `list-tools` with no capabilities, so no variable or file can choose it): the
//! tests replace the bytes of [`MODE`] in a copy of the `.wasm` (same length, so the component
//! stays valid). Modes: `name` (invalid P2 name), `dup` (the same name twice), `schema` (not JSON
//! Schema), `json` (not JSON), `empty` (no tools), `spin` (never returns), `caps` (one tool named
//! for what the guest could reach: `no_caps` when neither the environment nor `.` is there);
//! anything else gives one good tool. Install must refuse each bad list.
wit_bindgen::generate!({ path: "../../wit/v0.1.0", world: "plugin" });

use exports::cst::plugin::tool::{Guest, Perm, ToolInfo};

/// `CST-BAD-TOOLS-MODE:` then the mode, space-padded to 8 bytes.
static MODE: [u8; 27] = *b"CST-BAD-TOOLS-MODE:good    ";

fn mode() -> String {
    // A volatile read keeps the bytes in the data segment, where the tests patch them.
    let bytes: [u8; 27] = unsafe { std::ptr::read_volatile(&MODE) };
    String::from_utf8_lossy(&bytes[19..]).trim().to_string()
}

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
        match mode().as_str() {
            "name" => vec![tool("has space.and dot", OK)],
            "dup" => vec![tool("same", OK), tool("same", OK)],
            "schema" => vec![tool("bad_schema", r#"{"type":"no-such-type"}"#)],
            "json" => vec![tool("bad_json", "{not json")],
            "empty" => Vec::new(),
            "spin" => loop {
                std::hint::spin_loop();
            },
            "caps" => {
                let env = std::env::vars().count() > 0;
                let fs = std::fs::read_dir(".").is_ok() || std::fs::read_dir("/workspace").is_ok();
                let name = match (env, fs) {
                    (false, false) => "no_caps",
                    (true, false) => "saw_env",
                    (false, true) => "saw_files",
                    (true, true) => "saw_env_and_files",
                };
                vec![tool(name, OK)]
            }
            _ => vec![tool("good_tool", OK)],
        }
    }
    fn call_tool(name: String, _arguments: String) -> Result<String, String> {
        Ok(format!("called {name}"))
    }
}
export!(Bad);
