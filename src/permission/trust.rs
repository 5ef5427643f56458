//! Folder trust: the directories whose shared project settings (`.crew/settings.json`:
//! allow rules, a looser `defaultMode`, `worktree.setup`, and later hooks and MCP servers)
//! may take effect. A cloned repository is hostile input until the user says otherwise;
//! its deny and ask rules apply regardless, since they only tighten.
//!
//! The list lives in the user's own config, `~/.crew/trusted.json`
//! (`{"trusted": ["/canonical/dir", …]}`), written atomically. Entries are canonical paths,
//! and a trusted directory covers everything below it. `crew trust` and the TUI's first-run
//! prompt add entries; `crew trust --list` / `--revoke DIR` manage them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    trusted: Vec<PathBuf>,
}

/// What `trust` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Granted {
    /// The directory was added.
    Added(PathBuf),
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
        Ok(self.load()?.trusted)
    }

    /// The entry that covers `dir` (itself or an ancestor), if any. `dir` is
    /// canonicalised first; a directory that cannot be resolved is not trusted.
    pub fn covering(&self, dir: &Path) -> Result<Option<PathBuf>, TrustError> {
        let Ok(real) = std::fs::canonicalize(dir) else {
            return Ok(None);
        };
        Ok(covering_entry(&self.load()?.trusted, &real))
    }

    /// Whether `dir` is trusted.
    pub fn is_trusted(&self, dir: &Path) -> Result<bool, TrustError> {
        Ok(self.covering(dir)?.is_some())
    }

    /// Trusts `dir` (canonicalised). Refuses `/` and the home directory itself, which
    /// would trust every project at once.
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
        if let Some(by) = covering_entry(&file.trusted, &real) {
            return Ok(Granted::AlreadyCovered(by));
        }
        file.trusted.push(real.clone());
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
        file.trusted.retain(|t| *t != key);
        if file.trusted.len() < before {
            self.save(&file)?;
            return Ok(Revoked::Removed(key));
        }
        Ok(match covering_entry(&file.trusted, &key) {
            Some(by) => Revoked::CoveredBy(by),
            None => Revoked::NotTrusted(key),
        })
    }
}

/// The first entry that is `real` or one of its ancestors (component-wise).
fn covering_entry(entries: &[PathBuf], real: &Path) -> Option<PathBuf> {
    entries.iter().find(|t| real.starts_with(t)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (tempfile::TempDir, PathBuf, TrustStore) {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap().join("home");
        std::fs::create_dir_all(home.join("proj/sub")).unwrap();
        std::fs::create_dir_all(home.join("proj2")).unwrap();
        let store = TrustStore::for_home(&home);
        (tmp, home, store)
    }

    #[test]
    fn trust_covers_subdirectories_not_siblings_and_revoke_removes_it() {
        let (_t, home, store) = fixture();
        assert!(!store.is_trusted(&home.join("proj")).unwrap());
        // Trusting through a non-canonical spelling stores the canonical path.
        let spelled = home.join("proj/sub/..");
        assert_eq!(
            store.trust(&spelled).unwrap(),
            Granted::Added(home.join("proj"))
        );
        assert!(store.is_trusted(&home.join("proj/sub")).unwrap());
        assert!(!store.is_trusted(&home.join("proj2")).unwrap());
        assert_eq!(
            store.trust(&home.join("proj/sub")).unwrap(),
            Granted::AlreadyCovered(home.join("proj"))
        );
        assert_eq!(store.list().unwrap(), vec![home.join("proj")]);
        assert_eq!(
            store.revoke(&home.join("proj/sub")).unwrap(),
            Revoked::CoveredBy(home.join("proj"))
        );
        assert_eq!(
            store.revoke(&home.join("proj")).unwrap(),
            Revoked::Removed(home.join("proj"))
        );
        assert!(!store.is_trusted(&home.join("proj/sub")).unwrap());
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn a_symlink_is_trusted_by_where_it_points() {
        let (_t, home, store) = fixture();
        let link = home.join("link");
        std::os::unix::fs::symlink(home.join("proj2"), &link).unwrap();
        store.trust(&home.join("proj")).unwrap();
        // A link from a trusted folder's name to an untrusted one is not trusted.
        assert!(!store.is_trusted(&link).unwrap());
        store.trust(&link).unwrap();
        assert!(store.is_trusted(&home.join("proj2")).unwrap());
    }

    #[test]
    fn refuses_root_home_and_missing_dirs_and_reports_a_malformed_list() {
        let (_t, home, store) = fixture();
        assert!(matches!(
            store.trust(Path::new("/")),
            Err(TrustError::TooBroad { .. })
        ));
        assert!(matches!(
            store.trust(&home),
            Err(TrustError::TooBroad { .. })
        ));
        assert!(matches!(
            store.trust(&home.join("nope")),
            Err(TrustError::NoSuchDir { .. })
        ));
        std::fs::create_dir_all(home.join(".crew")).unwrap();
        std::fs::write(store.path(), "{\"trusted\": 3}").unwrap();
        let e = store.is_trusted(&home.join("proj")).unwrap_err();
        assert!(e.to_string().contains("trusted.json"), "{e}");
        assert!(store.trust(&home.join("proj")).is_err(), "never overwrite");
    }
}
