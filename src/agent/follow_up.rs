//! The lead's internal follow-up prompts: after the user's task, `crew -p` and the TUI
//! start further lead runs when background work ends or the team has news. They are not
//! the user's prompts, so `UserPromptSubmit` hooks do not fire for them (`runner`).

/// The lead's next task when a background task it started has ended.
pub(crate) const TASK_NEWS: &str = "Background work you started has ended (see the task notifications). Act on the results, \
or give your final report if everything is done.";

/// The lead's next task when its team has messages or notices for it.
pub(crate) const TEAM_NEWS: &str = "Your team has news for you (the messages and notices below). Act on them, or give your \
final report if the team's work is done.";

/// Whether `task` is one of crew's own follow-up prompts rather than the user's.
pub(crate) fn is_follow_up(task: &str) -> bool {
    task == TASK_NEWS || task == TEAM_NEWS
}
