//! Choosing the model for a session from `--model` (or a worker's run), settings and the
//! environment. `provider::config::resolve` decides; this adds request recording for
//! scripted models.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use crate::provider::Provider;
use crate::provider::config;
use crate::provider::scripted::{DEMO_SCRIPT, ScriptedProvider};

/// The chosen model.
pub(crate) struct ChosenModel {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model name sent to it.
    pub model: String,
    /// Whether this is the built-in demo.
    pub is_demo: bool,
}

/// Resolves `--model` (or its absence) to a provider.
pub(crate) fn choose(spec: Option<&str>, record: Option<PathBuf>) -> anyhow::Result<ChosenModel> {
    // The binary keeps no request in memory; `--record-requests` appends them to a file.
    let with_record = |p: ScriptedProvider| match &record {
        Some(path) => p.without_memory().record_to(path.clone()),
        None => p.without_memory(),
    };
    if let Some(path) = spec.and_then(|s| s.strip_prefix("script:")) {
        let p = ScriptedProvider::from_file(Path::new(path)).context("--model script:PATH")?;
        let model = p.model().unwrap_or("script").to_string();
        return Ok(ChosenModel {
            provider: Arc::new(with_record(p)),
            model,
            is_demo: false,
        });
    }
    let resolved = config::resolve(spec, &|k| std::env::var(k).ok())?;
    if resolved.is_demo {
        let script = ScriptedProvider::parse(DEMO_SCRIPT, Path::new("built-in demo"))?;
        return Ok(ChosenModel {
            provider: Arc::new(with_record(ScriptedProvider::new(script))),
            model: "demo".into(),
            is_demo: true,
        });
    }
    Ok(ChosenModel {
        provider: resolved.provider,
        model: resolved.model,
        is_demo: false,
    })
}
