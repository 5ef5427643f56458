//! Memory files: the `CLAUDE.md`, `AGENTS.md` and `CREW.md` instructions users commit
//! (and keep in their home), given to every agent the way Claude Code gives them.
//!
//! - **Which files** ([`discover`]): `~/.claude/CLAUDE.md` and `~/.crew/CREW.md`; then, in
//!   every directory from the repository root down to the agent's cwd, `CLAUDE.md`,
//!   `.claude/CLAUDE.md`, `AGENTS.md`, `CREW.md`, `.crew/CREW.md` and `CLAUDE.local.md`.
//!   A subagent or teammate works in its worktree, so the worktree's copies apply.
//! - **Imports** ([`imports`], [`load`]): `@path` outside code spans and code blocks,
//!   relative to the importing file (`~/` is the home), followed to depth 5; a cycle is
//!   cut and reported, and a file reached twice (an `AGENTS.md` symlinked to `CLAUDE.md`)
//!   is loaded once.
//! - **Reading** ([`read`]): through the same Read deny rules and credential checks as
//!   the file tools and walkers; a denied file is not loaded, and an import of a credential
//!   (`@~/.ssh/id_rsa`) is refused with a warning. A project's memory files (which a cloned
//!   repository controls) may import only files inside the project, or Markdown under
//!   `~/.claude`/`~/.crew`: the agent could not read anything else either. Files are
//!   bounded in size; a huge, binary or special file (a FIFO) is skipped with a warning.
//! - **Where they go** ([`render`], [`agent`]): the files of the cwd and above go into the
//!   system prompt, which carries the first cache breakpoint (`provider/anthropic.rs`), so
//!   they are part of the cached prefix. They are read at the start of each run, so an
//!   edit shows on the next run (and costs one cache miss then, not before).
//! - **Subdirectories**: the files of a directory *below* the cwd are loaded when the agent
//!   first reads, edits or writes a file there. They are appended to that tool result as a
//!   marked `<system-reminder>` block, like Claude Code does, rather than added to the
//!   system prompt: rewriting the system prompt mid-conversation would invalidate the
//!   cached prefix of the whole conversation on every such read. Each file is injected once
//!   per agent; which ones were is read back from the conversation itself, so a resumed
//!   or forked conversation does not get them twice.
//! - **Names**: files are named to the model relative to the repository root (`~/…` for
//!   the home), the same in every worktree. A fork keeps its caller's system prompt
//!   verbatim (it is the caller again, and shares its cached prefix), and recognises the
//!   subdirectory files its inherited conversation already holds.
//! - **Reports** ([`report`]): what an agent here would load and why, for
//!   `crew memory show` and the terminal UI's `/memory`.

pub(crate) mod agent;
pub(crate) mod discover;
pub(crate) mod imports;
pub(crate) mod load;
pub(crate) mod read;
pub mod render;
pub(crate) mod report;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use agent::AgentMemory;
pub use load::{Loader, inspect};

/// Where a memory file sits, which decides how far its imports may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The user's own files (`~/.claude/CLAUDE.md`, `~/.crew/CREW.md`).
    User,
    /// A directory from the repository root down to the cwd.
    Project,
    /// `CLAUDE.local.md` (personal, usually git-ignored) in one of those directories.
    Local,
    /// A directory below the cwd, loaded when the agent first touched a file there.
    Subdirectory,
}

impl Scope {
    /// The name shown to users and the model.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Subdirectory => "subdirectory",
        }
    }
}

/// A loaded memory file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryFile {
    /// Where it was found (absolute, as named: not resolved through symlinks).
    pub path: PathBuf,
    /// Where it sits (an import inherits the scope of the file that imported it).
    pub scope: Scope,
    /// The file whose `@path` imported it (`None`: found by discovery).
    pub imported_by: Option<PathBuf>,
    /// Import depth (0: found by discovery).
    pub depth: usize,
    /// Its text.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub text: String,
}

/// A memory file (or import) that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The file (absolute, as named).
    pub path: PathBuf,
    /// The file whose `@path` named it.
    pub imported_by: Option<PathBuf>,
    /// Why it was not loaded.
    pub reason: SkipReason,
}

/// Why a memory file was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipReason {
    /// An import names nothing that exists (often an `@mention`, not an import).
    #[error("no such file")]
    NotFound,
    /// A credential location (by name or by identity).
    #[error("~/{name} is a credential location; memory files never load credentials")]
    Credential {
        /// The home-relative credential location.
        name: String,
    },
    /// A Read deny rule covers it.
    #[error("a Read deny rule covers it")]
    Denied,
    /// A project memory file imports something outside the project.
    #[error(
        "it is outside the project, and a project's memory files may import only files inside it (or Markdown under ~/.claude or ~/.crew); import it from ~/.claude/CLAUDE.md instead"
    )]
    OutsideProject,
    /// Bigger than one memory file may be.
    #[error("it is {bytes} bytes, more than the {limit}-byte limit for a memory file")]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The memory files loaded so far already fill the budget.
    #[error("the memory files loaded before it already fill the {limit}-byte budget")]
    OverBudget {
        /// The budget.
        limit: u64,
    },
    /// Not text (a NUL byte, or not UTF-8).
    #[error("it is not UTF-8 text")]
    Binary,
    /// A directory (`see @src/` is prose, not an import).
    #[error("it is a directory")]
    Directory,
    /// A FIFO, device or socket.
    #[error("it is not a regular file")]
    NotAFile,
    /// It could not be read.
    #[error("it could not be read: {message}")]
    Unreadable {
        /// The I/O error.
        message: String,
    },
    /// Importing it would close a cycle.
    #[error("import cycle {}; not followed again", chain.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" → "))]
    Cycle {
        /// The chain of imports, ending with the file imported again.
        chain: Vec<PathBuf>,
    },
    /// Deeper than [`load::MAX_DEPTH`] imports.
    #[error("it is more than {} imports deep", load::MAX_DEPTH)]
    TooDeep,
}

impl Skipped {
    /// Whether the user should be told (a missing import is usually an `@mention`, a
    /// directory a way of pointing at code).
    pub fn is_warning(&self) -> bool {
        !matches!(self.reason, SkipReason::NotFound | SkipReason::Directory)
    }

    /// The warning, naming the file and the importer.
    pub fn warning(&self) -> String {
        match &self.imported_by {
            Some(by) => format!(
                "memory file {} (imported by {}) was not loaded: {}",
                self.path.display(),
                by.display(),
                self.reason
            ),
            None => format!(
                "memory file {} was not loaded: {}",
                self.path.display(),
                self.reason
            ),
        }
    }
}

/// What one load produced: the files in order (each import right after its importer) and
/// what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// The loaded files.
    pub files: Vec<MemoryFile>,
    /// What was not loaded.
    pub skipped: Vec<Skipped>,
}
