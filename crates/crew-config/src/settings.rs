//! What reading a settings file can end in besides its values: a [`Warning`] (a problem
//! that does not stop loading) or a [`SettingsError`] (a file that cannot be used, naming
//! the file and the field), one layer's `limits` object as written ([`LayeredLimits`]), and
//! whose file a layer is ([`Source`]), which decides what its values may do.

use std::path::PathBuf;

use serde_json::Value;

/// A settings problem that does not stop loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file concerned, if any.
    pub file: Option<PathBuf>,
    /// What was wrong and what was done.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(p) => write!(f, "{}: {}", p.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A settings file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but cannot be read.
    #[error("cannot read settings file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON or a field has the wrong type.
    #[error(
        "settings file {path}, line {line}, column {column}: {message}; fix or remove the file"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A field has a value of the wrong shape.
    #[error("settings file {path}: `{field}` {message}; fix the value or remove the key")]
    Field {
        /// The file.
        path: PathBuf,
        /// The field, dotted (`sandbox.filesystem.denyRead[0]`).
        field: String,
        /// What it must be.
        message: String,
    },
    /// A `sandbox.network` value cannot be used.
    #[error(transparent)]
    Network(#[from] crate::settings_network::NetworkSettingsError),
    /// Writing a grant failed.
    #[error("cannot write settings file {path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

/// Whose a settings file is. The user's own files may widen what crew may do; a shared
/// (project) file may only tighten it, since a cloned repository must not lower the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The user's own: user settings or untracked local settings.
    Own,
    /// Shared project settings (tracked, or not trusted).
    Shared,
}

impl Source {
    /// Whether the file is the user's own.
    pub fn is_own(self) -> bool {
        self == Source::Own
    }
}

/// A `limits` object as one settings file wrote it; values of a [`Source::Shared`] file
/// may only tighten (`sandbox::limits::resolve`).
#[derive(Debug, Clone, PartialEq)]
pub struct LayeredLimits {
    /// The file it came from.
    pub file: PathBuf,
    /// Whose file it is.
    pub source: Source,
    /// The object as written.
    pub value: Value,
}
