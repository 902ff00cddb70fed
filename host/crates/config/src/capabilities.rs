//! The capability names the runtime knows (D13), one list for every place that names
//! capabilities: a wasm plugin's `capabilities` in plugin.json (`cst-wasm`) and a hook's
//! `capabilities` in the deployment config ([`crate::deployment`]). A name outside it is refused
//! where it is written, never ignored.

/// The names the runtime knows; `env:NAME` stands for any variable name.
pub const KNOWN: &[&str] = &["workspace-read", "workspace-write", "env:NAME", "network"];

/// Whether `name` is one of [`KNOWN`] (`env:` followed by a valid variable name for `env:NAME`).
pub fn is_known(name: &str) -> bool {
    match name.strip_prefix("env:") {
        Some(var) => valid_env_name(var),
        None => KNOWN.contains(&name) && name != "env:NAME",
    }
}

/// A portable environment variable name: ASCII letters, digits and `_`, not starting with a digit.
pub fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d13_known_names() {
        for ok in ["workspace-read", "workspace-write", "network", "env:API_KEY"] {
            assert!(is_known(ok), "{ok}");
        }
        for bad in ["filesystem", "env:", "env:1A", "env:A=B", "Network", ""] {
            assert!(!is_known(bad), "{bad}");
        }
    }
}
