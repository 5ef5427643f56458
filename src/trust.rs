//! Folder trust: the directories whose shared project settings (`.crew/settings.json`:
//! allow rules, a looser `defaultMode`, `worktree.setup`, hooks and MCP servers) may take
//! effect. A cloned repository is hostile input until the user says otherwise; its deny
//! and ask rules apply regardless, since they only tighten.
//!
//! Trust pins content, as `direnv allow` does: an entry records the digest of the
//! project's executable configuration (`pin`: hooks, MCP servers, allow rules,
//! `worktree.setup`, agent and skill definitions that carry hooks or tool grants, and the
//! files hooks and servers run). When that content has changed since trust, the folder is
//! treated as untrusted until the user runs `crew trust` again; `crew trust --diff` names
//! what changed. Entries written before pinning existed (a bare path) count as changed:
//! they fail closed, and `crew trust DIR` pins them.
//!
//! The list lives in the user's own config, `~/.crew/trusted.json`
//! (`{"trusted": [{"dir": "/canonical/dir", "digest": …, "files": {…}}, …]}`), written
//! atomically. A trusted directory also covers the directories below it that carry no
//! executable configuration of their own. `crew trust` and the TUI's first-run prompt add
//! entries; `crew trust --list` / `--diff` / `--revoke DIR` manage them.

pub(crate) mod pin;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use pin::{Change, ChangeKind, Manifest};

/// The trust list's file name inside `~/.crew`.
pub const FILE_NAME: &str = "trusted.json";

/// Why the trust list could not be used or changed.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The list exists but cannot be read.
    #[error("cannot read the trust list {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The list is not `{"trusted": [paths]}`.
    #[error(
        "the trust list {path} is malformed ({message}); fix it or delete it and trust your folders again"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// Writing the list failed.
    #[error("cannot write the trust list {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The directory to trust does not exist (or cannot be resolved).
    #[error("cannot trust {dir}: {source}; give an existing directory")]
    NoSuchDir {
        /// The directory as given.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The directory would cover far more than one project.
    #[error(
        "refusing to trust {dir}: it would trust every project below it; trust the project folder instead"
    )]
    TooBroad {
        /// The directory.
        dir: PathBuf,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    trusted: Vec<Stored>,
}

/// One entry as stored: a pin, or a bare path from before pinning.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum Stored {
    Pinned(Pin),
    Legacy(PathBuf),
}

impl Stored {
    fn dir(&self) -> &Path {
        match self {
            Stored::Pinned(p) => &p.dir,
            Stored::Legacy(d) => d,
        }
    }
}

/// A trusted directory and the content it was trusted with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The canonical directory.
    pub dir: PathBuf,
    /// The digest over `files`.
    pub digest: String,
    /// Each pinned file (relative to `dir`) and its digest.
    #[serde(default)]
    pub files: Manifest,
}

impl Pin {
    /// The pin of `dir` (canonical) as it is now.
    pub fn of(dir: &Path) -> Self {
        let files = pin::manifest(dir);
        Self {
            dir: dir.to_path_buf(),
            digest: pin::digest(&files),
            files,
        }
    }
}

/// Whether a directory's shared configuration may take effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// No entry covers it.
    NotTrusted,
    /// Trusted through this entry, and its content is what was trusted.
    Trusted(PathBuf),
    /// Trusted through this entry, but the executable configuration changed since.
    Changed {
        /// The entry.
        entry: PathBuf,
        /// What changed.
        changes: Vec<Change>,
    },
    /// Trusted through this entry before crew pinned content: treated as changed.
    Unpinned(PathBuf),
}

impl TrustState {
    /// Whether the configuration may take effect.
    pub fn is_trusted(&self) -> bool {
        matches!(self, TrustState::Trusted(_))
    }

    /// Why a trusted folder's configuration is not used, naming what changed and how to
    /// re-trust; `None` when trusted or never trusted.
    pub fn warning(&self, root: &Path) -> Option<String> {
        match self {
            TrustState::NotTrusted | TrustState::Trusted(_) => None,
            TrustState::Changed { changes, .. } => Some(format!(
                "this folder's executable configuration changed since you trusted it: {}. Until you trust it again its hooks, MCP servers, allow rules, modes and worktree.setup are not used (deny and ask rules still apply). See what changed with `crew trust --diff`, and re-trust with `crew trust {}`",
                changes
                    .iter()
                    .map(Change::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                root.display()
            )),
            TrustState::Unpinned(entry) => Some(format!(
                "{} was trusted before crew pinned the content it trusts, so it counts as changed since trust: its hooks, MCP servers, allow rules, modes and worktree.setup are not used (deny and ask rules still apply). Review them (`crew trust --diff` lists them) and run `crew trust {}` to pin them",
                entry.display(),
                root.display()
            )),
        }
    }
}

/// What `trust` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Granted {
    /// The directory was added.
    Added(PathBuf),
    /// The directory's entry now pins its current content (it had changed, or had no pin).
    Repinned(PathBuf),
    /// The directory was already covered, by itself or by this ancestor.
    AlreadyCovered(PathBuf),
}

/// What `revoke` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// The entry was removed.
    Removed(PathBuf),
    /// No entry for the directory; it is still trusted through this ancestor.
    CoveredBy(PathBuf),
    /// No entry covers the directory.
    NotTrusted(PathBuf),
}

/// The user's trust list (one file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    home: Option<PathBuf>,
}

impl TrustStore {
    /// The list of the user whose home directory is `home` (`home/.crew/trusted.json`).
    pub fn for_home(home: &Path) -> Self {
        Self {
            path: home.join(".crew").join(FILE_NAME),
            home: Some(home.to_path_buf()),
        }
    }

    /// The current user's list (`HOME` decides); `None` when the home is unknown.
    pub fn user() -> Option<Self> {
        crate::store::home_dir().map(|h| Self::for_home(&h))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn load(&self) -> Result<TrustFile, TrustError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TrustFile::default());
            }
            Err(source) => {
                return Err(TrustError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        serde_json::from_str(&text).map_err(|e| TrustError::Malformed {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }

    fn save(&self, file: &TrustFile) -> Result<(), TrustError> {
        let werr = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        let text = serde_json::to_string_pretty(file).map_err(|e| werr(e.into()))?;
        crate::store::write_atomic(&self.path, (text + "\n").as_bytes()).map_err(werr)
    }

    /// The trusted directories, in the order they were added.
    pub fn list(&self) -> Result<Vec<PathBuf>, TrustError> {
        Ok(self
            .load()?
            .trusted
            .iter()
            .map(|e| e.dir().to_path_buf())
            .collect())
    }

    /// Each entry and its state now (`Trusted`, `Changed`, `Unpinned`), or `None` for an
    /// entry whose directory is missing.
    pub fn entries(&self) -> Result<Vec<(PathBuf, Option<TrustState>)>, TrustError> {
        let file = self.load()?;
        Ok(file
            .trusted
            .iter()
            .map(|e| {
                let dir = e.dir().to_path_buf();
                let state = dir.is_dir().then(|| entry_state(e, &dir));
                (dir, state)
            })
            .collect())
    }

    /// The entry that covers `dir` (itself or an ancestor), if any. `dir` is
    /// canonicalised first; a directory that cannot be resolved is not trusted.
    pub fn covering(&self, dir: &Path) -> Result<Option<PathBuf>, TrustError> {
        let Ok(real) = std::fs::canonicalize(dir) else {
            return Ok(None);
        };
        Ok(covering_entry(&self.load()?.trusted, &real).map(|e| e.dir().to_path_buf()))
    }

    /// Whether `dir`'s configuration may take effect, and if not, why.
    pub fn state(&self, dir: &Path) -> Result<TrustState, TrustError> {
        let Ok(real) = std::fs::canonicalize(dir) else {
            return Ok(TrustState::NotTrusted);
        };
        let file = self.load()?;
        Ok(match covering_entry(&file.trusted, &real) {
            None => TrustState::NotTrusted,
            Some(e) => entry_state(e, &real),
        })
    }

    /// Whether `dir` is trusted and its executable configuration is what was trusted.
    pub fn is_trusted(&self, dir: &Path) -> Result<bool, TrustError> {
        Ok(self.state(dir)?.is_trusted())
    }

    /// What changed in `dir`'s configuration since its covering entry was trusted (every
    /// pinned file, as added, for an entry from before pinning); `None` when no entry
    /// covers it.
    pub fn diff(&self, dir: &Path) -> Result<Option<(PathBuf, Vec<Change>)>, TrustError> {
        let Ok(real) = std::fs::canonicalize(dir) else {
            return Ok(None);
        };
        let file = self.load()?;
        let Some(e) = covering_entry(&file.trusted, &real) else {
            return Ok(None);
        };
        let pinned = match e {
            Stored::Pinned(p) if p.dir == real => p.files.clone(),
            _ => Manifest::new(),
        };
        Ok(Some((
            e.dir().to_path_buf(),
            pin::compare(&pinned, &pin::manifest(&real)),
        )))
    }

    /// Trusts `dir` (canonicalised) with its content as it is now: adds an entry, or
    /// re-pins the existing one. Refuses `/` and the home directory itself, which would
    /// trust every project at once.
    pub fn trust(&self, dir: &Path) -> Result<Granted, TrustError> {
        let real = std::fs::canonicalize(dir).map_err(|source| TrustError::NoSuchDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        if !real.is_dir() {
            return Err(TrustError::NoSuchDir {
                dir: dir.to_path_buf(),
                source: std::io::Error::other("not a directory"),
            });
        }
        let home = self
            .home
            .as_deref()
            .and_then(|h| std::fs::canonicalize(h).ok());
        if real.parent().is_none() || Some(&real) == home.as_ref() {
            return Err(TrustError::TooBroad { dir: real });
        }
        let mut file = self.load()?;
        let pin = Pin::of(&real);
        if let Some(i) = file.trusted.iter().position(|e| e.dir() == real) {
            if matches!(&file.trusted[i], Stored::Pinned(p) if *p == pin) {
                return Ok(Granted::AlreadyCovered(real));
            }
            file.trusted[i] = Stored::Pinned(pin);
            self.save(&file)?;
            return Ok(Granted::Repinned(real));
        }
        if let Some(e) = covering_entry(&file.trusted, &real)
            && entry_state(e, &real).is_trusted()
        {
            return Ok(Granted::AlreadyCovered(e.dir().to_path_buf()));
        }
        file.trusted.push(Stored::Pinned(pin));
        self.save(&file)?;
        Ok(Granted::Added(real))
    }

    /// Removes the entry for `dir` (canonicalised when it still exists, else as given,
    /// made absolute).
    pub fn revoke(&self, dir: &Path) -> Result<Revoked, TrustError> {
        let key = std::fs::canonicalize(dir)
            .unwrap_or_else(|_| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
        let mut file = self.load()?;
        let before = file.trusted.len();
        file.trusted.retain(|t| t.dir() != key);
        if file.trusted.len() < before {
            self.save(&file)?;
            return Ok(Revoked::Removed(key));
        }
        Ok(match covering_entry(&file.trusted, &key) {
            Some(by) => Revoked::CoveredBy(by.dir().to_path_buf()),
            None => Revoked::NotTrusted(key),
        })
    }
}

/// The state of `real` under its covering entry `e`. An entry covers a directory below
/// it only while the entry's own content is unchanged and the directory carries no
/// executable configuration of its own (that was never pinned).
fn entry_state(e: &Stored, real: &Path) -> TrustState {
    let entry = e.dir().to_path_buf();
    let Stored::Pinned(p) = e else {
        return TrustState::Unpinned(entry);
    };
    let own = pin::compare(&p.files, &pin::manifest(&p.dir));
    if !own.is_empty() {
        return TrustState::Changed {
            entry,
            changes: own,
        };
    }
    if p.dir != real {
        let below = pin::compare(&Manifest::new(), &pin::manifest(real));
        if !below.is_empty() {
            return TrustState::Changed {
                entry,
                changes: below,
            };
        }
    }
    TrustState::Trusted(entry)
}

/// The entry for `real` itself, else the first that is one of its ancestors
/// (component-wise).
fn covering_entry<'a>(entries: &'a [Stored], real: &Path) -> Option<&'a Stored> {
    entries
        .iter()
        .find(|t| t.dir() == real)
        .or_else(|| entries.iter().find(|t| real.starts_with(t.dir())))
}

/// Whether the project at `root` (canonical) is trusted for its shared settings, from the
/// trust list of `home`, with the warnings the check has to report. Fail closed: no home
/// or an unreadable trust list means not trusted, and a folder whose executable
/// configuration changed since trust is treated as untrusted, with a warning naming what
/// changed.
pub fn policy_trust(root: &Path, home: Option<&Path>) -> (bool, Vec<crate::config::Warning>) {
    use crate::config::Warning;
    let mut warnings = Vec::new();
    let trusted = match home.map(TrustStore::for_home) {
        None => false,
        // Trust pins content: a folder whose executable configuration changed since
        // trust is treated as untrusted, with a warning naming what changed.
        Some(store) => match store.state(root) {
            Ok(state) => {
                if let Some(message) = state.warning(root) {
                    warnings.push(Warning {
                        file: Some(store.path().to_path_buf()),
                        message,
                    });
                }
                state.is_trusted()
            }
            Err(e) => {
                warnings.push(Warning {
                    file: Some(store.path().to_path_buf()),
                    message: format!("{e}; treating {} as not trusted", root.display()),
                });
                false
            }
        },
    };
    (trusted, warnings)
}

#[cfg(test)]
mod tests;
