//! TEST ONLY: exports `cst:plugin/tool@0.2.0`, a version this host does not speak; it must be refused.
wit_bindgen::generate!({ path: "wit", world: "plugin" });

use exports::cst::plugin::tool::{Guest, ToolInfo};

struct Future;
impl Guest for Future {
    fn list_tools() -> Vec<ToolInfo> {
        Vec::new()
    }
    fn call_tool(_name: String, _arguments: String) -> Result<String, String> {
        Err("never".into())
    }
}
export!(Future);
