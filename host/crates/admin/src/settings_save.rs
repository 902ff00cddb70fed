//! The generic settings page's save: a few keys of the user's own `settings.json`, never a
//! plugin or deployment field (D4). What it may write is a list of allowed keys, not a list of
//! forbidden ones: a key added to settings.json later is refused until it is added here.

use std::path::Path;

use serde_json::{Map, Value};

/// Top-level keys the generic page may set.
pub const ALLOWED: &[&str] = &["default_provider", "model"];
/// The fields of `model` it may set (`base_url` and `api_key_env` decide where the API key is
/// sent: only the CLI or a hand edit changes them).
pub const MODEL_FIELDS: &[&str] = &["name", "context_window"];

/// Fields only the deployment route (or nothing at all) may write: named in the refusal.
const PLUGIN_FIELDS: &[&str] = &[
    "version",
    "mcp",
    "mcp_repository_scopes",
    "hooks",
    "permission_profile",
    "mcpServers",
    "servers",
    "headers",
    "credential_headers",
    "plugins",
    "trusted_workspaces",
];

/// Why a settings save was refused.
#[derive(Debug)]
pub enum SettingsError {
    /// A plugin or deployment field (HTTP 403): only `/agent-plugins/` saves those.
    PluginField(Vec<String>),
    /// Not a setting this page saves, or a wrong type (HTTP 400).
    Invalid(Vec<String>),
    /// The file could not be read or written (HTTP 500).
    Io(String),
}

/// Check `submitted` and merge it into `path` (atomically, keeping every other key).
pub fn save(path: &Path, submitted: &Value) -> Result<(), SettingsError> {
    let Some(top) = submitted.as_object() else {
        return Err(SettingsError::Invalid(
            vec!["(top level): must be a JSON object".into()],
        ));
    };
    let mut plugin = Vec::new();
    let mut invalid = Vec::new();
    for (k, v) in top {
        if PLUGIN_FIELDS.contains(&k.as_str()) {
            plugin.push(format!(
                "{k}: a plugin or deployment field: only the /agent-plugins/ page saves it"
            ));
            continue;
        }
        match (k.as_str(), v) {
            ("default_provider", Value::String(_) | Value::Null) => {}
            ("default_provider", _) => invalid.push("default_provider: must be a string or null".into()),
            ("model", Value::Object(m)) => {
                for (f, fv) in m {
                    match (f.as_str(), fv) {
                        ("name", Value::String(_)) => {}
                        ("context_window", Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {}
                        ("name" | "context_window", _) => invalid.push(format!("model.{f}: wrong type")),
                        _ if PLUGIN_FIELDS.contains(&f.as_str()) => plugin.push(format!(
                            "model.{f}: a plugin or deployment field: only the /agent-plugins/ page saves it"
                        )),
                        _ => invalid.push(format!(
                            "model.{f}: not a field this page saves (allowed: {})",
                            MODEL_FIELDS.join(", ")
                        )),
                    }
                }
            }
            ("model", _) => invalid.push("model: must be an object".into()),
            _ => invalid.push(format!(
                "{k}: not a setting this page saves (allowed: {})",
                ALLOWED.join(", ")
            )),
        }
    }
    if !plugin.is_empty() {
        plugin.extend(invalid);
        return Err(SettingsError::PluginField(plugin));
    }
    if !invalid.is_empty() {
        return Err(SettingsError::Invalid(invalid));
    }
    cst_config::settings::Settings::update(path, |values: &mut Map<String, Value>| {
        for (k, v) in top {
            match (k.as_str(), v) {
                ("model", Value::Object(m)) => {
                    let entry = values.entry("model").or_insert_with(|| Value::Object(Map::new()));
                    if !entry.is_object() {
                        *entry = Value::Object(Map::new());
                    }
                    if let Some(model) = entry.as_object_mut() {
                        for (f, fv) in m {
                            model.insert(f.clone(), fv.clone());
                        }
                    }
                }
                _ => {
                    values.insert(k.clone(), v.clone());
                }
            }
        }
    })
    .map(|_| ())
    .map_err(|e| SettingsError::Io(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn d4_plugin_fields_are_refused_and_nothing_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        std::fs::write(&p, "{\"model\": {\"base_url\": \"http://x\"}}\n").unwrap();
        for bad in [
            json!({"hooks": []}),
            json!({"mcp": {"servers": []}}),
            json!({"permission_profile": "full_access", "default_provider": "a"}),
            json!({"model": {"headers": {}}}),
        ] {
            assert!(matches!(save(&p, &bad), Err(SettingsError::PluginField(_))), "{bad}");
        }
        assert!(matches!(
            save(&p, &json!({"model": {"base_url": "http://evil"}})),
            Err(SettingsError::Invalid(_))
        ));
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"model\": {\"base_url\": \"http://x\"}}\n"
        );
        save(&p, &json!({"model": {"name": "m2"}})).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v, json!({"model": {"base_url": "http://x", "name": "m2"}}));
    }
}
