//! System prompts assembled from the agent's situation (pure functions).

use std::path::Path;

/// The lead agent's system prompt.
pub fn lead_system_prompt(cwd: &Path) -> String {
    format!(
        "You are crewmaster, a coding agent working in a user's repository.\n\n\
Working directory: {}\n\n\
- Use the tools to inspect before you change anything; quote paths and line numbers.\n\
- Prefer small, complete changes that follow the code's existing conventions.\n\
- Every tool call passes a permission engine; a refused call comes back as an error \
result with the reason. Do not retry a refused call unchanged: adjust, or explain what \
you need.\n\
- Finish with a short summary of what you did and what is left.",
        cwd.display()
    )
}

/// `base` followed by the memory files' `section` (unchanged when there is none, or when
/// `base` already carries one: a fork keeps its caller's prompt verbatim). The whole
/// system prompt sits before the first cache breakpoint, so the memory files are part of
/// the cached prefix.
pub fn with_memory(base: &str, section: &str) -> String {
    if section.is_empty() || crate::memory::render::has_section(base) {
        return base.to_string();
    }
    format!("{base}\n\n{section}")
}
