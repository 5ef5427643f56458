//! The copy-on-write overlay a speculation writes into: a private directory beside the
//! workspace holding the files the speculation wrote, at their workspace-relative paths.
//! Writes land here, never in the workspace; a read of a file the speculation wrote is
//! served from here. Adoption copies the files into the workspace through the lead's
//! normal write path; anything else deletes the directory (also on drop).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Why the overlay could not do something.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    /// The overlay directory could not be made or written.
    #[error("speculation overlay {path}: {source}")]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The path is not below the workspace (the speculation stops instead).
    #[error("`{0}` is outside the workspace; a speculation only writes inside it")]
    Outside(PathBuf),
}

/// A speculation's private copy-on-write layer over one workspace.
#[derive(Debug)]
pub struct Overlay {
    root: PathBuf,
    workspace: PathBuf,
    files: BTreeSet<PathBuf>,
    removed: bool,
}

impl Overlay {
    /// A fresh, empty overlay in a new directory below `parent` (created if missing) over
    /// `workspace` (an absolute path).
    pub fn create(parent: &Path, workspace: &Path) -> Result<Self, OverlayError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| OverlayError::Io { path, source }
        };
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let root = tempfile::Builder::new()
            .prefix("speculation-")
            .tempdir_in(parent)
            .map_err(io(parent))?
            .keep();
        Ok(Self {
            root,
            workspace: workspace.to_path_buf(),
            files: BTreeSet::new(),
            removed: false,
        })
    }

    /// The overlay directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the speculation wrote nothing yet.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// `path`'s place below the workspace: only plain names, after `.` and `..` are
    /// resolved lexically; anything that leaves the workspace is refused.
    pub fn relative(&self, path: &Path) -> Result<PathBuf, OverlayError> {
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace.join(path)
        };
        let mut normal = PathBuf::new();
        for c in full.components() {
            match c {
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(OverlayError::Outside(path.to_path_buf()));
                    }
                }
                Component::CurDir => {}
                other => normal.push(other.as_os_str()),
            }
        }
        let rel = normal
            .strip_prefix(&self.workspace)
            .map_err(|_| OverlayError::Outside(path.to_path_buf()))?;
        if rel.as_os_str().is_empty()
            || rel.components().any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(OverlayError::Outside(path.to_path_buf()));
        }
        Ok(rel.to_path_buf())
    }

    /// The overlay's copy of `path`, when the speculation wrote it.
    pub fn redirect(&self, path: &Path) -> Option<PathBuf> {
        let rel = self.relative(path).ok()?;
        self.files.contains(&rel).then(|| self.root.join(rel))
    }

    /// The text of `path` as the speculation sees it: the overlay's copy when it wrote
    /// one, else the workspace's file.
    pub fn read_text(&self, path: &Path) -> std::io::Result<String> {
        match self.redirect(path) {
            Some(copy) => std::fs::read_to_string(copy),
            None => {
                std::fs::read_to_string(self.workspace.join(self.relative(path).map_err(|e| {
                    std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string())
                })?))
            }
        }
    }

    /// Whether `path` exists as the speculation sees it.
    pub fn exists(&self, path: &Path) -> bool {
        self.redirect(path).is_some()
            || self
                .relative(path)
                .is_ok_and(|rel| self.workspace.join(rel).exists())
    }

    /// Writes `text` as the speculation's version of `path`.
    pub fn write(&mut self, path: &Path, text: &str) -> Result<(), OverlayError> {
        let rel = self.relative(path)?;
        let copy = self.root.join(&rel);
        if let Some(parent) = copy.parent() {
            std::fs::create_dir_all(parent).map_err(|source| OverlayError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&copy, text).map_err(|source| OverlayError::Io { path: copy, source })?;
        self.files.insert(rel);
        Ok(())
    }

    /// Each written file: its workspace path and its text, in path order.
    pub fn files(&self) -> Result<Vec<(PathBuf, String)>, OverlayError> {
        self.files
            .iter()
            .map(|rel| {
                let copy = self.root.join(rel);
                std::fs::read_to_string(&copy)
                    .map(|text| (self.workspace.join(rel), text))
                    .map_err(|source| OverlayError::Io { path: copy, source })
            })
            .collect()
    }

    /// Deletes the overlay directory and everything in it.
    pub fn discard(mut self) -> Result<(), OverlayError> {
        self.removed = true;
        match std::fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(OverlayError::Io {
                path: self.root.clone(),
                source,
            }),
        }
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        // A speculation dropped on any path leaves no directory behind.
        if !self.removed {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_land_in_the_overlay_and_reads_of_them_are_redirected() {
        let ws = tempfile::tempdir().unwrap();
        let parent = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        std::fs::write(ws_path.join("a.txt"), "old").unwrap();
        let mut o = Overlay::create(parent.path(), &ws_path).unwrap();
        assert_eq!(o.read_text(Path::new("a.txt")).unwrap(), "old");
        o.write(Path::new("./src/../a.txt"), "new").unwrap();
        assert_eq!(o.read_text(&ws_path.join("a.txt")).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(ws_path.join("a.txt")).unwrap(),
            "old"
        );
        assert_eq!(
            o.files().unwrap(),
            vec![(ws_path.join("a.txt"), "new".into())]
        );
        let root = o.root().to_path_buf();
        assert!(root.join("a.txt").is_file());
        o.discard().unwrap();
        assert!(!root.exists());
    }

    #[test]
    fn paths_leaving_the_workspace_are_refused_and_drop_removes_the_directory() {
        let ws = tempfile::tempdir().unwrap();
        let parent = tempfile::tempdir().unwrap();
        let mut o = Overlay::create(parent.path(), ws.path()).unwrap();
        for bad in ["../x", "/etc/passwd", "a/../../x", "."] {
            assert!(o.write(Path::new(bad), "x").is_err(), "{bad}");
        }
        let root = o.root().to_path_buf();
        drop(o);
        assert!(!root.exists());
    }
}
