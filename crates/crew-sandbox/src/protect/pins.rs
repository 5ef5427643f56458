//! The directories pinned in place (`.git`, `.git/modules/*`, the settings directories),
//! where no mount namespace binds them onto themselves: a confined command could rename
//! one away with the protected files inside (`mv .git .git-old`) and leave a directory of
//! its own in its place. Each pin's identity is recorded before the command; after it, a
//! pin found elsewhere below its checkout is moved back, and whatever the command left in
//! its place is moved aside (never deleted: it may be the user's work, renamed there).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many entries the search for a moved pin looks at before it gives up.
const SEARCH_LIMIT: usize = 200_000;
/// How deep below the checkout the search goes.
const SEARCH_DEPTH: usize = 8;

/// One pinned directory as it was before the command.
#[derive(Debug, Clone)]
pub(super) struct Pin {
    path: PathBuf,
    /// Where to look for it if it moved: the checkout it belongs to.
    root: PathBuf,
    dev: u64,
    ino: u64,
}

/// Records the pins that exist now.
pub(super) fn record(pins: &[PathBuf]) -> Vec<Pin> {
    pins.iter()
        .filter_map(|path| {
            let meta = std::fs::symlink_metadata(path).ok()?;
            meta.is_dir().then(|| Pin {
                path: path.clone(),
                root: checkout_of(path),
                dev: meta.dev(),
                ino: meta.ino(),
            })
        })
        .collect()
}

/// The checkout a pin belongs to: the directory holding its `.git` (for `.git` and
/// `.git/modules/*`), else its parent (a settings directory).
fn checkout_of(pin: &Path) -> PathBuf {
    let mut dir = pin;
    while let Some(parent) = dir.parent() {
        if dir.file_name().is_some_and(|n| n == ".git") {
            return parent.to_path_buf();
        }
        dir = parent;
    }
    pin.parent().unwrap_or(pin).to_path_buf()
}

/// Moves back every pin that is no longer where it was; one line per pin that moved.
/// Shallow pins first, so a `.git` moved whole is back before its modules are looked at.
pub(super) fn put_back(pins: &[Pin]) -> Vec<String> {
    let mut report = Vec::new();
    for pin in pins {
        if is_pin(&pin.path, pin) {
            continue;
        }
        let line = match find(pin) {
            Some(moved) => match restore(pin, &moved) {
                Ok(None) => format!(
                    "{} was moved to {} and has been put back",
                    pin.path.display(),
                    moved.display()
                ),
                Ok(Some(aside)) => format!(
                    "{} was moved to {} and has been put back; what the command left in \
                     its place is now {}",
                    pin.path.display(),
                    moved.display(),
                    aside.display()
                ),
                Err(e) => format!(
                    "{} was moved to {} and could NOT be put back: {e}",
                    pin.path.display(),
                    moved.display()
                ),
            },
            None => format!(
                "{} was moved or removed and could NOT be found below {}; restore it by hand",
                pin.path.display(),
                pin.root.display()
            ),
        };
        report.push(line);
    }
    report
}

fn is_pin(path: &Path, pin: &Pin) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_dir() && m.dev() == pin.dev && m.ino() == pin.ino)
}

/// Where the pinned directory is now: a breadth-first walk of its checkout that follows
/// no links and stays on its file system.
fn find(pin: &Pin) -> Option<PathBuf> {
    let mut queue = std::collections::VecDeque::from([(pin.root.clone(), 0usize)]);
    let mut seen = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > SEARCH_LIMIT {
                return None;
            }
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if !meta.is_dir() || meta.dev() != pin.dev {
                continue;
            }
            if meta.ino() == pin.ino {
                return Some(e.path());
            }
            if depth < SEARCH_DEPTH {
                queue.push_back((e.path(), depth + 1));
            }
        }
    }
    None
}

/// Moves `moved` back to the pin's path; what the command put there instead is renamed
/// aside first (returned).
fn restore(pin: &Pin, moved: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut aside = None;
    if std::fs::symlink_metadata(&pin.path).is_ok() {
        let name = pin
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parent = pin.path.parent().unwrap_or(&pin.root);
        let target = (1..1000)
            .map(|n| parent.join(format!("{name}.left-by-command-{n}")))
            .find(|p| std::fs::symlink_metadata(p).is_err())
            .ok_or_else(|| std::io::Error::other("no free name to move the replacement aside"))?;
        std::fs::rename(&pin.path, &target)?;
        aside = Some(target);
    }
    std::fs::rename(moved, &pin.path)?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_pin_comes_back_and_its_replacement_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join(".git/modules/sub/hooks")).unwrap();
        std::fs::create_dir_all(root.join(".crew")).unwrap();
        let paths = [
            root.join(".crew"),
            root.join(".git"),
            root.join(".git/modules/sub"),
        ];
        let pins = record(&paths);
        assert_eq!(pins.len(), 3);
        assert!(put_back(&pins).is_empty(), "nothing moved yet");

        // `.git` renamed away and a planted one in its place; `.crew` moved deep below.
        std::fs::rename(root.join(".git"), root.join(".git-old")).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::rename(root.join(".crew"), root.join("a/b/c")).unwrap();
        let report = put_back(&pins);
        assert_eq!(report.len(), 2, "{report:?}");
        assert!(
            report.iter().all(|l| l.contains("has been put back")),
            "{report:?}"
        );
        assert!(root.join(".git/modules/sub/hooks").is_dir());
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert!(!root.join(".git-old").exists());
        assert!(root.join(".crew").is_dir() && !root.join("a/b/c").exists());
        // The planted directory is kept aside, not deleted.
        assert!(
            root.join(".git.left-by-command-1/hooks/pre-commit")
                .is_file()
        );
    }

    #[test]
    fn a_removed_pin_is_reported_not_invented() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".crew")).unwrap();
        let pins = record(&[dir.path().join(".crew")]);
        std::fs::remove_dir(dir.path().join(".crew")).unwrap();
        let report = put_back(&pins);
        assert_eq!(report.len(), 1);
        assert!(report[0].contains("could NOT be found"), "{report:?}");
    }
}
