//! Options that `exec` and the interactive session share: the provider, and reopening a
//! session from its transcript.

use std::path::Path;

use cst_core::model::{ModelConfig, ModelOverrides};
use cst_core::resume;

#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// A provider of settings.json `providers` (its base URL, wire API, key and headers).
    #[arg(long, value_name = "NAME", env = "CST_PROVIDER")]
    pub provider: Option<String>,
    /// Reopen this workspace's last session from its transcript.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_last: bool,
    /// Reopen the session with this id (a folder of `.agent/sessions/`).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
}

impl SessionArgs {
    /// The session to reopen, if asked for; `Err` says why it cannot be.
    pub fn resumed(&self, workspace: &Path) -> Result<Option<resume::Resumed>, String> {
        let id = match (&self.resume, self.continue_last) {
            (Some(id), _) => id.clone(),
            (None, true) => resume::last_session_id(workspace).ok_or_else(|| {
                format!(
                    "no session to continue in {}; start a new one without --continue",
                    workspace.join(".agent/sessions").display()
                )
            })?,
            (None, false) => return Ok(None),
        };
        resume::load(workspace, &id).map(Some)
    }

    /// The model of the session: `--provider`, `--model` and `--base-url` over settings; a
    /// reopened session keeps its model unless `--model` says otherwise.
    pub fn model_config(
        &self,
        model: Option<String>,
        base_url: Option<String>,
        resumed: Option<&resume::Resumed>,
    ) -> anyhow::Result<ModelConfig> {
        ModelConfig::resolve(&ModelOverrides {
            model: model.or_else(|| resumed.map(|r| r.model.clone())),
            base_url,
            provider: self.provider.clone(),
        })
    }
}
