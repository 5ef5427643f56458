//! The shell state a script builds as it runs, as far as the engine can follow it: the
//! working directory (`cd`, `cd --`, `cd -P`, `pushd`, `popd`) and the variables assigned
//! earlier (`X=…`, `export X=…`). This is the one place that tracks them; every part
//! carries the directory it runs in, and its words are expanded with the variables known
//! when it runs. Whatever cannot be followed (`cd -`, `cd $X`, a `cd` in a branch or loop,
//! `read X`, a function call) becomes unknown, never guessed.

use std::collections::HashMap;
use std::path::PathBuf;

use super::arith::{self, Numbers};
use super::expand::Arg;
use crate::permission::sandbox::lexical;

/// Where the shell is when a part runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Dir {
    /// The caller's cwd (no `cd` ran before this part).
    #[default]
    Initial,
    /// A directory the script changed to: its real (canonical) absolute path.
    Known(PathBuf),
    /// Somewhere we cannot tell (`cd -`, `cd $X`, a `cd` in a branch, a missing target).
    Unknown,
}

/// What expansion needs from outside the script.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// The caller's cwd, canonical (relative globs are matched in it).
    pub cwd: Option<PathBuf>,
    /// The home directory (`~`, `$HOME`, bare `cd`).
    pub home: Option<PathBuf>,
}

/// The directory and variables at one point of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    /// The current directory.
    pub dir: Dir,
    /// `pushd`'s stack; `None` once we lost track of it.
    stack: Option<Vec<Dir>>,
    /// Variables assigned by the script: `Some(value)` when known.
    pub(super) vars: HashMap<String, Option<String>>,
    /// Which variables hold harmless integers, carry the integer attribute, are
    /// associative (`arith.rs`).
    pub num: Numbers,
}

impl Default for State {
    /// A fresh shell: the caller's cwd, an empty directory stack, no variables.
    fn default() -> Self {
        State {
            dir: Dir::Initial,
            stack: Some(Vec::new()),
            vars: HashMap::new(),
            num: Numbers::default(),
        }
    }
}

impl State {
    /// A variable's value when known: assigned by the script, or `HOME` from the
    /// environment.
    pub fn var(&self, name: &str, env: &Env) -> Option<String> {
        match self.vars.get(name) {
            Some(v) => v.clone(),
            None if name == "HOME" => env.home.as_ref().map(|h| h.to_string_lossy().into()),
            None => None,
        }
    }

    /// Whether the script assigned `name`.
    pub fn assigned(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// Whether `name` holds a harmless integer here (`arith.rs`): a literal integer, the
    /// result of harmless arithmetic, or an integer bash maintains itself.
    pub fn harmless(&self, name: &str, _env: &Env) -> bool {
        match self.vars.get(name) {
            Some(Some(v)) => arith::is_integer(v),
            Some(None) => self.num.ints.contains(name),
            None => arith::shell_integer(name),
        }
    }

    /// Records that `name` now holds a harmless integer whose value is not tracked.
    pub fn assign_int(&mut self, name: &str) {
        self.vars.insert(name.to_string(), None);
        self.num.ints.insert(name.to_string());
        self.check_pin(name);
    }

    /// The current directory as an absolute path, when known.
    pub fn abs_dir(&self, env: &Env) -> Option<PathBuf> {
        match &self.dir {
            Dir::Initial => env.cwd.clone(),
            Dir::Known(p) => Some(p.clone()),
            Dir::Unknown => None,
        }
    }

    /// After a construct that may or may not have run (a branch, an `||`): what both
    /// paths agree on stays known, the rest becomes unknown.
    pub fn merge(&mut self, other: &State) {
        let env = Env::default();
        let both_ints = self
            .vars
            .keys()
            .chain(other.vars.keys())
            .chain(self.num.ints.iter())
            .filter(|n| self.harmless(n, &env) && other.harmless(n, &env))
            .cloned()
            .collect();
        self.num.merge(&other.num, both_ints);
        if self.dir != other.dir {
            self.dir = Dir::Unknown;
        }
        if self.stack != other.stack {
            self.stack = None;
        }
        for (k, v) in &other.vars {
            match self.vars.get(k) {
                Some(mine) if mine == v => {}
                _ => {
                    self.vars.insert(k.clone(), None);
                }
            }
        }
        let theirs: Vec<String> = self
            .vars
            .keys()
            .filter(|k| !other.vars.contains_key(*k))
            .cloned()
            .collect();
        for k in theirs {
            self.vars.insert(k, None);
        }
    }

    /// Code we cannot follow ran (a loop body run again, a function, `source`): the
    /// directory and every variable it may have set become unknown. `text` is that code:
    /// only names it mentions are forgotten, and the directory only if it may change it.
    pub fn forget(&mut self, text: Option<&str>) {
        let mentions = |w: &str| text.is_none_or(|t| t.contains(w));
        if mentions("cd") || mentions("pushd") || mentions("popd") {
            self.dir = Dir::Unknown;
            self.stack = None;
        }
        // Builtins that can assign a computed name make every variable unknown.
        let computed = [
            "eval",
            "source",
            ". ",
            "declare",
            "typeset",
            "printf",
            "read",
            "export",
            "local",
            "mapfile",
            "readarray",
        ];
        if text.is_none_or(|t| computed.iter().any(|w| t.contains(w))) {
            for v in self.vars.values_mut() {
                *v = None;
            }
            self.num.ints.clear();
        }
        if mentions("HOME") {
            self.vars.insert("HOME".into(), None);
        }
        if let Some(t) = text {
            // Names assigned in the code (`X=`, `read X`, `for X in`) become unknown,
            // except those the loops being analysed pinned (`loops.rs`).
            let unsets = t.contains("unset");
            for word in t.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if !word.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit()) {
                    self.vars.insert(word.to_string(), None);
                    self.num.ints.remove(word);
                    if unsets {
                        self.num.assoc.remove(word);
                    }
                }
            }
            self.restore_pins();
        } else {
            self.vars.insert("IFS".into(), None);
            self.vars.insert("CDPATH".into(), None);
            self.num.ints.clear();
            self.num.assoc.clear();
            self.break_pins();
        }
    }

    /// Makes every variable and the directory unknown (the state inside a function body,
    /// which runs whenever it is called).
    pub fn unknown() -> State {
        let mut s = State {
            dir: Dir::Unknown,
            stack: None,
            vars: HashMap::new(),
            num: Numbers::default(),
        };
        s.forget(None);
        s
    }

    /// Records `NAME=value` run as a shell command (not as a command's environment).
    pub fn assign(&mut self, name: &str, value: Option<String>) {
        self.vars.insert(name.to_string(), value);
        self.num.ints.remove(name);
        self.check_pin(name);
    }

    /// Applies what a simple command does to the state: `cd`/`pushd`/`popd`, variable
    /// assignments by builtins, and calls we cannot follow (`is_function` tells the
    /// names the script defined).
    /// `ints` are the variables the command leaves holding harmless integers
    /// (`assigns.rs` judged them).
    pub fn apply(
        &mut self,
        args: &[Arg],
        is_function: &dyn Fn(&str) -> bool,
        env: &Env,
        ints: &[String],
    ) {
        let Some(first) = args.first() else { return };
        if !first.known {
            // A computed program may be `cd`, `read`, `source`, or a function.
            self.forget(None);
            return;
        }
        let prog = first.text.rsplit('/').next().unwrap_or(&first.text);
        let rest = &args[1..];
        match prog {
            "cd" => self.cd(rest, env),
            "pushd" => {
                let before = self.dir.clone();
                let target: Vec<&Arg> = rest.iter().filter(|a| a.text != "-n").collect();
                match target.as_slice() {
                    [a] if !a.text.starts_with(['+', '-']) => {
                        self.cd(rest, env);
                        if let Some(s) = &mut self.stack {
                            s.push(before);
                        }
                    }
                    _ => {
                        self.dir = Dir::Unknown;
                        self.stack = None;
                    }
                }
            }
            "popd" => {
                self.dir = match (&mut self.stack, rest.is_empty()) {
                    (Some(s), true) => s.pop().unwrap_or(Dir::Unknown),
                    _ => Dir::Unknown,
                };
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                let plain = rest.iter().all(|a| {
                    !a.text.starts_with('-') || matches!(a.text.as_str(), "-x" | "-r" | "-g" | "--")
                });
                for a in rest {
                    let (name, value) = match a.text.split_once('=') {
                        Some((n, v)) => (n, Some(v)),
                        None => (a.text.as_str(), None),
                    };
                    if !is_name(name) {
                        continue;
                    }
                    if ints.iter().any(|i| i == name) {
                        self.assign_int(name);
                    } else if !a.known || !plain {
                        self.assign(name, None);
                    } else if let Some(v) = value {
                        // Declaration builtins expand a leading `~` in the value.
                        let v = tilde(v, self, env);
                        self.assign(name, v);
                    }
                }
            }
            // `let` assigns only what its arithmetic assigns (`arith.rs` tracks it).
            "unset" | "read" | "mapfile" | "readarray" | "getopts" | "printf" => {
                for a in rest {
                    let name = a.text.split(['=', '[']).next().unwrap_or("");
                    if !a.known {
                        self.forget(None);
                    } else if is_name(name) {
                        self.assign(name, None);
                    }
                    if prog == "unset" {
                        self.num.assoc.remove(name);
                    }
                }
            }
            "source" | "." | "eval" => self.forget(None),
            p if is_function(p) => self.forget(None),
            _ => {}
        }
    }

    fn cd(&mut self, args: &[Arg], env: &Env) {
        let mut physical = false;
        let mut target = None;
        let mut ended = false;
        for a in args {
            if !a.known {
                self.dir = Dir::Unknown;
                return;
            }
            let t = a.text.as_str();
            if !ended && t == "--" {
                ended = true;
            } else if !ended && t.len() > 1 && t.starts_with('-') {
                physical |= t.contains('P');
            } else if target.is_none() {
                target = Some(t);
            }
        }
        self.dir = match target {
            None => match self.var("HOME", env) {
                Some(h) => self.chdir(&h, physical, env),
                None => Dir::Unknown,
            },
            Some("-") => Dir::Unknown,
            Some(t) => self.chdir(t, physical, env),
        };
    }

    /// The directory a wrapper's `chdir(2)` to `target` lands in (`env -C`, `sudo -D`),
    /// when it surely exists.
    pub fn enter(&self, target: &str, env: &Env) -> Dir {
        self.chdir(target, true, env)
    }

    /// The directory `cd target` lands in, when it surely exists and its logical and
    /// physical readings agree.
    fn chdir(&self, target: &str, physical: bool, env: &Env) -> Dir {
        if target.is_empty() {
            return self.dir.clone();
        }
        let relative = !target.starts_with('/');
        // `CDPATH` set by the script may send a relative `cd` elsewhere.
        if relative && !target.starts_with('.') && self.assigned("CDPATH") {
            return Dir::Unknown;
        }
        let joined = match self.abs_dir(env) {
            Some(base) => base.join(target),
            None if relative => return Dir::Unknown,
            None => PathBuf::from(target),
        };
        let real = std::fs::canonicalize(&joined);
        let logical = std::fs::canonicalize(lexical(&joined));
        match (real, logical) {
            (Ok(r), _) if physical && r.is_dir() => Dir::Known(r),
            (Ok(r), Ok(l)) if r == l && r.is_dir() => Dir::Known(r),
            _ => Dir::Unknown,
        }
    }
}

/// A shell variable name.
pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `~` and `~/…` at the start of an assignment value, expanded (unknown without a home).
fn tilde(v: &str, st: &State, env: &Env) -> Option<String> {
    match v.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            st.var("HOME", env).map(|h| format!("{h}{rest}"))
        }
        Some(_) => None,
        None => Some(v.to_string()),
    }
}

/// The expanded arguments of the command left after unwrapping: `words` are the expanded
/// `original` words, `argv` is what unwrapping kept (a run of `original`). When the run
/// cannot be found, every argument is unknown.
pub(super) fn align(original: &[String], words: &[Vec<Arg>], argv: &[String]) -> Vec<Arg> {
    let n = argv.len();
    let at = (n <= original.len())
        .then(|| {
            let suffix = original.len() - n;
            if original[suffix..] == *argv {
                Some(suffix)
            } else {
                (0..=original.len() - n).find(|&k| original[k..k + n] == *argv)
            }
        })
        .flatten();
    match at {
        Some(k) if words.len() == original.len() => words[k..k + n].concat(),
        _ => argv
            .iter()
            .map(|t| Arg {
                text: t.clone(),
                known: false,
                splits: true,
                pattern: None,
            })
            .collect(),
    }
}

/// Whether every word of `original` expands to exactly itself (no tilde, variable, glob,
/// brace or substitution changed it).
pub(super) fn literal(original: &[String], words: &[Vec<Arg>]) -> bool {
    original.len() == words.len()
        && original
            .iter()
            .zip(words)
            .all(|(o, w)| matches!(&w[..], [a] if a.known && a.pattern.is_none() && a.text == *o))
}

/// A value that a wrapper or an option took from one of the `original` words (`time -o
/// FILE`, `env -C DIR`, glued as in `-oFILE` or `--chdir=DIR`), as bash expanded it.
/// Unknown unless one word holds it and expanded to one known argument.
pub(super) fn value_arg(value: &str, original: &[String], words: &[Vec<Arg>]) -> Arg {
    let unknown = Arg {
        text: value.to_string(),
        known: false,
        splits: false,
        pattern: None,
    };
    if value.is_empty() || words.len() != original.len() {
        return unknown;
    }
    let mut found: Option<Arg> = None;
    for (o, w) in original.iter().zip(words) {
        let Some(prefix) = o.strip_suffix(value) else {
            continue;
        };
        let arg = match &w[..] {
            [a] if prefix.is_empty() => a.clone(),
            [a] if a.known && a.pattern.is_none() && a.text.starts_with(prefix) => {
                Arg::literal(&a.text[prefix.len()..])
            }
            _ => return unknown,
        };
        match &found {
            Some(f) if *f != arg => return unknown,
            _ => found = Some(arg),
        }
    }
    found.unwrap_or(unknown)
}

/// Whether a wrapper runs its command in another directory (`env -C dir`, `sudo -D dir`).
pub(super) fn wrappers_change_dir(wrappers: &[String]) -> bool {
    wrappers.iter().any(|w| {
        let mut toks = w.split_whitespace();
        let prog = toks
            .next()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .unwrap_or("");
        let opts: Vec<&str> = toks.collect();
        let has = |short: &str, long: &str| {
            opts.iter().any(|t| {
                t.starts_with(long)
                    || (t.starts_with(short) && !t.starts_with("--"))
                    || (t.starts_with('-') && !t.starts_with("--") && t.contains(&short[1..]))
            })
        };
        match prog {
            "env" => has("-C", "--chdir"),
            "sudo" | "doas" => has("-D", "--chdir"),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Part, parse_in};
    use super::*;

    fn env(cwd: &std::path::Path) -> Env {
        Env {
            cwd: Some(cwd.to_path_buf()),
            home: Some(PathBuf::from("/home/u")),
        }
    }

    fn part<'a>(s: &'a super::super::Script, prog: &str) -> &'a Part {
        s.parts
            .iter()
            .find(|p| p.args.first().is_some_and(|a| a.text == prog))
            .unwrap()
    }

    fn texts(p: &Part) -> Vec<String> {
        p.args.iter().map(|a| a.text.clone()).collect()
    }

    #[test]
    fn variables_and_tilde_expand() {
        let e = env(std::path::Path::new("/"));
        let s = parse_in("H=~; rm -rf $H", &e).unwrap();
        assert_eq!(texts(part(&s, "rm")), ["rm", "-rf", "/home/u"]);
        let s = parse_in("export D=/; rm -rf \"$D\"", &e).unwrap();
        assert_eq!(texts(part(&s, "rm")), ["rm", "-rf", "/"]);
        let s = parse_in("X=/usr; rm -rf ${X}/lib ~/x $HOME", &e).unwrap();
        assert_eq!(
            texts(part(&s, "rm")),
            ["rm", "-rf", "/usr/lib", "/home/u/x", "/home/u"]
        );
        let s = parse_in("X='a b'; rm $X \"$X\"", &e).unwrap();
        assert_eq!(texts(part(&s, "rm")), ["rm", "a", "b", "a b"]);
        let s = parse_in("rm -rf /{usr,etc}", &e).unwrap();
        assert_eq!(texts(part(&s, "rm")), ["rm", "-rf", "/usr", "/etc"]);
        // Unknown stays unknown; a prefix assignment is the command's environment only.
        let s = parse_in("X=/ rm -rf $X; rm -rf $Y", &e).unwrap();
        assert!(
            s.parts
                .iter()
                .all(|p| p.args.len() == 3 && !p.args[2].known)
        );
        // A value set in a pipeline member or a subshell does not survive it.
        let s = parse_in("(X=/); X=a | true; rm $X", &e).unwrap();
        assert!(!part(&s, "rm").args[1].known);
    }

    #[test]
    fn directory_is_tracked_once_for_every_part() {
        let e = env(std::path::Path::new("/tmp"));
        let dir = |cmd: &str| {
            let s = parse_in(cmd, &e).unwrap();
            s.parts.last().unwrap().dir.clone()
        };
        let root = Dir::Known(PathBuf::from("/"));
        assert_eq!(dir("ls"), Dir::Initial);
        assert_eq!(dir("cd / && ls"), root);
        assert_eq!(dir("cd -- / && ls"), root);
        assert_eq!(dir("cd -P / ; ls"), root);
        assert_eq!(dir("pushd / && ls"), root);
        assert_eq!(dir("pushd / && popd && ls"), Dir::Initial);
        assert_eq!(dir("cd - && ls"), Dir::Unknown);
        assert_eq!(dir("cd $X && ls"), Dir::Unknown);
        assert_eq!(dir("cd /nonexistent-dir-xyz; ls"), Dir::Unknown);
        assert_eq!(dir("(cd /) && ls"), Dir::Initial);
        assert_eq!(dir("cd / | ls"), Dir::Initial);
        assert_eq!(dir("true || cd /; ls"), Dir::Unknown);
        assert_eq!(dir("cd /tmp || ls"), Dir::Unknown);
        assert_eq!(dir("if x; then cd /; fi; ls"), Dir::Unknown);
        assert_eq!(dir("if x; then cd /; else ls; fi"), Dir::Initial);
        assert_eq!(dir("for i in a; do ls; cd /; done"), Dir::Unknown);
        assert_eq!(dir("bash -c 'cd /'; ls"), Dir::Unknown);
        assert_eq!(dir("f() { cd /; }; f; ls"), Dir::Unknown);
        // A wrapper's directory is entered from where the part starts; a computed one,
        // two of them, or one around a nested script is not followed.
        let tmp = Dir::Known(std::fs::canonicalize("/tmp").unwrap());
        assert_eq!(dir("cd / && env -C /tmp ls"), tmp);
        assert_eq!(dir("cd / && env --chdir=tmp ls"), tmp);
        assert_eq!(dir("cd / && env -C $X ls"), Dir::Unknown);
        assert_eq!(dir("env -C / env -C tmp ls"), Dir::Unknown);
        assert_eq!(dir("env -C /tmp bash -c 'ls'"), Dir::Unknown);
        assert_eq!(
            dir("cd; ls"),
            Dir::Unknown,
            "home /home/u does not exist here"
        );
    }

    #[test]
    fn globs_match_in_the_parts_directory() {
        let e = env(std::path::Path::new("/"));
        let s = parse_in("rm -rf /u?r /[u]sr", &e).unwrap();
        assert_eq!(texts(part(&s, "rm")), ["rm", "-rf", "/usr", "/usr"]);
        let s = parse_in("cd / && rm -rf ./u?r '/u?r'", &e).unwrap();
        assert_eq!(texts(part(&s, "rm")), ["rm", "-rf", "./usr", "/u?r"]);
        let s = parse_in("cd $X && rm -rf *", &e).unwrap();
        assert!(!part(&s, "rm").args[2].known);
    }
}
