//! What a directory walker (`find_files`, `search_code`) may show or open. The engine
//! decides on the directory a walk starts from; everything found below it must pass here
//! too, or `search_code TOPSECRET` prints a file that `Read(./secrets/**)` denies.
//!
//! Built once per session ([`WalkFilter::new`]); each walk takes a [`WalkScope`] for the
//! agent's cwd, which the file tools also use for the roots they open paths beneath and
//! the identity check of what they opened (`tools::beneath`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::credentials::{CREDENTIALS, Credentials};
use super::deny_ids::DeniedIds;
use super::rules::{self, Rule, RuleKind, Subject};
use super::spec::RuleName;
use super::{Policy, sandbox, scopes};

/// The deny rules and credential locations every walked entry is checked against.
#[derive(Debug, Clone, Default)]
pub struct WalkFilter {
    /// The deny rules (those of other tools never match a walker's subjects).
    denies: Vec<Rule>,
    /// Home directories whose credential locations are hidden.
    homes: Vec<PathBuf>,
    /// Base of relative rule patterns.
    project_root: Option<PathBuf>,
    /// The files Read deny rules cover, by identity: a hard link to one is hidden too.
    ids: Arc<DeniedIds>,
    /// The sandbox roots besides the caller's cwd (`additionalDirectories`, canonical).
    extra_roots: Vec<PathBuf>,
    /// Directories the file tools may read (never write) below: skills, offloaded results.
    read_only_roots: Vec<PathBuf>,
    /// The credential files, by identity.
    creds: Arc<Credentials>,
    /// The session's `results` directory (under the crew home), which the session's own
    /// commands may read (`sandbox::hidden` keeps it visible).
    results_dir: Option<PathBuf>,
    /// The policy's cache (real cwds, checked by identity on each use).
    cache: super::cache::PolicyCache,
}

impl WalkFilter {
    /// The filter for a session's policy: its Read/Glob/Grep deny rules and the
    /// credential locations of its home (or, without one, the user's).
    pub fn new(policy: &Policy) -> Self {
        let denies = policy
            .rules
            .iter()
            .filter(|r| r.kind == RuleKind::Deny)
            .cloned()
            .collect();
        let bases: Vec<PathBuf> = policy.project_root.iter().cloned().collect();
        let home = policy.home.clone().or_else(dirs::home_dir);
        let fixed = policy
            .cache
            .fixed(home.as_deref(), &policy.additional_roots);
        Self {
            denies,
            homes: home_dirs(policy.home.as_deref()),
            project_root: policy.project_root.clone(),
            ids: policy.cache.denied_ids(&policy.rules, &bases),
            extra_roots: fixed.roots.clone(),
            read_only_roots: policy
                .read_roots
                .iter()
                .chain(&policy.results_dir)
                .cloned()
                .collect(),
            creds: Arc::new(fixed.creds.clone()),
            results_dir: policy.results_dir.clone(),
            cache: policy.cache.clone(),
        }
    }

    /// A filter with no rules that still hides the user's credentials: the fail-closed
    /// default for a tool context built without a session.
    pub fn credentials_only() -> Self {
        static CREDS: std::sync::LazyLock<Arc<Credentials>> =
            std::sync::LazyLock::new(|| Arc::new(Credentials::load(None)));
        Self {
            homes: home_dirs(None),
            creds: CREDS.clone(),
            ..Self::default()
        }
    }

    /// The deny rules covering `Read`, which the OS sandbox hides from commands.
    pub fn read_denies(&self) -> impl Iterator<Item = &Rule> {
        self.denies.iter().filter(|r| r.covers(&[RuleName::Read]))
    }

    /// The home directory's spellings (as given and canonical).
    pub fn homes(&self) -> &[PathBuf] {
        &self.homes
    }

    /// The base of relative rule patterns (the project root), if known.
    pub fn project_root(&self) -> Option<&Path> {
        self.project_root.as_deref()
    }

    /// The session's `results` directory, if it has one.
    pub fn results_dir(&self) -> Option<&Path> {
        self.results_dir.as_deref()
    }

    /// The filter as seen from an agent working in `cwd`, for walks by `tool`.
    pub fn scope(self: &Arc<Self>, cwd: &Path, tool: RuleName) -> WalkScope {
        let mut bases: Vec<PathBuf> = self.project_root.iter().cloned().collect();
        let cwd_real = self.cache.cwd(cwd);
        if let Some(real) = &cwd_real
            && !bases.contains(real)
        {
            bases.push(real.clone());
        }
        let roots = cwd_real
            .into_iter()
            .chain(self.extra_roots.iter().cloned())
            .collect();
        WalkScope {
            filter: self.clone(),
            bases,
            tool,
            roots,
        }
    }
}

/// The user's home directories (as given and canonical), for credential matching.
fn home_dirs(home: Option<&Path>) -> Vec<PathBuf> {
    match home {
        Some(h) => sandbox::homes(Some(h)),
        None => sandbox::homes(crew_config::places::home_dir().as_deref()),
    }
}

/// Whether a path below `root` can name a credential location of one of `homes`: the
/// root is a home or above one, or a credential location lies at, above or below it.
fn credentials_below(root: &Path, homes: &[PathBuf]) -> bool {
    homes.iter().any(|home| {
        if home.starts_with(root) {
            return true;
        }
        let Ok(rel) = root.strip_prefix(home) else {
            return false;
        };
        CREDENTIALS
            .iter()
            .any(|c| Path::new(c).starts_with(rel) || rel.starts_with(c))
    })
}

/// A [`WalkFilter`] applied from one cwd.
#[derive(Debug, Clone)]
pub struct WalkScope {
    filter: Arc<WalkFilter>,
    bases: Vec<PathBuf>,
    tool: RuleName,
    /// The sandbox roots seen from the cwd: the cwd (canonical), then the extra roots.
    roots: Vec<PathBuf>,
}

impl WalkScope {
    /// The roots a file tool may write below: the cwd and `additionalDirectories`.
    pub fn write_roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    /// The roots a file tool may read below: the write roots, the user's skill
    /// directories and the session's offloaded results.
    pub fn read_roots(&self) -> Vec<PathBuf> {
        self.roots
            .iter()
            .chain(&self.filter.read_only_roots)
            .cloned()
            .collect()
    }

    /// Whether the file with metadata `meta` (read from an open descriptor) is, by
    /// identity, a file a Read deny rule covers or a credential: a hard link to one.
    pub fn denies_identity(&self, meta: &std::fs::Metadata) -> bool {
        self.filter.ids.rule_of(meta).is_some() || self.filter.creds.identity_of(meta).is_some()
    }

    /// Whether a walked entry may be shown, opened or descended into. `path` is the entry
    /// as the walker found it (absolute); its real location is looked up too, so a
    /// symlink to a credential or to a denied file is hidden like the file itself. An
    /// entry whose real location cannot be resolved is hidden (fail closed).
    pub fn allows(&self, path: &Path) -> bool {
        let Ok(real) = std::fs::canonicalize(path) else {
            return false;
        };
        self.allows_resolved(path, &real)
    }

    /// [`WalkScope::allows`] for an entry whose real location the caller already knows
    /// without a `canonicalize` per entry: a walker that never follows links knows that
    /// a non-link entry's real path is its parent's real path joined with its name.
    /// `real` must be that resolved location; a wrong one defeats the check.
    pub fn allows_resolved(&self, path: &Path, real: &Path) -> bool {
        self.allows_below(path, real, true)
    }

    /// Whether any entry below `roots` (a walk's root as given and as resolved) could be
    /// a credential location by name. When none can, [`WalkScope::allows_below`] skips
    /// the by-name credential check per entry; links are still judged in full.
    pub fn credentials_below(&self, roots: &[&Path]) -> bool {
        roots
            .iter()
            .any(|root| credentials_below(&sandbox::lexical(root), &self.filter.homes))
    }

    /// [`WalkScope::allows_resolved`] for a non-link entry of a walk whose roots
    /// [`WalkScope::credentials_below`] judged; `credentials` is what it returned.
    pub fn allows_below(&self, path: &Path, real: &Path, credentials: bool) -> bool {
        // A walked path is almost always plain (absolute, no `.`/`..`): no copy then.
        let lexical = if scopes::plain(path) {
            Cow::Borrowed(path)
        } else {
            Cow::Owned(sandbox::lexical(path))
        };
        // The usual walked entry is its own real path: judged once.
        let both = [lexical.as_ref(), real];
        let spellings = if both[0] == both[1] { 1 } else { 2 };
        for p in &both[..spellings] {
            if (credentials && sandbox::credential(p, &self.filter.homes).is_some())
                || self.denied(p)
            {
                return false;
            }
        }
        self.filter.ids.rule(real).is_none()
    }

    fn denied(&self, path: &Path) -> bool {
        if self.filter.denies.is_empty() {
            return false;
        }
        let subject = Subject::Path {
            names: &[RuleName::Read, self.tool],
            real: path,
            bases: &self.bases,
        };
        rules::decide(&self.filter.denies, &subject).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;

    #[test]
    fn hides_denied_files_credentials_and_links_to_them() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        let proj = home.join("proj");
        std::fs::create_dir_all(proj.join("secrets")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "KEY").unwrap();
        std::fs::write(proj.join("secrets/key.txt"), "TOPSECRET").unwrap();
        std::fs::write(proj.join("ok.txt"), "fine").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), proj.join("key")).unwrap();
        std::os::unix::fs::symlink(proj.join("secrets/key.txt"), proj.join("alias")).unwrap();
        std::fs::hard_link(proj.join("secrets/key.txt"), proj.join("hard")).unwrap();
        let rule = Rule::parse("Read(./secrets/**)", RuleKind::Deny, Layer::User, None).unwrap();
        let policy = Policy {
            project_root: Some(proj.clone()),
            home: Some(home.clone()),
            rules: vec![rule],
            ..Policy::default()
        };
        let filter = Arc::new(WalkFilter::new(&policy));
        let scope = filter.scope(&proj, RuleName::Grep);
        assert!(scope.allows(&proj.join("ok.txt")));
        assert!(!scope.allows(&proj.join("secrets/key.txt")));
        assert!(!scope.allows(&proj.join("alias")), "link to a denied file");
        assert!(
            !scope.allows(&proj.join("hard")),
            "hard link to a denied file"
        );
        assert!(!scope.allows(&proj.join("key")), "link to a credential");
        assert!(!scope.allows(&proj.join("missing")), "unresolvable");
        let from_home = filter.scope(&home, RuleName::Glob);
        assert!(!from_home.allows(&home.join(".ssh")));
        assert!(!from_home.allows(&home.join(".ssh/id_rsa")));
    }

    #[test]
    fn the_credential_check_is_skipped_only_where_no_credential_can_lie_below() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap().join("home");
        let homes = vec![home.clone()];
        let below = |rel: &str| credentials_below(&home.join(rel), &homes);
        assert!(credentials_below(&home, &homes), "the home itself");
        assert!(credentials_below(Path::new("/"), &homes), "above the home");
        assert!(below(".config"), ".config/gcloud lies below");
        assert!(below(".cargo"), ".cargo/credentials.toml lies below");
        assert!(below(".ssh/keys"), "inside a credential location");
        assert!(!below("proj"));
        assert!(!below(".cargo/registry/src"));
        let beside = home.with_file_name("other");
        assert!(!credentials_below(&beside, &homes), "beside the home");
        assert!(credentials_below(tmp.path(), &homes), "the home lies below");
    }

    #[test]
    fn a_walk_below_a_credentials_parent_still_hides_them_and_a_plain_one_skips_the_check() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        let policy = Policy {
            home: Some(home.clone()),
            ..Policy::default()
        };
        let filter = Arc::new(WalkFilter::new(&policy));
        let cargo = home.join(".cargo");
        let scope = filter.scope(&cargo, RuleName::Grep);
        let creds = scope.credentials_below(&[&cargo]);
        assert!(creds);
        assert!(!scope.allows_below(
            &cargo.join("credentials.toml"),
            &cargo.join("credentials.toml"),
            creds
        ));
        let registry = cargo.join("registry");
        assert!(!scope.credentials_below(&[&registry]));
        assert!(scope.allows_below(&registry.join("a.rs"), &registry.join("a.rs"), false));
    }
}
