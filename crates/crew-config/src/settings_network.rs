//! The `sandbox.network` settings, read from the same files as the rest (Claude Code's
//! format, unchanged): `allowedDomains`, the hosts sandboxed commands may reach through
//! crew's proxy, and `allowLocalBinding`. Both widen what a command can do, so they are
//! taken from the user's own files (user and untracked local settings) only; a project's
//! shared file is ignored with a warning until trust pins its content. A value of the
//! wrong shape, or a host entry that cannot be used, is an error naming the file and the
//! field: dropping it silently would leave the user wondering why a host is blocked.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::host_pattern::HostPattern;
use crate::settings::Source;

/// The `sandbox.network` settings of the user's own layers, merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkSettings {
    /// `allowedDomains` of every own layer, in layer order, without repeats.
    pub allowed_domains: Vec<String>,
    /// `allowLocalBinding` in any own layer.
    pub allow_local_binding: bool,
}

/// A `sandbox.network` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("settings file {}, field {field}: {message}", path.display())]
pub struct NetworkSettingsError {
    /// The file.
    pub path: PathBuf,
    /// The field (`sandbox.network.allowedDomains[2]`).
    pub field: String,
    /// What is wrong and what to write.
    pub message: String,
}

/// What one file's `sandbox.network` asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct FileNetwork {
    allowed_domains: Vec<String>,
    allow_local_binding: Option<bool>,
}

impl NetworkSettings {
    /// Adds the `sandbox.network` of the file at `path` (its JSON is `doc`): merged when it is the user's own ([`Source::Own`]), else
    /// returned as warnings (what was ignored and where to put it instead).
    pub fn merge(
        &mut self,
        doc: &Value,
        path: &Path,
        source: Source,
    ) -> Result<Vec<String>, NetworkSettingsError> {
        let parsed = parse(doc, path)?;
        let mut warnings = Vec::new();
        if !source.is_own() {
            if !parsed.allowed_domains.is_empty() {
                warnings.push(format!(
                    "sandbox.network.allowedDomains {:?} is ignored in project settings (a \
                     cloned repository cannot open the network); set it in \
                     .crew/settings.local.json or ~/.crew/settings.json",
                    parsed.allowed_domains
                ));
            }
            if parsed.allow_local_binding == Some(true) {
                warnings.push(
                    "sandbox.network.allowLocalBinding is ignored in project settings; set it \
                     in .crew/settings.local.json or ~/.crew/settings.json"
                        .into(),
                );
            }
            return Ok(warnings);
        }
        for d in parsed.allowed_domains {
            if !self.allowed_domains.contains(&d) {
                self.allowed_domains.push(d);
            }
        }
        self.allow_local_binding |= parsed.allow_local_binding == Some(true);
        Ok(warnings)
    }
}

/// Reads `sandbox.network` of one file's JSON, checking every shape and host entry.
fn parse(doc: &Value, path: &Path) -> Result<FileNetwork, NetworkSettingsError> {
    let err = |field: String, message: String| NetworkSettingsError {
        path: path.to_path_buf(),
        field,
        message,
    };
    let Some(sandbox) = doc.get("sandbox") else {
        return Ok(FileNetwork::default());
    };
    let Some(network) = sandbox.get("network") else {
        return Ok(FileNetwork::default());
    };
    let Some(network) = network.as_object() else {
        return Err(err(
            "sandbox.network".into(),
            "must be an object, as in {\"allowedDomains\": [\"github.com\"]}".into(),
        ));
    };
    let mut out = FileNetwork::default();
    match network.get("allowedDomains") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let field = format!("sandbox.network.allowedDomains[{i}]");
                let Some(text) = item.as_str() else {
                    return Err(err(field, "must be a string such as \"github.com\"".into()));
                };
                if let Err(e) = HostPattern::parse(text) {
                    return Err(err(field, e.to_string()));
                }
                out.allowed_domains.push(text.trim().to_string());
            }
        }
        Some(_) => {
            return Err(err(
                "sandbox.network.allowedDomains".into(),
                "must be a list of host names, as in [\"github.com\", \"*.npmjs.org\"]".into(),
            ));
        }
    }
    match network.get("allowLocalBinding") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.allow_local_binding = Some(*b),
        Some(_) => {
            return Err(err(
                "sandbox.network.allowLocalBinding".into(),
                "must be true or false".into(),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(v: Value) -> Result<FileNetwork, NetworkSettingsError> {
        parse(&v, Path::new("/p/.crew/settings.local.json"))
    }

    #[test]
    fn the_network_fields_are_read_in_claude_codes_shape() {
        let got = p(json!({"sandbox": {"enabled": true, "network": {
            "allowedDomains": ["github.com", "*.npmjs.org", "localhost:8080"],
            "allowLocalBinding": true}}}))
        .unwrap();
        assert_eq!(
            got.allowed_domains,
            ["github.com", "*.npmjs.org", "localhost:8080"]
        );
        assert_eq!(got.allow_local_binding, Some(true));
        assert_eq!(
            p(json!({"sandbox": {"enabled": true}})).unwrap(),
            FileNetwork::default()
        );
        assert_eq!(p(json!({})).unwrap(), FileNetwork::default());
    }

    #[test]
    fn a_malformed_value_names_the_file_and_the_field() {
        for (doc, field) in [
            (
                json!({"sandbox": {"network": "github.com"}}),
                "sandbox.network",
            ),
            (
                json!({"sandbox": {"network": {"allowedDomains": "github.com"}}}),
                "sandbox.network.allowedDomains",
            ),
            (
                json!({"sandbox": {"network": {"allowedDomains": ["ok.com", 7]}}}),
                "sandbox.network.allowedDomains[1]",
            ),
            (
                json!({"sandbox": {"network": {"allowedDomains": ["https://github.com"]}}}),
                "sandbox.network.allowedDomains[0]",
            ),
            (
                json!({"sandbox": {"network": {"allowLocalBinding": "yes"}}}),
                "sandbox.network.allowLocalBinding",
            ),
        ] {
            let e = p(doc).unwrap_err();
            assert_eq!(e.field, field);
            let text = e.to_string();
            assert!(text.contains("/p/.crew/settings.local.json"), "{text}");
            assert!(text.contains(field), "{text}");
        }
    }

    #[test]
    fn only_the_users_own_files_widen_the_network() {
        let path = Path::new("/p/.crew/settings.json");
        let doc = json!({"sandbox": {"network": {
            "allowedDomains": ["evil.example"], "allowLocalBinding": true}}});
        let mut n = NetworkSettings::default();
        let warnings = n.merge(&doc, path, Source::Shared).unwrap();
        assert_eq!(
            n,
            NetworkSettings::default(),
            "a shared file granted nothing"
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("evil.example") && warnings[0].contains("ignored"));
        let own = json!({"sandbox": {"network": {"allowedDomains": ["github.com", "github.com"]}}});
        assert!(n.merge(&own, path, Source::Own).unwrap().is_empty());
        assert!(n.merge(&doc, path, Source::Own).unwrap().is_empty());
        assert_eq!(n.allowed_domains, ["github.com", "evil.example"]);
        assert!(n.allow_local_binding);
        // A malformed value is an error even in a file that would be ignored.
        let bad = json!({"sandbox": {"network": {"allowedDomains": [1]}}});
        assert!(n.merge(&bad, path, Source::Shared).is_err());
    }
}
