//! `--allowedTools`, `--disallowedTools` and `--add-dir`: Claude Code's per-session rule
//! lists, added to the session layer of the lead's policy, and its extra working
//! directories, added to the sandbox roots (for this session, like
//! `permissions.additionalDirectories` in `.crew/settings.local.json`).

use std::path::{Path, PathBuf};

use crate::permission::Policy;

/// Allow and deny rules given on the command line, for one session.
#[derive(Clone, Debug, Default)]
pub struct ToolRules {
    /// `--allowedTools`.
    pub allow: Vec<String>,
    /// `--disallowedTools`.
    pub deny: Vec<String>,
    /// `--add-dir`: directories the session may work in besides its own.
    pub add_dirs: Vec<PathBuf>,
}

impl ToolRules {
    /// Adds the rules to `policy`'s session layer; a rule that does not parse is an error
    /// naming its flag (skipping a deny would be unsafe).
    pub(super) fn add_to(&self, policy: &mut Policy, home: Option<&Path>) -> anyhow::Result<()> {
        use crate::permission::rules::{Rule, RuleKind};
        use crate::protocol::decision::Layer;
        use crate::tools::rule_names::ParseRule;
        let flags = [
            ("--allowedTools", RuleKind::Allow, &self.allow),
            ("--disallowedTools", RuleKind::Deny, &self.deny),
        ];
        for (flag, kind, texts) in flags {
            for text in texts.iter().flat_map(|t| split_rules(t)) {
                let rule = Rule::parse(&text, kind, Layer::Session, home)
                    .map_err(|e| anyhow::anyhow!("{flag} `{text}`: {e}"))?;
                policy.rules.push(rule);
            }
        }
        for dir in &self.add_dirs {
            let real = std::fs::canonicalize(dir)
                .ok()
                .filter(|real| real.is_dir())
                .ok_or_else(|| anyhow::anyhow!("--add-dir {}: no such directory", dir.display()))?;
            if !policy.additional_roots.contains(&real) {
                policy.additional_roots.push(real);
            }
        }
        Ok(())
    }
}

/// Claude Code's rule lists: separated by commas or spaces, except inside parentheses
/// (`Bash(git log:*) Edit,Read` is three rules).
pub(crate) fn split_rules(list: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_split_on_commas_and_spaces_but_not_inside_parentheses() {
        assert_eq!(
            split_rules("Bash(git log:*) Edit,Read  mcp__s__t"),
            ["Bash(git log:*)", "Edit", "Read", "mcp__s__t"]
        );
        assert_eq!(
            split_rules("Bash(npm run test:*),Write(src/**)"),
            ["Bash(npm run test:*)", "Write(src/**)"]
        );
        assert!(split_rules(" , ").is_empty());
    }
}
