//! Approvals: what is asked when the permission engine answers Ask, the possible
//! answers, and the headless policy's refusal text. The `Approver` actor (`actor.rs`)
//! routes questions to a human (TUI, tests) or answers them from a policy.

pub mod actor;

use serde::{Deserialize, Serialize};

use crate::permission::{Category, Decision, PermissionMode};
use crate::protocol::ToolCall;

/// A question for a human.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The asking agent.
    pub agent: String,
    /// The call.
    pub call: ToolCall,
    /// The engine's decision (reason, target, category).
    pub decision: Decision,
    /// The asking agent's permission mode.
    pub mode: PermissionMode,
}

/// A human's (or a policy's) answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call only.
    AllowOnce,
    /// Run it, and allow calls like it for the rest of the session.
    AllowSession,
    /// Run it, and allow calls like it from now on (saved to settings.local.json).
    AllowForever,
    /// Refuse it, optionally telling the model why.
    Deny {
        /// A message for the model.
        message: Option<String>,
    },
}

/// Why a headless run refuses an Ask, and how the user can allow such calls.
pub fn headless_refusal(req: &ApprovalRequest) -> String {
    let how = match req.decision.category {
        Some(Category::Write) => {
            "rerun with `--permission-mode acceptEdits`, or add an allow rule such as `Write(src/**)` to .crew/settings.local.json"
        }
        Some(Category::Exec) => {
            "add an allow rule such as `Bash(npm run test:*)` to .crew/settings.local.json, or rerun with `--permission-mode bypassPermissions` if you trust the task"
        }
        Some(Category::Read) => {
            "rerun with `--permission-mode default` (reads are allowed there), or add an allow rule such as `Read(**)`"
        }
        _ => "add an allow rule for this tool to .crew/settings.local.json",
    };
    format!(
        "`{}` needs approval ({}) and nobody can answer in headless mode; to allow it, {how}",
        req.call.name, req.decision.reason
    )
}
