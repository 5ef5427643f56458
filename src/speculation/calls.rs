//! What a speculation may do with each tool call, decided before anything runs:
//!
//! - every call is first decided by the permission engine (a query, no permit) under the
//!   lead's current mode, and by the gate; anything but a plain Allow stops the
//!   speculation, since nobody can be asked while it runs ahead;
//! - read-only tools run through the normal call path (hooks → engine → gate →
//!   executor) under the speculation's own agent id, with a headless approver;
//!   `read_file` of a file the speculation wrote is served from the overlay;
//! - `run_command` runs only when the engine classifies the whole command as a read
//!   (`Decision::category == Read`); any other command stops the speculation before it
//!   runs;
//! - `write_file` and `edit_file` run only in acceptEdits or bypassPermissions, and then
//!   only into the overlay;
//! - every other side effect (agents, tasks, team tools, skills, MCP writes) stops it,
//!   and so does `web_fetch`: read-only here, but its request reaches a server whether or
//!   not the prediction comes true.
//!
//! Searches and commands cannot see the overlay, so once the speculation has written a
//! file they stop it too (their answer could differ from the real run's).

use std::path::Path;

use serde_json::Value;

use crate::agent::pipeline::{CallerContext, PERMISSION_TIMEOUT, Pipeline};
use crate::engine::PermissionMsg;
use crate::gate::actor::GateMsg;
use crate::permission::{Category, CheckRequest, Decision, PermissionMode, Verdict};
use crate::protocol::{ToolCall, ToolResult};
use crate::tools::{Safety, edit_file, read_file, write_file};

use super::overlay::Overlay;

/// Why a speculation stopped before a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// The engine would ask (or deny): nobody can answer while speculating.
    NotAllowed {
        /// The tool.
        tool: String,
        /// The engine's or gate's reason.
        reason: String,
    },
    /// A command that is not read-only.
    NotReadOnly {
        /// The command.
        command: String,
    },
    /// A write outside acceptEdits and bypassPermissions.
    WriteInMode(PermissionMode),
    /// A side effect a speculation never runs.
    SideEffect(String),
    /// A search or command after the speculation wrote files (it cannot see them).
    OverlayBlind(String),
    /// A write the overlay cannot hold (outside the workspace).
    Outside(String),
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::NotAllowed { tool, reason } => write!(f, "{tool} would need approval: {reason}"),
            Halt::NotReadOnly { command } => write!(f, "command is not read-only: {command}"),
            Halt::WriteInMode(mode) => write!(f, "a write in {mode} mode needs approval"),
            Halt::SideEffect(tool) => write!(f, "{tool} has side effects"),
            Halt::OverlayBlind(tool) => {
                write!(f, "{tool} cannot see the files the speculation wrote")
            }
            Halt::Outside(why) => f.write_str(why),
        }
    }
}

/// The speculation's call path: the lead's pipeline with a headless approver and a
/// private event bus, under the speculation's own agent id.
pub(crate) struct CallPath {
    /// The pipeline.
    pub pipeline: Pipeline,
    /// The caller (the speculation's agent id, the lead's cwd, mode and sandbox).
    pub caller: CallerContext,
}

impl CallPath {
    /// Decides and, when allowed, runs one call (its name already canonical). `Err`:
    /// the speculation stops here, and the call did not run.
    pub(crate) async fn run(
        &self,
        call: ToolCall,
        overlay: &mut Overlay,
    ) -> Result<ToolResult, Halt> {
        let tool = call.name.clone();
        let mode = self.caller.mode.get();
        let safety = self.pipeline.registry.safety(&tool);
        let writes = matches!(tool.as_str(), "write_file" | "edit_file");
        let runs_command = tool == "run_command";
        // Decide before anything runs (no tool and no hook has seen the call yet).
        if !writes && !runs_command && safety != Some(Safety::ReadOnly) {
            return Err(Halt::SideEffect(tool));
        }
        // A fetch reaches its server whether or not the prediction comes true.
        if tool == crate::tools::skill::NAME || tool == crate::tools::web_fetch::NAME {
            return Err(Halt::SideEffect(tool));
        }
        if writes
            && !matches!(
                mode,
                PermissionMode::AcceptEdits | PermissionMode::BypassPermissions
            )
        {
            return Err(Halt::WriteInMode(mode));
        }
        let decision = self.check(&call, mode).await;
        if runs_command && decision.category != Some(Category::Read) {
            return Err(Halt::NotReadOnly {
                command: command_of(&call),
            });
        }
        if decision.verdict != Verdict::Allow {
            return Err(Halt::NotAllowed {
                tool,
                reason: decision.reason,
            });
        }
        if let Some(refusal) = self.gate_refusal(&call).await {
            return Err(Halt::NotAllowed {
                tool,
                reason: refusal.content,
            });
        }
        if !overlay.is_empty()
            && matches!(tool.as_str(), "find_files" | "search_code" | "run_command")
        {
            return Err(Halt::OverlayBlind(tool));
        }
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        match tool.as_str() {
            "write_file" | "edit_file" => write_into(overlay, &call, &args),
            "read_file" => match path_arg(&args).and_then(|p| overlay.redirect(Path::new(&p))) {
                Some(copy) => Ok(read_copy(&call, &args, &copy)),
                None => self.dispatch(call).await,
            },
            _ => self.dispatch(call).await,
        }
    }

    /// The normal call path; a refusal there (settings changed under us) stops too.
    async fn dispatch(&self, call: ToolCall) -> Result<ToolResult, Halt> {
        let tool = call.name.clone();
        let result = self.pipeline.dispatch(&self.caller, call).await;
        match result.error_code.as_deref() {
            Some("permission_denied" | "tool_not_allowed") => Err(Halt::NotAllowed {
                tool,
                reason: result.content,
            }),
            _ => Ok(result),
        }
    }

    /// The engine's decision for `call` (a query: no permit is made); no answer denies.
    async fn check(&self, call: &ToolCall, mode: PermissionMode) -> Decision {
        let request = CheckRequest {
            call: call.clone(),
            spec: self
                .pipeline
                .registry
                .definition(&call.name)
                .and_then(|d| d.permission.clone()),
            cwd: self.caller.tool_ctx.cwd.clone(),
            mode,
        };
        match self
            .pipeline
            .permission
            .call(|r| PermissionMsg::Check(request, r), PERMISSION_TIMEOUT)
            .await
        {
            Ok(d) => d,
            _ => Decision::new(
                Verdict::Deny,
                crate::permission::Source::Unknown,
                "the permission engine did not answer",
            ),
        }
    }

    /// What the gate would answer; no answer is a refusal.
    async fn gate_refusal(&self, call: &ToolCall) -> Option<ToolResult> {
        match self
            .pipeline
            .gate
            .call(
                |reply| GateMsg::Refusal {
                    agent: self.caller.agent.clone(),
                    call: call.clone(),
                    reply,
                },
                PERMISSION_TIMEOUT,
            )
            .await
        {
            Ok(refusal) => refusal,
            _ => Some(ToolResult::error(
                &call.id,
                "tool_not_allowed",
                "the gate did not answer",
            )),
        }
    }
}

fn path_arg(args: &Value) -> Option<String> {
    args.get("path").and_then(Value::as_str).map(String::from)
}

fn command_of(call: &ToolCall) -> String {
    serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .and_then(|v| v.get("command").and_then(Value::as_str).map(String::from))
        .unwrap_or_else(|| call.arguments.clone())
}

/// `read_file` of a file the speculation wrote: the overlay's copy, shown as the tool
/// shows a file.
fn read_copy(call: &ToolCall, args: &Value, copy: &Path) -> ToolResult {
    let shown = path_arg(args).unwrap_or_default();
    let number = |field: &str| args.get(field).and_then(Value::as_u64).map(|n| n as usize);
    let offset = number("offset").unwrap_or(1).max(1);
    let limit = number("limit").unwrap_or(read_file::DEFAULT_LIMIT).max(1);
    match read_file::read_window(copy, &shown, offset, limit) {
        Ok(text) => ToolResult::ok(&call.id, text),
        Err(e) => ToolResult::error(&call.id, e.code(), e.to_string()),
    }
}

/// `write_file` or `edit_file` into the overlay, answered as the tool answers; a path
/// the overlay cannot hold (outside the workspace) stops the speculation.
fn write_into(overlay: &mut Overlay, call: &ToolCall, args: &Value) -> Result<ToolResult, Halt> {
    let path = path_arg(args).unwrap_or_default();
    if let Err(e) = overlay.relative(Path::new(&path)) {
        return Err(Halt::Outside(e.to_string()));
    }
    Ok(write_checked(overlay, call, args, &path))
}

fn write_checked(overlay: &mut Overlay, call: &ToolCall, args: &Value, path: &str) -> ToolResult {
    let text = |field: &str| args.get(field).and_then(Value::as_str);
    let fail = |code: &str, message: String| ToolResult::error(&call.id, code, message);
    let target = Path::new(path);
    let (content, answer) = if call.name == "write_file" {
        let Some(content) = text("content") else {
            return fail("invalid_arguments", "argument `content` is missing".into());
        };
        let verb = if overlay.exists(target) {
            "overwrote"
        } else {
            "created"
        };
        let answer = format!(
            "{verb} `{path}`: {} bytes, {} lines",
            content.len(),
            write_file::line_count(content)
        );
        (content.to_string(), answer)
    } else {
        let (Some(old), Some(new)) = (text("old_string"), text("new_string")) else {
            return fail(
                "invalid_arguments",
                "arguments `old_string` and `new_string` are required".into(),
            );
        };
        let replace = edit_file::Replace::all_if(
            args.get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        );
        if old.is_empty() || old == new {
            return fail(
                "invalid_arguments",
                "`old_string` is empty or equals `new_string`".into(),
            );
        }
        let current = match overlay.read_text(target) {
            Ok(c) => c,
            Err(e) => return fail("failed", format!("cannot read `{path}`: {e}")),
        };
        let edited = match edit_file::apply_edit(&current, old, new, replace) {
            Ok(e) => e,
            Err(e) => return fail("failed", format!("`{path}`: {e}")),
        };
        let n = edited.lines.len();
        let s = if n == 1 { "" } else { "s" };
        let answer = format!(
            "edited `{path}`: replaced {n} occurrence{s} at line{s} {}",
            edit_file::join_lines(&edited.lines)
        );
        (edited.text, answer)
    };
    match overlay.write(target, &content) {
        Ok(()) => ToolResult::ok(&call.id, answer),
        Err(e) => fail("failed", e.to_string()),
    }
}
