//! Capabilities of a wasm plugin (D13 applied to wasm): a fixed list the runtime knows. No
//! capability means no filesystem, no environment, no network.

use cst_config::capabilities::valid_env_name;
/// The names the runtime knows; `env:NAME` stands for any variable name. One list with the
/// deployment config's hooks: it lives in `cst-config`.
pub use cst_config::capabilities::KNOWN;

/// What a plugin is granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The workspace pre-opened read-only (`workspace-read`).
    pub workspace_read: bool,
    /// The workspace pre-opened read-write (`workspace-write`, implies read).
    pub workspace_write: bool,
    /// Host environment variables passed in by name (`env:NAME`).
    pub env: Vec<String>,
}

impl Capabilities {
    /// Parse plugin.json `capabilities`; the error names the bad entry and the known list.
    pub fn parse(list: &[String]) -> Result<Self, String> {
        let mut caps = Capabilities::default();
        for entry in list {
            match entry.as_str() {
                "workspace-read" => caps.workspace_read = true,
                "workspace-write" => caps.workspace_write = true,
                "network" => {
                    return Err(
                        "capability `network` is not implemented yet (outgoing HTTP for wasm plugins may come later); remove it"
                            .into(),
                    )
                }
                other => match other.strip_prefix("env:") {
                    Some(name) if valid_env_name(name) => {
                        if !caps.env.iter().any(|n| n == name) {
                            caps.env.push(name.to_string())
                        }
                    }
                    Some(name) => {
                        return Err(format!(
                            "capability `{other}`: `{name}` is not a valid environment variable name"
                        ))
                    }
                    None => {
                        return Err(format!(
                            "unknown capability `{other}`; known: {}",
                            KNOWN.join(", ")
                        ))
                    }
                },
            }
        }
        Ok(caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(list: &[&str]) -> Result<Capabilities, String> {
        Capabilities::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn known_unknown_and_network() {
        let c = p(&["workspace-read", "env:API_KEY", "env:API_KEY"]).unwrap();
        assert!(c.workspace_read && !c.workspace_write);
        assert_eq!(c.env, vec!["API_KEY"]);
        assert_eq!(p(&[]).unwrap(), Capabilities::default());
        let e = p(&["workspace-read", "filesystem"]).unwrap_err();
        assert!(
            e.contains("`filesystem`") && e.contains("workspace-read, workspace-write, env:NAME, network"),
            "{e}"
        );
        assert!(p(&["network"]).unwrap_err().contains("not implemented"));
        assert!(p(&["env:"]).is_err());
        assert!(p(&["env:A=B"]).is_err());
    }
}
