//! The admin pages of cst-agent, a front end over the config layer: `/agent-plugins/` shows and
//! edits the deployment config (D3, D4, D9, D10), `/settings/` a few keys of the user's own
//! settings. Loopback only; signed-in sessions; every save is validated whole before anything is
//! written. See docs/admin.md.

pub mod auth;
pub mod deployment_save;
pub mod pages;
pub mod server;
pub mod settings_save;

pub use server::{router, serve, Options};
