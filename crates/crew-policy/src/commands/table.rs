//! The one table of program knowledge ([`PROGRAMS`]), one entry per program: the options
//! it accepts (the grammar `flags` parses), whether it is read-only by them, which of its
//! words name files it writes, whether it wraps another command, and whether it runs
//! programs its words do not show. Generic code reads it: `read_only`, `writes`,
//! `wrappers` and `runners`. Programs with a syntax of their own (`git`, `find`, `sed`,
//! `dd`, `tar`, shells) are read by their modules; the table still lists what they run.

mod entries;

use std::collections::HashMap;
use std::sync::LazyLock;

use super::flags::Spec;
pub(super) use entries::{ENV, PROGRAMS, SU, WATCH};

/// How a read-only program's operands may look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operand {
    /// Any operands.
    Any,
    /// At most one (a second is an output file: `uniq IN OUT`).
    AtMostOne,
    /// None (an operand sets something: `hostname NAME`).
    None,
    /// Only `+FORMAT` (`date MMDDhhmm` sets the clock).
    Format,
    /// None starting with `+` (`less +'!cmd'` runs a command).
    NoPlus,
}

/// When a program is read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    /// Never by the table.
    No,
    /// When every option is in its spec, none writes, and the operands fit.
    Options(Operand),
    /// Whatever its arguments (`echo`, `true`).
    AnyArgs,
}

/// How a program's operands relate to what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operands {
    /// Every operand is written (`touch`, `mkdir`, `rm`, `tee`).
    All,
    /// The last operand is the destination (`cp`, `install`), unless a target-directory
    /// option names it; with one operand the copy lands in the cwd (`ln -s x`).
    Dest,
    /// Every operand is written: the sources are removed, the destination created (`mv`).
    SourcesAndDest,
    /// The first operand is a mode or owner, the rest are changed (`chmod`, `chown`),
    /// unless `--reference` gives the mode.
    AfterFirst,
    /// The second operand is an output file (`uniq IN OUT`).
    Second,
    /// Operands are not written (`sort`, `curl`): only option values are.
    None,
}

/// Whether and how a program wraps another command (`wrappers::unwrap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wrap {
    /// It does not.
    No,
    /// The command follows its options (and `positional` operands: `timeout 5 cmd`).
    Options {
        /// It raises privileges.
        privileged: bool,
        /// Operands before the command.
        positional: usize,
    },
    /// By a grammar of its own (`env`, `watch`, shells, `eval`, `su`, `busybox`).
    Own,
    /// In ways the engine does not follow (`strace`, `chroot`): opaque.
    Opaque,
}

/// When a program runs programs it does not show (`runners`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Whatever its arguments (an interpreter running a script, `make`, `npx`), except
    /// asking for its version or help.
    Always,
    /// Through one of these subcommands (`npm exec`, `uv run`).
    Subcommands(&'static [&'static str]),
    /// Through one of these options (`find -exec`, `env -S`).
    Options(&'static [&'static str]),
}

/// One entry of the table.
#[derive(Debug, Clone, Copy)]
pub(super) struct Program {
    /// Its names.
    pub names: &'static [&'static str],
    /// The options it accepts, in `flags`' notation (`>` values name written files).
    pub spec: Spec,
    /// When it is read-only.
    pub read: Read,
    /// How its operands are written, and whether creating, copying or moving files is
    /// all it does (acceptEdits may let it through).
    pub writes: Option<(Operands, bool)>,
    /// Whether it wraps a command.
    pub wrap: Wrap,
    /// Whether it runs programs it does not show.
    pub runs: Option<Runs>,
}

pub(super) const BASE: Program = Program {
    names: &[],
    spec: Spec::NONE,
    read: Read::No,
    writes: None,
    wrap: Wrap::No,
    runs: None,
};

pub(super) const fn spec(
    short: &'static str,
    short_val: &'static str,
    long: &'static [&'static str],
) -> Spec {
    Spec {
        short,
        short_val,
        long,
        ..Spec::NONE
    }
}

/// A read-only program: flags, options with a value, options naming a read file, long.
pub(super) const fn read(
    names: &'static [&'static str],
    short: &'static str,
    short_val: &'static str,
    short_path: &'static str,
    long: &'static [&'static str],
) -> Program {
    let spec = Spec {
        short_path,
        ..spec(short, short_val, long)
    };
    Program {
        names,
        spec,
        read: Read::Options(Operand::Any),
        ..BASE
    }
}

/// A program that writes files: flags, options with a value, options naming a written
/// file, long; its operands; whether it only edits.
pub(super) const fn write(
    names: &'static [&'static str],
    short: &'static str,
    short_val: &'static str,
    short_out: &'static str,
    long: &'static [&'static str],
    operands: Operands,
    edits_only: bool,
) -> Program {
    let spec = Spec {
        short_out,
        ..spec(short, short_val, long)
    };
    Program {
        names,
        spec,
        writes: Some((operands, edits_only)),
        ..BASE
    }
}

/// A wrapper whose command follows its options.
pub(super) const fn wrap(names: &'static [&'static str], spec: Spec, privileged: bool) -> Program {
    Program {
        names,
        spec,
        wrap: Wrap::Options {
            privileged,
            positional: 0,
        },
        ..BASE
    }
}

/// A program that runs programs it does not show.
pub(super) const fn runs(names: &'static [&'static str], runs: Runs) -> Program {
    Program {
        names,
        runs: Some(runs),
        ..BASE
    }
}

impl Program {
    const fn numeric(mut self) -> Self {
        self.spec.numeric = true;
        self
    }
    const fn out(mut self, short_out: &'static str) -> Self {
        self.spec.short_out = short_out;
        self
    }
    const fn operands(mut self, o: Operand) -> Self {
        self.read = Read::Options(o);
        self
    }
    const fn writes(mut self, o: Operands, edits_only: bool) -> Self {
        self.writes = Some((o, edits_only));
        self
    }
    const fn runs(mut self, r: Runs) -> Self {
        self.runs = Some(r);
        self
    }
    const fn own(mut self) -> Self {
        self.wrap = Wrap::Own;
        self
    }
    const fn positional(mut self, n: usize) -> Self {
        if let Wrap::Options { privileged, .. } = self.wrap {
            self.wrap = Wrap::Options {
                privileged,
                positional: n,
            };
        }
        self
    }
}

/// The entry of `name` (a bare program name).
pub(super) fn program(name: &str) -> Option<&'static Program> {
    // Looked up several times for every part of every command: indexed once.
    static INDEX: LazyLock<HashMap<&str, &Program>> = LazyLock::new(|| {
        let mut index = HashMap::new();
        for p in PROGRAMS {
            for n in p.names {
                index.entry(*n).or_insert(p);
            }
        }
        index
    });
    INDEX.get(name).copied()
}

/// The names of every entry that `keep` selects.
pub(super) fn names(keep: fn(&Program) -> bool) -> impl Iterator<Item = &'static str> {
    PROGRAMS
        .iter()
        .filter(move |p| keep(p))
        .flat_map(|p| p.names.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_program_has_one_entry() {
        let all: Vec<&str> = names(|_| true).collect();
        for (i, n) in all.iter().enumerate() {
            assert!(!all[i + 1..].contains(n), "{n} has two entries");
        }
    }
}
