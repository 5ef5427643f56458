//! Loops. A loop's body runs again in the state its last pass left, so what a variable
//! holds inside the loop (and after it) depends on everything the loop assigns.
//!
//! A variable the loop mentions keeps what it held when the loop started — its value,
//! or at least that it is a harmless integer (`arith.rs`) — only if nothing in the loop
//! assigns it anything else, wherever that assignment is (`break` and `continue`
//! cannot then change the answer). The engine checks this by analysing one pass with
//! those variables *pinned*: an assignment that contradicts a pin is recorded, and the
//! pass is analysed again with that pin weakened (a value to "some integer") or dropped.
//! Without pins, every variable the loop mentions is unknown, which is always sound.

use std::collections::{BTreeMap, BTreeSet};

use brush_parser::ast;

use super::arith;
use super::cwd::{Env, State};
use super::{Ctx, Inherit, ShellError};

/// How many extra passes one command may spend on loops (nested loops multiply them).
pub(super) const LOOP_PASSES: usize = 32;

/// What a loop assumes about a variable it mentions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pin {
    /// It keeps this exact value.
    Value(String),
    /// It holds a harmless integer.
    Int,
}

/// The pins and findings of the loops around the one being analysed.
pub(super) type Outer = (BTreeMap<String, Pin>, BTreeSet<String>);

impl State {
    /// Pins `pins` for a loop's pass; returns the outer loops' pins and findings.
    fn pin(&mut self, pins: &BTreeMap<String, Pin>) -> Outer {
        let outer = (
            self.num.pinned.clone(),
            std::mem::take(&mut self.num.broken),
        );
        for (k, v) in pins {
            self.num.pinned.insert(k.clone(), v.clone());
        }
        outer
    }

    /// Ends a pass: restores the outer pins; returns the pinned variables it broke.
    fn unpin(&mut self, outer: Outer) -> BTreeSet<String> {
        let broken = std::mem::replace(&mut self.num.broken, outer.1);
        self.num.pinned = outer.0;
        self.num.broken.extend(broken.iter().cloned());
        broken
    }

    /// After `name` was assigned: records a broken pin if the value contradicts it.
    pub(super) fn check_pin(&mut self, name: &str) {
        let holds = match self.num.pinned.get(name) {
            None => return,
            Some(Pin::Value(v)) => self.vars.get(name) == Some(&Some(v.clone())),
            Some(Pin::Int) => self.harmless(name, &Env::default()),
        };
        if !holds {
            self.num.broken.insert(name.to_string());
        }
    }

    /// After a loop's variables were forgotten: the pinned ones (not yet broken) hold
    /// what their pins say.
    pub(super) fn restore_pins(&mut self) {
        for (name, pin) in &self.num.pinned {
            if self.num.broken.contains(name) {
                continue;
            }
            match pin {
                Pin::Value(v) => {
                    self.vars.insert(name.clone(), Some(v.clone()));
                }
                Pin::Int => {
                    self.vars.insert(name.clone(), None);
                    self.num.ints.insert(name.clone());
                }
            }
        }
    }

    /// Code we cannot follow ran: it may have assigned any pinned variable.
    pub(super) fn break_pins(&mut self) {
        let all = self.num.pinned.keys().cloned();
        self.num.broken.extend(all);
    }

    /// What a loop may assume about the variables its text mentions (except `skip`,
    /// which the loop itself assigns on every pass).
    fn pins_for(&self, text: &str, skip: Option<&str>, env: &Env) -> BTreeMap<String, Pin> {
        let mut pins = BTreeMap::new();
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if word.is_empty() || Some(word) == skip || pins.contains_key(word) {
                continue;
            }
            match self.vars.get(word) {
                Some(Some(v)) => {
                    pins.insert(word.to_string(), Pin::Value(v.clone()));
                }
                _ if self.harmless(word, env) => {
                    pins.insert(word.to_string(), Pin::Int);
                }
                _ => {}
            }
        }
        pins
    }
}

impl Ctx {
    /// Analyses a loop whose source is `text`: `pass` analyses one iteration (its
    /// condition and body) from the state at the loop's head, as often as the pins
    /// need. `skip` is a variable the loop assigns itself on each pass (`for X in`).
    pub(super) fn looped(
        &mut self,
        text: &str,
        skip: Option<&str>,
        mut pass: impl FnMut(&mut Ctx) -> Result<(), ShellError>,
    ) -> Result<(), ShellError> {
        let mut pins = self.state.pins_for(text, skip, &self.env);
        loop {
            if self.loop_passes == 0 {
                pins.clear();
            }
            let snapshot = (!pins.is_empty()).then(|| {
                (
                    self.script.parts.clone(),
                    self.next_pipeline,
                    self.functions.len(),
                    self.state.clone(),
                )
            });
            let outer = self.state.pin(&pins);
            self.state.forget(Some(text));
            let result = pass(self);
            self.state.forget(Some(text));
            let broken = self.state.unpin(outer);
            result?;
            let hit: Vec<String> = broken
                .into_iter()
                .filter(|b| pins.contains_key(b))
                .collect();
            let Some((parts, next_pipeline, functions, state)) = snapshot else {
                return Ok(());
            };
            if hit.is_empty() {
                return Ok(());
            }
            // Analyse the loop again, without what the pass contradicted.
            self.script.parts = parts;
            self.next_pipeline = next_pipeline;
            self.functions.truncate(functions);
            self.state = state;
            self.loop_passes -= 1;
            for name in hit {
                match pins.get(&name) {
                    Some(Pin::Value(v)) if arith::is_integer(v) => {
                        pins.insert(name, Pin::Int);
                    }
                    _ => {
                        pins.remove(&name);
                    }
                }
            }
        }
    }
}

impl Ctx {
    /// `for NAME in WORDS; do …; done`: the words are expanded once, then each pass
    /// assigns `NAME` (a harmless integer when every word is one).
    pub(super) fn for_clause(
        &mut self,
        f: &ast::ForClauseCommand,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        let mut inh = inh.clone();
        inh.dynamic = true;
        let mut raws = Vec::new();
        let mut integers = f.values.is_some();
        for w in f.values.iter().flatten() {
            let (_, _, args) = self.word_args(&w.value, depth, &inh)?;
            integers &= args.iter().all(|a| a.known && arith::is_integer(&a.text));
            raws.push(w.value.clone());
        }
        let var = &f.variable_name;
        let text = f.body.to_string();
        let inh = &inh;
        self.looped(&text, Some(var), |ctx| {
            ctx.loop_variable(var, &raws, integers, inh);
            ctx.compound_list(&f.body.list, depth, inh)
        })
    }

    /// `for (( INIT; COND; STEP )); do …; done`: the three are arithmetic.
    pub(super) fn arithmetic_for(
        &mut self,
        f: &ast::ArithmeticForClauseCommand,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        let mut inh = inh.clone();
        inh.dynamic = true;
        let inh = &inh;
        let [init, cond, update] = [&f.initializer, &f.condition, &f.updater]
            .map(|e| e.as_ref().map(|e| e.value.as_str()));
        if let Some(e) = init {
            self.arithmetic(e, depth, inh)?;
        }
        let text = format!("{};{} {}", cond.unwrap_or(""), update.unwrap_or(""), f.body);
        self.looped(&text, None, |ctx| {
            if let Some(e) = cond {
                ctx.arithmetic(e, depth, inh)?;
            }
            ctx.compound_list(&f.body.list, depth, inh)?;
            if let Some(e) = update {
                ctx.arithmetic(e, depth, inh)?;
            }
            Ok(())
        })
    }

    /// `while`/`until COND; do …; done`.
    pub(super) fn while_clause(
        &mut self,
        w: &ast::WhileOrUntilClauseCommand,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        let text = format!("{} {}", w.0, w.1);
        self.looped(&text, None, |ctx| {
            ctx.compound_list(&w.0, depth, inh)?;
            ctx.compound_list(&w.1.list, depth, inh)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::cwd::Env;
    use super::super::parse_in;

    fn last_args(cmd: &str) -> Vec<(String, bool)> {
        let e = Env {
            cwd: Some("/".into()),
            home: Some("/home/u".into()),
        };
        let s = parse_in(cmd, &e).unwrap();
        let p = s.parts.iter().rev().find(|p| !p.argv.is_empty()).unwrap();
        p.args.iter().map(|a| (a.text.clone(), a.known)).collect()
    }

    #[test]
    fn a_value_the_loop_never_changes_stays_known() {
        let a = last_args("D=/x; for f in a b; do cp $f $D; done; rm -rf $D");
        assert_eq!(a[2], ("/x".to_string(), true));
        let a = last_args("D=/x; while c; do echo $D; done; rm -rf $D");
        assert_eq!(a[2], ("/x".to_string(), true));
    }

    #[test]
    fn a_value_the_loop_changes_is_unknown_in_and_after_it() {
        let a = last_args("X=/tmp; while c; do X=/; done; rm -rf $X");
        assert!(!a[2].1, "{a:?}");
        let a = last_args("X=/tmp; while c; do rm -rf $X; X=/; done");
        assert!(!a[2].1, "{a:?}");
        let a = last_args("X=/tmp; for i in a; do if c; then X=/; break; fi; done; rm -rf $X");
        assert!(!a[2].1, "{a:?}");
        let a = last_args("X=/tmp; while c; do f() { :; }; f; done; rm -rf $X");
        assert!(!a[2].1, "{a:?}");
    }
}
