//! Choosing a provider: from `--model` (or the `model` setting) and the environment.
//!
//! `spec` forms: `anthropic:NAME`, `openai:NAME` (an empty NAME means the default
//! model), `script:PATH` (a `ScriptedProvider` file), `demo` (the built-in script), or a
//! bare model name starting `claude` (Anthropic) or `gpt`/`o1`/`o3`/`o4` (OpenAI).
//! Without a spec: Anthropic's default model if `ANTHROPIC_API_KEY` is set, else
//! OpenAI's if `OPENAI_API_KEY` is set, else the built-in demo.
//!
//! Variables: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` (default
//! `https://api.anthropic.com`), `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default
//! `https://api.openai.com/v1`), `CREW_MAX_RETRIES` (default 8). Empty values count as
//! unset. An explicitly chosen provider without its key is an error naming the
//! variable — except OpenAI with a custom `OPENAI_BASE_URL`: local servers (Ollama,
//! vLLM, llama.cpp) need no key, so none is sent; a server that does need one answers
//! 401, reported with "check OPENAI_API_KEY".

use std::path::Path;
use std::sync::Arc;

use super::anthropic::{self, AnthropicProvider};
use super::http::HttpClient;
use super::openai::{self, OpenAiProvider};
use super::retry::RetryPolicy;
use super::scripted::{DEMO_SCRIPT, ScriptedProvider};
use super::{Provider, ProviderError};

/// The model used with Anthropic when none is named.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model used with OpenAI when none is named.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";

/// A ready provider and the model to ask it for.
#[derive(Clone)]
pub struct Resolved {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model name to put in `ModelRequest::model`.
    pub model: String,
    /// Whether this is the built-in demo (no real model).
    pub is_demo: bool,
    /// For display: `anthropic:claude-sonnet-4-5`, `openai:gpt-4.1`, `script:PATH`, `demo`.
    pub label: String,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .field("is_demo", &self.is_demo)
            .field("label", &self.label)
            .finish()
    }
}

/// Resolves `spec` (from `--model` or settings) with `env` (usually
/// `|k| std::env::var(k).ok()`) into a provider.
pub fn resolve(
    spec: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ProviderError> {
    let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let Some(spec) = spec else {
        if var("ANTHROPIC_API_KEY").is_some() {
            return anthropic_provider(DEFAULT_ANTHROPIC_MODEL, &var);
        }
        if var("OPENAI_API_KEY").is_some() {
            return openai_provider(DEFAULT_OPENAI_MODEL, &var);
        }
        return Ok(demo());
    };
    if let Some(model) = claude_alias(spec) {
        return anthropic_provider(model, &var);
    }
    match spec.split_once(':') {
        Some(("anthropic", name)) => {
            anthropic_provider(or_default(name, DEFAULT_ANTHROPIC_MODEL), &var)
        }
        Some(("openai", name)) => openai_provider(or_default(name, DEFAULT_OPENAI_MODEL), &var),
        Some(("script", path)) => script(path),
        _ if spec == "demo" => Ok(demo()),
        _ if spec == "anthropic" => anthropic_provider(DEFAULT_ANTHROPIC_MODEL, &var),
        _ if spec == "openai" => openai_provider(DEFAULT_OPENAI_MODEL, &var),
        _ if spec.starts_with("claude") => anthropic_provider(spec, &var),
        _ if ["gpt", "o1", "o3", "o4"]
            .iter()
            .any(|p| spec.starts_with(p)) =>
        {
            openai_provider(spec, &var)
        }
        _ => Err(ProviderError::Config(format!(
            "--model {spec}: unknown model; use a model name (claude-…, gpt-…), an alias \
             (sonnet, opus, haiku), anthropic:NAME, openai:NAME, script:PATH or demo"
        ))),
    }
}

/// Claude Code's model aliases: the current model of each family.
fn claude_alias(spec: &str) -> Option<&'static str> {
    match spec {
        "sonnet" => Some(DEFAULT_ANTHROPIC_MODEL),
        "opus" => Some("claude-opus-4-5"),
        "haiku" => Some("claude-haiku-4-5"),
        _ => None,
    }
}

fn or_default<'a>(name: &'a str, default: &'a str) -> &'a str {
    if name.trim().is_empty() {
        default
    } else {
        name.trim()
    }
}

fn http(var: &dyn Fn(&str) -> Option<String>) -> Result<HttpClient, ProviderError> {
    let mut policy = RetryPolicy::default();
    if let Some(raw) = var("CREW_MAX_RETRIES") {
        policy.max_retries = raw.trim().parse().map_err(|_| {
            ProviderError::Config(format!(
                "CREW_MAX_RETRIES={raw} is not a whole number; set it to e.g. 8, or unset it"
            ))
        })?;
    }
    Ok(HttpClient::new()?.with_policy(policy))
}

fn anthropic_provider(
    model: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ProviderError> {
    // As in Claude Code, a base URL of one's own (a gateway, a local server) may need no key.
    let custom_base = var("ANTHROPIC_BASE_URL");
    let key = match (var("ANTHROPIC_API_KEY"), &custom_base) {
        (Some(key), _) => key,
        (None, Some(_)) => String::new(),
        (None, None) => {
            return Err(ProviderError::Config(format!(
                "model anthropic:{model} needs ANTHROPIC_API_KEY; set it (or ANTHROPIC_BASE_URL \
                 for a server that needs no key), or choose another --model"
            )));
        }
    };
    let base = custom_base.unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.into());
    check_url(&base, "ANTHROPIC_BASE_URL")?;
    Ok(Resolved {
        provider: Arc::new(AnthropicProvider::new(http(var)?, &base, &key)),
        model: model.to_string(),
        is_demo: false,
        label: format!("anthropic:{model}"),
    })
}

fn openai_provider(
    model: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ProviderError> {
    let custom_base = var("OPENAI_BASE_URL");
    let key = var("OPENAI_API_KEY");
    if key.is_none() && custom_base.is_none() {
        return Err(ProviderError::Config(format!(
            "model openai:{model} needs OPENAI_API_KEY; set it (or OPENAI_BASE_URL for a local \
             server that needs no key), or choose another --model"
        )));
    }
    let base = custom_base.unwrap_or_else(|| openai::DEFAULT_BASE_URL.into());
    check_url(&base, "OPENAI_BASE_URL")?;
    Ok(Resolved {
        provider: Arc::new(OpenAiProvider::new(http(var)?, &base, key.as_deref())),
        model: model.to_string(),
        is_demo: false,
        label: format!("openai:{model}"),
    })
}

fn check_url(url: &str, variable: &str) -> Result<(), ProviderError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ProviderError::Config(format!(
            "{variable}={url} is not an http(s) URL; set it like https://host/path or unset it"
        )))
    }
}

fn script(path: &str) -> Result<Resolved, ProviderError> {
    let provider = ScriptedProvider::from_file(Path::new(path))
        .map_err(|e| ProviderError::Config(format!("--model script:{path}: {e}")))?
        .without_memory();
    Ok(Resolved {
        model: provider.model().unwrap_or("script").to_string(),
        provider: Arc::new(provider),
        is_demo: false,
        label: format!("script:{path}"),
    })
}

fn demo() -> Resolved {
    // The demo script is compiled in and checked by scripted::tests::demo_script_parses;
    // an empty script is the harmless fallback should that ever regress.
    let script = ScriptedProvider::parse(DEMO_SCRIPT, Path::new("demo.json")).unwrap_or_default();
    Resolved {
        provider: Arc::new(ScriptedProvider::new(script).without_memory()),
        model: "demo".into(),
        is_demo: true,
        label: "demo".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn err(spec: Option<&str>, pairs: &[(&str, &str)]) -> String {
        resolve(spec, &env(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn no_spec_prefers_anthropic_then_openai_then_demo() {
        let r = resolve(
            None,
            &env(&[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]),
        )
        .unwrap();
        assert_eq!(
            (r.provider.name(), r.model.as_str()),
            ("anthropic", DEFAULT_ANTHROPIC_MODEL)
        );
        let r = resolve(
            None,
            &env(&[("ANTHROPIC_API_KEY", ""), ("OPENAI_API_KEY", "o")]),
        )
        .unwrap();
        assert_eq!(r.label, "openai:gpt-4.1");
        let r = resolve(None, &env(&[])).unwrap();
        assert!(r.is_demo);
        assert_eq!(r.provider.name(), "script");
    }

    #[test]
    fn explicit_specs() {
        let e = env(&[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]);
        let r = resolve(Some("openai:gpt-5"), &e).unwrap();
        assert_eq!((r.provider.name(), r.model.as_str()), ("openai", "gpt-5"));
        let r = resolve(Some("anthropic:"), &e).unwrap();
        assert_eq!(r.model, DEFAULT_ANTHROPIC_MODEL);
        let r = resolve(Some("claude-opus-4-1"), &e).unwrap();
        assert_eq!(r.label, "anthropic:claude-opus-4-1");
        assert!(resolve(Some("demo"), &e).unwrap().is_demo);
    }

    #[test]
    fn missing_keys_name_the_variable() {
        assert!(err(Some("anthropic:x"), &[("OPENAI_API_KEY", "o")]).contains("ANTHROPIC_API_KEY"));
        assert!(err(Some("openai:x"), &[("ANTHROPIC_API_KEY", "a")]).contains("OPENAI_API_KEY"));
        assert!(err(Some("mistral:x"), &[]).contains("anthropic:NAME"));
        assert!(
            err(
                Some("anthropic:x"),
                &[
                    ("ANTHROPIC_API_KEY", "a"),
                    ("ANTHROPIC_BASE_URL", "localhost:1")
                ]
            )
            .contains("ANTHROPIC_BASE_URL")
        );
        assert!(
            err(
                Some("openai:x"),
                &[("OPENAI_API_KEY", "o"), ("CREW_MAX_RETRIES", "many")]
            )
            .contains("CREW_MAX_RETRIES")
        );
    }

    #[test]
    fn claude_codes_model_names_work_without_a_prefix() {
        let e = env(&[("ANTHROPIC_API_KEY", "a")]);
        for (spec, model) in [
            ("sonnet", DEFAULT_ANTHROPIC_MODEL),
            ("opus", "claude-opus-4-5"),
            ("haiku", "claude-haiku-4-5"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
        ] {
            let r = resolve(Some(spec), &e).unwrap();
            assert_eq!((r.provider.name(), r.model.as_str()), ("anthropic", model));
        }
        // A base URL of one's own needs no key, as in Claude Code; without either, the
        // error names both.
        let local = env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")]);
        assert_eq!(
            resolve(Some("sonnet"), &local).unwrap().label,
            "anthropic:claude-sonnet-4-5"
        );
        let e = err(Some("haiku"), &[]);
        assert!(
            e.contains("ANTHROPIC_API_KEY") && e.contains("ANTHROPIC_BASE_URL"),
            "{e}"
        );
    }

    #[test]
    fn local_openai_server_needs_no_key() {
        let r = resolve(
            Some("openai:llama3"),
            &env(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]),
        )
        .unwrap();
        assert_eq!(r.label, "openai:llama3");
    }

    #[test]
    fn script_spec_loads_the_file_or_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, r#"{"turns":[{"text":"hi"}]}"#).unwrap();
        let spec = format!("script:{}", path.display());
        let r = resolve(Some(&spec), &env(&[])).unwrap();
        assert_eq!((r.provider.name(), r.is_demo), ("script", false));
        let missing = format!("script:{}", dir.path().join("nope.json").display());
        assert!(err(Some(&missing), &[]).contains("nope.json"));
    }
}
