//! Credential locations below the home directory, recognised by name (as written and as
//! resolved, also when a recursive search would read below them) and by file identity
//! (device and inode), so a hard link to a key elsewhere is recognised as the key.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::scopes;

/// The credential stores below the home directory: the one list, read by the engine's
/// hard check (file tools and literal command paths are denied in every mode) and by the
/// OS sandbox, which hides each existing one from every command it confines (an empty
/// tmpfs over a directory, `/dev/null` over a file; `sandbox::hidden`). A
/// directory entry covers everything below it. Programs that need one of them (`gh`,
/// `aws`, `kubectl`, `docker`) find it hidden inside the sandbox; `sandbox.excludedCommands`
/// or `sandbox.filesystem.allowRead` is the user's explicit way out.
#[rustfmt::skip]
pub const CREDENTIALS: &[&str] = &[
    // Remote shells, signing and encryption keys.
    ".ssh", ".gnupg",
    // Cloud providers and cluster access.
    ".aws", ".azure", ".config/gcloud", ".kube", ".oci", ".config/doctl",
    ".terraform.d/credentials.tfrc.json", ".vault-token",
    // Container registries.
    ".docker/config.json", ".config/containers/auth.json",
    // Forges and git.
    ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub", ".config/glab-cli",
    ".netrc",
    // Package registries.
    ".npmrc", ".pypirc", ".cargo/credentials.toml", ".cargo/credentials", ".gem/credentials",
    // Password stores and keyrings.
    ".password-store", ".local/share/keyrings", ".config/op",
    // Databases.
    ".pgpass", ".my.cnf",
    // Model providers (Claude Code's login) and crew's own secrets.
    ".claude/.credentials.json", ".crew/credentials.json", ".crew/cluster.cookie", ".crew/tls",
    ".config/crew/credentials.json",
];

/// If `path` (lexical or real) is a credential location, its home-relative name, by
/// comparing normalised bytes.
pub fn credential(path: &Path, homes: &[PathBuf]) -> Option<&'static str> {
    let path = scopes::normalised(path);
    homes.iter().find_map(|h| {
        let rel = scopes::rest_below(&path, &scopes::normalised(h))?;
        // Every credential location starts with a dot-name directly in the home.
        if rel.first() != Some(&b'.') {
            return None;
        }
        CREDENTIALS
            .iter()
            .find(|c| scopes::rest_below(rel, c.as_bytes()).is_some())
            .copied()
    })
}

/// The credential files to protect: their locations below the home directory (by name)
/// and their identities (device and inode), so that a hard link to a key elsewhere — in
/// the project, say — is recognised as the key. Computed once per policy (`cache.rs`).
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    homes: Vec<PathBuf>,
    ids: HashMap<(u64, u64), &'static str>,
    /// Each home's credential locations, normalised, in order.
    locations: Vec<(Vec<u8>, &'static str)>,
}

/// How many files below the credential locations are identified (bounds the walk).
const MAX_CREDENTIAL_FILES: usize = 4096;

impl Credentials {
    /// Walks the credential locations below `home` (as given and as resolved).
    pub fn load(home: Option<&Path>) -> Self {
        let homes = homes(home);
        let mut ids = HashMap::new();
        let mut locations = Vec::new();
        for h in &homes {
            for c in CREDENTIALS {
                let at = h.join(c);
                identify(&at, c, 0, &mut ids);
                locations.push((scopes::normalised(&at).into_owned(), *c));
            }
        }
        Credentials {
            homes,
            ids,
            locations,
        }
    }

    /// The first credential location at or below `dir` (real), by its home-relative name:
    /// what a recursive search of `dir` would read.
    pub fn below(&self, dir: &Path) -> Option<&'static str> {
        let dir = scopes::normalised(dir);
        self.locations
            .iter()
            .find(|(at, _)| scopes::rest_below(at, &dir).is_some())
            .map(|(_, c)| *c)
    }

    /// The home directory's spellings.
    pub fn homes(&self) -> &[PathBuf] {
        &self.homes
    }

    /// If `lexical` (where a path's name points) or `real` (where it resolves) is a
    /// credential location, or `real` is the same file as a credential, its home-relative
    /// name.
    pub fn matches(&self, lexical: &Path, real: Option<&Path>) -> Option<&'static str> {
        if let Some(name) = credential(lexical, &self.homes)
            .or_else(|| real.and_then(|r| credential(r, &self.homes)))
        {
            return Some(name);
        }
        let real = real?;
        if self.ids.is_empty() {
            return None;
        }
        // Only a file with more than one name can be a hard link to a credential.
        let meta = std::fs::metadata(real).ok().filter(|m| m.nlink() >= 2)?;
        self.identity_of(&meta)
    }

    /// The credential that the file with metadata `meta` (read from an open descriptor)
    /// is, by identity: a hard link to a key is the key.
    pub fn identity_of(&self, meta: &std::fs::Metadata) -> Option<&'static str> {
        if self.ids.is_empty() || !meta.is_file() {
            return None;
        }
        self.ids.get(&(meta.dev(), meta.ino())).copied()
    }
}

fn identify(
    path: &Path,
    name: &'static str,
    depth: usize,
    ids: &mut HashMap<(u64, u64), &'static str>,
) {
    if ids.len() >= MAX_CREDENTIAL_FILES || depth > 6 {
        return;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_file() {
        ids.insert((meta.dev(), meta.ino()), name);
    } else if meta.is_dir()
        && let Ok(rd) = std::fs::read_dir(path)
    {
        for e in rd.flatten() {
            identify(&e.path(), name, depth + 1, ids);
        }
    }
}

/// The home directory as given and as resolved (they differ when home is a symlink).
pub fn homes(home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(h) = home {
        out.push(h.to_path_buf());
        if let Ok(real) = std::fs::canonicalize(h)
            && real != h
        {
            out.push(real);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Credentials are named by their home-relative location, for paths spelled with
    /// `.`, doubled slashes, `..` and siblings of the locations.
    #[test]
    #[rustfmt::skip]
    fn credentials_are_named_by_location() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("h");
        std::fs::create_dir_all(&home).unwrap();
        let c = Credentials::load(Some(&home));
        let h = home.display();
        for (p, want) in [
            (format!("{h}/.ssh"), Some(".ssh")), (format!("{h}/.ssh/id_rsa"), Some(".ssh")),
            (format!("{h}//.ssh/./id_rsa"), Some(".ssh")), (format!("{h}/.sshx"), None),
            (format!("{h}/.config"), None),
            (format!("{h}/.config/gcloud/x"), Some(".config/gcloud")),
            (format!("{h}/.config/gcloudy"), None),
            (format!("{h}/.cargo/credentials"), Some(".cargo/credentials")),
            (format!("{h}/.cargo/credentials.toml"), Some(".cargo/credentials.toml")),
            (format!("{h}/../h/.ssh"), None), (format!("{h}/x/.ssh"), None), (format!("{h}"), None),
            ("/".into(), None), ("/etc/passwd".into(), None),
        ] {
            let p = Path::new(&p);
            assert_eq!(credential(p, c.homes()), want, "{p:?}");
            assert_eq!(c.matches(p, None), want, "{p:?}");
        }
        assert_eq!(c.below(tmp.path()), Some(".ssh"));
        assert_eq!(c.below(&home.join(".config")), Some(".config/gcloud"));
        assert_eq!(c.below(&home.join("src")), None);
    }
}
