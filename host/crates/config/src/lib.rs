//! Configuration: the config dir (E2), `settings.json`, workspace trust (T2), the tools profile
//! (E1), where MCP server definitions come from (E5), and the admin's deployment config with the
//! permission profile (D1, D2). Below the registry: it knows no tools.

pub mod capabilities;
pub mod config_dir;
pub mod deployment;
pub mod fs;
pub mod host_files;
mod mcp_source;
mod profile;
pub mod secrets;
pub mod settings;
pub mod trust;

pub use fs::{sorted_md_files, sorted_subdirs};
pub use mcp_source::{McpSource, Origin};
pub use profile::ToolsProfile;
