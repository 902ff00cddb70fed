//! The tools profile of a session.

/// `--tools default` loads extensions; `--tools minimal` loads none (E1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolsProfile {
    #[default]
    Default,
    Minimal,
}
