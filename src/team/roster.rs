//! The team roster (`config.json`): who is on the team, which agent and worktree each
//! teammate runs in, and what it is doing. Read freely; changed only through
//! [`Team::update_roster`], which holds `config.lock` across read-modify-write so two
//! processes never lose each other's update.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::{Result, TeamError, io_at};
use super::{MemberName, Team, TodoId, lock, now_ms};

/// What a teammate is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// Alive, waiting for a message.
    Idle,
    /// Running a turn.
    Working,
    /// Crashed or gave up.
    Failed,
    /// Stopped by the lead or the user.
    Stopped,
    /// Shut down after approving a shutdown request.
    Finished,
}

impl fmt::Display for MemberStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Idle => "idle",
            Self::Working => "working",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
            Self::Finished => "finished",
        })
    }
}

/// One teammate (the lead is implicit and never listed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Its unique name in the team; also its inbox's file name.
    pub name: MemberName,
    /// The agent id (task id) of its actor, for transcripts and resume.
    pub agent_id: String,
    /// The agent definition it was spawned from.
    pub agent_type: String,
    /// Its git worktree; `None` for `isolation: none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
    /// What it is doing.
    pub status: MemberStatus,
    /// The work-list item it holds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_item: Option<TodoId>,
    /// When it last changed (Unix ms).
    pub last_activity_ms: u64,
    /// The model its spawn request asked for (its definition's own model wins), so
    /// `crew --continue` brings it back on the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The spawn request's description: its worktree's branch is named after it, so a
    /// worktree removed as clean is recreated on the same branch.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Where a `plan_first` teammate is with its plan; `None` once it may act.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanStage>,
}

/// Where a `plan_first` teammate is with its plan (it works in Plan mode until approved).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum PlanStage {
    /// Still writing its plan.
    Drafting,
    /// Its plan went to the lead as a `plan_approval_request`; the answer is awaited.
    Awaiting {
        /// The plan, carried out once approved.
        plan: String,
    },
}

impl Member {
    /// A new idle teammate.
    pub fn new(
        name: MemberName,
        agent_id: &str,
        agent_type: &str,
        worktree: Option<PathBuf>,
    ) -> Self {
        Self {
            name,
            agent_id: agent_id.to_string(),
            agent_type: agent_type.to_string(),
            worktree,
            status: MemberStatus::Idle,
            current_item: None,
            last_activity_ms: now_ms(),
            model: None,
            description: String::new(),
            plan: None,
        }
    }
}

/// The contents of `config.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roster {
    /// The team's name (its session id).
    pub team: String,
    /// The teammates, in the order they joined.
    #[serde(default)]
    pub members: Vec<Member>,
}

impl Roster {
    /// The teammate called `name`.
    pub fn member(&self, name: &MemberName) -> Option<&Member> {
        self.members.iter().find(|m| &m.name == name)
    }

    /// The teammate called `name`, for changing.
    pub fn member_mut(&mut self, name: &MemberName) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| &m.name == name)
    }

    /// Whether `name` can receive mail: the lead or a listed teammate.
    pub fn has_address(&self, name: &MemberName) -> bool {
        name.is_lead() || self.member(name).is_some()
    }
}

impl Team {
    /// The roster as it is on disk (empty if no teammate was ever added).
    pub fn roster(&self) -> Result<Roster> {
        let path = self.config_path();
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|source| TeamError::Corrupt { path, source })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Roster {
                team: self.name.clone(),
                members: Vec::new(),
            }),
            Err(e) => Err(io_at(&path)(e)),
        }
    }

    /// Changes the roster under `config.lock`: reads it, lets `change` edit it, and writes
    /// it back atomically unless `change` fails (then nothing is written).
    pub fn update_roster<T>(&self, change: impl FnOnce(&mut Roster) -> Result<T>) -> Result<T> {
        let _locked = lock::exclusive(&self.dir.join("config.lock"))?;
        let mut roster = self.roster()?;
        let out = change(&mut roster)?;
        let path = self.config_path();
        let bytes = serde_json::to_vec_pretty(&roster).map_err(|source| TeamError::Corrupt {
            path: path.clone(),
            source,
        })?;
        crate::store::write_atomic(&path, &bytes).map_err(io_at(&path))?;
        Ok(out)
    }

    /// Adds a teammate; its name must be free and not reserved.
    pub fn add_member(&self, member: Member) -> Result<()> {
        MemberName::teammate(member.name.as_str())?;
        self.update_roster(|roster| {
            if roster.member(&member.name).is_some() {
                return Err(TeamError::DuplicateMember {
                    team: self.name.clone(),
                    name: member.name.to_string(),
                });
            }
            roster.members.push(member);
            Ok(())
        })
    }

    /// Changes one teammate and stamps its last activity; returns it as saved.
    pub fn update_member(
        &self,
        name: &MemberName,
        change: impl FnOnce(&mut Member),
    ) -> Result<Member> {
        self.update_roster(|roster| {
            let member = roster
                .member_mut(name)
                .ok_or_else(|| TeamError::UnknownMember {
                    field: "name",
                    team: self.name.clone(),
                    name: name.to_string(),
                })?;
            change(member);
            member.last_activity_ms = now_ms();
            Ok(member.clone())
        })
    }

    /// Sets a teammate's status and current item.
    pub fn set_member_status(
        &self,
        name: &MemberName,
        status: MemberStatus,
        current_item: Option<TodoId>,
    ) -> Result<Member> {
        self.update_member(name, |m| {
            m.status = status;
            m.current_item = current_item;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> MemberName {
        MemberName::parse(s).unwrap()
    }

    #[test]
    fn members_round_trip_and_duplicates_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let team = Team::open(root.path(), "t").unwrap();
        assert!(team.roster().unwrap().members.is_empty());
        team.add_member(Member::new(
            name("alice"),
            "a1",
            "coder",
            Some("/wt/a".into()),
        ))
        .unwrap();
        let err = team
            .add_member(Member::new(name("alice"), "a2", "coder", None))
            .unwrap_err();
        assert!(matches!(err, TeamError::DuplicateMember { .. }), "{err}");
        let lead = Member::new(MemberName::lead(), "x", "coder", None);
        assert!(matches!(
            team.add_member(lead),
            Err(TeamError::InvalidName { .. })
        ));

        let m = team
            .set_member_status(&name("alice"), MemberStatus::Working, Some(TodoId(1)))
            .unwrap();
        let again = Team::open(root.path(), "t").unwrap().roster().unwrap();
        assert_eq!(again.member(&name("alice")), Some(&m));
        assert_eq!(again.team, "t");
        assert!(again.has_address(&MemberName::lead()) && !again.has_address(&name("bob")));
    }

    #[test]
    fn concurrent_updates_are_not_lost() {
        let root = tempfile::tempdir().unwrap();
        let team = Team::open(root.path(), "t").unwrap();
        std::thread::scope(|s| {
            for i in 0..8 {
                let team = team.clone();
                s.spawn(move || {
                    for j in 0..5 {
                        let n = name(&format!("m{i}-{j}"));
                        team.add_member(Member::new(n, "id", "coder", None))
                            .unwrap();
                    }
                });
            }
        });
        assert_eq!(team.roster().unwrap().members.len(), 40);
    }

    #[test]
    fn a_torn_config_is_reported_with_its_path() {
        let root = tempfile::tempdir().unwrap();
        let team = Team::open(root.path(), "t").unwrap();
        std::fs::write(team.config_path(), b"{\"team\": \"t\", \"mem").unwrap();
        let err = team.roster().unwrap_err().to_string();
        assert!(err.contains("config.json"), "{err}");
        assert!(team.update_member(&name("a"), |_| {}).is_err());
    }
}
