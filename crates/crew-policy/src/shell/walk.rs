//! Walking the AST: lists (`;`, `&&`, `||`), pipelines and compound commands, flattened
//! into parts. Background jobs and every compound command (groups, subshells, `if`,
//! `case`, loops, functions, `[[ ]]`, `(( ))`) are outside the literal subset: their
//! parts are still produced, so that deny rules and the blacklist see them, but opaque.
//! Simple commands themselves are handled in `simple.rs`.

use brush_parser::Parser;
use brush_parser::ast;

use super::{Ctx, Dir, Inherit, MAX_DEPTH, Part, ShellError};

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
            if matches!(sep, ast::SeparatorOperator::Async) {
                inh.background = true;
                inh.nested = true;
                opaque(&mut inh, "it runs in the background");
            }
            for (op, pipeline) in and_or.iter() {
                // After `||` the command before may have failed, a `cd` with it.
                if matches!(op, ast::PipelineOperator::Or) {
                    self.dir = super::Dir::Unknown;
                }
                self.pipeline(pipeline, depth, &inh)?;
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
            inh.nested |= piped;
            self.command(cmd, depth, &inh, id, pos)?;
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
        let mut inner = inh.clone();
        inner.nested = true;
        match cmd {
            ast::Command::Simple(simple) => self.simple(simple, depth, inh, pipeline, pos),
            ast::Command::Compound(compound, redirects) => {
                opaque(
                    &mut inner,
                    "a compound command (group, subshell, branch or loop)",
                );
                let start = self.script.parts.len();
                self.compound(compound, depth, &inner)?;
                let redirects = self.redirect_list(redirects.as_ref(), depth, &inner)?;
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
                opaque(&mut inner, "a function body runs whenever it is called");
                let start = self.script.parts.len();
                self.compound(&def.body.0, depth, &inner)?;
                let end = self.script.parts.len();
                self.functions.push((def.fname.value.clone(), start..end));
                Ok(())
            }
            ast::Command::ExtendedTest(..) => {
                self.opaque_part(
                    "[[",
                    "a `[[ … ]]` test expands words",
                    &inner,
                    pipeline,
                    pos,
                );
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
            C::Subshell(s) => self.compound_list(&s.list, depth, inh),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth, inh)?;
                }
                self.compound_list(&f.body.list, depth, inh)
            }
            C::ArithmeticForClause(f) => {
                let next = self.next_pipeline;
                self.opaque_part("for ((", "arithmetic", inh, next, 0);
                self.compound_list(&f.body.list, depth, inh)
            }
            C::CaseClause(c) => {
                self.word(&c.value.value, depth, inh)?;
                for item in &c.cases {
                    for pattern in &item.patterns {
                        self.word(&pattern.value, depth, inh)?;
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, depth, inh)?;
                    }
                }
                Ok(())
            }
            C::IfClause(i) => {
                self.compound_list(&i.condition, depth, inh)?;
                self.compound_list(&i.then, depth, inh)?;
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c, depth, inh)?;
                    }
                    self.compound_list(&e.body, depth, inh)?;
                }
                Ok(())
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.compound_list(&w.0, depth, inh)?;
                self.compound_list(&w.1.list, depth, inh)
            }
            C::Coprocess(c) => {
                let mut inh = inh.clone();
                inh.background = true;
                self.command(&c.body, depth, &inh, self.next_pipeline, 0)
            }
            C::Arithmetic(_) => {
                let next = self.next_pipeline;
                self.opaque_part("((", "arithmetic", inh, next, 0);
                Ok(())
            }
        }
    }

    /// Adds a part standing for a construct that is not read (`[[`, `((`).
    fn opaque_part(&mut self, name: &str, why: &str, inh: &Inherit, pipeline: usize, pos: usize) {
        let mut part = self.base(inh, pipeline, pos);
        part.argv = vec![name.to_string()];
        part.dynamic = true;
        part.opaque.get_or_insert_with(|| why.to_string());
        self.push(part);
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
            opaque: inh.opaque.clone(),
            pipeline,
            pipe_pos: pos,
            // Inside a compound (a loop may run a later `cd` first) the directory is
            // not followed.
            dir: match inh.opaque {
                Some(_) => Dir::Unknown,
                None => self.dir.clone(),
            },
            ..Part::default()
        }
    }

    /// Appends a part and returns its index.
    pub(super) fn push(&mut self, part: Part) -> usize {
        self.script.parts.push(part);
        self.script.parts.len() - 1
    }
}

/// Marks what `inh` covers as opaque, keeping an outer reason.
fn opaque(inh: &mut Inherit, why: &str) {
    inh.opaque.get_or_insert_with(|| why.to_string());
}
