//! Whether the work list may have changed since it was last read, without reading it.
//! Every change to an item replaces its file by rename (`store::write_atomic`), in this
//! process or another, and a rename changes the folder's modification time. So while
//! `todos/`'s time is the one seen when it was last listed, nothing in it changed.
//!
//! The clock that stamps files is coarse (one scheduler tick, 10 ms at most), so a change
//! made just after a listing, in the same tick as the change before it, leaves the time
//! as it was. A listing therefore vouches for the folder only if it was taken well after
//! the folder's last change ([`RACY`]); until then, every look lists again.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long after a folder's last change a listing must be taken to vouch for it: several
/// ticks of the coarsest file clock.
const RACY: Duration = Duration::from_millis(50);

/// What `todos/` looked like when it was last listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum TodosStamp {
    /// Never listed, or its time could not be read.
    #[default]
    Unknown,
    /// There was no `todos/` folder.
    Missing,
    /// Its modification time, and when the stamp was taken.
    At {
        /// The folder's modification time.
        modified: SystemTime,
        /// When it was read, just before the listing.
        taken: SystemTime,
    },
}

impl TodosStamp {
    /// The stamp of `dir` now. Take it before listing, so that a change made during the
    /// listing moves the time past it.
    pub(crate) fn of(dir: &Path) -> TodosStamp {
        match std::fs::metadata(dir) {
            Ok(m) => m
                .modified()
                .map_or(TodosStamp::Unknown, |modified| TodosStamp::At {
                    modified,
                    taken: SystemTime::now(),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => TodosStamp::Missing,
            Err(_) => TodosStamp::Unknown,
        }
    }

    /// Whether the listing stamped `self` still holds for the folder stamped `now`.
    pub(crate) fn unchanged(self, now: TodosStamp) -> bool {
        match (self, now) {
            (TodosStamp::Missing, TodosStamp::Missing) => true,
            (
                TodosStamp::At { modified, taken },
                TodosStamp::At {
                    modified: current, ..
                },
            ) => {
                modified == current
                    && taken
                        .duration_since(modified)
                        .is_ok_and(|settled| settled > RACY)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_vouches_only_for_a_folder_settled_before_it_and_renames_are_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("todos");
        let missing = TodosStamp::of(&dir);
        assert_eq!(missing, TodosStamp::Missing);
        assert!(missing.unchanged(TodosStamp::of(&dir)));

        std::fs::create_dir(&dir).unwrap();
        assert!(
            !missing.unchanged(TodosStamp::of(&dir)),
            "the folder appeared"
        );

        // Listed just after a change: it vouches for nothing, however long ago that was.
        let fresh = TodosStamp::of(&dir);
        std::thread::sleep(RACY * 2);
        assert!(!fresh.unchanged(TodosStamp::of(&dir)));

        // Listed well after the folder's last change: unchanged while the time stays.
        let old = SystemTime::now() - Duration::from_secs(2);
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let settled = TodosStamp::of(&dir);
        assert!(settled.unchanged(TodosStamp::of(&dir)));

        // An item written as every item is (temporary file, rename): changed.
        crate::store::write_atomic(&dir.join("1.json"), b"{}").unwrap();
        assert!(
            !settled.unchanged(TodosStamp::of(&dir)),
            "a rename moves the time"
        );
        assert!(!TodosStamp::Unknown.unchanged(TodosStamp::of(&dir)));
    }
}
