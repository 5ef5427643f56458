//! How many notices the team actor has queued for the lead, ever, shared by every `Team`
//! of the same folder in this process (however it was opened). The lead's mailbox asks the
//! actor for its notices only when this moved, or the work list may have changed, since
//! it last asked: a turn with nothing new costs no round trip to the actor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock, Mutex, Weak};

static REGISTRY: LazyLock<Mutex<HashMap<PathBuf, Weak<AtomicU64>>>> =
    LazyLock::new(Default::default);

/// The count of the team in `dir`.
pub(super) fn for_dir(dir: &Path) -> Arc<AtomicU64> {
    let mut map = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(count) = map.get(dir).and_then(Weak::upgrade) {
        return count;
    }
    // Forget the teams nobody holds any more before adding one.
    map.retain(|_, count| count.strong_count() > 0);
    let count = Arc::new(AtomicU64::new(0));
    map.insert(dir.to_path_buf(), Arc::downgrade(&count));
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn teams_of_one_folder_share_a_count_and_others_do_not() {
        let a = for_dir(Path::new("/teams/one"));
        let b = for_dir(Path::new("/teams/one"));
        let other = for_dir(Path::new("/teams/two"));
        a.fetch_add(1, Ordering::SeqCst);
        assert_eq!(b.load(Ordering::SeqCst), 1);
        assert_eq!(other.load(Ordering::SeqCst), 0);
    }
}
