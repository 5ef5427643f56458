//! The parts of a parsed command line: each simple command the shell would run
//! (`Part`), with its wrappers, redirections, expanded words and directory, and the
//! whole parse (`Script`).

use super::cwd::Dir;
use super::expand::Arg;
use super::stdin::Feed;

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
    /// The text of this command's here-document or here-string.
    pub here: Option<Feed>,
    /// `argv` as bash would expand it: braces, tilde, variables assigned earlier, globs
    /// matched in `dir`. An argument that cannot be known says so (`Arg::known`).
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

    /// Whether the shell changes the part's words before running it: variables,
    /// substitutions, globs, braces, or anything that cannot be known.
    pub fn expanded(&self) -> bool {
        self.dynamic
            || self.args.len() != self.argv.len()
            || self.args.iter().any(|a| !a.known || a.pattern.is_some())
            || self.redirects.iter().any(|r| !r.arg.known)
    }

    /// The program name (last path component of argv[0]).
    pub fn program(&self) -> &str {
        self.argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a))
            .unwrap_or("")
    }
}

/// A parsed command line.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Every simple command, in source order (nested ones after their parent).
    pub parts: Vec<Part>,
    /// A function that calls itself in a pipe or in the background (a fork bomb).
    pub fork_bomb: bool,
}
