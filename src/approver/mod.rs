//! Approvals: what is asked when the permission engine answers Ask, the possible
//! answers, the `Approval` token a human's "allow" becomes, and the headless policy's
//! refusal text. The `Approver` actor (`actor.rs`) routes questions to a human (TUI,
//! tests) or answers them from a policy.
//!
//! An `Approval` is built only here, from an answer that came back through the approver,
//! so no other code can fake a human's consent; with the engine's `Pending` it makes a
//! `Permit` (`crate::permission::Permit::approved`). Outside code cannot build one:
//!
//! ```compile_fail,E0624
//! use crewmaster::approver::{Approval, ApprovalAnswer};
//! use crewmaster::protocol::ToolCall;
//! let call = ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{}".into() };
//! let fake = Approval::new("lead".into(), call, ApprovalAnswer::AllowOnce);
//! ```

pub mod actor;
pub mod network;

use serde::{Deserialize, Serialize};

use crate::protocol::ToolCall;
use crate::protocol::decision::{Category, Decision};
use crate::protocol::permission_mode::PermissionMode;

/// A question for a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The asking agent.
    pub agent: String,
    /// The call.
    pub call: ToolCall,
    /// The engine's decision (reason, target, category).
    pub decision: Decision,
    /// The asking agent's permission mode.
    pub mode: PermissionMode,
    /// The teammate's name when the asking agent is a teammate (its Ask comes to the
    /// lead's approver, which says who is asking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teammate: Option<String>,
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
    /// Run this command once, outside the OS sandbox: an explicit human decision, offered
    /// for commands (typically after a sandboxed run failed because of the sandbox).
    /// Never given by a headless policy.
    AllowOutsideSandbox,
    /// Refuse it, optionally telling the model why.
    Deny {
        /// A message for the model.
        message: Option<String>,
    },
}

/// A human's "allow" for one call of one agent. Private fields, built only by the
/// approver from an answer it received; deliberately neither `Clone` nor `Deserialize`.
#[derive(Debug)]
pub struct Approval {
    agent: String,
    call: ToolCall,
    answer: ApprovalAnswer,
}

impl Approval {
    /// Only the approver builds approvals, and only for an allowing answer.
    fn new(agent: String, call: ToolCall, answer: ApprovalAnswer) -> Option<Approval> {
        match answer {
            ApprovalAnswer::Deny { .. } => None,
            _ => Some(Approval {
                agent,
                call,
                answer,
            }),
        }
    }

    /// The approved call.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The agent whose call was approved.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// How the human allowed it (once, for the session, forever, outside the sandbox).
    pub fn answer(&self) -> &ApprovalAnswer {
        &self.answer
    }
}

/// The approver's reply to the asking agent.
#[derive(Debug)]
pub enum Outcome {
    /// Allowed: present the approval with the pending call.
    Approved(Approval),
    /// Refused by whoever answered, optionally telling the model why.
    Refused {
        /// A message for the model.
        message: Option<String>,
    },
    /// Nobody could answer (headless, the question went unanswered, the approver is gone):
    /// refused, though no one decided so.
    Unanswered {
        /// Why, and how to allow such calls.
        message: String,
    },
}

impl Outcome {
    /// Turns an answer about `request` into the outcome (the only place an `Approval`
    /// is minted).
    fn from_answer(request: ApprovalRequest, answer: ApprovalAnswer) -> Outcome {
        match answer {
            ApprovalAnswer::Deny { message } => Outcome::Refused { message },
            allow => match Approval::new(request.agent, request.call, allow) {
                Some(a) => Outcome::Approved(a),
                None => Outcome::Refused { message: None },
            },
        }
    }
}

/// Why a headless run refuses an Ask, and how the user can allow such calls.
pub fn headless_refusal(req: &ApprovalRequest) -> String {
    let how = match req.decision.category {
        Some(Category::Write) => {
            "rerun with `--permission-mode acceptEdits`, or add an allow rule such as `Write(src/**)` to .crew/settings.local.json"
        }
        Some(Category::Exec) => {
            return exec_refusal(req);
        }
        Some(Category::Read) => {
            "rerun with `--permission-mode default` (reads are allowed there), or add an allow rule such as `Read(**)`"
        }
        Some(Category::Network) => "add the rule or the allowedDomains entry named above",
        _ => "add an allow rule for this tool to .crew/settings.local.json",
    };
    format!(
        "`{}` needs approval ({}) and nobody can answer in headless mode; to allow it, {how}",
        req.call.name, req.decision.reason
    )
}

/// The headless refusal of a command or an agent: the rule that allows exactly this call
/// (the command, the agent type), never an unrelated example. A command is named only
/// when the engine read it as it was written: its reading drops quotes, and a rule
/// spelled from it would show the user another command than the one refused (`touch
/// x'; rm -rf ~; echo '` reads as three commands). Nor is one with a quote or a control
/// character offered as a command line to paste.
fn exec_refusal(req: &ApprovalRequest) -> String {
    let plain = |s: &str| !s.contains(['(', ')', '\'']) && !s.chars().any(char::is_control);
    let written = || {
        serde_json::from_str::<serde_json::Value>(&req.call.arguments)
            .ok()
            .and_then(|v| v.get("command")?.as_str().map(str::to_string))
    };
    let rule = match (req.call.name.as_str(), req.decision.target.as_deref()) {
        ("run_command", Some(command))
            if plain(command) && written().as_deref() == Some(command) =>
        {
            Some(format!("Bash({command})"))
        }
        ("agent", Some(kind)) if plain(kind) => Some(format!("Agent({kind})")),
        _ => None,
    };
    let how = match rule {
        Some(rule) => format!(
            "add the allow rule `{rule}` to .crew/settings.local.json (or `--allowedTools '{rule}'` for one run), or rerun with `--permission-mode bypassPermissions` if you trust the task"
        ),
        None => "add an allow rule for it to .crew/settings.local.json, or rerun with `--permission-mode bypassPermissions` if you trust the task".into(),
    };
    format!(
        "`{}` needs approval ({}) and nobody can answer in headless mode; to allow it, {how}",
        req.call.name, req.decision.reason
    )
}

/// Test helpers shared by the approval dialog's and the approval hub's tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::actor::PendingApproval;
    use super::{ApprovalAnswer, ApprovalRequest};
    use crate::permission::{Category, Decision, PermissionMode, Source, Verdict};
    use crate::protocol::ToolCall;
    use ractor::concurrency::{OneshotReceiver, oneshot};

    /// An Ask of `agent` about calling `name` with `args` (default mode, a write), and
    /// the receiver its answer goes to.
    pub(crate) fn pending(
        agent: &str,
        name: &str,
        args: &str,
    ) -> (PendingApproval, OneshotReceiver<ApprovalAnswer>) {
        let (tx, rx) = oneshot();
        let mut decision = Decision::new(
            Verdict::Ask,
            Source::Mode,
            "default mode asks before write tools",
        );
        decision.category = Some(Category::Write);
        let request = ApprovalRequest {
            agent: agent.into(),
            call: ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: args.into(),
            },
            decision,
            mode: PermissionMode::Default,
            teammate: None,
        };
        (
            PendingApproval {
                request,
                reply: tx.into(),
            },
            rx,
        )
    }
}
