//! Configuration: the config dir (E2), `settings.json`, workspace trust (T2), the tools profile
//! (E1) and where MCP server definitions come from (E5). Below the registry: it knows no tools.

pub mod config_dir;
mod fs;
pub mod host_files;
mod mcp_source;
mod profile;
pub mod secrets;
pub mod settings;
pub mod trust;

pub use fs::{sorted_md_files, sorted_subdirs};
pub use mcp_source::{McpSource, Origin};
pub use profile::ToolsProfile;
