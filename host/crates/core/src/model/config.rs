//! Which model to talk to. Precedence: flags (`--model`, `--base-url`) > env (`CST_MODEL`,
//! `CST_BASE_URL`, then `OPENAI_BASE_URL`) > `settings.json` key `model` in the config dir >
//! defaults.
//!
//! ```json
//! { "model": { "base_url": "http://127.0.0.1:11434/v1", "name": "qwen3:8b", "api_key_env": "OLLAMA_KEY" } }
//! ```

use std::path::Path;

use serde::Deserialize;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_API_KEY_ENV: &str = cst_config::secrets::DEFAULT_API_KEY_ENV;

/// The resolved model settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub base_url: String,
    pub name: String,
    /// Name of the env variable holding the API key.
    pub api_key_env: String,
    /// Its value (not shown anywhere; redacted from transcripts).
    pub api_key: Option<String>,
}

/// Values given on the command line.
#[derive(Debug, Clone, Default)]
pub struct ModelOverrides {
    pub model: Option<String>,
    pub base_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct SettingsModel {
    base_url: Option<String>,
    name: Option<String>,
    api_key_env: Option<String>,
}

impl ModelConfig {
    /// Resolve from the settings file, the environment and the flags.
    pub fn resolve(overrides: &ModelOverrides) -> anyhow::Result<Self> {
        let file = cst_config::settings::settings_path()?;
        let config = Self::resolve_with(&file, overrides, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))?;
        config.remember_secrets();
        Ok(config)
    }

    /// Tell [`cst_config::secrets`] about the key: its variable never reaches a child process,
    /// its value is redacted from every output.
    pub fn remember_secrets(&self) {
        cst_config::secrets::remember_var(&self.api_key_env);
        if let Some(k) = &self.api_key {
            cst_config::secrets::remember(k);
        }
    }

    /// Same as [`ModelConfig::resolve`] with an explicit settings file and env lookup.
    pub fn resolve_with(
        settings: &Path,
        overrides: &ModelOverrides,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        let from_file = read_settings_model(settings)?;
        let base_url = overrides
            .base_url
            .clone()
            .or_else(|| env("CST_BASE_URL"))
            // What the OpenAI SDKs and Codex read: a user who set it pointed elsewhere, and the
            // key must go there, never to the default URL.
            .or_else(|| env("OPENAI_BASE_URL"))
            .or(from_file.base_url)
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let name = overrides
            .model
            .clone()
            .or_else(|| env("CST_MODEL"))
            .or(from_file.name)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no model configured: set `model.name` in {}, the env variable CST_MODEL, or pass --model",
                    settings.display()
                )
            })?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            anyhow::bail!("model base URL `{base_url}` must start with http:// or https://");
        }
        let api_key_env = from_file.api_key_env.unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let api_key = env(&api_key_env);
        Ok(Self {
            base_url,
            name,
            api_key_env,
            api_key,
        })
    }
}

/// Read the `model` key of settings.json; a missing file is no error, a broken one is.
fn read_settings_model(file: &Path) -> anyhow::Result<SettingsModel> {
    let settings = cst_config::settings::Settings::load_from(file)?;
    match settings.values.get("model") {
        None | Some(serde_json::Value::Null) => Ok(SettingsModel::default()),
        Some(m) => serde_json::from_value(m.clone()).map_err(|e| {
            anyhow::anyhow!(
                "{}: key `model` must be {{\"base_url\", \"name\", \"api_key_env\"}} strings: {e}",
                file.display()
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_flags_env_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"model":{"base_url":"http://file/v1","name":"file-model","api_key_env":"MY_KEY"}}"#,
        )
        .unwrap();
        let env = |k: &str| match k {
            "CST_MODEL" => Some("env-model".to_string()),
            "MY_KEY" => Some("sekrit".to_string()),
            _ => None,
        };
        let c = ModelConfig::resolve_with(&file, &ModelOverrides::default(), env).unwrap();
        assert_eq!(c.name, "env-model");
        assert_eq!(c.base_url, "http://file/v1");
        assert_eq!(c.api_key.as_deref(), Some("sekrit"));
        let o = ModelOverrides {
            model: Some("flag".into()),
            base_url: Some("http://flag".into()),
        };
        let c = ModelConfig::resolve_with(&file, &o, env).unwrap();
        assert_eq!((c.name.as_str(), c.base_url.as_str()), ("flag", "http://flag"));
    }

    /// Issue 14 item 1: `OPENAI_BASE_URL` is read below `CST_BASE_URL` and `--base-url`, above
    /// the settings file and the default.
    #[test]
    fn openai_base_url_is_honoured_below_ours() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, r#"{"model":{"name":"m"}}"#).unwrap();
        let with = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let url = |vars, o: &ModelOverrides| ModelConfig::resolve_with(&file, o, with(vars)).unwrap().base_url;
        let none = ModelOverrides::default();
        assert_eq!(url(&[], &none), DEFAULT_BASE_URL);
        assert_eq!(url(&[("OPENAI_BASE_URL", "http://proxy/v1")], &none), "http://proxy/v1");
        assert_eq!(
            url(
                &[
                    ("OPENAI_BASE_URL", "http://proxy/v1"),
                    ("CST_BASE_URL", "http://ours/v1")
                ],
                &none
            ),
            "http://ours/v1"
        );
        let flag = ModelOverrides {
            base_url: Some("http://flag/v1".into()),
            ..ModelOverrides::default()
        };
        assert_eq!(url(&[("OPENAI_BASE_URL", "http://proxy/v1")], &flag), "http://flag/v1");
        std::fs::write(&file, r#"{"model":{"name":"m","base_url":"http://file/v1"}}"#).unwrap();
        assert_eq!(url(&[("OPENAI_BASE_URL", "http://proxy/v1")], &none), "http://proxy/v1");
    }

    #[test]
    fn broken_settings_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, r#"{"model": 3}"#).unwrap();
        let err = ModelConfig::resolve_with(&file, &ModelOverrides::default(), |_| None).unwrap_err();
        assert!(err.to_string().contains("settings.json"), "{err}");
        let missing = dir.path().join("none.json");
        let err = ModelConfig::resolve_with(&missing, &ModelOverrides::default(), |_| None).unwrap_err();
        assert!(err.to_string().contains("no model configured"), "{err}");
    }
}
