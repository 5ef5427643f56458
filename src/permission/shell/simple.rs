//! One simple command: its prefix assignments, words, redirections and process
//! substitutions gathered into one part, its wrappers unwrapped, and where it and the
//! commands it runs end up (arguments expanded, directory entered).

use brush_parser::ast;

use super::cwd::{self, Dir, State};
use super::expand::Arg;
use super::stdin::{self, Feed};
use super::{Ctx, Inherit, Redirect, ShellError};

impl Ctx {
    /// One simple command: its words, redirections and wrappers become one part.
    pub(super) fn simple(
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
