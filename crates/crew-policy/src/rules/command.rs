//! How a rule matches one part of a command (`Subject::Command`): allow rules see the
//! command as written, deny and ask rules also see every other spelling (`forms`) and words
//! not known until run time (`could_match`); the literal head of a wildcard pattern is a
//! cheap test before its regex.

use super::matcher::{Matcher, collapse_spaces, str_matches};
use super::{Rule, RuleKind, RuleName, RuleTool};

impl Rule {
    /// Whether the rule matches one part of a command (see `Subject::Command`).
    pub(super) fn matches_command(
        &self,
        text: &str,
        full: &str,
        privileged: bool,
        forms: &[String],
        open: bool,
    ) -> bool {
        if !matches!(self.tool, RuleTool::Named(RuleName::Bash)) {
            return false;
        }
        // Deny and ask see through every wrapper and spelling, and a word computed
        // at run time could be anything; allow sees only the command as written,
        // through a wrapper only when it does not raise privileges (`sudo x` needs
        // its own rule). A rule naming only a wrapper never grants what it wraps
        // (`Bash(timeout:*)` does not allow `timeout 5 rm x`): matched against the
        // full text, the rule must name the wrapped program too.
        let m = |s: &str| self.command_text_matches(s);
        let m_full = || full != text && m(full) && self.names_wrapped(full, text);
        match self.kind {
            RuleKind::Allow if privileged => m_full(),
            RuleKind::Allow => m(text) || m_full(),
            _ => {
                std::iter::once(text)
                    .chain(forms.iter().map(String::as_str))
                    .any(|s| m(s) || could_match(&self.matcher, s, open))
                    || (full != text && m(full))
            }
        }
    }

    /// Whether the rule, matched against `full` (wrappers and the wrapped command
    /// `text`), names the wrapped program itself: an exact rule names everything; a
    /// wildcard's literal head must reach past the wrapped program's first word.
    fn names_wrapped(&self, full: &str, text: &str) -> bool {
        if self.is_exact() {
            return true;
        }
        let Some(wrapped_at) = full.len().checked_sub(text.len()) else {
            return false;
        };
        let program_end = wrapped_at + text.find(' ').unwrap_or(text.len());
        !text.is_empty() && self.command_prefix.len() >= program_end
    }

    /// Whether the specifier matches one command text. `command_prefix` is a literal
    /// head every match starts with (the regex is anchored at it), so testing it first
    /// only skips regexes that could not match: same answer, less work. It is applied to
    /// each text on its own (the command, its full text, every other spelling), never
    /// to `could_match`, which judges texts whose words are not known yet.
    fn command_text_matches(&self, s: &str) -> bool {
        s.starts_with(self.command_prefix.as_str()) && str_matches(&self.matcher, s)
    }
}

/// Whether a command whose words after the first `$` (a variable or substitution, shown
/// as `$VAR`/`$(…)`) are unknown — or, when `open`, that gets more arguments at run
/// time — could match the pattern for some value of them. Fails closed: a regex or a
/// negation could match anything.
fn could_match(m: &Matcher, s: &str, open: bool) -> bool {
    let known = match s.find('$') {
        Some(i) => &s[..i],
        None if open => s,
        None => return false,
    };
    let literal = match m {
        Matcher::Wildcard(_, _, lit) => lit.as_str(),
        Matcher::Exact(e) => e.as_str(),
        _ => return true,
    };
    literal.starts_with(known) || known.starts_with(literal)
}

/// The literal text a wildcard command pattern's matches start with: the collapsed
/// specifier up to its first `*`, without the `:` or space before it (`ls *` also
/// matches the bare `ls`).
pub(super) fn literal_head(spec: &str) -> String {
    let spec = collapse_spaces(spec.trim());
    let head = spec.split('*').next().unwrap_or("");
    head.trim_end_matches([':', ' ']).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::tests::rule;
    use super::super::{Layer, Subject};
    use super::*;

    fn cmd(r: &Rule, text: &str) -> bool {
        r.matches(&Subject::command(text))
    }

    #[test]
    #[rustfmt::skip]
    fn the_literal_prefix_only_skips_what_could_not_match() {
        let patterns = [
            "Bash(git push:*)", "Bash(ls *)", "Bash(ls :*)", "Bash(a::*)", "Bash(npm  run *test*)",
            "Bash(git status)", "Bash(*push*)", "Bash(=ls *.rs)", "Bash(~^rm )", "Bash(!git *)",
        ];
        let texts = [
            "git push", "git push origin", "git pushx", "ls", "ls -la", "lsx", "a:", "a: x",
            "npm run my-test x", "git status", "/usr/bin/git push", "ls *.rs", "rm -rf x", "",
        ];
        for p in patterns {
            let r = rule(p);
            for t in texts {
                assert_eq!(r.command_text_matches(t), str_matches(&r.matcher, t), "{p} on `{t}`");
            }
        }
    }

    #[test]
    #[rustfmt::skip]
    fn command_patterns() {
        let table = [
            ("Bash", "anything at all", true), ("Bash(*)", "rm x", true),
            ("Bash(npm run test:*)", "npm run test", true),
            ("Bash(npm run test:*)", "npm run test -- --watch", true),
            ("Bash(npm run test:*)", "npm run testx", false),
            ("Bash(npm run build)", "npm run build", true),
            ("Bash(npm run build)", "npm run build && rm -rf x", false),
            ("Bash(git * main)", "git push origin main", true), ("Bash(ls *)", "ls", true),
            ("Bash(ls *)", "ls -la", true), ("Bash(ls *)", "lsof", false),
            ("Bash(=git status)", "git status", true),
            ("Bash(=git status)", "git status -s", false),
            ("Bash(~^cargo (test|check)\\b)", "cargo test --lib", true),
            ("Bash(~^cargo (test|check)\\b)", "cargo publish", false),
            ("Bash(!git *)", "rm x", true), ("Bash(!git *)", "git log", false),
        ];
        for (r, c, want) in table {
            assert_eq!(cmd(&rule(r), c), want, "{r} vs {c}");
        }
    }

    /// One row per subject: the rule's kind, the part's normalised text, the full text
    /// (with `sudo`), whether it is privileged, its other spellings, whether it is open
    /// (xargs appends words), then whether `Bash(git push:*)`/`Bash(npm test)`/`Bash(rm:*)`
    /// matches. A deny sees other spellings, unknown words, open parts and `sudo`; an
    /// allow sees none of them.
    #[test]
    fn deny_sees_spellings_unknown_words_and_sudo_but_allow_does_not() {
        use crate::Verdict::{Allow, Deny};
        type Row<'a> = (
            &'a str,
            RuleKind,
            &'a str,
            &'a str,
            bool,
            &'a [String],
            bool,
            bool,
        );
        let push = ["git push".to_string()];
        #[rustfmt::skip]
        let table: [Row; 17] = [
            ("Bash(git push:*)", Deny, "/usr/bin/git push", "/usr/bin/git push", false, &push, false, true),
            ("Bash(git push:*)", Deny, "git -C . push", "git -C . push", false, &push, false, true),
            ("Bash(git push:*)", Allow, "git -C . push", "git -C . push", false, &push, false, false),
            ("Bash(git push:*)", Deny, "git", "git", false, &[], true, true),
            ("Bash(git push:*)", Deny, "git", "git", false, &[], false, false),
            ("Bash(git push:*)", Deny, "$X push", "$X push", false, &[], false, true),
            ("Bash(git push:*)", Deny, "git $VAR", "git $VAR", false, &[], false, true),
            ("Bash(git push:*)", Deny, "git pu$VAR", "git pu$VAR", false, &[], false, true),
            ("Bash(git push:*)", Deny, "$(…) push", "$(…) push", false, &[], false, true),
            ("Bash(git push:*)", Deny, "git log $VAR", "git log $VAR", false, &[], false, false),
            ("Bash(git push:*)", Allow, "git $VAR", "git $VAR", false, &[], false, false),
            ("Bash(git push:*)", Allow, "git", "git", false, &[], true, false),
            ("Bash(npm test)", Allow, "npm test", "sudo npm test", true, &[], false, false),
            ("Bash(npm test)", Allow, "npm test", "npm test", false, &[], false, true),
            ("Bash(rm:*)", Deny, "rm x", "sudo rm x", true, &[], false, true),
            ("Bash(rm:*)", Allow, "rm x", "sudo rm x", true, &[], false, false),
            ("Bash(rm:*)", Allow, "rm x", "rm x", false, &[], false, true),
        ];
        for (text, kind, part, full, privileged, forms, open, want) in table {
            let r = Rule::parse(text, kind, Layer::User, None).unwrap();
            let subject = Subject::Command {
                text: part,
                full,
                privileged,
                forms,
                open,
            };
            assert_eq!(
                r.matches(&subject),
                want,
                "{kind:?} {text} on `{full}` (privileged {privileged}, forms {forms:?}, open {open})"
            );
        }
    }
}
