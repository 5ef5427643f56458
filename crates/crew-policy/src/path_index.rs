//! Every path rule's globs in two sets (absolute, relative to the project or cwd), built
//! once per policy, with the command rules (`CommandIndex`) and the Read deny rules' scopes
//! (`Scopes`), which share its freshness check: one query finds the rules whose globs match a path, instead of one
//! glob match per rule (a rule-heavy settings file has hundreds). Rules the sets do not
//! hold — exact, regex and negated specifiers, whole-tool rules, and rules added after the
//! index was built (session grants) — are matched one by one, and ties are broken as
//! `rules::decide` breaks them, so the answer is the same rule.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::{Candidate, GlobSet, GlobSetBuilder};

use super::command_index::CommandIndex;
use super::rules::{self, Rule, RuleKind, Subject};
use super::scopes::{self, Scopes};
use super::spec::RuleName;

/// The rule names whose specifiers are paths (`RuleName::takes_paths`).
const PATH_NAMES: [RuleName; 5] = [
    RuleName::Read,
    RuleName::Write,
    RuleName::Edit,
    RuleName::Glob,
    RuleName::Grep,
];

/// The path rules of one rule list, indexed.
#[derive(Debug)]
pub struct PathIndex {
    abs: GlobSet,
    abs_rules: Vec<usize>,
    rel: GlobSet,
    rel_rules: Vec<usize>,
    /// Path rules not in the sets, matched one by one.
    others: Vec<usize>,
    /// The Read deny rules by anchor, for recursive-search scopes.
    scopes: Scopes,
    /// The command rules, by the first word they need.
    commands: CommandIndex,
    /// The address of each indexed rule's text: the index holds for these rules only.
    ids: Vec<usize>,
    /// The address and length of the rule list last seen fresh: a quick test that it is
    /// the same list (rules are only ever appended, or the whole policy replaced).
    seen: Mutex<(usize, usize)>,
}

impl PathIndex {
    /// Indexes `rules`; `None` when the combined glob sets cannot be built.
    pub fn build(rules: &[Rule]) -> Option<PathIndex> {
        let (mut abs, mut rel) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        let (mut abs_rules, mut rel_rules, mut others) = (Vec::new(), Vec::new(), Vec::new());
        for (i, r) in rules.iter().enumerate() {
            match r.path_globs() {
                Some((globs, absolute)) => {
                    for g in globs {
                        if absolute {
                            abs.add(g.clone());
                            abs_rules.push(i);
                        } else {
                            rel.add(g.clone());
                            rel_rules.push(i);
                        }
                    }
                }
                None if r.covers(&PATH_NAMES) => others.push(i),
                None => {}
            }
        }
        Some(PathIndex {
            abs: abs.build().ok()?,
            abs_rules,
            rel: rel.build().ok()?,
            rel_rules,
            others,
            scopes: Scopes::build(rules),
            commands: CommandIndex::build(rules),
            ids: rules.iter().map(|r| r.text.as_ptr() as usize).collect(),
            seen: Mutex::new((rules.as_ptr() as usize, rules.len())),
        })
    }

    /// Whether the index was built from these very rules (more may have been appended).
    pub fn fresh(&self, rules: &[Rule]) -> bool {
        if rules.len() < self.ids.len() {
            return false;
        }
        let list = (rules.as_ptr() as usize, rules.len());
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let ends = |i: usize| {
            self.ids
                .get(i)
                .is_none_or(|id| rules[i].text.as_ptr() as usize == *id)
        };
        if *seen == list && ends(0) && ends(self.ids.len().saturating_sub(1)) {
            return true;
        }
        let same = rules
            .iter()
            .zip(&self.ids)
            .all(|(r, id)| r.text.as_ptr() as usize == *id);
        if same {
            *seen = list;
        }
        same
    }

    /// The rule deciding a file tool's `real` target (the tool's rule `names`, from its
    /// permission spec), as `rules::decide` would pick it.
    pub fn decide<'a>(
        &self,
        rules: &'a [Rule],
        names: &[RuleName],
        real: &Path,
        bases: &[PathBuf],
    ) -> Option<&'a Rule> {
        let hits = self.glob_hits(real, bases);
        self.best(rules, &hits, names, real, bases, |_| true)
    }

    /// The strongest deny rule for `real` under the first of `groups` (each the rule
    /// names of one tool) that has one: one glob query for all of them.
    pub fn deny<'a>(
        &self,
        rules: &'a [Rule],
        groups: &[&[RuleName]],
        real: &Path,
        bases: &[PathBuf],
    ) -> Option<&'a Rule> {
        let hits = self.glob_hits(real, bases);
        groups.iter().find_map(|names| {
            self.best(rules, &hits, names, real, bases, |r| {
                r.kind == RuleKind::Deny
            })
        })
    }

    /// The rules that may match a command part whose texts are `texts`
    /// (`CommandIndex::candidates`, then every rule appended since the index was built),
    /// in list order.
    pub fn command_candidates<'a>(
        &self,
        rules: &'a [Rule],
        texts: &[&str],
    ) -> impl Iterator<Item = &'a Rule> {
        let indexed = self.commands.candidates(texts);
        let rest = rules.get(self.ids.len()..).unwrap_or_default();
        indexed.into_iter().map(|i| &rules[i]).chain(rest)
    }

    /// The first Read deny rule that may match `dir` (real) or something below it, as a
    /// scan with `Rule::could_match_below` finds it (`Scopes`; rules appended since the
    /// index was built are scanned).
    pub fn read_deny_below<'a>(
        &self,
        rules: &'a [Rule],
        dir: &Path,
        bases: &[PathBuf],
    ) -> Option<&'a Rule> {
        if let Some(i) = self.scopes.first_below(dir, bases) {
            return rules.get(i);
        }
        rules.get(self.ids.len()..)?.iter().find(|r| {
            r.kind == RuleKind::Deny && r.could_match_below(&[RuleName::Read], dir, bases)
        })
    }

    /// The indexed rules whose globs match `real`.
    fn glob_hits(&self, real: &Path, bases: &[PathBuf]) -> Vec<usize> {
        let mut hits = Vec::new();
        if !self.abs_rules.is_empty() {
            let found = self.abs.matches_candidate(&Candidate::new(real));
            hits.extend(found.into_iter().map(|g| self.abs_rules[g]));
        }
        if !self.rel_rules.is_empty() {
            for rel in bases.iter().filter_map(|b| scopes::strip_prefix(real, b)) {
                let found = self.rel.matches_candidate(&Candidate::new(rel));
                hits.extend(found.into_iter().map(|g| self.rel_rules[g]));
            }
        }
        hits
    }

    /// The strongest rule among the glob hits and the rules matched one by one that
    /// covers one of `names` and passes `keep`; ties go to the earlier rule, as in a
    /// linear scan.
    fn best<'a>(
        &self,
        rules: &'a [Rule],
        hits: &[usize],
        names: &[RuleName],
        real: &Path,
        bases: &[PathBuf],
        keep: impl Fn(&Rule) -> bool,
    ) -> Option<&'a Rule> {
        let mut best: Option<(usize, &'a Rule)> = None;
        let mut consider = |i: usize, r: &'a Rule| {
            let better = best.is_none_or(|(bi, b)| (rules::rank(r), i) < (rules::rank(b), bi));
            if better && keep(r) {
                best = Some((i, r));
            }
        };
        for &i in hits {
            if rules[i].covers(names) {
                consider(i, &rules[i]);
            }
        }
        let subject = Subject::Path { names, real, bases };
        let rest = self.ids.len()..rules.len();
        for i in self.others.iter().copied().chain(rest) {
            if rules[i].matches(&subject) {
                consider(i, &rules[i]);
            }
        }
        best.map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;

    #[test]
    #[rustfmt::skip]
    fn picks_the_same_rule_as_a_linear_scan() {
        use {Layer::*, crate::Verdict::*};
        let home = Path::new("/home/u");
        let mut rules: Vec<Rule> = [
            ("Read(secrets/**)", Deny, User), ("Read(*.pem)", Deny, User),
            ("Edit(src/**)", Allow, Local), ("Edit(src/**)", Ask, Local),
            ("Read(//etc/**)", Allow, Project), ("Edit(!docs/**)", Allow, Project),
            ("Read(=/p/x.txt)", Allow, Project), ("Read", Ask, User), ("Bash(ls:*)", Allow, User),
            ("Read(~/.env)", Deny, Local),
        ]
        .iter()
        .map(|(t, k, l)| Rule::parse(t, *k, *l, Some(home)).unwrap())
        .collect();
        let index = PathIndex::build(&rules).unwrap();
        rules.push(Rule::parse("Write(/src/new.rs)", Allow, Session, None).unwrap());
        assert!(index.fresh(&rules));
        let bases = vec![PathBuf::from("/p")];
        for path in [
            "/p/secrets/a", "/p/a/b.pem", "/p/src/x.rs", "/etc/hosts", "/p/docs/a", "/p/x.txt",
            "/home/u/.env", "/p/src/new.rs", "/p", "/elsewhere",
        ] {
            for names in PATH_NAMES
                .iter()
                .map(std::slice::from_ref)
                .chain([&PATH_NAMES[..], &[RuleName::Read, RuleName::Glob]])
            {
                let subject = Subject::Path {
                    names,
                    real: Path::new(path),
                    bases: &bases,
                };
                let want = rules::decide(&rules, &subject).map(|r| (&r.text, r.kind));
                let got = index
                    .decide(&rules, names, Path::new(path), &bases)
                    .map(|r| (&r.text, r.kind));
                assert_eq!(got, want, "{path} {names:?}");
            }
        }
        rules.remove(0);
        assert!(!index.fresh(&rules));
    }
}
