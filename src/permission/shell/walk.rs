//! Walking the AST: lists (`;`, `&&`, `||`, `&`), pipelines and compound commands
//! (groups, subshells, `if`, `case`, loops, functions, `[[ ]]`, `(( ))`), flattened into
//! parts while the directory and variable state follows every path bash could take.
//! Simple commands themselves are handled in `simple.rs`.

use brush_parser::Parser;
use brush_parser::ast;

use super::cwd::State;
use super::stdin;
use super::{Ctx, Inherit, MAX_DEPTH, Part, ShellError};

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

    pub(super) fn pipeline(
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

    pub(super) fn command(
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

    pub(super) fn compound(
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

    /// A new part carrying what it inherits from the constructs around it.
    pub(super) fn base(&self, inh: &Inherit, pipeline: usize, pos: usize) -> Part {
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

    /// Appends a part and returns its index.
    pub(super) fn push(&mut self, part: Part) -> usize {
        self.script.parts.push(part);
        self.script.parts.len() - 1
    }
}
