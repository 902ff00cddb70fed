//! The deployment config's MCP servers as managed servers (D5, D8, D11, D12): which are offered
//! to this workspace, their resolved headers, their tool policies.
//!
//! They join the session's [`super::McpManager`] beside the mcp.json servers, with origin
//! `deployment`, ahead of them (an mcp.json server of the same name does not replace an admin's
//! server). Workspace trust and workspace files never change them: a reload of the mcp.json
//! sources keeps them as they are.

use std::path::Path;
use std::time::Duration;

use cst_config::deployment::{DeploymentConfig, McpServer};
use cst_config::Origin;

use super::config::{AutoApprove, ParsedServer, ServerConfig, ServerKind, TransportConfig, DEFAULT_START_TIMEOUT};
use super::http::{HttpConfig, DISCOVER_DEADLINE, ENV_DISCOVER_DEADLINE_MS, NO_CALL_CAP};

/// Is `server` offered to a workspace whose repository is `identity` (D11)? No scope entry or
/// `null`: every repository; a list: only those (ASCII case ignored, as hosts do); `[]`: none;
/// an unknown identity: only unscoped servers.
pub fn offered(config: &DeploymentConfig, server: &str, identity: Option<&str>) -> bool {
    match config.mcp_repository_scopes.get(server) {
        None | Some(None) => true,
        Some(Some(list)) => identity.is_some_and(|id| list.iter().any(|r| r.eq_ignore_ascii_case(id))),
    }
}

/// The servers of `config` offered to `identity`, in file order. `file` is the deployment file
/// (shown by `mcp list`); `env` reads the host's environment (only the `CST_MCP_*` variables
/// that `credential_headers` name, and the tests' probe deadline).
pub fn parsed_servers(
    config: &DeploymentConfig,
    file: &Path,
    identity: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<ParsedServer> {
    let deadline = env(ENV_DISCOVER_DEADLINE_MS)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DISCOVER_DEADLINE);
    config
        .mcp
        .servers
        .iter()
        .filter(|s| offered(config, &s.id, identity))
        .map(|s| ParsedServer {
            name: s.id.clone(),
            file: file.to_path_buf(),
            origin: Origin::Deployment,
            kind: kind_of(s, deadline, env),
        })
        .collect()
}

fn kind_of(s: &McpServer, deadline: Duration, env: &dyn Fn(&str) -> Option<String>) -> ServerKind {
    if !s.enabled {
        return ServerKind::Disabled;
    }
    let mut headers = s.headers.clone();
    for (name, var) in &s.credential_headers {
        // Only the named variable, and it holds the whole value (D8). Never its value in a message.
        match env(var) {
            Some(v) if !v.is_empty() => {
                headers.insert(name.clone(), v);
            }
            _ => return ServerKind::Invalid(format!("credential variable `{var}` (for header `{name}`) is not set")),
        }
    }
    for v in headers.values() {
        cst_config::secrets::remember(v);
    }
    // D10: a server's URL never reaches a log line whole — rmcp's transport logs the request URL
    // of a failed connection at error level; the redacting log writer removes what is remembered.
    remember_url(&s.url);
    ServerKind::Start(ServerConfig {
        transport: TransportConfig::Http(HttpConfig {
            id: s.id.clone(),
            url: s.url.clone(),
            headers,
            idle_timeout: Duration::from_secs(s.timeout_seconds),
            discover_deadline: deadline,
            default_policy: s.default_policy,
            tools: s.tools.clone(),
        }),
        auto_approve: AutoApprove::None,
        start_timeout: DEFAULT_START_TIMEOUT,
        call_timeout: NO_CALL_CAP,
    })
}

/// Remember a deployment server's URL as a secret, as written and as `url` prints it (a bare
/// host gains a `/`), so no log line shows its path.
fn remember_url(raw: &str) {
    cst_config::secrets::remember(raw);
    if let Ok(parsed) = url::Url::parse(raw) {
        cst_config::secrets::remember(parsed.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> DeploymentConfig {
        cst_config::deployment::parse(
            &json!({"version": 1,
                "mcp": {"servers": [
                    {"id": "open", "url": "https://a.example/mcp"},
                    {"id": "scoped", "url": "https://b.example/mcp"},
                    {"id": "none", "url": "https://c.example/mcp"},
                    {"id": "off", "url": "https://d.example/mcp", "enabled": false},
                    {"id": "cred", "url": "https://e.example/mcp",
                     "credential_headers": {"Authorization": "CST_MCP_E_TOKEN"},
                     "headers": {"X-Team": "team-static-value"}}
                ]},
                "mcp_repository_scopes": {"scoped": ["Owner/Repo"], "none": [], "open": null}
            })
            .to_string(),
        )
        .unwrap()
    }

    fn names(v: &[ParsedServer]) -> Vec<&str> {
        v.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn d11_scopes() {
        let c = config();
        let f = Path::new("/etc/cst-agent/deployment.json");
        let no_env = |_: &str| None;
        assert_eq!(
            names(&parsed_servers(&c, f, Some("owner/repo"), &no_env)),
            ["open", "scoped", "off", "cred"]
        );
        assert_eq!(
            names(&parsed_servers(&c, f, Some("other/repo"), &no_env)),
            ["open", "off", "cred"]
        );
        // Unknown identity: only unscoped servers (fail closed).
        assert_eq!(names(&parsed_servers(&c, f, None, &no_env)), ["open", "off", "cred"]);
    }

    #[test]
    fn d8_credentials_from_the_named_variable_only() {
        let c = config();
        let f = Path::new("/x");
        let missing = parsed_servers(&c, f, None, &|_| None);
        let cred = missing.iter().find(|s| s.name == "cred").unwrap();
        let ServerKind::Invalid(why) = &cred.kind else {
            panic!("{:?}", cred.kind)
        };
        assert!(
            why.contains("CST_MCP_E_TOKEN") && why.contains("Authorization"),
            "{why}"
        );
        let env = |n: &str| (n == "CST_MCP_E_TOKEN").then(|| "Bearer tok-123456".to_string());
        let got = parsed_servers(&c, f, None, &env);
        let ServerKind::Start(cfg) = &got.iter().find(|s| s.name == "cred").unwrap().kind else {
            panic!()
        };
        let TransportConfig::Http(h) = &cfg.transport else {
            panic!()
        };
        assert_eq!(h.headers["Authorization"], "Bearer tok-123456");
        assert_eq!(h.headers["X-Team"], "team-static-value");
        assert_eq!(cst_config::secrets::redact("a Bearer tok-123456 b"), "a [REDACTED] b");
        assert_eq!(cst_config::secrets::redact("team-static-value"), "[REDACTED]");
        assert!(matches!(
            got.iter().find(|s| s.name == "off").unwrap().kind,
            ServerKind::Disabled
        ));
    }
}
