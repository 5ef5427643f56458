//! The environment commands inherit: scrubbed of secrets by default.
//!
//! A model that can run `env` must not read the user's API keys. Every command (confined
//! or not) therefore starts without provider keys and without any variable whose name
//! looks like a secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`,
//! case-insensitive). The `commandEnv.passthrough` setting names variables that are
//! passed through anyway (`"commandEnv": {"passthrough": ["NPM_TOKEN"]}`).
//!
//! The pass-through list is process-wide: settings are loaded once per session, and
//! every command builder (foreground and background) must apply the same list even
//! where no tool context reaches it.

use std::ffi::OsStr;
use std::sync::RwLock;

/// Variables removed whatever their name: provider keys and credential helpers whose
/// names do not match a pattern (an SSH agent socket signs with the user's keys).
const ALWAYS_SECRET: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_OPENAI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "SSH_AUTH_SOCK",
];

/// Name fragments (upper case) that mark a variable as a secret.
const SECRET_PATTERNS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

static PASSTHROUGH: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Sets the variables passed through to commands despite looking like secrets (the
/// `commandEnv.passthrough` setting). Replaces the previous list.
pub fn set_passthrough(names: Vec<String>) {
    match PASSTHROUGH.write() {
        Ok(mut list) => *list = names,
        Err(poisoned) => *poisoned.into_inner() = names,
    }
}

/// Whether a variable of this name is withheld from commands (before pass-through).
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ALWAYS_SECRET.contains(&upper.as_str()) || SECRET_PATTERNS.iter().any(|p| upper.contains(p))
}

/// The names in the current environment that a command must not inherit.
pub fn withheld() -> Vec<std::ffi::OsString> {
    let pass = match PASSTHROUGH.read() {
        Ok(list) => list.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| withhold(k, &pass))
        .collect()
}

/// A name that is not valid UTF-8 cannot be matched against the pass-through list and
/// is withheld when its lossy form looks like a secret.
fn withhold(name: &OsStr, pass: &[String]) -> bool {
    let text = name.to_string_lossy();
    is_secret(&text) && !pass.iter().any(|p| name.to_str() == Some(p.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised_by_name_case_insensitively() {
        for s in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "my_password",
            "Db_Secret",
            "AWS_ACCESS_KEY_ID",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret(s), "{s}");
        }
        for s in ["PATH", "HOME", "LANG", "TERM", "CARGO_HOME", "USER"] {
            assert!(!is_secret(s), "{s}");
        }
    }

    #[test]
    fn passthrough_names_are_kept_exactly() {
        let pass = vec!["NPM_TOKEN".to_string()];
        assert!(!withhold(OsStr::new("NPM_TOKEN"), &pass));
        assert!(withhold(OsStr::new("npm_token"), &pass));
        assert!(withhold(OsStr::new("GITHUB_TOKEN"), &pass));
        assert!(!withhold(OsStr::new("PATH"), &pass));
    }
}
