//! Read deny rules by file identity: a hard link to `secrets/key` elsewhere is the same
//! file, so the files each Read deny rule covers are identified (device and inode) once
//! per policy and cwd, by a bounded walk below the rule's literal prefix, and a path no
//! rule denies by name is still denied when it is one of them. Only a file with more
//! than one name can be such a link, so a check costs one `stat`.
//!
//! Limits: a denied file created after the walk, or replaced by a new inode, is matched
//! by name only until the policy is loaded again; a walk stops after [`MAX_ENTRIES`].

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::rules::{Rule, RuleKind, Subject};
use super::spec::RuleName;

/// How many directory entries one policy's walks may visit in all.
pub const MAX_ENTRIES: usize = 20_000;

/// How deep below a rule's literal prefix the walk goes.
const MAX_DEPTH: usize = 24;

/// The identities of the files that Read deny rules cover.
#[derive(Debug, Default)]
pub struct DeniedIds {
    /// (device, inode) → the index of the deny rule covering that file.
    ids: HashMap<(u64, u64), usize>,
}

impl DeniedIds {
    /// Identifies the files below each Read deny rule's literal prefix that the rule
    /// matches, with relative patterns taken from each of `bases`.
    pub fn build(rules: &[Rule], bases: &[PathBuf]) -> Self {
        let mut ids = HashMap::new();
        let mut budget = MAX_ENTRIES;
        for (i, rule) in rules.iter().enumerate() {
            if rule.kind != RuleKind::Deny || !rule.covers(&[RuleName::Read]) {
                continue;
            }
            let Some((globs, absolute)) = rule.path_globs() else {
                continue;
            };
            for g in globs {
                let prefix = literal_prefix(g.glob());
                let starts: Vec<PathBuf> = if absolute {
                    vec![PathBuf::from(prefix)]
                } else {
                    bases.iter().map(|b| b.join(prefix)).collect()
                };
                for start in starts {
                    let covers = |p: &Path| {
                        rule.matches(&Subject::Path {
                            names: &[RuleName::Read],
                            real: p,
                            bases,
                        })
                    };
                    walk(&start, 0, &covers, i, &mut ids, &mut budget);
                }
            }
        }
        DeniedIds { ids }
    }

    /// The index of the Read deny rule covering the file at `real` by identity: `real`
    /// is another name (a hard link) of a file the rule denies.
    pub fn rule(&self, real: &Path) -> Option<usize> {
        if self.ids.is_empty() {
            return None;
        }
        self.rule_of(&std::fs::symlink_metadata(real).ok()?)
    }

    /// [`DeniedIds::rule`] for a file whose metadata the caller read from an open
    /// descriptor (so the answer is about the file opened, not whatever the name holds now).
    pub fn rule_of(&self, meta: &std::fs::Metadata) -> Option<usize> {
        if self.ids.is_empty() || !meta.is_file() || meta.nlink() < 2 {
            return None;
        }
        self.ids.get(&(meta.dev(), meta.ino())).copied()
    }
}

/// The directories of a glob before its first component with a glob character
/// (`secrets/**` → `secrets`, `**/.env` → ``, `/etc/*.key` → `/etc`).
fn literal_prefix(glob: &str) -> &str {
    let Some(meta) = glob.find(['*', '?', '[', '{']) else {
        return glob;
    };
    match glob[..meta].rfind('/') {
        Some(0) => "/",
        Some(slash) => &glob[..slash],
        None => "",
    }
}

/// Records the files at or below `path` that `covers`, without following symlinks.
fn walk(
    path: &Path,
    depth: usize,
    covers: &dyn Fn(&Path) -> bool,
    rule: usize,
    ids: &mut HashMap<(u64, u64), usize>,
    budget: &mut usize,
) {
    if *budget == 0 || depth > MAX_DEPTH {
        return;
    }
    *budget -= 1;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_file() {
        if covers(path) {
            ids.entry((meta.dev(), meta.ino())).or_insert(rule);
        }
    } else if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for e in entries.flatten() {
            walk(&e.path(), depth + 1, covers, rule, ids, budget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;

    #[test]
    fn literal_prefixes() {
        assert_eq!(literal_prefix("secrets/**"), "secrets");
        assert_eq!(literal_prefix("a/b/*.key"), "a/b");
        assert_eq!(literal_prefix("**/.env"), "");
        assert_eq!(literal_prefix("/etc/*.key"), "/etc");
        assert_eq!(literal_prefix("/*"), "/");
        assert_eq!(literal_prefix("secrets/key.txt"), "secrets/key.txt");
    }

    #[test]
    fn a_hard_link_to_a_denied_file_is_that_file() {
        let tmp = tempfile::tempdir().unwrap();
        let proj = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(proj.join("secrets")).unwrap();
        std::fs::write(proj.join("secrets/key.txt"), "TOPSECRET").unwrap();
        std::fs::write(proj.join("ok.txt"), "fine").unwrap();
        std::fs::hard_link(proj.join("secrets/key.txt"), proj.join("copy.txt")).unwrap();
        std::fs::hard_link(proj.join("ok.txt"), proj.join("ok2.txt")).unwrap();
        let rules = vec![
            Rule::parse("Read(./src/**)", RuleKind::Allow, Layer::User, None).unwrap(),
            Rule::parse("Read(./secrets/**)", RuleKind::Deny, Layer::User, None).unwrap(),
        ];
        let ids = DeniedIds::build(&rules, std::slice::from_ref(&proj));
        assert_eq!(ids.rule(&proj.join("copy.txt")), Some(1));
        assert_eq!(ids.rule(&proj.join("secrets/key.txt")), Some(1));
        assert_eq!(ids.rule(&proj.join("ok2.txt")), None);
        assert_eq!(ids.rule(&proj.join("missing")), None);
    }
}
