//! Which model to talk to, and over which wire API. Precedence: flags (`--provider`, `--model`,
//! `--base-url`) > env (`CST_PROVIDER`, `CST_MODEL`, `CST_BASE_URL`, then `OPENAI_BASE_URL`
//! when no provider names a URL) > `settings.json` in the config dir > defaults.
//!
//! ```json
//! { "model": { "name": "qwen3:8b", "base_url": "http://127.0.0.1:11434/v1", "api_key_env": "OLLAMA_KEY" } }
//! ```
//!
//! Named providers (docs/models.md has recipes), one of them the default:
//!
//! ```json
//! { "default_provider": "anthropic",
//!   "providers": {
//!     "anthropic": { "api": "messages", "base_url": "https://api.anthropic.com/v1",
//!                    "api_key_env": "ANTHROPIC_API_KEY", "model": "claude-sonnet-4-5" },
//!     "azure": { "api": "chat", "base_url": "https://x.openai.azure.com/openai/deployments/gpt",
//!                "api_key_env": "AZURE_OPENAI_KEY", "headers": { "api-key": "${AZURE_OPENAI_KEY}" },
//!                "query_params": { "api-version": "2025-04-01-preview" } } } }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_API_KEY_ENV: &str = cst_config::secrets::DEFAULT_API_KEY_ENV;

/// The wire API a provider speaks; chosen in its profile, never guessed from a model name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    /// OpenAI Chat Completions and every server compatible with it.
    #[default]
    Chat,
    /// OpenAI Responses (`/responses`).
    Responses,
    /// Anthropic Messages (`/messages`).
    Messages,
}

impl WireApi {
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::Chat => "chat",
            WireApi::Responses => "responses",
            WireApi::Messages => "messages",
        }
    }
}

/// The resolved model settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelConfig {
    pub base_url: String,
    pub name: String,
    /// Name of the env variable holding the API key.
    pub api_key_env: String,
    /// Its value (not shown anywhere; redacted from transcripts).
    pub api_key: Option<String>,
    pub api: WireApi,
    /// The provider profile it came from, if any.
    pub provider: Option<String>,
    /// Extra request headers (values expanded from `${VAR}`, and then secrets).
    pub headers: Vec<(String, String)>,
    /// Query parameters added to the endpoint URL (Azure's `api-version`).
    pub query_params: Vec<(String, String)>,
    /// The model's context window in tokens, when the profile says (else a table of known
    /// models decides).
    pub context_window: Option<u64>,
    /// Most tokens of one answer, when the profile says (Messages requires a value and sends
    /// 8192 otherwise; Responses sends `max_output_tokens` only when set).
    pub max_output_tokens: Option<u64>,
}

/// Values given on the command line.
#[derive(Debug, Clone, Default)]
pub struct ModelOverrides {
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub provider: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsModel {
    base_url: Option<String>,
    name: Option<String>,
    api_key_env: Option<String>,
    context_window: Option<u64>,
}

/// One named provider of settings.json `providers`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Provider {
    base_url: Option<String>,
    #[serde(default)]
    api: WireApi,
    api_key_env: Option<String>,
    /// The model used with this provider unless `--model` / `CST_MODEL` says otherwise.
    model: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    query_params: BTreeMap<String, String>,
    context_window: Option<u64>,
    max_output_tokens: Option<u64>,
}

/// Where the three API kinds are by default, for a provider without `base_url`.
fn default_base_url(api: WireApi) -> &'static str {
    match api {
        WireApi::Chat | WireApi::Responses => DEFAULT_BASE_URL,
        WireApi::Messages => "https://api.anthropic.com/v1",
    }
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
        // Extra headers carry credentials (Azure's `api-key`, a proxy's token).
        for (_, v) in &self.headers {
            cst_config::secrets::remember(v);
        }
    }

    /// Same as [`ModelConfig::resolve`] with an explicit settings file and env lookup.
    pub fn resolve_with(
        settings: &Path,
        overrides: &ModelOverrides,
        env: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Self> {
        let (from_file, providers, default_provider) = read_settings(settings)?;
        let provider_name = overrides
            .provider
            .clone()
            .or_else(|| env("CST_PROVIDER"))
            .or(default_provider);
        let provider = match &provider_name {
            None => None,
            Some(name) => Some(providers.get(name).cloned().ok_or_else(|| {
                let known: Vec<&str> = providers.keys().map(String::as_str).collect();
                anyhow::anyhow!(
                    "no provider `{name}` in {} (`providers` has: {})",
                    settings.display(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )
            })?),
        };
        let p = provider.clone().unwrap_or_default();
        let base_url = overrides
            .base_url
            .clone()
            .or_else(|| env("CST_BASE_URL"))
            .or(p.base_url.clone())
            // What the OpenAI SDKs and Codex read: a user who set it pointed elsewhere, and the
            // key must go there, never to the default URL. A provider that names its URL wins.
            .or_else(|| {
                if provider.is_none() {
                    env("OPENAI_BASE_URL")
                } else {
                    None
                }
            })
            .or(if provider.is_none() {
                from_file.base_url.clone()
            } else {
                None
            })
            .unwrap_or_else(|| default_base_url(p.api).to_string());
        let name = overrides
            .model
            .clone()
            .or_else(|| env("CST_MODEL"))
            .or(p.model.clone())
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
        let api_key_env = p
            .api_key_env
            .clone()
            .or(from_file.api_key_env)
            .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_string());
        let api_key = env(&api_key_env);
        let where_ = |field: &str| {
            format!(
                "{}: providers.{}.{field}",
                settings.display(),
                provider_name.as_deref().unwrap_or("")
            )
        };
        let expand = |field: String, value: &str| {
            cst_extensions::mcp::config::expand_vars(value, &|k| env(k))
                .map_err(|var| anyhow::anyhow!("{}: {var} is not a set environment variable", where_(&field)))
        };
        let mut headers = Vec::new();
        for (k, v) in &p.headers {
            headers.push((k.clone(), expand(format!("headers.{k}"), v)?));
        }
        let mut query_params = Vec::new();
        for (k, v) in &p.query_params {
            query_params.push((k.clone(), expand(format!("query_params.{k}"), v)?));
        }
        Ok(Self {
            base_url,
            name,
            api_key_env,
            api_key,
            api: p.api,
            provider: provider_name,
            headers,
            query_params,
            context_window: p.context_window.or(from_file.context_window),
            max_output_tokens: p.max_output_tokens,
        })
    }
}

/// The `model`, `providers` and `default_provider` keys of settings.json; a missing file is no
/// error, a broken one is (naming the key).
fn read_settings(file: &Path) -> anyhow::Result<(SettingsModel, BTreeMap<String, Provider>, Option<String>)> {
    let settings = cst_config::settings::Settings::load_from(file)?;
    let model = match settings.values.get("model") {
        None | Some(serde_json::Value::Null) => SettingsModel::default(),
        Some(m) => serde_json::from_value(m.clone()).map_err(|e| {
            anyhow::anyhow!(
                "{}: key `model` must be {{\"base_url\", \"name\", \"api_key_env\", \"context_window\"}}: {e}",
                file.display()
            )
        })?,
    };
    let providers = match settings.values.get("providers") {
        None | Some(serde_json::Value::Null) => BTreeMap::new(),
        Some(p) => serde_json::from_value(p.clone()).map_err(|e| {
            anyhow::anyhow!(
                "{}: key `providers` must map names to {{\"api\": \"chat\"|\"responses\"|\"messages\", \"base_url\", \"api_key_env\", \"model\", \"headers\", \"query_params\", \"context_window\", \"max_output_tokens\"}}: {e}",
                file.display()
            )
        })?,
    };
    let default = match settings.values.get("default_provider") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(_) => anyhow::bail!("{}: key `default_provider` must be a provider's name", file.display()),
    };
    Ok((model, providers, default))
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
            ..ModelOverrides::default()
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

    /// Issue 16 item 2: named providers, a default, `--provider` / `CST_PROVIDER` to choose.
    #[test]
    fn providers_are_chosen_by_flag_env_or_default() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"default_provider": "claude",
                "model": {"name": "plain", "base_url": "http://plain/v1"},
                "providers": {
                  "claude": {"api": "messages", "api_key_env": "ANTHROPIC_API_KEY", "model": "claude-sonnet-4-5"},
                  "azure": {"api": "chat", "base_url": "https://x.openai.azure.com/openai/deployments/gpt",
                            "api_key_env": "AZ_KEY", "headers": {"api-key": "${AZ_KEY}"},
                            "query_params": {"api-version": "2025-04-01-preview"}, "context_window": 128000},
                  "codex": {"api": "responses", "model": "gpt-5-codex", "max_output_tokens": 4000}}}"#,
        )
        .unwrap();
        let env = |k: &str| match k {
            "ANTHROPIC_API_KEY" => Some("ant-key".to_string()),
            "AZ_KEY" => Some("az-secret".to_string()),
            "OPENAI_BASE_URL" => Some("http://proxy/v1".to_string()),
            _ => None,
        };
        let none = ModelOverrides::default();
        let c = ModelConfig::resolve_with(&file, &none, env).unwrap();
        assert_eq!(c.provider.as_deref(), Some("claude"));
        assert_eq!(c.api, WireApi::Messages);
        assert_eq!(c.base_url, "https://api.anthropic.com/v1");
        assert_eq!(
            (c.name.as_str(), c.api_key.as_deref()),
            ("claude-sonnet-4-5", Some("ant-key"))
        );

        let azure = ModelOverrides {
            provider: Some("azure".into()),
            model: Some("gpt-4.1".into()),
            ..ModelOverrides::default()
        };
        let c = ModelConfig::resolve_with(&file, &azure, env).unwrap();
        assert_eq!(c.api, WireApi::Chat);
        assert_eq!(c.name, "gpt-4.1");
        assert_eq!(c.headers, vec![("api-key".to_string(), "az-secret".to_string())]);
        assert_eq!(
            c.query_params,
            vec![("api-version".to_string(), "2025-04-01-preview".to_string())]
        );
        assert_eq!(c.context_window, Some(128_000));

        // A provider without a URL gets its API's default, never OPENAI_BASE_URL's proxy.
        let env_choice = |k: &str| {
            if k == "CST_PROVIDER" {
                Some("codex".to_string())
            } else {
                env(k)
            }
        };
        let c = ModelConfig::resolve_with(&file, &none, env_choice).unwrap();
        assert_eq!((c.api, c.base_url.as_str()), (WireApi::Responses, DEFAULT_BASE_URL));
        assert_eq!(c.max_output_tokens, Some(4000));
        let body = crate::model::responses::request_body(&c, &[], &[]);
        assert_eq!(body["max_output_tokens"], 4000);

        let unknown = ModelOverrides {
            provider: Some("nope".into()),
            ..ModelOverrides::default()
        };
        let err = ModelConfig::resolve_with(&file, &unknown, env).unwrap_err().to_string();
        assert!(
            err.contains("no provider `nope`") && err.contains("azure, claude, codex"),
            "{err}"
        );
    }

    #[test]
    fn bad_provider_entries_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"providers": {"x": {"api": "grpc", "model": "m"}}, "default_provider": "x"}"#,
        )
        .unwrap();
        let err = ModelConfig::resolve_with(&file, &ModelOverrides::default(), |_| None).unwrap_err();
        assert!(err.to_string().contains("providers"), "{err}");
        std::fs::write(
            &file,
            r#"{"providers": {"x": {"model": "m", "headers": {"api-key": "${MISSING_VAR}"}}}, "default_provider": "x"}"#,
        )
        .unwrap();
        let err = ModelConfig::resolve_with(&file, &ModelOverrides::default(), |_| None).unwrap_err();
        assert!(err.to_string().contains("providers.x.headers.api-key"), "{err}");
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
