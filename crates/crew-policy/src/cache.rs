//! File-system facts every decision needs, computed once per policy contents: the
//! canonical extra roots, the home's spellings, credential identities, the rule index
//! (`PathIndex`), each cwd's real location, and the parses of recent commands whose
//! expansion read nothing from the file system. A cwd is re-checked on every use by its
//! device and inode (one `stat`), so a directory replaced under its name is resolved again.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::deny_ids::DeniedIds;
use super::path_index::PathIndex;
use super::rules::Rule;
use super::sandbox::{self, Credentials};
use super::shell::{self, Dir, Script, ShellError};

/// How many cwds one policy remembers (an agent has one; a lead with subagents a few).
const MAX_CWDS: usize = 64;

/// How many command parses one policy remembers.
const MAX_SCRIPTS: usize = 512;

/// The cache a `Policy` carries; clones share it.
#[derive(Clone, Default)]
pub struct PolicyCache(Arc<Inner>);

#[derive(Default)]
struct Inner {
    fixed: Mutex<Option<Arc<Fixed>>>,
    index: Mutex<Option<Arc<PathIndex>>>,
    cwds: Mutex<HashMap<PathBuf, CwdEntry>>,
    /// Command text → (cwd, home, parse) for parses that did not read the file system.
    scripts: Mutex<HashMap<String, Vec<ScriptEntry>>>,
    /// Rule bases → the identities of the files Read deny rules cover (`deny_ids.rs`),
    /// with the rule list (address, length) they were computed for.
    denied: Mutex<HashMap<Vec<PathBuf>, DeniedEntry>>,
}

/// The rule list's (address, length) and the identities found for it.
type DeniedEntry = ((usize, usize), Arc<DeniedIds>);

/// A cwd's real location and the (device, inode) it had.
type CwdEntry = (PathBuf, (u64, u64));

/// A parse and the cwd and home it was made in.
type ScriptEntry = (shell::Env, Arc<Script>);

impl std::fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PolicyCache")
    }
}

/// What depends only on the policy's home and extra roots.
#[derive(Debug)]
pub(crate) struct Fixed {
    key: (Option<PathBuf>, Vec<PathBuf>),
    /// `additionalDirectories`, canonical.
    pub roots: Vec<PathBuf>,
    /// The home's spellings and the credential identities below it.
    pub creds: Credentials,
}

impl PolicyCache {
    /// The facts for this home and these extra roots, computed on first use.
    pub(crate) fn fixed(&self, home: Option<&Path>, additional: &[PathBuf]) -> Arc<Fixed> {
        let mut slot = self.0.fixed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = slot
            .as_ref()
            .filter(|f| f.key.0.as_deref() == home && f.key.1 == additional)
        {
            return f.clone();
        }
        let key = (home.map(Path::to_path_buf), additional.to_vec());
        let fixed = Arc::new(Fixed {
            roots: sandbox::canonical_roots(additional.iter().map(PathBuf::as_path)),
            creds: Credentials::load(home),
            key,
        });
        *slot = Some(fixed.clone());
        fixed
    }

    /// The glob index of `rules`' path rules (rebuilt when the rules were replaced).
    pub(crate) fn path_index(&self, rules: &[Rule]) -> Option<Arc<PathIndex>> {
        let mut slot = self.0.index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = slot.as_ref().filter(|i| i.fresh(rules)) {
            return Some(i.clone());
        }
        let index = Arc::new(PathIndex::build(rules)?);
        *slot = Some(index.clone());
        Some(index)
    }

    /// `shell::parse_in(command, env)`, reusing an earlier parse of the same command in
    /// the same cwd and home when its expansion read nothing from the file system.
    pub(crate) fn script(
        &self,
        command: &str,
        env: &shell::Env,
    ) -> Result<Arc<Script>, ShellError> {
        let same = |e: &shell::Env| e.cwd == env.cwd && e.home == env.home;
        {
            let map = self.0.scripts.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, s)) = map
                .get(command)
                .and_then(|v| v.iter().find(|(e, _)| same(e)))
            {
                return Ok(s.clone());
            }
        }
        let script = Arc::new(shell::parse_in(command, env)?);
        if !reads_file_system(&script) {
            let mut map = self.0.scripts.lock().unwrap_or_else(|e| e.into_inner());
            if map.len() >= MAX_SCRIPTS {
                map.clear();
            }
            map.entry(command.to_string())
                .or_default()
                .push((env.clone(), script.clone()));
        }
        Ok(script)
    }

    /// The files `rules`' Read deny rules cover, by identity, for these rule bases:
    /// walked once per rule list and bases (`deny_ids.rs`).
    pub(crate) fn denied_ids(&self, rules: &[Rule], bases: &[PathBuf]) -> Arc<DeniedIds> {
        let list = (rules.as_ptr() as usize, rules.len());
        let mut map = self.0.denied.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, ids)) = map.get(bases)
            && *seen == list
        {
            return ids.clone();
        }
        let ids = Arc::new(DeniedIds::build(rules, bases));
        if map.len() >= MAX_CWDS {
            map.clear();
        }
        map.insert(bases.to_vec(), (list, ids.clone()));
        ids
    }

    /// The real location of `cwd`, `None` when it does not exist.
    pub(crate) fn cwd(&self, cwd: &Path) -> Option<PathBuf> {
        let meta = std::fs::metadata(cwd).ok()?;
        let id = (meta.dev(), meta.ino());
        let mut map = self.0.cwds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((real, seen)) = map.get(cwd)
            && *seen == id
        {
            return Some(real.clone());
        }
        let real = std::fs::canonicalize(cwd).ok()?;
        if map.len() >= MAX_CWDS {
            map.clear();
        }
        map.insert(cwd.to_path_buf(), (real.clone(), id));
        Some(real)
    }
}

/// Whether a parse depended on the file system: a glob was matched, or a `cd` resolved.
fn reads_file_system(script: &Script) -> bool {
    script.parts.iter().any(|p| {
        p.dir != Dir::Initial
            || p.args.iter().any(|a| a.pattern.is_some())
            || p.redirects.iter().any(|r| r.arg.pattern.is_some())
    })
}
