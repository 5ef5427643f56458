//! `crew team show|send`: watch a session's team and write to it from another terminal,
//! during or after a run. Reads the files the team keeps in `~/.crew/teams/<session>/`
//! through the storage core; a message is appended (and fsynced) to the recipient's inbox,
//! which the running session notices within a fraction of a second (`team::watch`).

use crate::agent::ledger::{AgentSpend, Ledger};
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::Subcommand;

use crate::team::view::{MemberView, TeamView, view};
use crate::team::{MemberName, Outgoing, Recipient, Team, now_ms};

/// `crew team …`
#[derive(Debug, Subcommand)]
pub enum TeamCmd {
    /// Show the team: members with status, current item, last activity and unread
    /// messages; work-list items with status, owner and blockers.
    Show {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The session id (default: a live session of this project, else its newest
        /// session that has a team).
        #[arg(long)]
        session: Option<String>,
    },
    /// Send a message from you to a teammate (`lead` for the lead, `*` for everyone).
    Send {
        /// The recipient: a teammate's name, `lead`, or `*`.
        name: String,
        /// The message.
        message: String,
        /// A short preview for notifications and the team panel.
        #[arg(long)]
        summary: Option<String>,
        /// The session id (default: a live session of this project, else its newest
        /// session that has a team).
        #[arg(long)]
        session: Option<String>,
    },
}

/// A member's spending: the lead's under `lead`, a teammate's under its agent id.
fn member_spend<'l>(ledger: &'l Ledger, m: &MemberView) -> Option<&'l AgentSpend> {
    ledger.agents.get(m.agent_id.as_deref().unwrap_or("lead"))
}

/// Writes the view as text, with each member's cost from `ledger`.
pub(crate) fn write_text(
    v: &TeamView,
    ledger: &Ledger,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "team {}  ({})", v.team, v.dir.display())?;
    writeln!(out, "members:")?;
    let now = now_ms();
    for m in &v.members {
        let status = m.status.map_or("-".to_string(), |s| s.to_string());
        let item = m
            .current_item
            .as_ref()
            .map_or("-".to_string(), |i| format!("#{i}"));
        let active = m.last_activity_ms.map_or("-".to_string(), |t| {
            format!("{}s ago", now.saturating_sub(t) / 1000)
        });
        writeln!(
            out,
            "  {:<16} {:<16} {:<9} item {:<5} active {:<9} unread {:<3} cost {}",
            m.name,
            m.agent_type,
            status,
            item,
            active,
            m.unread,
            Ledger::cost_text(member_spend(ledger, m))
        )?;
    }
    writeln!(out, "items:")?;
    if v.items.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for i in &v.items {
        write!(out, "  #{} [{}] {}", i.id, i.status, i.subject)?;
        if let Some(owner) = &i.owner {
            write!(out, " — owner {owner}")?;
        }
        if !i.open_blockers.is_empty() {
            let list: Vec<String> = i.open_blockers.iter().map(|b| format!("#{b}")).collect();
            write!(out, " — blocked by {}", list.join(", "))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The team of `--session ID`; else of a live session of this project (the newest first;
/// for `send`, the one whose team has the recipient), else of its newest session that has
/// one. A quick second session therefore does not hide a running team.
fn find_team(cwd: &Path, session: Option<&str>, member: Option<&str>) -> anyhow::Result<Team> {
    if let Some(id) = session {
        return Team::find_for_session(id)?
            .with_context(|| format!("--session {id}: that session has no team"));
    }
    let root = crate::store::project_root(cwd);
    let live = crate::session::live::registry::live()
        .into_iter()
        .rev()
        .filter(|e| e.project == root)
        .map(|e| e.session);
    let recorded = crate::transcript::list_sessions(&root)
        .into_iter()
        .map(|s| s.id);
    let teams = live
        .chain(recorded)
        .filter_map(|id| Team::find_for_session(&id).ok().flatten());
    let mut first = None;
    for team in teams {
        let has = |name: &str| view(&team).is_ok_and(|v| v.members.iter().any(|m| m.name == name));
        match member {
            Some(name) if !has(name) => {
                first.get_or_insert(team);
            }
            _ => return Ok(team),
        }
    }
    first.with_context(|| {
        format!(
            "no session of {} has a team yet; start one with `crew`, or pass --session ID",
            root.display()
        )
    })
}

/// Runs a team subcommand; returns the exit code.
pub(crate) fn run(cmd: TeamCmd, cwd: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    match cmd {
        TeamCmd::Show { json, session } => {
            let team = find_team(cwd, session.as_deref(), None)?;
            let v = view(&team)?;
            // Each member's spending, from the ledger of the team's session.
            let ledger = crate::store::session_dir(&crate::store::project_root(cwd), team.name())
                .map(|dir| Ledger::load(&dir))
                .unwrap_or_default();
            if json {
                let mut json = serde_json::to_value(&v)?;
                let members = json["members"].as_array_mut().into_iter().flatten();
                for (j, m) in members.zip(&v.members) {
                    j["cost_usd"] = serde_json::json!(member_spend(&ledger, m).map(|a| a.cost_usd));
                }
                writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
            } else {
                write_text(&v, &ledger, out)?;
            }
            Ok(0)
        }
        TeamCmd::Send {
            name,
            message,
            summary,
            session,
        } => {
            let team = find_team(cwd, session.as_deref(), Some(name.trim()))?;
            let to = Recipient::parse(name.trim())?;
            let sent = team.send(
                &MemberName::user(),
                &to,
                Outgoing {
                    summary,
                    ..Outgoing::text(message)
                },
            )?;
            for e in &sent {
                writeln!(
                    out,
                    "sent to {} (message {} of its inbox, team {})",
                    e.to,
                    e.index + 1,
                    team.name()
                )?;
            }
            Ok(0)
        }
    }
}
