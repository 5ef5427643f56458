//! A project's recorded sessions as people read them — how long ago each was last
//! written, its first task, and whether a crew process runs it now — for `crew sessions
//! list` and the TUI's `/resume`; and finding one by (a prefix of) its id.

use std::path::Path;

/// One recorded session, newest first in [`recent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recent {
    /// The id (for `--resume`, `/resume`).
    pub id: String,
    /// How long ago its transcript was last written: `42s ago`, `3h ago`.
    pub age: String,
    /// Its first task, shortened.
    pub title: String,
    /// The crew process running it now, if one does.
    pub live_pid: Option<u32>,
}

/// How long ago, for a person: seconds below two minutes, then minutes, hours, days.
pub(crate) fn age(elapsed_secs: u64) -> String {
    match elapsed_secs {
        a if a < 120 => format!("{a}s ago"),
        a if a < 7200 => format!("{}m ago", a / 60),
        a if a < 172_800 => format!("{}h ago", a / 3600),
        a => format!("{}d ago", a / 86_400),
    }
}

/// The project's sessions, newest first, with the live ones marked.
pub(crate) fn recent(project_root: &Path) -> Vec<Recent> {
    let live: Vec<(String, u32)> = super::live::registry::live()
        .into_iter()
        .filter(|e| e.project == project_root)
        .map(|e| (e.session, e.pid))
        .collect();
    crate::transcript::list_sessions(project_root)
        .into_iter()
        .map(|s| Recent {
            age: age(s.modified.elapsed().map(|d| d.as_secs()).unwrap_or(0)),
            live_pid: live.iter().find(|(id, _)| *id == s.id).map(|(_, pid)| *pid),
            id: s.id,
            title: s.title,
        })
        .collect()
}

/// Why `/resume ID` found no session to switch to; the text says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FindError {
    /// No recorded session of the project has that id or starts with it.
    #[error("no session of this project starts with `{0}`; /resume lists them")]
    NotFound(String),
    /// Several do.
    #[error("`{0}` starts {1} session ids ({2}); type more of the id")]
    Ambiguous(String, usize, String),
    /// It is this session.
    #[error("`{0}` is this session")]
    Current(String),
    /// Another crew process runs it: two writers would interleave one transcript.
    #[error("session {0} is open in another crew (pid {1}); end it there first")]
    Live(String, u32),
}

/// The session whose id is `wanted` or starts with it, among `sessions` (from
/// [`recent`]); never `current`, nor one another crew runs.
pub(crate) fn find(sessions: &[Recent], wanted: &str, current: &str) -> Result<String, FindError> {
    let exact = sessions.iter().find(|s| s.id == wanted);
    let matches: Vec<&Recent> = match exact {
        Some(s) => vec![s],
        None => sessions
            .iter()
            .filter(|s| s.id.starts_with(wanted))
            .collect(),
    };
    let found = match matches.as_slice() {
        [] => return Err(FindError::NotFound(wanted.to_string())),
        [one] => *one,
        many => {
            let ids: Vec<&str> = many.iter().take(3).map(|s| s.id.as_str()).collect();
            return Err(FindError::Ambiguous(
                wanted.to_string(),
                many.len(),
                ids.join(", "),
            ));
        }
    };
    if found.id == current {
        return Err(FindError::Current(found.id.clone()));
    }
    if let Some(pid) = found.live_pid {
        return Err(FindError::Live(found.id.clone(), pid));
    }
    Ok(found.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(id: &str, live_pid: Option<u32>) -> Recent {
        Recent {
            id: id.into(),
            age: "1s ago".into(),
            title: "t".into(),
            live_pid,
        }
    }

    #[test]
    fn ages_read_like_a_person_says_them() {
        assert_eq!(age(5), "5s ago");
        assert_eq!(age(600), "10m ago");
        assert_eq!(age(3 * 3600), "3h ago");
        assert_eq!(age(3 * 86_400), "3d ago");
    }

    #[test]
    fn a_prefix_finds_one_session_and_refuses_the_rest() {
        let all = [
            s("abc-1", None),
            s("abd-2", None),
            s("abd-3", None),
            s("live-4", Some(77)),
        ];
        assert_eq!(find(&all, "abc", "x"), Ok("abc-1".into()));
        assert_eq!(find(&all, "abd-3", "x"), Ok("abd-3".into()));
        assert!(matches!(
            find(&all, "abd", "x"),
            Err(FindError::Ambiguous(_, 2, _))
        ));
        assert_eq!(
            find(&all, "zzz", "x"),
            Err(FindError::NotFound("zzz".into()))
        );
        assert_eq!(
            find(&all, "abc", "abc-1"),
            Err(FindError::Current("abc-1".into()))
        );
        let live = find(&all, "live", "x").unwrap_err();
        assert_eq!(live, FindError::Live("live-4".into(), 77));
        assert!(live.to_string().contains("pid 77"), "{live}");
    }
}
