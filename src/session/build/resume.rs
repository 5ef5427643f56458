//! Where a session starts: its working directory (`--cwd`, else the current one) and
//! which session it is — `--resume ID`, `--continue` (the newest of the project), a new
//! one with `--session-id`, or a new random one — with the conversation recorded so far.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::Options;

/// The working directory from `--cwd` or the current directory, canonical.
pub(crate) fn working_dir(opts: &Options) -> anyhow::Result<PathBuf> {
    let cwd = match &opts.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    if !cwd.is_dir() {
        bail!("--cwd {}: not a directory", cwd.display());
    }
    Ok(cwd)
}

/// The id of a new session: `--session-id` (checked: it names a directory), else random.
fn new_session_id(opts: &Options, project_root: &std::path::Path) -> anyhow::Result<String> {
    let Some(id) = &opts.session_id else {
        return Ok(uuid::Uuid::new_v4().to_string());
    };
    if !crate::store::valid_session_id(id) {
        bail!("--session-id `{id}`: use 1 to 64 letters, digits, `-` or `_`");
    }
    let dir = crate::store::session_dir(project_root, id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    if dir.exists() {
        bail!(
            "--session-id `{id}`: {} already exists; resume it with --resume {id} or pick another id",
            dir.display()
        );
    }
    Ok(id.clone())
}

/// The session to run in: `--resume ID`, `--continue` (the newest), or a new one; with
/// the conversation recorded so far.
pub(super) fn choose_session(
    opts: &Options,
    project_root: &std::path::Path,
) -> anyhow::Result<(String, Vec<crate::protocol::Message>)> {
    let id = match (&opts.resume, opts.continue_session) {
        (Some(id), _) => Some(id.clone()),
        (None, true) => Some(
            crate::transcript::list_sessions(project_root)
                .first()
                .map(|s| s.id.clone())
                .with_context(|| {
                    format!(
                        "--continue: no earlier session for {}",
                        project_root.display()
                    )
                })?,
        ),
        (None, false) => None,
    };
    let Some(id) = id else {
        return Ok((new_session_id(opts, project_root)?, Vec::new()));
    };
    if !crate::store::valid_session_id(&id) {
        bail!(
            "--resume `{id}`: a session id is 1 to 64 letters, digits, `-` or `_` (see `crew sessions list`)"
        );
    }
    let path = crate::transcript::transcript_path(project_root, &id)
        .context("cannot find the home directory for ~/.crew (set HOME)")?;
    let owned = crate::store::project_dir(project_root)
        .is_some_and(|dir| crate::store::owned_by(&dir, project_root));
    if !owned || !path.is_file() {
        bail!(
            "--resume {id}: no such session for {} (see `crew sessions list`)",
            project_root.display()
        );
    }
    let conversation = crate::transcript::resume_conversation(&path)?;
    Ok((id, conversation))
}
