//! Agent Mode: what a run is for (`chat`, `plan`, `do`; the type is
//! `crew_protocol::mode::AgentMode`) and what follows from it — the prompt the model
//! gets, the tool definitions it is shown and the per-turn reminder.
//! Pure functions: the double read-only boundary of Plan Mode (seed 000/002) is decided
//! here and enforced again by the gate (`gate::GatePolicy::new`).

use std::collections::HashSet;

pub use crew_protocol::mode::AgentMode;

use crate::tools::{Definition, Registry, Safety};

/// Every how many iterations the full plan reminder is repeated (1, 5, 9, …).
pub const PLAN_REMINDER_INTERVAL: u32 = 4;

/// Wraps a task in the Plan Mode instructions.
pub fn plan_prompt(task: &str) -> String {
    format!(
        "Plan mode. Your job is to clarify and plan before implementation.\n\n\
Rules:\n\
- Use only read-only tools to inspect the workspace.\n\
- Do not edit files, create directories, run commands, install dependencies, or make any project changes.\n\
- If the task is broad or underspecified, ask concise clarifying questions first instead of inventing requirements.\n\
- If you already have enough information, produce an implementation plan with target files, steps, validation, and risks.\n\
- Do not claim that files or directories were created in Plan mode.\n\n\
Task:\n{}",
        task.trim()
    )
}

/// The original task plus the approved plan, for a Do run.
pub fn do_prompt(task: &str, plan: &str) -> String {
    format!(
        "Carry out the task below by following the approved plan. The plan was reviewed and \
approved by the user; stay within it, and say so if a step turns out to be wrong.\n\n\
Task:\n{}\n\nApproved plan:\n{}",
        task.trim(),
        plan.trim()
    )
}

/// The reminder injected into a Plan Mode request (never stored in the conversation):
/// in full on iterations 1, 5, 9, …, short otherwise. `None` outside Plan Mode.
pub fn reminder(mode: AgentMode, iteration: u32) -> Option<String> {
    if mode != AgentMode::Plan {
        return None;
    }
    let full = iteration == 1 || (iteration.saturating_sub(1)) % PLAN_REMINDER_INTERVAL == 0;
    Some(if full {
        "<system-reminder>Plan mode is active. Only read-only tools are available; you must not \
edit files, run commands or change anything. Investigate, then answer with a concrete plan \
(target files, steps, validation, risks) or with clarifying questions.</system-reminder>"
            .to_string()
    } else {
        "<system-reminder>Plan mode: read-only tools only; finish with a plan.</system-reminder>"
            .to_string()
    })
}

/// The tool definitions the model is shown: the name filter first, then (Plan Mode)
/// the read-only filter, so Plan Mode never widens an agent's tool list.
pub fn visible_definitions(
    mode: AgentMode,
    registry: &Registry,
    allowed_names: Option<&HashSet<String>>,
) -> Vec<Definition> {
    let defs = registry.definitions_filtered(allowed_names);
    match mode {
        AgentMode::Plan => defs
            .into_iter()
            .filter(|d| d.safety == Safety::ReadOnly)
            .collect(),
        AgentMode::Chat | AgentMode::Do => defs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin_tools;

    #[test]
    fn reminder_is_full_on_1_5_9_and_short_otherwise() {
        let full: Vec<u32> = (1..=10)
            .filter(|&i| reminder(AgentMode::Plan, i).is_some_and(|r| r.contains("Investigate")))
            .collect();
        assert_eq!(full, vec![1, 5, 9]);
        assert!(reminder(AgentMode::Plan, 2).is_some());
        assert!(reminder(AgentMode::Chat, 1).is_none());
        assert!(reminder(AgentMode::Do, 1).is_none());
    }

    #[test]
    fn plan_shows_only_read_only_tools_within_the_name_filter() {
        let registry = Registry::with_tools(builtin_tools()).unwrap();
        let names = |defs: Vec<Definition>| defs.into_iter().map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(
            names(visible_definitions(AgentMode::Plan, &registry, None)),
            // web_fetch too: it changes nothing here, and the engine asks for new hosts.
            ["read_file", "find_files", "search_code", "web_fetch"]
        );
        let only = HashSet::from(["read_file".to_string(), "write_file".to_string()]);
        assert_eq!(
            names(visible_definitions(AgentMode::Plan, &registry, Some(&only))),
            ["read_file"]
        );
        assert_eq!(
            names(visible_definitions(AgentMode::Do, &registry, None)).len(),
            7
        );
    }

    #[test]
    fn prompts_carry_task_and_plan() {
        assert!(plan_prompt("  add a flag ").ends_with("Task:\nadd a flag"));
        let p = do_prompt("add a flag", "1. edit main.rs");
        assert!(p.contains("add a flag") && p.contains("1. edit main.rs"));
    }
}
