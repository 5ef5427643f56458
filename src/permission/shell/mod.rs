//! Shell command parsing for the permission engine: turns a `run_command` string into the
//! simple commands ("parts") it would run, with a real bash parser (brush-parser), so that
//! `rm -r -f /`, `bash -c 'rm -rf /'`, `a && b`, `x | sh` and `$(…)` are all seen.
//!
//! Wrappers that run another command (`sudo`, `env`, `timeout`, `nice`, `nohup`, `xargs`,
//! `bash|sh|zsh -c '…'`, `eval`, …) are unwrapped recursively; compound commands (`&&`,
//! `||`, `;`, `|`, `&`, subshells, groups, `if`/`for`/`while`/`case`, function bodies) are
//! flattened; command substitutions are parsed and contribute parts of their own.
//! Commands a command runs besides itself (`find -exec`, git aliases and command-valued
//! settings) and shell source fed to a shell's stdin (`echo 'x' | bash`, `bash <<< 'x'`)
//! become parts too (`unwrap.rs`, `stdin.rs`).
//!
//! Each part also carries its words as bash would expand them (`expand.rs`, `glob.rs`)
//! and the directory it runs in (`cwd.rs`): the blacklist and the path checks judge those.

mod arith;
mod assigns;
mod cwd;
mod expand;
mod glob;
mod inner;
mod loops;
mod stdin;
mod unwrap;
mod words;

use cwd::State;
pub use cwd::{Dir, Env};
pub use expand::Arg;

use brush_parser::ast;
use brush_parser::{Parser, ParserOptions};
use loops::LOOP_PASSES;

pub use stdin::Feed;

/// How deep wrappers and substitutions may nest before the command counts as unparseable.
const MAX_DEPTH: usize = 8;

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

/// The command could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse the command as shell: {0}")]
pub struct ShellError(pub String);

/// Parses a command line into its parts, with no cwd or home to expand against.
pub fn parse(command: &str) -> Result<Script, ShellError> {
    parse_in(command, &Env::default())
}

/// Parses a command line into its parts, expanding words against `env` (the caller's cwd
/// for relative globs, the home for `~`).
pub fn parse_in(command: &str, env: &Env) -> Result<Script, ShellError> {
    let mut ctx = Ctx {
        opts: ParserOptions::default(),
        script: Script::default(),
        next_pipeline: 0,
        functions: Vec::new(),
        state: State::default(),
        env: env.clone(),
        loop_passes: LOOP_PASSES,
        may_declare_int: assigns::may_declare_int(command),
    };
    ctx.parse_into(command, 0, &Inherit::default())?;
    // A function that calls itself in a pipe or the background forks without bound.
    let Ctx {
        mut script,
        functions,
        ..
    } = ctx;
    for (name, range) in &functions {
        let recursive = script.parts[range.clone()]
            .iter()
            .any(|p| p.program() == name && (p.background || p.piped));
        if recursive {
            script.fork_bomb = true;
        }
    }
    Ok(script)
}

/// What nested parts inherit from the construct that contains them.
#[derive(Debug, Clone, Default)]
struct Inherit {
    wrappers: Vec<String>,
    substituted: bool,
    piped: bool,
    privileged: bool,
    background: bool,
    parent: Option<usize>,
    dynamic: bool,
    /// What stdin holds for commands in this construct (a pipe, a here-string on a group).
    stdin: Option<Feed>,
    /// Inside a function body: its stdin is whatever the caller feeds it.
    in_function: bool,
}

struct Ctx {
    opts: ParserOptions,
    script: Script,
    next_pipeline: usize,
    /// Functions defined, with the range of parts their bodies produced.
    functions: Vec<(String, std::ops::Range<usize>)>,
    /// The directory and variables at the point being parsed.
    state: State,
    env: Env,
    /// Extra passes loops may still spend on their pins (`loops.rs`).
    loop_passes: usize,
    /// The command may give some variable the integer attribute (`assigns.rs`).
    may_declare_int: bool,
}

impl Ctx {
    pub(super) fn parse_into(
        &mut self,
        src: &str,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        if depth > MAX_DEPTH {
            return Err(ShellError("wrappers nest too deeply".into()));
        }
        let mut parser = Parser::new(std::io::Cursor::new(src.as_bytes()), &self.opts);
        let program = parser
            .parse_program()
            .map_err(|e| ShellError(e.to_string()))?;
        for cc in &program.complete_commands {
            self.compound_list(cc, depth, inh)?;
        }
        Ok(())
    }

    pub(super) fn compound_list(
        &mut self,
        list: &ast::CompoundList,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let mut inh = inh.clone();
            let background = matches!(sep, ast::SeparatorOperator::Async);
            inh.background |= background;
            let before = self.state.clone();
            // Every state the list passed through: a part after `||` may run after any
            // earlier one failed, and what follows the list may see any of them.
            let mut seen = self.state.clone();
            let mut saw_or = false;
            for (op, pipeline) in and_or.iter() {
                if matches!(op, ast::PipelineOperator::Or) {
                    saw_or = true;
                }
                if saw_or {
                    let mut merged = seen.clone();
                    merged.merge(&self.state);
                    self.state = merged;
                }
                self.pipeline(pipeline, depth, &inh)?;
                seen.merge(&self.state);
            }
            if !and_or.additional.is_empty() {
                self.state = seen;
            }
            // `a &` runs in a subshell.
            if background {
                self.state = before;
            }
        }
        Ok(())
    }

    fn pipeline(
        &mut self,
        pipeline: &ast::Pipeline,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        let id = self.next_pipeline;
        self.next_pipeline += 1;
        let piped = pipeline.seq.len() > 1;
        for (pos, cmd) in pipeline.seq.iter().enumerate() {
            let mut inh = inh.clone();
            inh.piped |= piped;
            if pos > 0 {
                inh.stdin = Some(self.output_of(id, pos - 1, inh.parent));
            }
            // Members of a pipeline run in subshells: their `cd` and assignments vanish.
            let saved = piped.then(|| self.state.clone());
            self.command(cmd, depth, &inh, id, pos)?;
            if let Some(saved) = saved {
                self.state = saved;
            }
        }
        Ok(())
    }

    fn command(
        &mut self,
        cmd: &ast::Command,
        depth: usize,
        inh: &Inherit,
        pipeline: usize,
        pos: usize,
    ) -> Result<(), ShellError> {
        match cmd {
            ast::Command::Simple(simple) => self.simple(simple, depth, inh, pipeline, pos),
            ast::Command::Compound(compound, redirects) => {
                let start = self.script.parts.len();
                let mut inh = inh.clone();
                for r in redirects.iter().flat_map(|l| l.0.iter()) {
                    let expanded = self.here_string(r, depth, &inh)?;
                    if let Some(feed) = stdin::here(r, expanded) {
                        inh.stdin = Some(feed);
                    }
                }
                let inh = &inh;
                self.compound(compound, depth, inh)?;
                let redirects = self.redirect_list(redirects.as_ref(), depth, inh)?;
                for p in &mut self.script.parts[start..] {
                    p.redirects.extend(redirects.iter().cloned());
                    if p.parent == inh.parent {
                        p.pipeline = pipeline;
                        p.pipe_pos = pos;
                    }
                }
                Ok(())
            }
            ast::Command::Function(def) => {
                let start = self.script.parts.len();
                let mut inh = inh.clone();
                inh.in_function = true;
                // The body runs whenever the function is called: nothing is known there,
                // and a caller may have made any variable an integer.
                let mut body = State::unknown();
                body.num.int_attr = self.state.num.int_attr.clone();
                body.num.int_attr_any = self.may_declare_int || self.state.num.int_attr_any;
                let saved = std::mem::replace(&mut self.state, body);
                self.compound(&def.body.0, depth, &inh)?;
                let body = std::mem::replace(&mut self.state, saved);
                // Integer attributes it gives (`declare -gi x`) may outlive the call.
                self.state.num.int_attr.extend(body.num.int_attr);
                let end = self.script.parts.len();
                self.functions.push((def.fname.value.clone(), start..end));
                Ok(())
            }
            // `[[ … ]]` only tests, but bash expands its words: their substitutions
            // become parts whose parent is the `[[` part.
            ast::Command::ExtendedTest(test, redirects) => {
                let index = self.push(Part {
                    argv: vec!["[[".into()],
                    dynamic: true,
                    ..self.base(inh, pipeline, pos)
                });
                let mut nested = inh.clone();
                nested.parent = Some(index);
                self.test_expr(&test.expr, depth, &nested)?;
                let redirects = self.redirect_list(redirects.as_ref(), depth, &nested)?;
                self.script.parts[index].redirects = redirects;
                Ok(())
            }
        }
    }

    fn compound(
        &mut self,
        c: &ast::CompoundCommand,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        use ast::CompoundCommand as C;
        match c {
            C::BraceGroup(g) => self.compound_list(&g.list, depth, inh),
            C::Subshell(s) => {
                let saved = self.state.clone();
                self.compound_list(&s.list, depth, inh)?;
                self.state = saved;
                Ok(())
            }
            C::ForClause(f) => self.for_clause(f, depth, inh),
            C::ArithmeticForClause(f) => self.arithmetic_for(f, depth, inh),
            C::CaseClause(c) => {
                let mut inh = inh.clone();
                inh.dynamic = true;
                self.word(&c.value.value, depth, &inh)?;
                let start = self.state.clone();
                let mut end = self.state.clone();
                for item in &c.cases {
                    // Patterns are expanded (substitutions run) before they are matched.
                    for pattern in &item.patterns {
                        self.state = start.clone();
                        self.word(&pattern.value, depth, &inh)?;
                    }
                    if let Some(list) = &item.cmd {
                        self.state = start.clone();
                        self.compound_list(list, depth, &inh)?;
                        end.merge(&self.state);
                    }
                }
                self.state = end;
                Ok(())
            }
            C::IfClause(i) => {
                // Each branch starts where the conditions left off; after the `if`, any
                // branch (or none, without an `else`) may have run.
                self.compound_list(&i.condition, depth, inh)?;
                let mut cond = self.state.clone();
                self.compound_list(&i.then, depth, inh)?;
                let mut end = self.state.clone();
                let mut has_else = false;
                for e in i.elses.iter().flatten() {
                    self.state = cond.clone();
                    match &e.condition {
                        Some(c) => {
                            self.compound_list(c, depth, inh)?;
                            cond.merge(&self.state);
                        }
                        None => has_else = true,
                    }
                    self.compound_list(&e.body, depth, inh)?;
                    end.merge(&self.state);
                }
                if !has_else {
                    end.merge(&cond);
                }
                self.state = end;
                Ok(())
            }
            C::WhileClause(w) | C::UntilClause(w) => self.while_clause(w, depth, inh),
            C::Coprocess(c) => {
                let mut inh = inh.clone();
                inh.background = true;
                self.command(&c.body, depth, &inh, self.next_pipeline, 0)
            }
            C::Arithmetic(a) => {
                let index = self.push(Part {
                    argv: vec!["((".into()],
                    dynamic: true,
                    ..self.base(inh, self.next_pipeline, 0)
                });
                let mut nested = inh.clone();
                nested.parent = Some(index);
                self.arithmetic(&a.expr.value, depth, &nested)
            }
        }
    }

    fn base(&self, inh: &Inherit, pipeline: usize, pos: usize) -> Part {
        Part {
            wrappers: inh.wrappers.clone(),
            privileged: inh.privileged,
            background: inh.background,
            piped: inh.piped,
            parent: inh.parent,
            dynamic: inh.dynamic,
            substituted: inh.substituted,
            pipeline,
            pipe_pos: pos,
            ..Part::default()
        }
    }

    fn push(&mut self, part: Part) -> usize {
        self.script.parts.push(part);
        self.script.parts.len() - 1
    }

    /// One simple command: its words, redirections and wrappers become one part.
    fn simple(
        &mut self,
        cmd: &ast::SimpleCommand,
        depth: usize,
        inh: &Inherit,
        pipeline: usize,
        pos: usize,
    ) -> Result<(), ShellError> {
        // Reserve the part's slot first so nested substitutions can name it as parent.
        let index = self.push(self.base(inh, pipeline, pos));
        let mut nested = inh.clone();
        nested.parent = Some(index);
        let mut acc = Acc {
            argv: Vec::new(),
            words: Vec::new(),
            raws: Vec::new(),
            assigns: Vec::new(),
            prefix: Vec::new(),
            redirects: Vec::new(),
            dynamic: inh.dynamic,
            env: Vec::new(),
            here: None,
        };
        for item in cmd.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, depth, &nested, &mut acc)?;
        }
        if let Some(name) = &cmd.word_or_name {
            let (t, d, args) = self.word_args(&name.value, depth, &nested)?;
            acc.dynamic |= d;
            acc.argv.push(t);
            acc.words.push(args);
            acc.raws.push(name.value.clone());
        }
        for item in cmd.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, depth, &nested, &mut acc)?;
        }
        let part = &mut self.script.parts[index];
        part.redirects = acc.redirects;
        part.dynamic = acc.dynamic;
        part.env = acc.env;
        // Its own here-document wins over a pipe or a group's stdin.
        let feed = acc.here.clone().or_else(|| inh.stdin.clone());
        part.here = acc.here;
        part.dir = self.state.dir.clone();
        let own_redirects = part.redirects.len();
        let original = acc.argv.clone();
        // Builtins that evaluate values as arithmetic (`let`, `declare -i`, `read NAME`).
        let ints = self.builtin_arith(&acc.words, &acc.raws, depth, &nested)?;
        let before = self.state.clone();
        self.unwrap(index, acc.argv, depth, feed, inh)?;
        let end = self.script.parts.len();
        self.locate_wrapped(
            index,
            end,
            &before,
            inh,
            own_redirects,
            &original,
            &acc.words,
        );
        // A nested script (`bash -c`, `eval`) may or may not have changed the state.
        if self.state != before {
            let mut merged = before;
            merged.merge(&self.state);
            self.state = merged;
        }
        if original.is_empty() {
            let mut ints = Vec::new();
            for a in &acc.prefix {
                if self.assignment(a, depth, &nested)? {
                    ints.extend(assignment_name(a));
                }
            }
            for (name, value) in acc.assigns {
                if value.is_none() && ints.contains(&name) {
                    self.state.assign_int(&name);
                } else {
                    self.state.assign(&name, value);
                }
            }
        } else {
            let functions = &self.functions;
            let is_function = |p: &str| functions.iter().any(|(n, _)| n == p);
            let args = &self.script.parts[index].args;
            self.state.apply(args, &is_function, &self.env, &ints);
        }
        Ok(())
    }

    /// After unwrapping part `index` (whose words were `original`, expanded as `words`,
    /// in state `at`): its expanded arguments, the directory it runs in (a wrapper's
    /// `env -C DIR` entered from there), the expanded targets of the files its wrappers
    /// write or read (`time -o FILE`); and the same for the commands it runs itself
    /// (`find -exec`, parts `index + 1 .. end` that no simple command produced).
    #[allow(clippy::too_many_arguments)]
    fn locate_wrapped(
        &mut self,
        index: usize,
        end: usize,
        at: &State,
        inh: &Inherit,
        own_redirects: usize,
        original: &[String],
        words: &[Vec<Arg>],
    ) {
        let literal = cwd::literal(original, words);
        let args_of = |argv: &[String]| {
            if literal {
                argv.iter().map(Arg::literal).collect()
            } else {
                cwd::align(original, words, argv)
            }
        };
        let value_of = |v: &str| {
            if literal {
                Arg::literal(v)
            } else {
                cwd::value_arg(v, original, words)
            }
        };
        let inherited = inh.wrappers.len();
        let part = &mut self.script.parts[index];
        part.args = args_of(&part.argv);
        for r in &mut part.redirects[own_redirects..] {
            r.arg = value_of(&r.target);
        }
        let own = part.wrappers.get(inherited..).unwrap_or_default();
        let changers = own
            .iter()
            .filter(|w| cwd::wrappers_change_dir(std::slice::from_ref(*w)))
            .count();
        part.dir = match &part.chdir {
            _ if cwd::wrappers_change_dir(&part.wrappers[..inherited.min(part.wrappers.len())]) => {
                Dir::Unknown
            }
            Some(d) if changers <= 1 => match value_of(d) {
                a if a.known => at.enter(&a.text, &self.env),
                _ => Dir::Unknown,
            },
            _ if changers > 0 || part.chdir.is_some() => Dir::Unknown,
            _ => part.dir.clone(),
        };
        let dir = part.dir.clone();
        for child in &mut self.script.parts[index + 1..end] {
            if !child.args.is_empty() || child.argv.is_empty() {
                continue;
            }
            child.args = args_of(&child.argv);
            for r in &mut child.redirects {
                if r.arg == Arg::default() {
                    r.arg = value_of(&r.target);
                }
            }
            // `-execdir` runs in each found file's directory.
            let elsewhere = child
                .wrappers
                .iter()
                .any(|w| w.contains("-execdir") || w.contains("-okdir"));
            child.dir = if elsewhere || cwd::wrappers_change_dir(&child.wrappers) {
                Dir::Unknown
            } else {
                dir.clone()
            };
        }
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        depth: usize,
        nested: &Inherit,
        acc: &mut Acc,
    ) -> Result<(), ShellError> {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::Word(w) => {
                let (t, d, args) = self.word_args(&w.value, depth, nested)?;
                acc.dynamic |= d;
                acc.argv.push(t);
                acc.words.push(args);
                acc.raws.push(w.value.clone());
            }
            I::AssignmentWord(a, w) => {
                // `VAR=value cmd` changes the command's environment (PAGER, LD_PRELOAD…),
                // so the part is not read-only; the value may hold substitutions.
                if !acc.argv.is_empty() {
                    let (t, _, args) = self.word_args(&w.value, depth, nested)?;
                    acc.argv.push(t);
                    acc.words.push(args);
                    acc.raws.push(w.value.clone());
                } else {
                    acc.prefix.push(a.clone());
                    let (t, _) = self.word(&w.value, depth, nested)?;
                    let value = self.assigned_value(a);
                    if let ast::AssignmentName::VariableName(name) = &a.name {
                        let text = t.split_once('=').map_or(t.as_str(), |(_, v)| v);
                        acc.env.push((name.clone(), text.to_string()));
                        acc.assigns.push((name.clone(), value));
                    }
                }
                acc.dynamic = true;
            }
            I::IoRedirect(r) => {
                let expanded = self.here_string(r, depth, nested)?;
                if let Some(feed) = stdin::here(r, expanded) {
                    acc.here = Some(feed);
                }
                if let Some(r) = self.redirect(r, depth, nested)? {
                    acc.redirects.push(r);
                }
            }
            I::ProcessSubstitution(_, sub) => {
                acc.dynamic = true;
                let mut inner = nested.clone();
                inner.dynamic = true;
                inner.substituted = true;
                let saved = self.state.clone();
                self.compound_list(&sub.list, depth + 1, &inner)?;
                self.state = saved;
                acc.argv.push("<(…)".into());
                acc.words.push(vec![Arg {
                    text: "<(…)".into(),
                    ..Arg::default()
                }]);
                acc.raws.push("<(…)".into());
            }
        }
        Ok(())
    }
}

/// The variable an assignment gives a whole new value (not an array element).
fn assignment_name(a: &ast::Assignment) -> Option<String> {
    match &a.name {
        ast::AssignmentName::VariableName(n) => Some(n.clone()),
        ast::AssignmentName::ArrayElementName(..) => None,
    }
}

/// The words and redirections of a simple command, gathered item by item.
struct Acc {
    argv: Vec<String>,
    /// Each word of `argv`, expanded (a brace or glob may give several arguments).
    words: Vec<Vec<Arg>>,
    /// Each word of `argv` as written.
    raws: Vec<String>,
    /// `NAME=value` before the command word: shell variables when no command follows.
    assigns: Vec<(String, Option<String>)>,
    /// The assignments before the command word, as parsed.
    prefix: Vec<ast::Assignment>,
    redirects: Vec<Redirect>,
    dynamic: bool,
    env: Vec<(String, String)>,
    here: Option<Feed>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(cmd: &str) -> Vec<String> {
        parse(cmd)
            .unwrap()
            .parts
            .iter()
            .filter(|p| !p.argv.is_empty())
            .map(Part::text)
            .collect()
    }

    #[test]
    fn compounds_are_split() {
        assert_eq!(
            texts("a && b || c; d | e & f"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(
            texts("(cd x && make) && { echo ok; }"),
            ["cd x", "make", "echo ok"]
        );
        assert_eq!(texts("if test -f x; then rm x; fi"), ["test -f x", "rm x"]);
    }

    #[test]
    fn quotes_are_removed_and_flags_kept_in_order() {
        assert_eq!(texts(r#"rm "-r" '-f' /"#), ["rm -r -f /"]);
        assert_eq!(texts(r#"echo "a b"\ c"#), ["echo a b c"]);
    }

    #[test]
    fn wrappers_are_unwrapped_recursively() {
        let s =
            parse("sudo -u root timeout 5 nice -n 10 bash -c 'env A=1 rm -rf / && ls'").unwrap();
        let rm = s.parts.iter().find(|p| p.program() == "rm").unwrap();
        assert_eq!(rm.text(), "rm -rf /");
        assert!(rm.privileged);
        assert!(
            rm.full_text()
                .starts_with("sudo -u root timeout 5 nice -n 10 bash -c")
        );
        assert!(s.parts.iter().any(|p| p.text() == "ls"));
        assert_eq!(texts("xargs -n1 rm -f"), ["rm -f"]);
        assert!(parse("xargs rm").unwrap().parts[0].dynamic);
        assert_eq!(texts(r#"eval "rm -rf /""#), ["rm -rf /"]);
        assert_eq!(texts("sh -lc 'git status'"), ["git status"]);
        assert_eq!(texts("nohup make &"), ["make"]);
    }

    #[test]
    fn substitutions_are_parsed_and_mark_dynamic() {
        let s = parse("echo $(rm -rf /) `id` $HOME ~").unwrap();
        let echo = &s.parts[0];
        assert!(echo.dynamic);
        assert_eq!(echo.text(), "echo $(…) $(…) ~ ~");
        assert!(
            s.parts
                .iter()
                .any(|p| p.text() == "rm -rf /" && p.parent == Some(0))
        );
        assert!(s.parts.iter().any(|p| p.text() == "id"));
    }

    #[test]
    fn redirects_pipes_and_background() {
        let s = parse("cat a > /dev/sda 2>&1 | tee b &").unwrap();
        assert!(
            s.parts[0]
                .redirects
                .iter()
                .any(|r| r.write && r.target == "/dev/sda")
        );
        assert!(s.parts[0].piped && s.parts[1].piped);
        assert_eq!(s.parts[1].pipe_pos, 1);
        assert!(s.parts[1].background);
    }

    #[test]
    fn fork_bombs_are_flagged() {
        assert!(parse(":(){ :|:& };:").unwrap().fork_bomb);
        assert!(parse("bomb() { bomb | bomb & }; bomb").unwrap().fork_bomb);
        assert!(!parse("f() { echo hi; }; f").unwrap().fork_bomb);
    }

    #[test]
    fn broken_shell_is_an_error() {
        for bad in ["echo 'unclosed", "a && && b", "$(", "if then fi"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
