//! The command rules of one rule list, indexed, so a command part is matched against the
//! few rules that could match it. An allow rule whose literal head has a complete first
//! word (`tool42` of `Bash(tool42 run:*)`) is kept under that word; every other command
//! rule (deny and ask rules see other spellings too) is always a candidate. Candidates
//! come back in list order, so ties break as in a linear scan.

use std::collections::HashMap;

use super::rules::{Rule, RuleKind};
use super::spec::RuleName;

/// Candidate rules for a command, by index into the rule list.
#[derive(Debug, Default)]
pub struct CommandIndex {
    /// Command rules that are candidates for every command.
    always: Vec<usize>,
    /// Allow rules by the first word of their literal head.
    by_word: HashMap<String, Vec<usize>>,
}

impl CommandIndex {
    /// Indexes the command rules of `rules`.
    pub fn build(rules: &[Rule]) -> CommandIndex {
        let mut index = CommandIndex::default();
        for (i, r) in rules.iter().enumerate() {
            if !r.covers(&[RuleName::Bash]) {
                continue;
            }
            let head = r.command_head();
            match head.split_once(' ') {
                Some((word, _)) if r.kind == RuleKind::Allow && !word.is_empty() => {
                    index.by_word.entry(word.to_string()).or_default().push(i)
                }
                _ => index.always.push(i),
            }
        }
        index
    }

    /// The indexed rules that may match a command part whose texts (as written, with
    /// wrappers) are `texts`, in list order.
    pub fn candidates(&self, texts: &[&str]) -> Vec<usize> {
        let mut out = self.always.clone();
        let mut keyed = false;
        for (n, t) in texts.iter().enumerate() {
            let word = t.split(' ').next().unwrap_or_default();
            if texts[..n].iter().any(|u| u.split(' ').next() == Some(word)) {
                continue;
            }
            if let Some(rules) = self.by_word.get(word) {
                out.extend_from_slice(rules);
                keyed = true;
            }
        }
        if keyed {
            out.sort_unstable();
            out.dedup();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::rules::{self, Subject};
    use super::*;
    use crate::Layer;

    /// The candidates hold every rule a linear scan would pick, for commands as written,
    /// through wrappers, privileged, and with other spellings.
    #[test]
    #[rustfmt::skip]
    fn candidates_decide_as_a_linear_scan() {
        use crate::Verdict::{Allow, Ask, Deny};
        let specs = [
            ("Bash(tool42 run:*)", Allow), ("Bash(tool4*)", Allow), ("Bash(git:*)", Allow),
            ("Bash(git push:*)", Deny), ("Bash(git  status)", Allow), ("Bash(=npm test)", Allow),
            ("Bash(npm run *test*)", Ask), ("Bash(npm run build:*)", Allow),
            ("Bash(timeout 60 tool42 run:*)", Allow), ("Bash(~^ls )", Allow), ("Bash( *)", Allow),
            ("Bash", Ask), ("Read(src/**)", Allow),
        ];
        let texts = [
            ("tool42 run --fast", "timeout 60 tool42 run --fast"), ("tool4", "tool4"),
            ("tool42x run", "tool42x run"), ("git push origin", "git push origin"),
            ("git status", "git status"), ("npm test", "npm test"),
            ("npm run unit-test", "npm run unit-test"), ("npm run build", "sudo npm run build"),
            ("ls -la", "ls -la"), ("", ""),
        ];
        for start in 0..specs.len() {
            let rules: Vec<Rule> = specs[start..]
                .iter()
                .enumerate()
                .map(|(i, (t, k))| {
                    let layer = [Layer::User, Layer::Project, Layer::Local][i % 3];
                    Rule::parse(t, *k, layer, None).unwrap()
                })
                .collect();
            let index = CommandIndex::build(&rules);
            for (text, full) in texts {
                for privileged in [false, true] {
                    let forms = vec!["git push".to_string()];
                    let subject = Subject::Command {
                        text,
                        full,
                        privileged,
                        forms: &forms,
                        open: false,
                    };
                    let want = rules::decide(&rules, &subject).map(|r| &r.text);
                    let got = rules::decide_in(
                        index
                            .candidates(&[text, full])
                            .into_iter()
                            .map(|i| &rules[i]),
                        &subject,
                    )
                    .map(|r| &r.text);
                    assert_eq!(got, want, "{text} / {full} from {}", specs[start].0);
                }
            }
        }
    }
}
