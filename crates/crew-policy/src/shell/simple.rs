//! One simple command: its words, redirections and process substitutions gathered into
//! one part, its wrappers unwrapped, its arguments as the command receives them, and the
//! directory it runs in (a leading literal `cd DIR` is entered; any other `cd` loses
//! track of the directory).

use std::path::{Path, PathBuf};

use brush_parser::ast;

use super::words::Word;
use super::{Arg, Ctx, Dir, Inherit, Redirect, ShellError};
use crate::sandbox::lexical;

/// The words and redirections of a simple command, gathered item by item.
#[derive(Default)]
struct Acc {
    argv: Vec<String>,
    /// Each word of `argv` as the command receives it.
    args: Vec<Arg>,
    redirects: Vec<Redirect>,
    dynamic: bool,
    env: Vec<(String, String)>,
    /// Why the command is outside the literal subset.
    why: Option<&'static str>,
}

impl Acc {
    fn outside(&mut self, why: Option<&'static str>) {
        if let Some(why) = why {
            self.why.get_or_insert(why);
            self.dynamic = true;
        }
    }

    /// A word of the command's line, as written and as the command receives it.
    fn push(&mut self, w: Word) {
        self.outside(w.why);
        self.argv.push(w.text);
        self.args.push(w.arg);
    }
}

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
        let leading = index == 0 && depth == 0 && !inh.nested;
        let mut nested = inh.clone();
        nested.parent = Some(index);
        nested.nested = true;
        let mut acc = Acc {
            dynamic: inh.dynamic,
            ..Acc::default()
        };
        for item in cmd.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, depth, &nested, &mut acc)?;
        }
        if let Some(name) = &cmd.word_or_name {
            acc.push(self.word(&name.value, depth, &nested)?);
        }
        for item in cmd.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, depth, &nested, &mut acc)?;
        }
        let part = &mut self.script.parts[index];
        part.redirects = acc.redirects;
        part.dynamic = acc.dynamic;
        part.env = acc.env;
        if let Some(why) = acc.why {
            part.opaque.get_or_insert_with(|| why.to_string());
        }
        let own_redirects = part.redirects.len();
        let original = acc.argv.clone();
        self.unwrap(index, acc.argv, depth, inh)?;
        let end = self.script.parts.len();
        self.locate(index, end, own_redirects, &original, &acc.args);
        let part = &self.script.parts[index];
        if matches!(part.program(), "cd" | "pushd" | "popd") {
            let target = match (&part.args[..], part.wrappers.is_empty()) {
                ([_, t], true) if leading && part.opaque.is_none() && !t.text.starts_with('-') => {
                    Some(t.text.clone())
                }
                _ => None,
            };
            self.dir = match target {
                Some(t) if part.program() == "cd" => self.enter(&t),
                _ => Dir::Unknown,
            };
        }
        Ok(())
    }

    /// Gives part `index` (whose words were `original`, read as `args`) its arguments
    /// and the targets of the files its wrappers use (`time -o FILE`), and the same to
    /// the commands it runs itself (`find -exec`: parts `index + 1 .. end` that no
    /// simple command produced). A wrapper's `env -C DIR` or `-execdir` runs it
    /// somewhere the engine does not follow.
    fn locate(
        &mut self,
        index: usize,
        end: usize,
        own_redirects: usize,
        original: &[String],
        args: &[Arg],
    ) {
        let arg_of = |text: &str| match original.iter().position(|o| o == text) {
            Some(i) => args[i].clone(),
            None if text.contains("$VAR") || text.contains("$(") => Arg {
                text: text.to_string(),
                splits: true,
                ..Arg::default()
            },
            None => Arg::literal(text),
        };
        let args_of = |argv: &[String]| -> Vec<Arg> {
            match original.len().checked_sub(argv.len()) {
                Some(skip) if original[skip..] == *argv => args[skip..].to_vec(),
                _ => argv.iter().map(|a| arg_of(a)).collect(),
            }
        };
        let part = &mut self.script.parts[index];
        part.args = args_of(&part.argv);
        for r in &mut part.redirects[own_redirects..] {
            r.arg = arg_of(&r.target);
        }
        let chdir = part.chdir.as_deref().map(arg_of);
        let single = part.wrappers.len() == 1;
        let dir = part.dir.clone();
        let dir = match chdir {
            None => dir,
            // `env -C DIR`, `sudo -D DIR`: entered from where the part runs.
            Some(a) if a.known && single => self.enter_from(&dir, &a.text),
            Some(_) => Dir::Unknown,
        };
        self.script.parts[index].dir = dir.clone();
        for child in &mut self.script.parts[index + 1..end] {
            if !child.args.is_empty() || child.argv.is_empty() {
                continue;
            }
            child.args = args_of(&child.argv);
            for r in &mut child.redirects {
                if r.arg == Arg::default() {
                    r.arg = arg_of(&r.target);
                }
            }
            let elsewhere = child
                .wrappers
                .iter()
                .any(|w| w.contains("-execdir") || w.contains("-okdir"));
            child.dir = if elsewhere || child.chdir.is_some() {
                Dir::Unknown
            } else {
                dir.clone()
            };
        }
    }

    /// The directory a leading `cd target` lands in, when it surely exists and its
    /// logical and physical readings agree.
    fn enter(&self, target: &str) -> Dir {
        // `CDPATH` may send a relative `cd` elsewhere.
        let relative = !target.starts_with('/');
        if relative && !target.starts_with('.') && std::env::var_os("CDPATH").is_some() {
            return Dir::Unknown;
        }
        self.enter_from(&self.dir, target)
    }

    /// The directory a `chdir(2)` to `target` from `from` lands in, when it surely
    /// exists and its logical and physical readings agree.
    fn enter_from(&self, from: &Dir, target: &str) -> Dir {
        let relative = !target.starts_with('/');
        let joined = match (from, &self.env.cwd) {
            _ if !relative => PathBuf::from(target),
            (Dir::Initial, Some(cwd)) => cwd.join(target),
            (Dir::Known(d), _) => d.join(target),
            _ => return Dir::Unknown,
        };
        let real = std::fs::canonicalize(&joined);
        let logical = std::fs::canonicalize(lexical(&joined));
        match (real, logical) {
            (Ok(r), Ok(l)) if r == l && Path::new(&r).is_dir() => Dir::Known(r),
            _ => Dir::Unknown,
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
            I::Word(w) => acc.push(self.word(&w.value, depth, nested)?),
            I::AssignmentWord(a, w) => {
                let word = self.word(&w.value, depth, nested)?;
                if !acc.argv.is_empty() {
                    // `export A=1`, `declare x=1`: an argument.
                    acc.push(word);
                } else {
                    // `VAR=value cmd` changes the command's environment (PAGER,
                    // LD_PRELOAD…); alone it sets a shell variable.
                    acc.outside(Some("an assignment"));
                    if let ast::AssignmentName::VariableName(name) = &a.name {
                        let text = word.text.split_once('=').map_or("", |(_, v)| v);
                        acc.env.push((name.clone(), text.to_string()));
                    }
                }
            }
            I::IoRedirect(r) => {
                let (redirect, why) = self.redirect(r, depth, nested)?;
                acc.outside(why);
                acc.redirects.extend(redirect);
            }
            I::ProcessSubstitution(_, sub) => {
                acc.outside(Some("a process substitution"));
                let mut inner = nested.clone();
                inner.dynamic = true;
                inner.substituted = true;
                self.compound_list(&sub.list, depth + 1, &inner)?;
                acc.argv.push("<(…)".into());
                acc.args.push(Arg {
                    text: "<(…)".into(),
                    ..Arg::default()
                });
            }
        }
        Ok(())
    }
}
