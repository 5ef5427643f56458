//! Delegation: where a subagent would work, and whether starting it needs approval
//! (design.md §3). A worktree-isolated subagent needs none in default or acceptEdits mode
//! (its calls are checked and confined to its own branch); one working in place asks,
//! unless read-only. The model may not choose `isolation: "none"` for a definition that is
//! not read-only: the engine refuses it, and again the delegator (fail closed).
//!
//! The engine cannot see the agent catalog or the registry; the session fills a
//! [`Delegation`] (agent type → [`AgentProfile`], worktrees possible) once at set-up.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Category, Decision, PermissionMode, Source, Verdict};

/// Where a subagent works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Its own git worktree on its own branch.
    Worktree,
    /// The main checkout (read-only agents).
    None,
}

impl Isolation {
    /// Parses `worktree` or `none`; the error names the accepted values.
    pub fn parse(s: &str) -> Result<Isolation, DelegationError> {
        match s {
            "worktree" => Ok(Isolation::Worktree),
            "none" => Ok(Isolation::None),
            other => Err(DelegationError::UnknownIsolation(other.to_string())),
        }
    }
}

/// Why a subagent may not start as an `agent` call asks, or what is wrong with the
/// `isolation` it names. The text is the refusal the model reads.
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    /// `isolation` names neither `worktree` nor `none`.
    #[error("isolation `{0}` is not `worktree` or `none`; omit it to use the agent's own")]
    UnknownIsolation(String),
    /// `isolation: none` for an agent type (named) that is not read-only.
    #[error(
        "isolation `none` is refused for agent type `{0}`: it is not read-only, so it must work in its own worktree; omit `isolation`"
    )]
    WriterInPlace(String),
    /// `isolation: none` for an agent type (named) the catalog does not hold.
    #[error(
        "isolation `none` is refused for agent type `{0}`: it is not a known read-only agent; omit `isolation`"
    )]
    UnknownInPlace(String),
    /// The call's arguments are not JSON.
    #[error("arguments are not valid JSON ({0}); send a JSON object")]
    NotJson(serde_json::Error),
    /// `isolation` is there but not a string.
    #[error("argument `isolation` must be a string (`worktree` or `none`)")]
    IsolationNotString,
}

/// Whether a session's subagents can get worktrees of their own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Worktrees {
    /// The session runs in a git repository and gives subagents worktrees.
    Available,
    /// No repository (or no worktrees): subagents work in the session's directory.
    #[default]
    Unavailable,
}

/// What the engine knows of one agent type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentProfile {
    /// The definition's own isolation, if it sets one.
    pub isolation: Option<Isolation>,
    /// Whether every tool the definition may use is read-only.
    pub read_only: bool,
}

/// The agent types of a session and whether subagents get worktrees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delegation {
    /// Agent types by name.
    pub agents: HashMap<String, AgentProfile>,
    /// Whether worktrees are possible (the project is a git repository and the session
    /// gives subagents worktrees).
    pub worktrees: Worktrees,
}

/// Where a subagent will work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In its own worktree.
    Worktree,
    /// In the main checkout.
    InPlace,
}

/// Where a subagent of `kind` will work, given the isolation the caller asked for, or
/// why it may not start: a model-chosen `none` for a definition that is not read-only.
pub fn placement(
    kind: &str,
    requested: Option<Isolation>,
    profile: &AgentProfile,
    worktrees: Worktrees,
) -> Result<Placement, DelegationError> {
    if requested == Some(Isolation::None) && !profile.read_only {
        return Err(DelegationError::WriterInPlace(kind.to_string()));
    }
    let isolation = requested
        .or(profile.isolation)
        .unwrap_or(Isolation::Worktree);
    Ok(match isolation {
        Isolation::Worktree if worktrees == Worktrees::Available => Placement::Worktree,
        _ => Placement::InPlace,
    })
}

/// The `isolation` argument of an `agent` call's raw JSON arguments.
pub fn requested_isolation(arguments: &str) -> Result<Option<Isolation>, DelegationError> {
    let args: Value = serde_json::from_str(arguments).map_err(DelegationError::NotJson)?;
    match args.get("isolation") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Isolation::parse(s).map(Some),
        Some(_) => Err(DelegationError::IsolationNotString),
    }
}

/// The mode's answer for starting a subagent of `kind` that no rule decided; `Err` when
/// the call is refused outright (see [`placement`]). `None` leaves it to the ordinary
/// fallback table (strict asks, bypassPermissions allows).
pub fn fallback(
    delegation: &Delegation,
    mode: PermissionMode,
    kind: &str,
    arguments: &str,
) -> Result<Option<Decision>, DelegationError> {
    let requested = requested_isolation(arguments)?;
    let Some(profile) = delegation.agents.get(kind) else {
        if requested == Some(Isolation::None) {
            return Err(DelegationError::UnknownInPlace(kind.to_string()));
        }
        let ask = matches!(mode, PermissionMode::Default | PermissionMode::AcceptEdits);
        return Ok(ask.then(|| {
            decision(
                Verdict::Ask,
                format!(
                    "agent type `{kind}` is not in the catalog, so where it would work is unknown; approve it or pick a listed type"
                ),
                false,
            )
        }));
    };
    let placement = placement(kind, requested, profile, delegation.worktrees)?;
    let hands_off = matches!(
        mode,
        PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::DontAsk
    );
    if !hands_off {
        return Ok(None);
    }
    Ok(Some(match (placement, profile.read_only) {
        (Placement::Worktree, _) => decision(
            Verdict::Allow,
            format!(
                "subagent `{kind}` works in its own worktree: its calls are checked and confined there and its work lands on its own branch"
            ),
            false,
        ),
        (Placement::InPlace, true) => decision(
            Verdict::Allow,
            format!("subagent `{kind}` is read-only"),
            false,
        ),
        // Started in place it works under the caller's own mode (the delegator hands it
        // the lead's), so starting it gains nothing: each of its calls asks where the
        // caller's would.
        (Placement::InPlace, false) => decision(
            Verdict::Allow,
            format!(
                "subagent `{kind}` works in the caller's checkout under the caller's permission mode: each of its calls is checked as the caller's would be"
            ),
            false,
        ),
    }))
}

fn decision(verdict: Verdict, reason: String, explicit_ask: bool) -> Decision {
    let mut d = Decision::new(verdict, Source::Mode, reason);
    d.category = Some(Category::Exec);
    d.explicit_ask = explicit_ask;
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionMode::*;

    fn delegation(worktrees: Worktrees) -> Delegation {
        let mut agents = HashMap::new();
        let p = |isolation, read_only| AgentProfile {
            isolation,
            read_only,
        };
        agents.insert("general-purpose".into(), p(None, false));
        agents.insert("explore".into(), p(Some(Isolation::None), true));
        agents.insert("inplace-writer".into(), p(Some(Isolation::None), false));
        Delegation { agents, worktrees }
    }

    fn verdict(d: &Delegation, mode: PermissionMode, kind: &str, args: &str) -> String {
        match fallback(d, mode, kind, args) {
            Err(_) => "refused".into(),
            Ok(None) => "table".into(),
            Ok(Some(d)) => format!("{:?}{}", d.verdict, if d.explicit_ask { "!" } else { "" }),
        }
    }

    #[test]
    fn table() {
        let git = delegation(Worktrees::Available);
        let plain = delegation(Worktrees::Unavailable);
        let none = r#"{"isolation":"none"}"#;
        let wt = r#"{"isolation":"worktree"}"#;
        let vm = r#"{"isolation":"vm"}"#;
        let cases = [
            (&git, Default, "general-purpose", "{}", "Allow"),
            (&git, AcceptEdits, "general-purpose", wt, "Allow"),
            (&git, DontAsk, "general-purpose", "{}", "Allow"),
            (&git, Strict, "general-purpose", "{}", "table"),
            (&git, BypassPermissions, "general-purpose", "{}", "table"),
            // The model cannot move a writer into the main checkout, in any mode.
            (&git, Default, "general-purpose", none, "refused"),
            (&git, BypassPermissions, "general-purpose", none, "refused"),
            (&git, Default, "unknown", none, "refused"),
            (&git, Default, "general-purpose", vm, "refused"),
            // Read-only agents may work in place.
            (&git, Default, "explore", "{}", "Allow"),
            (&git, Default, "explore", none, "Allow"),
            // A definition that itself works in place runs under the caller's mode
            // (the delegator gives it the lead's), so starting it gains nothing: allowed.
            (&git, Default, "inplace-writer", "{}", "Allow"),
            (&git, DontAsk, "inplace-writer", "{}", "Allow"),
            (&git, Default, "inplace-writer", wt, "Allow"),
            // Without worktrees every writer works in place, likewise.
            (&plain, Default, "general-purpose", "{}", "Allow"),
            (&plain, Default, "explore", "{}", "Allow"),
            (&git, Default, "unknown", "{}", "Ask"),
            (&git, Strict, "unknown", "{}", "table"),
        ];
        for (d, mode, kind, args, want) in cases {
            assert_eq!(verdict(d, mode, kind, args), want, "{mode} {kind} {args}");
        }
    }
}
