//! The HTML of the pages, rendered on the server. Every interpolated text goes through [`esc`];
//! the only script is `/static/admin.js` (the Content-Security-Policy allows no inline script).

use std::fmt::Write;

use cst_config::deployment::{DeploymentConfig, McpServer};
use serde_json::Value;

/// `text` safe inside HTML text and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn head(title: &str, csrf: Option<&str>) -> String {
    let meta = csrf
        .map(|t| format!("<meta name=\"csrf-token\" content=\"{}\">", esc(t)))
        .unwrap_or_default();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{meta}\
         <title>{} · cst-agent admin</title>\
         <link rel=\"stylesheet\" href=\"/static/admin.css\">\
         <script src=\"/static/admin.js\" defer></script></head><body>",
        esc(title)
    )
}

fn nav(csrf: &str, plugins: bool) -> String {
    let plugins_link = if plugins {
        "<a href=\"/agent-plugins/\">Agent plugins</a> "
    } else {
        ""
    };
    format!(
        "<nav>{plugins_link}<a href=\"/settings/\">Settings</a> \
         <form method=\"post\" action=\"/logout\" class=\"inline\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Sign out</button></form></nav>",
        esc(csrf)
    )
}

/// The sign-in form.
pub fn login(problem: Option<&str>) -> String {
    let mut h = head("Sign in", None);
    h.push_str("<main><h1>cst-agent admin</h1>");
    if let Some(p) = problem {
        let _ = write!(h, "<p class=\"error\" role=\"alert\">{}</p>", esc(p));
    }
    h.push_str(
        "<form method=\"post\" action=\"/login\"><label>Token <input type=\"password\" name=\"token\" \
         id=\"token\" autocomplete=\"current-password\" required></label> \
         <button type=\"submit\" id=\"sign-in\">Sign in</button></form>\
         <p class=\"hint\">The super-admin token was printed once by the first <code>cst-agent admin serve</code>; \
         <code>cst-agent admin reset-token</code> makes a new one. A user's token comes from \
         <code>cst-agent admin add-user NAME</code>.</p></main></body></html>",
    );
    h
}

/// A plain page with one message (403 and the like).
pub fn message(title: &str, text: &str) -> String {
    let mut h = head(title, None);
    let _ = write!(
        h,
        "<main><h1>{}</h1><p>{}</p><p><a href=\"/login\">Sign in</a></p></main></body></html>",
        esc(title),
        esc(text)
    );
    h
}

/// `scheme://host[:port]` → `host[:port]`: the inventory never shows a URL's path (it may carry a
/// token), only where it goes.
fn host_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => "?".into(),
        },
        Err(_) => "?".into(),
    }
}

fn policy_text(s: &McpServer) -> String {
    let p = s.default_policy;
    let mut t = format!(
        "{}, {}",
        if p.enabled { "tools on" } else { "tools off" },
        if p.read_only { "read-only" } else { "read-write" }
    );
    if !s.tools.is_empty() {
        let n = s.tools.len();
        let _ = write!(t, "; {n} tool override{}", if n == 1 { "" } else { "s" });
    }
    t
}

fn scopes_text(c: &DeploymentConfig, id: &str) -> String {
    match c.mcp_repository_scopes.get(id) {
        None | Some(None) => "all repositories".into(),
        Some(Some(list)) if list.is_empty() => "none".into(),
        Some(Some(list)) => list.join(", "),
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// What the plugins page shows.
pub struct PluginsPage<'a> {
    pub csrf: &'a str,
    /// The stored file's version, sent back with a save.
    pub version: &'a str,
    pub file: &'a str,
    /// The config in force (the defaults when there is no file or it is refused).
    pub config: &'a DeploymentConfig,
    /// The problems of a refused file.
    pub problems: &'a [String],
    /// The editor's text: the config with every header value masked.
    pub editor: &'a str,
}

/// `/agent-plugins/`: the inventory, the JSON editor and the skills pointer (D3).
pub fn plugins(p: &PluginsPage) -> String {
    let c = p.config;
    let mut h = head("Agent plugins", Some(p.csrf));
    h.push_str(&nav(p.csrf, true));
    let _ = write!(
        h,
        "<main><h1>Agent plugins</h1><p>Deployment file: <code>{}</code>. \
         Saving checks the whole file, writes it at once, and neither contacts a server nor runs a command.</p>\
         <p id=\"profile\">Permission profile: <strong>{}</strong> (<code>permission_profile</code> in the JSON below).</p>",
        esc(p.file),
        c.permission_profile.unwrap_or_default().as_str()
    );
    if !p.problems.is_empty() {
        h.push_str("<div class=\"error\" role=\"alert\"><p>The stored file is refused (sessions do not start until it is fixed):</p><ul>");
        for pr in p.problems {
            let _ = write!(h, "<li>{}</li>", esc(pr));
        }
        h.push_str("</ul></div>");
    }
    let _ = write!(
        h,
        "<section id=\"servers\"><h2>MCP servers ({})</h2><table><thead><tr><th>id</th><th>host</th>\
         <th>enabled</th><th>policy</th><th>repositories</th></tr></thead><tbody>",
        c.mcp.servers.len()
    );
    for (i, s) in c.mcp.servers.iter().enumerate() {
        let _ = write!(
            h,
            "<tr data-id=\"{id}\"><td>{id}</td><td>{host}</td><td><label><input type=\"checkbox\" class=\"toggle\" \
             data-list=\"servers\" data-index=\"{i}\"{checked}> <span class=\"enabled\">{state}</span></label></td>\
             <td>{policy}</td><td>{scopes}</td></tr>",
            id = esc(&s.id),
            host = esc(&host_of(&s.url)),
            checked = if s.enabled { " checked" } else { "" },
            state = if s.enabled { "enabled" } else { "disabled" },
            policy = esc(&policy_text(s)),
            scopes = esc(&scopes_text(c, &s.id)),
        );
    }
    if c.mcp.servers.is_empty() {
        h.push_str("<tr><td colspan=\"5\">none</td></tr>");
    }
    let _ = write!(
        h,
        "</tbody></table></section><section id=\"hooks\"><h2>Hooks ({})</h2><table><thead><tr><th>id</th>\
         <th>event</th><th>kind</th><th>required</th><th>enabled</th></tr></thead><tbody>",
        c.hooks.len()
    );
    for (i, k) in c.hooks.iter().enumerate() {
        let kind = match k.kind {
            cst_config::deployment::HookKind::Audit => "audit",
            cst_config::deployment::HookKind::Command => "command",
        };
        let _ = write!(
            h,
            "<tr data-id=\"{id}\"><td>{id}</td><td>{event}</td><td>{kind}</td><td>{req}</td><td><label>\
             <input type=\"checkbox\" class=\"toggle\" data-list=\"hooks\" data-index=\"{i}\"{checked}> \
             <span class=\"enabled\">{state}</span></label></td></tr>",
            id = esc(&k.id),
            event = k.event.as_str(),
            req = yes_no(k.required),
            checked = if k.enabled { " checked" } else { "" },
            state = if k.enabled { "enabled" } else { "disabled" },
        );
    }
    if c.hooks.is_empty() {
        h.push_str("<tr><td colspan=\"5\">none</td></tr>");
    }
    let _ = write!(
        h,
        "</tbody></table></section><section id=\"editor\"><h2>The whole config (JSON)</h2>\
         <p class=\"hint\">Add or remove entries of <code>mcp.servers</code> and <code>hooks</code> to add or remove them; \
         the checkboxes above set <code>enabled</code> here. Every header value shows as <code>[UNCHANGED SECRET]</code>: \
         leave it to keep the stored value (same server id, URL and header name only); type a new value to replace it. \
         A server whose URL changes needs its header values again.</p>\
         <textarea id=\"config\" spellcheck=\"false\" rows=\"24\" data-version=\"{}\">{}</textarea>\
         <p><button type=\"button\" id=\"save\">Save</button> <span id=\"dirty\"></span></p>\
         <div id=\"result\" role=\"status\"></div></section>\
         <section id=\"skills\"><h2>Skills</h2><p>Skills are not part of this file. Install one for every session of a user by \
         copying its folder (with <code>SKILL.md</code>) into <code>~/.config/cst-agent/skills/</code>, or a plugin that \
         carries skills with <code>cst-agent plugins install PATH</code> \
         (<code>docs/extensions.md</code> lists every place skills load from).</p></section>\
         </main></body></html>",
        esc(p.version),
        esc(p.editor)
    );
    h
}

/// `/settings/`: the few user settings the generic route saves.
pub fn settings(csrf: &str, super_admin: bool, settings: &serde_json::Map<String, Value>) -> String {
    let model = settings.get("model").and_then(Value::as_object);
    let name = model.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    let window = model
        .and_then(|m| m.get("context_window"))
        .and_then(Value::as_u64)
        .map(|n| n.to_string())
        .unwrap_or_default();
    let provider = settings.get("default_provider").and_then(Value::as_str).unwrap_or("");
    let mut h = head("Settings", Some(csrf));
    h.push_str(&nav(csrf, super_admin));
    let _ = write!(
        h,
        "<main><h1>Settings</h1><p class=\"hint\">Your own <code>settings.json</code>. \
         MCP servers, hooks and the permission profile are not set here.</p>\
         <form id=\"settings-form\"><label>Model <input name=\"name\" id=\"model-name\" value=\"{}\"></label> \
         <label>Context window <input name=\"context_window\" id=\"context-window\" inputmode=\"numeric\" value=\"{}\"></label> \
         <label>Default provider <input name=\"default_provider\" id=\"default-provider\" value=\"{}\"></label> \
         <button type=\"submit\">Save</button></form><div id=\"result\" role=\"status\"></div></main></body></html>",
        esc(name),
        esc(&window),
        esc(provider)
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_hosts() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(host_of("https://mcp.example.com/secret/path"), "mcp.example.com");
        assert_eq!(host_of("http://127.0.0.1:8080/mcp"), "127.0.0.1:8080");
    }
}
