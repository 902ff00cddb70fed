//! Write cst-agent plugin tools in Rust without touching WIT.
//!
//! ```ignore
//! use cst_plugin::{Perm, Tool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct GreetArgs {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! struct Greet;
//! impl Tool for Greet {
//!     const NAME: &'static str = "greet";
//!     const DESCRIPTION: &'static str = "Say hello.";
//!     const PERM: Perm = Perm::Read;
//!     type Args = GreetArgs;
//!     fn call(args: GreetArgs) -> Result<String, String> {
//!         Ok(format!("hello, {}", args.name))
//!     }
//! }
//!
//! cst_plugin::export_plugin!(Greet);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` is a component.

pub use schemars;
pub use serde_json;
pub use wit_bindgen;

/// The generated bindings of `wit/v0.1.0` (world `cst:plugin/plugin@0.1.0`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/v0.1.0",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__cst_export_world",
        default_bindings_module: "cst_plugin::bindings",
    });
}

pub use bindings::cst::plugin::host::Level;
pub use bindings::exports::cst::plugin::tool::Perm;

/// The version of the WIT contract this SDK builds against.
pub const WIT_VERSION: &str = "0.1.0";

/// One tool of a plugin. Arguments arrive as JSON already validated by the host against the
/// schema derived from `Args`; `call` returns the result text or a tool error for the model.
pub trait Tool {
    /// `[A-Za-z0-9_-]`, at most 63 bytes (rule P2); the host refuses other names at install.
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    /// Permission category (`Perm::Read`, `Write`, `Net`, `Shell`); approval is by category.
    const PERM: Perm;
    type Args: serde::de::DeserializeOwned + schemars::JsonSchema;
    fn call(args: Self::Args) -> Result<String, String>;
}

/// Write a line to the host's log (never into the tool result).
pub fn log(level: Level, message: &str) {
    bindings::cst::plugin::host::log(level, message);
}

#[doc(hidden)]
pub fn __info<T: Tool>() -> bindings::exports::cst::plugin::tool::ToolInfo {
    let schema = schemars::schema_for!(T::Args);
    bindings::exports::cst::plugin::tool::ToolInfo {
        name: T::NAME.to_string(),
        description: T::DESCRIPTION.to_string(),
        input_schema: serde_json::to_string(&schema).unwrap_or_else(|_| "{\"type\":\"object\"}".into()),
        perm: T::PERM,
    }
}

#[doc(hidden)]
pub fn __call<T: Tool>(arguments: &str) -> Result<String, String> {
    let args: T::Args =
        serde_json::from_str(arguments).map_err(|e| format!("invalid arguments for `{}`: {e}", T::NAME))?;
    T::call(args)
}

/// Export the listed [`Tool`] types as this component's `cst:plugin/tool` interface.
/// Use it once per crate: `cst_plugin::export_plugin!(ToolA, ToolB);`
#[macro_export]
macro_rules! export_plugin {
    ($($tool:ty),+ $(,)?) => {
        #[doc(hidden)]
        pub struct __CstPlugin;

        impl $crate::bindings::exports::cst::plugin::tool::Guest for __CstPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::bindings::exports::cst::plugin::tool::ToolInfo> {
                ::std::vec![$($crate::__info::<$tool>()),+]
            }

            fn call_tool(
                name: ::std::string::String,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<::std::string::String, ::std::string::String> {
                $(
                    if name == <$tool as $crate::Tool>::NAME {
                        return $crate::__call::<$tool>(&arguments);
                    }
                )+
                ::std::result::Result::Err(::std::format!("unknown tool `{}`", name))
            }
        }

        $crate::bindings::__cst_export_world!(__CstPlugin with_types_in $crate::bindings);
    };
}
