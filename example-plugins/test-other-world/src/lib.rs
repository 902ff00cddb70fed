//! TEST ONLY: a component of another world (no `cst:plugin/tool` export); the host must refuse it.
wit_bindgen::generate!({ path: "wit", world: "other" });

struct Other;
impl Guest for Other {
    fn run() -> String {
        "other world".into()
    }
}
export!(Other);
