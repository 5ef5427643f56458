//! Secrets kept out of what a live session shows outside its process: the values of the
//! environment variables that hold keys, tokens and passwords (`ANTHROPIC_API_KEY`,
//! `GITHUB_TOKEN`, …) are replaced wherever they appear in a line the control socket
//! sends, whether a user pasted one into a task or a command printed one.

/// What replaces a secret.
pub(crate) const MASK: &str = "[redacted]";

/// The shortest value taken for a secret: shorter ones (`1`, `true`) would mask words.
const MIN_LEN: usize = 8;

/// The secret values to mask, as they appear in JSON text (raw and escaped).
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
}

/// Whether an environment variable's name says it holds a secret.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "COOKIE",
    ]
    .iter()
    .any(|word| upper.contains(word))
}

impl Secrets {
    /// The secrets in this process's environment.
    pub(crate) fn from_env() -> Secrets {
        Secrets::from_vars(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// The secrets among `vars` (name, value).
    pub(crate) fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Secrets {
        let mut values = Vec::new();
        for (name, value) in vars {
            if !secret_name(&name) || value.len() < MIN_LEN {
                continue;
            }
            // As JSON writes it, so an escaped quote or backslash matches too.
            let escaped = serde_json::to_string(&value).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_string();
            if escaped != value {
                values.push(escaped);
            }
            values.push(value);
        }
        // Longer first: a secret that contains another is masked whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets { values }
    }

    /// Whether `text` holds any of the secrets.
    pub(crate) fn found_in(&self, text: &str) -> bool {
        self.values.iter().any(|v| text.contains(v.as_str()))
    }

    /// `text` with every secret masked.
    pub(crate) fn mask(&self, text: String) -> String {
        let mut text = text;
        for v in &self.values {
            if text.contains(v.as_str()) {
                text = text.replace(v.as_str(), MASK);
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tokens_are_masked_and_other_variables_are_not() {
        let secrets = Secrets::from_vars([
            (
                "ANTHROPIC_API_KEY".to_string(),
                "sk-ant-fake-1234567890".to_string(),
            ),
            ("GH_TOKEN".to_string(), "ghp_\"quoted\"secret".to_string()),
            ("HOME".to_string(), "/home/someone".to_string()),
            ("SHORT_KEY".to_string(), "abc".to_string()),
        ]);
        let line = serde_json::json!({
            "text": "key sk-ant-fake-1234567890 and ghp_\"quoted\"secret in /home/someone abc"
        })
        .to_string();
        let masked = secrets.mask(line);
        assert!(!masked.contains("sk-ant-fake"), "{masked}");
        assert!(!masked.contains("quoted"), "{masked}");
        assert!(masked.contains("/home/someone abc"), "{masked}");
        assert_eq!(masked.matches(MASK).count(), 2, "{masked}");
    }
}
