//! A plugin's manifest, `.claude-plugin/plugin.json`: `name` (required: letters, digits,
//! `-`, `_` and `.`), `version`, `description`, and the fields that only describe the
//! plugin (`author`, `homepage`, `repository`, `license`, `keywords`). Fields Claude Code
//! honours that crew does not (other component paths, `mcpServers`, `outputStyles`,
//! `lspServers`) and unknown fields each get a warning naming the file and the field.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The manifest's place inside a plugin.
pub(crate) const FILE: &str = ".claude-plugin/plugin.json";

/// Fields crew reads or that only describe the plugin.
const KNOWN: &[&str] = &[
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
];

/// Fields of Claude Code's manifest crew does not honour, and what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "commands",
        "crew reads only the plugin's commands/ folder; move the files there",
    ),
    (
        "agents",
        "crew reads only the plugin's agents/ folder; move the files there",
    ),
    (
        "skills",
        "crew reads only the plugin's skills/ folder; move the skills there",
    ),
    (
        "hooks",
        "crew reads only the plugin's hooks/hooks.json; move the hooks there",
    ),
    (
        "mcpServers",
        "crew starts no plugin's MCP servers; add them to .mcp.json or give them with --mcp-config",
    ),
    ("outputStyles", "crew has no output styles"),
    ("lspServers", "crew starts no language servers"),
];

/// A manifest as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// `name`.
    pub(crate) name: String,
    /// `version`.
    pub(crate) version: Option<String>,
    /// `description`.
    pub(crate) description: Option<String>,
    /// What crew ignored, each naming the file and the field.
    pub(crate) warnings: Vec<String>,
}

/// Why a manifest cannot be used; each names the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ManifestError {
    /// There is none.
    #[error(
        "{file}: no plugin manifest; a plugin is a directory holding .claude-plugin/plugin.json with at least {{\"name\": \"my-plugin\"}}"
    )]
    Missing {
        /// Where it should be.
        file: PathBuf,
    },
    /// It is not a small regular file inside the plugin.
    #[error("{file}: {why}")]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why (a link out of the plugin, not a regular file, too large).
        why: String,
    },
    /// It is not JSON.
    #[error("{file}: line {line}, column {column}: not JSON ({message}); fix the file")]
    NotJson {
        /// The file.
        file: PathBuf,
        /// Where.
        line: usize,
        /// Where.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// No `name`, or one that is not a string.
    #[error(
        "{file}: field `name` is missing or not a string; name the plugin (letters, digits, `-`, `_` and `.`)"
    )]
    NoName {
        /// The file.
        file: PathBuf,
    },
    /// A `name` that cannot name a plugin.
    #[error(
        "{file}: field `name`: `{name}` is not a plugin name; use letters, digits, `-`, `_` and `.` (not first), at most 64"
    )]
    BadName {
        /// The file.
        file: PathBuf,
        /// The name given.
        name: String,
    },
}

/// Whether `name` can name a plugin: ASCII letters, digits, `-`, `_` and `.`, not
/// starting with `.`, at most 64 (it becomes part of every item's name, `name:item`).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Reads the manifest of the plugin at `root` (canonical).
pub(crate) fn read(root: &Path) -> Result<Manifest, ManifestError> {
    let file = root.join(FILE);
    if std::fs::symlink_metadata(&file).is_err() {
        return Err(ManifestError::Missing { file });
    }
    let unreadable = |why: String| ManifestError::Unreadable {
        file: file.clone(),
        why,
    };
    let real = super::confine(root, &file).map_err(|e| unreadable(e.to_string()))?;
    let text = crate::front_matter::read(&real).map_err(|e| unreadable(e.to_string()))?;
    parse(&text, &file)
}

/// Parses a manifest's text (`file` names it in messages).
pub(crate) fn parse(text: &str, file: &Path) -> Result<Manifest, ManifestError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ManifestError::NotJson {
        file: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let Some(fields) = value.as_object() else {
        return Err(ManifestError::NoName {
            file: file.to_path_buf(),
        });
    };
    let name = fields
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ManifestError::NoName {
            file: file.to_path_buf(),
        })?
        .trim()
        .to_string();
    if !valid_name(&name) {
        return Err(ManifestError::BadName {
            file: file.to_path_buf(),
            name,
        });
    }
    let text_field = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let mut warnings = Vec::new();
    for key in fields.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        let advice = UNSUPPORTED
            .iter()
            .find(|(field, _)| field == key)
            .map_or("it is not one crew knows", |(_, advice)| advice);
        warnings.push(format!(
            "{}: field `{key}`: {advice}; it is ignored",
            file.display()
        ));
    }
    for key in ["version", "description"] {
        if fields.get(key).is_some_and(|v| !v.is_string()) {
            warnings.push(format!(
                "{}: field `{key}` is not a string; it is ignored",
                file.display()
            ));
        }
    }
    Ok(Manifest {
        name,
        version: text_field("version"),
        description: text_field("description"),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_manifest_reads_with_warnings_for_what_crew_ignores() {
        let text = r#"{"name": "pr-review-toolkit", "version": "1.2.0",
            "description": "Review PRs", "author": {"name": "A"}, "keywords": ["review"],
            "mcpServers": {"gh": {"command": "gh-mcp"}}, "commands": "./extra", "color": "red"}"#;
        let m = parse(text, Path::new("/p/.claude-plugin/plugin.json")).unwrap();
        assert_eq!(m.name, "pr-review-toolkit");
        assert_eq!(m.version.as_deref(), Some("1.2.0"));
        assert_eq!(m.description.as_deref(), Some("Review PRs"));
        let all = m.warnings.join("\n");
        assert_eq!(m.warnings.len(), 3, "{all}");
        assert!(all.contains("field `mcpServers`: crew starts no plugin's MCP servers"));
        assert!(all.contains("field `commands`: crew reads only the plugin's commands/"));
        assert!(all.contains("field `color`: it is not one crew knows; it is ignored"));
        assert!(
            m.warnings
                .iter()
                .all(|w| w.starts_with("/p/.claude-plugin/plugin.json: field `"))
        );
    }

    #[test]
    fn the_name_is_required_and_validated() {
        let file = Path::new("/p/.claude-plugin/plugin.json");
        for bad in [r#"{"version": "1"}"#, r#"{"name": 3}"#, "[1]"] {
            let e = parse(bad, file).unwrap_err();
            assert!(matches!(e, ManifestError::NoName { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("field `name`"), "{e}");
        }
        for bad in ["my plugin", "../up", ".hidden", "a/b", "x:y", ""] {
            let text = serde_json::json!({ "name": bad }).to_string();
            let e = parse(&text, file).unwrap_err();
            assert!(matches!(e, ManifestError::BadName { .. }), "{bad}: {e}");
        }
        for good in ["kit", "my_plugin-2", "v1.2"] {
            let text = serde_json::json!({ "name": good }).to_string();
            assert_eq!(parse(&text, file).unwrap().name, good);
        }
        let e = parse("{\"name\": ", file).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    #[test]
    fn a_manifest_that_links_out_of_the_plugin_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("p");
        std::fs::create_dir_all(root.join(".claude-plugin")).unwrap();
        let elsewhere = tmp.path().join("elsewhere.json");
        std::fs::write(&elsewhere, r#"{"name": "stolen"}"#).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join(FILE)).unwrap();
        let e = read(&root).unwrap_err();
        assert!(
            matches!(&e, ManifestError::Unreadable { why, .. } if why.contains("outside the plugin")),
            "{e}"
        );
        std::fs::remove_file(root.join(FILE)).unwrap();
        assert!(matches!(
            read(&root).unwrap_err(),
            ManifestError::Missing { .. }
        ));
    }
}
