//! Why an agent's run ended without an outcome: the errors a subagent's and a teammate's
//! actor fail with, so that the supervisor above records the reason (a subagent's task
//! ends `failed` with it; a teammate's lead hears it in the failure notice).

use tokio::task::JoinError;

use super::subagent_spec::SpecError;
use crate::permission::delegation::DelegationError;

/// How the task that ran an agent died, as its join handle reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Crash {
    /// It panicked; the panic's message.
    #[error("panicked: {0}")]
    Panicked(String),
    /// It was cancelled before it finished (the runtime is shutting down).
    #[error("aborted")]
    Aborted,
}

impl From<JoinError> for Crash {
    fn from(e: JoinError) -> Self {
        if e.is_panic() {
            Crash::Panicked(crate::executor::panic_message(e.into_panic()))
        } else {
            Crash::Aborted
        }
    }
}

/// Why a subagent's run ended without an outcome.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// The session closed while the subagent waited for a concurrency slot.
    #[error("the session is closing")]
    Closing,
    /// Its definition or working copy could not be set up.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The delegator refused where it would work (fail closed, after the engine).
    #[error(transparent)]
    Placement(#[from] DelegationError),
    /// Its task died before it could tidy up; `worktree` says where work that was kept is
    /// (the parent cannot know otherwise).
    #[error("{crash}\n\n{worktree}")]
    CrashedInWorktree {
        /// How it died.
        crash: Crash,
        /// What became of its worktree.
        worktree: String,
    },
    /// Its task died, with no worktree to account for.
    #[error(transparent)]
    Crashed(#[from] Crash),
}

/// Why a teammate's run ended without an outcome (its actor fails with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TeammateRunError {
    /// Its run panicked; the panic's message.
    #[error("its run panicked: {0}")]
    Panicked(String),
    /// Its run was cancelled before it finished.
    #[error("its run was aborted")]
    Aborted,
}

impl From<Crash> for TeammateRunError {
    fn from(crash: Crash) -> Self {
        match crash {
            Crash::Panicked(message) => TeammateRunError::Panicked(message),
            Crash::Aborted => TeammateRunError::Aborted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_reads_as_the_supervisors_have_always_shown_it() {
        let crash = Crash::Panicked("boom".into());
        assert_eq!(RunError::from(crash.clone()).to_string(), "panicked: boom");
        let kept = RunError::CrashedInWorktree {
            crash: Crash::Aborted,
            worktree: "[worktree] kept at /w".into(),
        };
        assert_eq!(kept.to_string(), "aborted\n\n[worktree] kept at /w");
        assert_eq!(
            TeammateRunError::from(crash).to_string(),
            "its run panicked: boom"
        );
        assert_eq!(
            TeammateRunError::from(Crash::Aborted).to_string(),
            "its run was aborted"
        );
    }
}
