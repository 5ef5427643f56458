//! The parts of a parsed command line: each simple command the shell would run
//! (`Part`), with its wrappers, redirections, words and directory, and the whole parse
//! (`Script`); an argument as the command receives it (`Arg`), the directory a part runs
//! in (`Dir`) and what that needs from outside the command (`Env`).

use std::path::{Path, PathBuf};

/// One argument as the command receives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arg {
    /// The text the command receives; when unknown, the known text with placeholders
    /// (`$VAR`, `$(…)`) for what could not be read.
    pub text: String,
    /// Whether `text` is exactly what the command receives.
    pub known: bool,
    /// Whether an unknown value may split into several arguments (an unquoted expansion
    /// or glob): it may then hold options as well as operands.
    pub splits: bool,
    /// For an unquoted glob (never matched against the disk): the pattern.
    pub pattern: Option<String>,
}

impl Arg {
    /// A known literal argument.
    pub fn literal(text: impl Into<String>) -> Self {
        Arg {
            text: text.into(),
            known: true,
            ..Arg::default()
        }
    }
}

/// Where the shell is when a part runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Dir {
    /// The caller's cwd (no `cd` ran before this part).
    #[default]
    Initial,
    /// The directory a leading literal `cd DIR` entered: its real absolute path.
    Known(PathBuf),
    /// Somewhere we cannot tell (any other `cd`, `pushd`, `popd`, a missing target).
    Unknown,
}

impl Dir {
    /// The directory a part runs in, from the parser's one walk of the command: the
    /// caller's `cwd` (`None` when it does not exist), or where a leading literal
    /// `cd DIR` went; `None` after any other `cd`, which the engine does not follow.
    pub fn path(&self, cwd: Option<&Path>) -> Option<PathBuf> {
        match self {
            Dir::Initial => cwd.map(Path::to_path_buf),
            Dir::Known(d) => Some(d.clone()),
            Dir::Unknown => None,
        }
    }
}

/// What reading a command needs from outside it.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// The caller's cwd, canonical (a leading `cd DIR` is entered from it).
    pub cwd: Option<PathBuf>,
    /// The home directory (`~`).
    pub home: Option<PathBuf>,
}

/// A redirection of a part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redirect {
    /// Whether it writes (`>`, `>>`, `<>`, `>|`, `&>`).
    pub write: bool,
    /// The target as literal text (`~` for the home directory).
    pub target: String,
    /// The target expanded (tilde, variables), as the shell would open it.
    pub arg: Arg,
}

/// One simple command the shell would run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Part {
    /// The command and its arguments after unwrapping, quotes removed; a word with a
    /// substitution shows it as `$(…)`, `$HOME`/`~` show as `~`.
    pub argv: Vec<String>,
    /// Wrappers removed from the front, outermost first (`sudo`, `timeout 5`, `bash -c`).
    pub wrappers: Vec<String>,
    /// Redirections written on this command.
    pub redirects: Vec<Redirect>,
    /// A word expands a variable, a substitution or arithmetic: the real argv is unknown.
    pub dynamic: bool,
    /// Run in the background (`&`).
    pub background: bool,
    /// A member of a multi-command pipeline (`a | b`).
    pub piped: bool,
    /// Runs with raised privileges (`sudo`, `doas`, `su -c`).
    pub privileged: bool,
    /// The pipeline this part belongs to, and its position in it.
    pub pipeline: usize,
    /// Position in its pipeline (0 = first).
    pub pipe_pos: usize,
    /// Found inside a command or process substitution (`$(…)`, `<(…)`): its output
    /// becomes an argument (or a file) of its parent.
    pub substituted: bool,
    /// For parts found inside a substitution or a `bash -c` script: the enclosing part
    /// (its index in `Script::parts`), if that part is itself in the list.
    pub parent: Option<usize>,
    /// Why what this part runs cannot be seen (a shell reading a program that is not
    /// literal from stdin, a wrapper option we do not know, `core.hooksPath`): no allow
    /// rule, grant or read-only class may let it through.
    pub opaque: Option<String>,
    /// Arguments are appended at run time (`xargs`): rules must assume any.
    pub open: bool,
    /// Variables assigned for this command (`A=1 cmd`, `env A=1 cmd`), values as text.
    pub env: Vec<(String, String)>,
    /// The directory a wrapper runs the command in (`env -C DIR`, `sudo -D DIR`).
    pub chdir: Option<String>,
    /// `argv` as the command receives it (`~` expanded). A word outside the literal
    /// subset (a variable, substitution, glob, brace) is unknown (`Arg::known`).
    pub args: Vec<Arg>,
    /// The directory the part runs in.
    pub dir: Dir,
}

impl Part {
    /// The command after unwrapping, words joined by single spaces.
    pub fn text(&self) -> String {
        self.argv.join(" ")
    }

    /// The command as written, wrappers included, words joined by single spaces.
    pub fn full_text(&self) -> String {
        let mut s = self.wrappers.join(" ");
        if !s.is_empty() && !self.argv.is_empty() {
            s.push(' ');
        }
        s.push_str(&self.text());
        s
    }

    /// Whether the shell changes the part's words before running it in ways not read
    /// here: variables, substitutions, globs, braces.
    pub fn expanded(&self) -> bool {
        self.dynamic
            || self.args.len() != self.argv.len()
            || self.args.iter().any(|a| !a.known || a.pattern.is_some())
            || self.redirects.iter().any(|r| !r.arg.known)
    }

    /// The program name (last path component of argv[0]).
    pub fn program(&self) -> &str {
        program(&self.argv)
    }
}

/// The program name of a command's words (last path component of argv[0]).
pub fn program(argv: &[String]) -> &str {
    argv.first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .unwrap_or("")
}

/// A parsed command line.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Every simple command, in source order (nested ones after their parent).
    pub parts: Vec<Part>,
    /// A function that calls itself in a pipe or in the background (a fork bomb).
    pub fork_bomb: bool,
}
