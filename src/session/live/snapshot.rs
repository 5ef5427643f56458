//! A live session as `crew ps` shows it: the session, then each agent (the lead, its
//! subagents, its teammates, remote ones with their node) with its state, tool, worktree,
//! branch, tokens and cost, then the background commands. Built from the board and from
//! the state the session keeps on disk (task records), so a session whose socket cannot
//! answer is still shown from its files.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::board::{AgentNow, Board, Phase};
use super::registry::Entry;
use crate::tasks::{TaskKind, TaskRecord, TaskStatus, load_records};

/// The snapshot of the session `entry` names.
pub(crate) fn snapshot(entry: &Entry, board: &Board) -> Value {
    let now = crate::tasks::now_ms();
    let records = load_records(&entry.session_dir).unwrap_or_default();
    let lead = board.find("lead");
    let mut agents = vec![json!({
        "id": "lead",
        "name": "lead",
        "kind": "lead",
        "description": lead.as_ref().and_then(|a| a.task.clone()),
        "state": lead.as_ref().map_or("idle", |a| a.phase.as_str()),
        "tool": lead.as_ref().and_then(|a| a.tool.clone()),
        "tool_seconds": lead.as_ref().and_then(|a| tool_seconds(a, now)),
        "worktree": Value::Null,
        "branch": branch_of(&entry.project),
        "node": Value::Null,
        "tokens": lead.as_ref().map_or(0, |a| a.tokens),
        "cost_usd": lead.as_ref().and_then(|a| a.cost_usd),
    })];
    for r in records.iter().filter(|r| r.kind == TaskKind::Agent) {
        agents.push(subagent(r, board.find(&r.id), now));
    }
    for (name, status) in board.members() {
        agents.push(teammate(&name, &status, board.find(&name), now));
    }
    let commands: Vec<Value> = records
        .iter()
        .filter(|r| r.kind == TaskKind::Command)
        .map(|r| {
            json!({
                "id": r.id,
                "description": r.description,
                "command": r.command,
                "status": r.status.as_str(),
                "started_ms": r.started_ms,
            })
        })
        .collect();
    json!({
        "id": entry.session,
        "project": entry.project,
        "pid": entry.pid,
        "started": entry.started_ms,
        "agents": agents,
        "commands": commands,
    })
}

fn subagent(r: &TaskRecord, now_on_board: Option<AgentNow>, now: u64) -> Value {
    // A record that has ended says how; a running one is what its events say.
    let state = match r.status {
        TaskStatus::Completed => "done",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "stopped",
        _ => now_on_board
            .as_ref()
            .map_or("starting", |a| a.phase.as_str()),
    };
    let live = now_on_board.as_ref().filter(|_| !r.status.is_terminal());
    json!({
        "id": r.id,
        "name": r.agent_type,
        "kind": "subagent",
        "description": r.description,
        "state": state,
        "tool": live.and_then(|a| a.tool.clone()),
        "tool_seconds": live.and_then(|a| tool_seconds(a, now)),
        "worktree": r.worktree,
        "branch": r.worktree.as_deref().and_then(branch_of),
        "node": r.node,
        "tokens": now_on_board.as_ref().map_or(total(&r.usage), |a| a.tokens.max(total(&r.usage))),
        "cost_usd": now_on_board.as_ref().and_then(|a| a.cost_usd),
    })
}

fn teammate(name: &str, status: &str, now_on_board: Option<AgentNow>, now: u64) -> Value {
    let state = match status {
        "working" => now_on_board
            .as_ref()
            .map_or(Phase::Thinking, |a| a.phase)
            .as_str(),
        "idle" => "idle",
        "failed" => "failed",
        _ => "done",
    };
    let live = now_on_board.as_ref().filter(|_| status == "working");
    json!({
        "id": now_on_board.as_ref().map_or(name, |a| a.agent.as_str()),
        "name": name,
        "kind": "teammate",
        "description": now_on_board.as_ref().and_then(|a| a.task.clone()),
        "state": state,
        "tool": live.and_then(|a| a.tool.clone()),
        "tool_seconds": live.and_then(|a| tool_seconds(a, now)),
        "worktree": Value::Null,
        "branch": Value::Null,
        "node": Value::Null,
        "tokens": now_on_board.as_ref().map_or(0, |a| a.tokens),
        "cost_usd": now_on_board.as_ref().and_then(|a| a.cost_usd),
    })
}

fn total(u: &crate::protocol::Usage) -> u64 {
    u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
}

/// How long the agent has been running (or waiting to run) its tool, in whole seconds.
fn tool_seconds(a: &AgentNow, now: u64) -> Option<u64> {
    a.tool
        .as_ref()
        .map(|_| now.saturating_sub(a.since_ms) / 1000)
}

/// The branch checked out at `dir` (a checkout or a linked worktree), read from its files:
/// `.git` (a directory, or a `gitdir:` file) and then `HEAD`.
pub(crate) fn branch_of(dir: &Path) -> Option<String> {
    let dot_git = dir.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let linked = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        if linked.is_absolute() {
            linked
        } else {
            dir.join(linked)
        }
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
}
