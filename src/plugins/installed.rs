//! Plugins installed by Claude Code under `~/.claude/plugins/` (marketplace clones in
//! `marketplaces/`, installed copies in `cache/<marketplace>/<plugin>/<version>/`), of
//! which only those the settings enable load: `"enabledPlugins": {"name@marketplace":
//! true}`, matched on the part before `@` against each plugin's manifest `name`.
//!
//! `enabledPlugins` is read from every settings file, the most local first (local, then
//! project, then user; `.crew` before `.claude` in each): the first file that names a key
//! decides it. A project's shared settings enable plugins only in a folder the user
//! trusted (enabling a plugin turns on its hooks); elsewhere a warning names the plugins
//! they would have enabled.
//!
//! Which copy of an enabled plugin: the `installPath` that Claude Code's
//! `installed_plugins.json` records for the key, else the last (by path) copy under
//! `cache/`, else a copy under `marketplaces/<marketplace>/`, else any. Directories are
//! searched a few levels deep, without following links.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::{self, Manifest, ManifestError};
use super::{Plugin, Source};

/// How deep below `~/.claude/plugins` a plugin's directory may be.
const MAX_DEPTH: usize = 5;

/// How many directories are looked at, at most (a huge tree must not stall startup).
const MAX_DIRS: usize = 20_000;

/// The installed plugins that load, and the problems found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The enabled plugins found.
    pub(crate) plugins: Vec<Plugin>,
    /// Each naming the file and what to do.
    pub(crate) warnings: Vec<String>,
}

/// An enabled plugin: the `enabledPlugins` key and the settings file holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Enabled {
    key: String,
    settings: PathBuf,
}

/// The installed plugins the settings of `project_root` (canonical) and `home` enable.
pub(crate) fn load(project_root: &Path, home: &Path) -> Found {
    let mut found = Found::default();
    let enabled = enabled(project_root, home, &mut found.warnings);
    if enabled.is_empty() {
        return found;
    }
    let dir = home.join(".claude/plugins");
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut by_name: BTreeMap<String, Vec<(PathBuf, Manifest)>> = BTreeMap::new();
    let mut broken: Vec<(PathBuf, ManifestError)> = Vec::new();
    for root in candidates(&dir) {
        match manifest::read(&root) {
            Ok(m) => by_name.entry(m.name.clone()).or_default().push((root, m)),
            Err(e) => broken.push((root, e)),
        }
    }
    let install_paths = install_paths(&dir);
    for (name, on) in enabled {
        let copies = by_name.get(&name).map(Vec::as_slice).unwrap_or_default();
        let marketplace = on.key.split_once('@').map(|(_, m)| m).unwrap_or("");
        let recorded = install_paths.get(&on.key).into_iter().flatten();
        let chosen = recorded
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .find_map(|p| match manifest::read(&p) {
                Ok(m) if m.name == name => Some((p, m)),
                _ => None,
            })
            .or_else(|| pick(copies, &dir, marketplace).cloned());
        let Some((root, m)) = chosen else {
            let mut message = format!(
                "{}: `enabledPlugins` enables `{}`, but no plugin named `{name}` is installed under {}; install it with Claude Code (`/plugin install {}`) or remove the entry",
                on.settings.display(),
                on.key,
                dir.display(),
                on.key
            );
            for (root, e) in broken.iter().filter(|(r, _)| r.ends_with(&name)) {
                message.push_str(&format!("; {} could not be read: {e}", root.display()));
            }
            found.warnings.push(message);
            continue;
        };
        found.warnings.extend(m.warnings);
        found.plugins.push(Plugin {
            name: m.name,
            version: m.version,
            description: m.description,
            root,
            source: Source::Installed {
                key: on.key,
                settings: on.settings,
            },
        });
    }
    found
}

/// The copy to use among `copies` of one plugin: the last one under `cache/`, else the
/// first under `marketplaces/<marketplace>/`, else the first.
fn pick<'a>(
    copies: &'a [(PathBuf, Manifest)],
    dir: &Path,
    marketplace: &str,
) -> Option<&'a (PathBuf, Manifest)> {
    let cache = dir.join("cache");
    let market = dir.join("marketplaces").join(marketplace);
    copies
        .iter()
        .rfind(|(root, _)| root.starts_with(&cache))
        .or_else(|| {
            copies
                .iter()
                .find(|(root, _)| !marketplace.is_empty() && root.starts_with(&market))
        })
        .or_else(|| copies.first())
}

/// The plugin names the settings enable, with the key and file that enable each.
fn enabled(
    project_root: &Path,
    home: &Path,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, Enabled> {
    let files = match crate::config::layers::read_all(project_root, Some(home)) {
        Ok(files) => files,
        Err(e) => {
            warnings.push(format!("{e}; no installed plugin is loaded"));
            return BTreeMap::new();
        }
    };
    // Fail closed, as for the project's hooks: no readable trust list means not trusted.
    let trusted = crate::trust::TrustStore::for_home(home)
        .is_trusted(project_root)
        .unwrap_or(false);
    let mut decided: BTreeMap<String, (bool, PathBuf)> = BTreeMap::new();
    for file in files {
        let value = match file.parse::<Value>() {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!("{e}; its `enabledPlugins` are not read"));
                continue;
            }
        };
        let Some(entries) = value.get("enabledPlugins").filter(|v| !v.is_null()) else {
            continue;
        };
        let Some(entries) = entries.as_object() else {
            warnings.push(format!(
                "{}: field `enabledPlugins` is not an object like {{\"name@marketplace\": true}}; it is ignored",
                file.path.display()
            ));
            continue;
        };
        let mut on = Vec::new();
        for (key, v) in entries {
            match v.as_bool() {
                Some(b) => on.push((key.clone(), b)),
                None => warnings.push(format!(
                    "{}: `enabledPlugins.{key}` is not true or false; it is ignored",
                    file.path.display()
                )),
            }
        }
        if file.shared.is_some() && !trusted {
            let named: Vec<&str> = on
                .iter()
                .filter(|(_, b)| *b)
                .map(|(k, _)| k.as_str())
                .collect();
            if !named.is_empty() {
                warnings.push(format!(
                    "{}: this folder is not trusted, so its settings enable no plugins (they would enable {}). If you trust this repository, run `crew trust {}`",
                    file.path.display(),
                    named.join(", "),
                    project_root.display()
                ));
            }
            continue;
        }
        for (key, b) in on {
            decided.entry(key).or_insert((b, file.path.clone()));
        }
    }
    let mut out = BTreeMap::new();
    for (key, (on, settings)) in decided {
        if !on {
            continue;
        }
        let name = key.split('@').next().unwrap_or(&key).to_string();
        out.entry(name).or_insert(Enabled { key, settings });
    }
    out
}

/// The plugin directories below `dir` (each holding a manifest), sorted; links are not
/// followed, hidden folders and `node_modules` are skipped, and a plugin's own folders
/// are not searched.
fn candidates(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((d, depth)) = stack.pop() {
        seen += 1;
        if seen > MAX_DIRS {
            break;
        }
        if d != dir && std::fs::symlink_metadata(d.join(manifest::FILE)).is_ok() {
            out.push(d);
            continue;
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    out.sort();
    out
}

/// Claude Code's record of installed plugins (`installed_plugins.json`): each key's
/// `installPath`s (version 2 lists entries per key; version 1 holds one).
fn install_paths(dir: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    let Ok(text) = crate::front_matter::read(&dir.join("installed_plugins.json")) else {
        return out;
    };
    let Ok(value) = serde_json::from_str::<Value>(&text) else {
        return out;
    };
    let Some(plugins) = value.get("plugins").and_then(Value::as_object) else {
        return out;
    };
    for (key, entry) in plugins {
        let entries = match entry {
            Value::Array(list) => list.iter().collect(),
            other => vec![other],
        };
        let paths = entries
            .into_iter()
            .filter_map(|e| e.get("installPath").and_then(Value::as_str))
            .map(PathBuf::from)
            .collect();
        out.insert(key.clone(), paths);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn plugin_at(dir: &Path, name: &str, version: &str) {
        put(
            &dir.join(manifest::FILE),
            &format!(r#"{{"name": "{name}", "version": "{version}"}}"#),
        );
    }

    struct Home {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        proj: PathBuf,
    }

    fn home() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, proj) = (base.join("home"), base.join("proj"));
        std::fs::create_dir_all(&proj).unwrap();
        Home {
            _tmp: tmp,
            home,
            proj,
        }
    }

    #[test]
    fn only_enabled_plugins_load_and_the_installed_copy_is_preferred() {
        let h = home();
        let plugins = h.home.join(".claude/plugins");
        // A marketplace clone holding two plugins, and the installed copies of one.
        plugin_at(
            &plugins.join("marketplaces/mkt/plugins/review"),
            "review",
            "0.9.0",
        );
        plugin_at(
            &plugins.join("marketplaces/mkt/plugins/lint"),
            "lint",
            "1.0.0",
        );
        plugin_at(&plugins.join("cache/mkt/review/1.0.0"), "review", "1.0.0");
        plugin_at(&plugins.join("cache/mkt/review/1.1.0"), "review", "1.1.0");
        put(
            &h.home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"review@mkt": true, "lint@mkt": false, "gone@mkt": true}}"#,
        );
        let found = load(&h.proj, &h.home);
        let got: Vec<_> = found
            .plugins
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_deref()))
            .collect();
        assert_eq!(got, [("review", Some("1.1.0"))]);
        assert!(
            matches!(&found.plugins[0].source, Source::Installed { key, .. } if key == "review@mkt")
        );
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
        assert!(
            found.warnings[0].contains("enables `gone@mkt`")
                && found.warnings[0].contains(".claude/settings.json"),
            "{:?}",
            found.warnings
        );
        // installed_plugins.json names the copy in use.
        put(
            &plugins.join("installed_plugins.json"),
            &serde_json::json!({"version": 2, "plugins": {"review@mkt": [
                {"scope": "user", "installPath": plugins.join("cache/mkt/review/1.0.0")}
            ]}})
            .to_string(),
        );
        let found = load(&h.proj, &h.home);
        assert_eq!(found.plugins[0].version.as_deref(), Some("1.0.0"));
        // Only the marketplace clone: it is used.
        std::fs::remove_dir_all(plugins.join("cache")).unwrap();
        let found = load(&h.proj, &h.home);
        assert_eq!(found.plugins[0].version.as_deref(), Some("0.9.0"));
    }

    #[test]
    fn a_local_setting_overrides_the_users_and_an_untrusted_project_enables_nothing() {
        let h = home();
        plugin_at(
            &h.home.join(".claude/plugins/cache/m/guard/1.0.0"),
            "guard",
            "1",
        );
        plugin_at(
            &h.home.join(".claude/plugins/cache/m/extra/1.0.0"),
            "extra",
            "1",
        );
        put(
            &h.home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"guard@m": true}}"#,
        );
        put(
            &h.proj.join(".claude/settings.local.json"),
            r#"{"enabledPlugins": {"guard@m": false}}"#,
        );
        put(
            &h.proj.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"extra@m": true, "bad@m": "yes"}}"#,
        );
        let found = load(&h.proj, &h.home);
        assert!(found.plugins.is_empty(), "{:?}", found.plugins);
        let all = found.warnings.join("\n");
        assert!(
            all.contains("not trusted") && all.contains("extra@m") && all.contains("crew trust"),
            "{all}"
        );
        assert!(
            all.contains("`enabledPlugins.bad@m` is not true or false"),
            "{all}"
        );
        crate::trust::TrustStore::for_home(&h.home)
            .trust(&h.proj)
            .unwrap();
        let found = load(&h.proj, &h.home);
        let names: Vec<_> = found.plugins.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["extra"]);
    }

    #[test]
    fn links_are_not_followed_while_searching() {
        let h = home();
        let elsewhere = h.proj.join("elsewhere");
        plugin_at(&elsewhere.join("sneaky"), "sneaky", "1");
        std::fs::create_dir_all(h.home.join(".claude/plugins/cache")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, h.home.join(".claude/plugins/cache/m")).unwrap();
        put(
            &h.home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"sneaky@m": true}}"#,
        );
        let found = load(&h.proj, &h.home);
        assert!(found.plugins.is_empty());
        assert!(found.warnings[0].contains("no plugin named `sneaky`"));
    }
}
