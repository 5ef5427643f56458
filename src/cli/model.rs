//! Choosing the model for a run from `--model`, settings and the environment.
//! (HTTP providers arrive with issue 4; until then `script:PATH` and the demo.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

use crate::provider::Provider;
use crate::provider::scripted::{DEMO_SCRIPT, ScriptedProvider};

/// The chosen model.
pub struct ChosenModel {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model name sent to it.
    pub model: String,
    /// Whether this is the built-in demo.
    pub is_demo: bool,
}

/// Resolves `--model` (or its absence) to a provider.
pub fn choose(spec: Option<&str>, record: Option<PathBuf>) -> anyhow::Result<ChosenModel> {
    let with_record = |p: ScriptedProvider| match &record {
        Some(path) => p.record_to(path.clone()),
        None => p,
    };
    match spec {
        Some(spec) => {
            if let Some(path) = spec.strip_prefix("script:") {
                let p =
                    ScriptedProvider::from_file(Path::new(path)).context("--model script:PATH")?;
                return Ok(ChosenModel {
                    provider: Arc::new(with_record(p)),
                    model: "script".into(),
                    is_demo: false,
                });
            }
            bail!("--model `{spec}`: unsupported model; use script:PATH")
        }
        None => {
            let script = ScriptedProvider::parse(DEMO_SCRIPT, Path::new("built-in demo"))?;
            Ok(ChosenModel {
                provider: Arc::new(with_record(ScriptedProvider::new(script))),
                model: "demo".into(),
                is_demo: true,
            })
        }
    }
}
