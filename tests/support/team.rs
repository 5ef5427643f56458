//! Helpers for the team tests: a scripted session with named teammates in a git
//! repository, and ways to look at what each agent was sent and where it worked.

use std::path::{Path, PathBuf};

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::provider::ModelRequest;
use crewmaster::team::{MemberName, Team};

use super::Setup;

/// A teammate definition that writes, reads and messages.
pub const WRITER: &str = "---\nname: w\ndescription: test teammate\nisolation: worktree\ntools: write_file, read_file, send_message\n---\nDo your part.\n";

/// A Chat-mode run of `task`.
pub fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

/// A team session over `script` in a fresh git repository with the agent definitions
/// `files` (`.crew/agents/…`).
pub fn team_setup(script: &str, files: Vec<(&'static str, String)>) -> Setup {
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = files;
    setup
}

/// Everything a request shows the model, as one string.
pub fn shown(r: &ModelRequest) -> String {
    serde_json::to_string(&r.messages).unwrap()
}

/// The requests of `agent`, in order.
pub fn requests_of<'a>(all: &'a [ModelRequest], agent: &str) -> Vec<&'a ModelRequest> {
    all.iter().filter(|r| r.agent == agent).collect()
}

/// The session's team (`common::start` names it `session`, under `<home>/teams`).
pub fn team_of(home: &Path) -> Team {
    Team::open(&home.canonicalize().unwrap().join("teams"), "session").unwrap()
}

/// The worktree of teammate `name`, as the roster holds it.
pub fn worktree(team: &Team, name: &str) -> PathBuf {
    let roster = team.roster().unwrap();
    let member = roster
        .member(&MemberName::parse(name).unwrap())
        .unwrap_or_else(|| panic!("{name} is not on the roster: {roster:?}"));
    member.worktree.clone().expect("a teammate has a worktree")
}
