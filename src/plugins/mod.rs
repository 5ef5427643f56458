//! Claude Code's plugins: a directory holding `.claude-plugin/plugin.json` (its `name`,
//! and `version`, `description`, … — `manifest`) and any of `commands/*.md`,
//! `agents/*.md`, `skills/*/SKILL.md` and `hooks/hooks.json`, in the formats of the
//! project's own files.
//!
//! Which plugins load: each `--plugin-dir DIR` (the user named it), and each plugin
//! installed under `~/.claude/plugins/` that an `enabledPlugins` entry of the settings
//! enables (`installed`). A later one of the same name replaces an earlier one, with a
//! warning: `--plugin-dir` over the installed copy, a later `--plugin-dir` over an
//! earlier one.
//!
//! This module finds the plugins and reads their manifests; the agent, skill and command
//! catalogs and the hooks loader read their parts through [`Plugin::confine`], which
//! refuses a file whose real location is outside the plugin's directory (a cloned plugin
//! must not make crew read `/etc/shadow` through `agents/x.md -> /etc/shadow`). Items are
//! named as in Claude Code: `plugin-name:command`, `plugin-name:agent`,
//! `plugin-name:skill` ([`Plugin::qualify`]).

pub(crate) mod installed;
pub(crate) mod manifest;

use std::path::{Path, PathBuf};

/// The variable that names a plugin's directory: set for its hooks, and replaced by the
/// directory in the text of its agents, skills and commands.
pub(crate) const ROOT_VARIABLE: &str = "CLAUDE_PLUGIN_ROOT";

/// How a plugin came to be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// `--plugin-dir`: the user named it on the command line.
    Flag,
    /// Installed under `~/.claude/plugins/`, enabled by the `enabledPlugins` entry `key`
    /// (`name@marketplace`) of the settings file `settings`.
    Installed {
        /// The `enabledPlugins` key.
        key: String,
        /// The settings file holding it.
        settings: PathBuf,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag => f.write_str("--plugin-dir"),
            Source::Installed { key, settings } => {
                write!(f, "installed, enabled as `{key}` in {}", settings.display())
            }
        }
    }
}

/// One plugin to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plugin {
    /// Its manifest's `name`: the namespace of its items.
    pub(crate) name: String,
    /// Its manifest's `version`.
    pub(crate) version: Option<String>,
    /// Its manifest's `description`.
    pub(crate) description: Option<String>,
    /// Its directory, canonical.
    pub(crate) root: PathBuf,
    /// How it came to be loaded.
    pub(crate) source: Source,
}

/// Why a file of a plugin is not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfineError {
    /// Its real location is outside the plugin's directory.
    #[error(
        "a symbolic link that leads outside the plugin (to {target}); a plugin's files must stay inside {root}, so it is not loaded"
    )]
    Escapes {
        /// Where the link leads.
        target: PathBuf,
        /// The plugin's directory.
        root: PathBuf,
    },
    /// It cannot be resolved (a dangling link, no permission).
    #[error("cannot resolve it ({0}); it is not loaded")]
    Unresolved(String),
}

/// The real location of `path`, refused when it is not inside `root` (canonical).
pub(crate) fn confine(root: &Path, path: &Path) -> Result<PathBuf, ConfineError> {
    let real = std::fs::canonicalize(path).map_err(|e| ConfineError::Unresolved(e.to_string()))?;
    if real.starts_with(root) {
        Ok(real)
    } else {
        Err(ConfineError::Escapes {
            target: real,
            root: root.to_path_buf(),
        })
    }
}

impl Plugin {
    /// The name of its item `name` as Claude Code names it: `plugin-name:name`.
    pub(crate) fn qualify(&self, name: &str) -> String {
        format!("{}:{name}", self.name)
    }

    /// The folder of one of its parts (`commands`, `agents`, `skills`, `hooks`).
    pub(crate) fn part(&self, part: &str) -> PathBuf {
        self.root.join(part)
    }

    /// The real location of `path`, one of its files, refused when it leads outside the
    /// plugin's directory.
    pub(crate) fn confine(&self, path: &Path) -> Result<PathBuf, ConfineError> {
        confine(&self.root, path)
    }

    /// `text` with `${CLAUDE_PLUGIN_ROOT}` replaced by the plugin's directory, as Claude
    /// Code does in a plugin's agents, skills and commands.
    pub(crate) fn expand(&self, text: &str) -> String {
        text.replace(
            &format!("${{{ROOT_VARIABLE}}}"),
            &self.root.display().to_string(),
        )
    }

    /// Whether it came with the project: given with `--plugin-dir` and inside
    /// `project_root` (canonical). Its hooks are then the project's, which need the
    /// folder's trust; an installed plugin is the user's own, wherever the project is.
    pub(crate) fn came_with(&self, project_root: &Path) -> bool {
        self.source == Source::Flag && self.root.starts_with(project_root)
    }

    /// How `crew … list` names it: `name 1.2.0 (DIR; how it was loaded)`.
    pub(crate) fn label(&self) -> String {
        let version = self
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        format!(
            "{}{version} ({}; {})",
            self.name,
            self.root.display(),
            self.source
        )
    }
}

/// A `--plugin-dir` that cannot be used: the user named it, so it is an error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginDirError {
    /// No such directory.
    #[error(
        "--plugin-dir {dir}: {why}; give a plugin's directory (the one holding .claude-plugin/plugin.json)"
    )]
    NoDir {
        /// The directory as given.
        dir: PathBuf,
        /// The I/O error.
        why: String,
    },
    /// Its manifest is missing or wrong.
    #[error("--plugin-dir {dir}: {error}")]
    Manifest {
        /// The directory as given.
        dir: PathBuf,
        /// What is wrong with the manifest.
        error: manifest::ManifestError,
    },
}

/// The plugins to load, and what was wrong with the others.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plugins {
    list: Vec<Plugin>,
    /// Problems found on the way (a manifest with unknown fields, an enabled plugin that
    /// is not installed, two plugins of one name), each naming the file and what to do.
    pub(crate) warnings: Vec<String>,
}

impl Plugins {
    /// The plugins for `project_root` (canonical) and `home`: the installed ones the
    /// settings enable, then each of `dirs` (`--plugin-dir`, in order). A `--plugin-dir`
    /// that is no plugin is an error; a problem with an installed one is a warning.
    pub(crate) fn load(
        project_root: &Path,
        home: Option<&Path>,
        dirs: &[PathBuf],
    ) -> Result<Self, PluginDirError> {
        let mut out = Plugins::default();
        if let Some(home) = home {
            let found = installed::load(project_root, home);
            out.warnings.extend(found.warnings);
            for plugin in found.plugins {
                out.add(plugin);
            }
        }
        for dir in dirs {
            let root = std::fs::canonicalize(dir).map_err(|e| PluginDirError::NoDir {
                dir: dir.clone(),
                why: e.to_string(),
            })?;
            if !root.is_dir() {
                return Err(PluginDirError::NoDir {
                    dir: dir.clone(),
                    why: "not a directory".into(),
                });
            }
            let read = manifest::read(&root).map_err(|error| PluginDirError::Manifest {
                dir: dir.clone(),
                error,
            })?;
            out.warnings.extend(read.warnings);
            out.add(Plugin {
                name: read.name,
                version: read.version,
                description: read.description,
                root,
                source: Source::Flag,
            });
        }
        Ok(out)
    }

    /// Adds `plugin`; one of the same name is replaced, with a warning naming both (the
    /// same directory twice is one plugin).
    fn add(&mut self, plugin: Plugin) {
        if let Some(at) = self.list.iter().position(|p| p.name == plugin.name) {
            let old = &self.list[at];
            if old.root != plugin.root {
                self.warnings.push(format!(
                    "two plugins are named `{}`: {} ({}) is used, {} ({}) is not",
                    plugin.name,
                    plugin.root.display(),
                    plugin.source,
                    old.root.display(),
                    old.source
                ));
            }
            self.list.remove(at);
        }
        self.list.push(plugin);
    }

    /// A set of these plugins (tests).
    #[cfg(test)]
    pub(crate) fn of(list: Vec<Plugin>) -> Self {
        Self {
            list,
            warnings: Vec::new(),
        }
    }

    /// The plugins, in load order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Plugin> {
        self.list.iter()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Plugin fixtures for the unit tests of the modules that read plugins.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Writes `files` (path relative to the plugin, text) into `dir/name` with a manifest
    /// naming it `name`, and returns it as a `--plugin-dir` plugin.
    pub(crate) fn plugin(dir: &Path, name: &str, files: &[(&str, &str)]) -> Plugin {
        let root = dir.join(name);
        let manifest = format!(r#"{{"name": "{name}", "version": "1.0.0"}}"#);
        for (rel, text) in [(manifest::FILE, manifest.as_str())]
            .into_iter()
            .chain(files.iter().copied())
        {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Plugin {
            name: name.into(),
            version: Some("1.0.0".into()),
            description: None,
            root: std::fs::canonicalize(&root).unwrap(),
            source: Source::Flag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_out_of_the_plugin_is_refused_and_one_inside_it_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let p = testing::plugin(tmp.path(), "p", &[("agents/a.md", "x")]);
        let outside = tmp.path().join("secret");
        std::fs::write(&outside, "s").unwrap();
        std::os::unix::fs::symlink(&outside, p.part("agents").join("x.md")).unwrap();
        std::os::unix::fs::symlink("a.md", p.part("agents").join("b.md")).unwrap();
        let e = p.confine(&p.part("agents").join("x.md")).unwrap_err();
        assert!(
            matches!(&e, ConfineError::Escapes { target, .. } if target.ends_with("secret")),
            "{e}"
        );
        assert!(e.to_string().contains("outside the plugin"), "{e}");
        let inside = p.confine(&p.part("agents").join("b.md")).unwrap();
        assert!(inside.ends_with("agents/a.md"), "{inside:?}");
        // A folder that is a link out of the plugin is refused through its files too.
        std::os::unix::fs::symlink(tmp.path(), p.root.join("skills")).unwrap();
        assert!(p.confine(&p.part("skills").join("secret")).is_err());
    }

    #[test]
    fn a_plugin_dir_flag_wins_over_the_installed_copy_with_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let home = base.join("home");
        let installed = home.join(".claude/plugins/cache/mkt/tools/1.0.0");
        let mine = base.join("dev");
        for (dir, version) in [(&installed, "1.0.0"), (&mine.join("tools"), "2.0.0")] {
            std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
            std::fs::write(
                dir.join(manifest::FILE),
                format!(r#"{{"name": "tools", "version": "{version}"}}"#),
            )
            .unwrap();
        }
        std::fs::write(
            home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"tools@mkt": true}}"#,
        )
        .unwrap();
        let project = base.join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let only = Plugins::load(&project, Some(&home), &[]).unwrap();
        let names: Vec<_> = only.iter().map(|p| p.version.clone()).collect();
        assert_eq!(names, [Some("1.0.0".to_string())]);
        let both = Plugins::load(&project, Some(&home), &[mine.join("tools")]).unwrap();
        let used: Vec<_> = both
            .iter()
            .map(|p| (p.version.clone(), &p.source))
            .collect();
        assert_eq!(used, [(Some("2.0.0".to_string()), &Source::Flag)]);
        assert!(
            both.warnings
                .iter()
                .any(|w| w.contains("two plugins are named `tools`")
                    && w.contains("dev/tools (--plugin-dir) is used")),
            "{:?}",
            both.warnings
        );
        // The same directory twice is one plugin and no warning.
        let twice =
            Plugins::load(&project, None, &[mine.join("tools"), mine.join("tools/.")]).unwrap();
        assert_eq!((twice.iter().count(), twice.warnings.len()), (1, 0));
    }

    #[test]
    fn a_plugin_dir_that_is_no_plugin_is_an_error_saying_what_to_add() {
        let tmp = tempfile::tempdir().unwrap();
        let e = Plugins::load(tmp.path(), None, &[tmp.path().join("nope")]).unwrap_err();
        assert!(e.to_string().starts_with("--plugin-dir "), "{e}");
        let e = Plugins::load(tmp.path(), None, &[tmp.path().to_path_buf()]).unwrap_err();
        assert!(e.to_string().contains(".claude-plugin/plugin.json"), "{e}");
    }

    #[test]
    fn plugin_items_are_namespaced_and_the_root_variable_expands() {
        let tmp = tempfile::tempdir().unwrap();
        let p = testing::plugin(tmp.path(), "kit", &[]);
        assert_eq!(p.qualify("review"), "kit:review");
        let text = p.expand("run ${CLAUDE_PLUGIN_ROOT}/scripts/x.sh, not $CLAUDE_PLUGIN_ROOT");
        assert_eq!(
            text,
            format!(
                "run {}/scripts/x.sh, not $CLAUDE_PLUGIN_ROOT",
                p.root.display()
            )
        );
        assert!(p.came_with(tmp.path().canonicalize().as_deref().unwrap()));
        let installed = Plugin {
            source: Source::Installed {
                key: "kit@m".into(),
                settings: "/h/.claude/settings.json".into(),
            },
            ..p.clone()
        };
        assert!(!installed.came_with(tmp.path().canonicalize().as_deref().unwrap()));
    }
}
