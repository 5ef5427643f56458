//! Which file a `/name` runs. Every command has a name that always reaches it (its
//! [`SlashCommand::key`]: `name`, `namespace:name` for one in a subdirectory,
//! `plugin:name` for a plugin's), and may also be reached by its bare name:
//!
//! - command files load lowest precedence first (`~/.claude`, `~/.crew`, `.claude`,
//!   `.crew`), and a later file takes a name from an earlier one, with a warning naming
//!   both files (an earlier file in a subdirectory keeps its `namespace:name`);
//! - a skill is `/skill` too, unless a command file has that name (the file wins, with a
//!   warning);
//! - a plugin's command or skill is `/plugin:name`, and `/name` when no other command has
//!   that name and no other plugin has a `name` of its own.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CommandError, SlashCommand, collect, parse};
use crate::front_matter::{self, FrontMatterError};
use crate::plugins::{ConfineError, Plugin, Plugins};
use crate::skills::{Scope, SkillCatalog, search_dirs, valid_name};

/// The commands found and the files that could not be loaded.
#[derive(Debug, Clone, Default)]
pub(crate) struct CommandCatalog {
    /// Each command by its [`SlashCommand::key`].
    commands: BTreeMap<String, SlashCommand>,
    /// The bare names of commands in subdirectories, to their keys.
    bare: BTreeMap<String, String>,
    /// Files that could not be loaded.
    pub errors: Vec<CommandError>,
    /// Two commands of one name: which one is used, which one is not.
    clashes: Vec<String>,
}

impl CommandCatalog {
    /// Loads the commands of `project_root` and `home` (see `skills::search_dirs`).
    pub(crate) fn load(project_root: &Path, home: Option<&Path>) -> Self {
        let mut catalog = Self::default();
        for (scope, dir) in search_dirs(project_root, home, "commands") {
            let mut files = Vec::new();
            collect(&dir, &dir, 0, &mut files);
            files.sort();
            for (file, namespace, name) in files {
                if !valid_name(&name) {
                    catalog.errors.push(not_a_name(&file));
                    continue;
                }
                let parsed = front_matter::read(&file)
                    .and_then(|text| parse(&text, &name, namespace, &file, scope));
                match parsed {
                    Ok(cmd) => catalog.insert(cmd),
                    Err(e) => catalog.errors.push(CommandError {
                        file,
                        message: e.to_string(),
                    }),
                }
            }
        }
        catalog
    }

    /// Adds a command file's `cmd`: it takes its key and its bare name from any earlier
    /// command, saying so.
    fn insert(&mut self, cmd: SlashCommand) {
        let key = cmd.key();
        if let Some(old) = self.commands.get(&key) {
            self.clashes.push(clash(&key, &cmd.file, &old.file));
        }
        let bare = cmd.name.clone();
        let previous = self
            .bare
            .get(&bare)
            .cloned()
            .or_else(|| self.commands.contains_key(&bare).then(|| bare.clone()))
            .filter(|prev| *prev != key);
        if let Some(prev) = previous {
            if let Some(old) = self.commands.get(&prev) {
                let message = if prev == bare {
                    clash(&bare, &cmd.file, &old.file)
                } else {
                    format!(
                        "command `/{bare}` is defined twice: {} is used; {} is reached as /{prev}",
                        cmd.file.display(),
                        old.file.display()
                    )
                };
                self.clashes.push(message);
            }
            if prev == bare {
                // A file at the top of a folder has no other name: it is gone.
                self.commands.remove(&prev);
            }
        }
        if key == bare {
            self.bare.remove(&bare);
        } else {
            self.bare.insert(bare, key.clone());
        }
        self.commands.insert(key, cmd);
    }

    /// Adds each plugin's `commands/**/*.md` as `/plugin:name` (a subdirectory only labels
    /// it). `${CLAUDE_PLUGIN_ROOT}` in a body is the plugin's directory.
    pub(crate) fn add_plugins(&mut self, plugins: &Plugins) {
        for plugin in plugins.iter() {
            let dir = plugin.part("commands");
            let mut files = Vec::new();
            collect(&dir, &dir, 0, &mut files);
            files.sort();
            for (file, namespace, name) in files {
                if !valid_name(&name) {
                    self.errors.push(not_a_name(&file));
                    continue;
                }
                match read_plugin_command(plugin, &file, namespace, &name) {
                    Ok(cmd) => {
                        let key = cmd.key();
                        match self.commands.get(&key) {
                            // A file that names itself `plugin:name` (a subdirectory
                            // `plugin/`) wins over the plugin.
                            Some(old) if old.plugin.is_none() => {
                                self.clashes.push(clash(&key, &old.file, &cmd.file));
                            }
                            Some(old) => {
                                self.clashes.push(clash(&key, &cmd.file, &old.file));
                                self.commands.insert(key, cmd);
                            }
                            None => {
                                self.commands.insert(key, cmd);
                            }
                        }
                    }
                    Err(e) => self.errors.push(CommandError {
                        file,
                        message: e.to_string(),
                    }),
                }
            }
        }
    }

    /// Makes each skill a command as well, `/name args`, as Claude Code does: the turn's
    /// message is the skill's instructions with the arguments after them, and its
    /// `allowed-tools` narrow the turn. A command of the same name wins, with a warning
    /// naming both files.
    pub(crate) fn add_skills(&mut self, skills: &SkillCatalog) {
        for skill in skills.iter() {
            let file = skill.dir.join("SKILL.md");
            if let Some(cmd) = self.get_exact(&skill.name) {
                let message = format!(
                    "command `/{}` is defined twice: {} is used; the skill {} of the same name is reached by the skill tool only",
                    skill.name,
                    cmd.file.display(),
                    file.display()
                );
                self.clashes.push(message);
                continue;
            }
            let cmd = SlashCommand {
                name: skill.name.clone(),
                namespace: skill.plugin.clone(),
                description: skill.description.clone(),
                allowed_tools: skill.allowed_tools.clone(),
                argument_hint: skill.argument_hint.clone(),
                model: None,
                body: format!("{}\n\nARGUMENTS: $ARGUMENTS", skill.body.trim_end()),
                file,
                scope: skill.scope,
                plugin: skill.plugin.clone(),
                warnings: Vec::new(),
            };
            self.commands.insert(cmd.key(), cmd);
        }
    }

    /// The command `/name` invokes: a name of a command file or skill, else the one plugin
    /// command whose bare name it is.
    pub(crate) fn get(&self, name: &str) -> Option<&SlashCommand> {
        self.get_exact(name).or_else(|| self.plugin_alias(name))
    }

    /// The command whose key or bare name `name` is (plugins' bare names aside).
    fn get_exact(&self, name: &str) -> Option<&SlashCommand> {
        match self.bare.get(name) {
            Some(key) => self.commands.get(key),
            None => self.commands.get(name),
        }
    }

    /// The plugin command whose bare name is `name`, when no other plugin has one.
    fn plugin_alias(&self, name: &str) -> Option<&SlashCommand> {
        let mut found = self
            .commands
            .values()
            .filter(|c| c.plugin.is_some() && c.bare_name() == name);
        match (found.next(), found.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// The commands, by key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &SlashCommand> {
        self.commands.values()
    }

    /// Every name that invokes a command (keys, bare names, plugins' bare names), sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .commands
            .keys()
            .chain(self.bare.keys())
            .cloned()
            .collect();
        let aliases = self
            .commands
            .values()
            .filter(|c| c.plugin.is_some())
            .map(|c| c.bare_name().to_string())
            .filter(|n| self.get_exact(n).is_none() && self.plugin_alias(n).is_some());
        names.extend(aliases.collect::<Vec<_>>());
        names.sort();
        names.dedup();
        names
    }

    /// The names that invoke `cmd`, shortest first.
    pub(crate) fn names_of(&self, cmd: &SlashCommand) -> Vec<String> {
        let mut names: Vec<String> = self
            .names()
            .into_iter()
            .filter(|n| {
                self.get(n)
                    .is_some_and(|c| c.key() == cmd.key() && c.file == cmd.file)
            })
            .collect();
        names.sort_by_key(|n| (n.len(), n.clone()));
        names
    }

    /// What the loaded commands' files had that crew ignored, and the names defined twice
    /// (naming both files), one line each.
    pub(crate) fn warnings(&self) -> impl Iterator<Item = &str> {
        self.clashes.iter().map(String::as_str).chain(
            self.commands
                .values()
                .flat_map(|c| c.warnings.iter().map(String::as_str)),
        )
    }
}

/// The warning for two commands named `name`: `used` wins over `unused`.
fn clash(name: &str, used: &Path, unused: &Path) -> String {
    format!(
        "command `/{name}` is defined twice: {} is used, not {}",
        used.display(),
        unused.display()
    )
}

/// The error for a file whose name cannot name a command.
fn not_a_name(file: &Path) -> CommandError {
    CommandError {
        file: file.to_path_buf(),
        message: "the file name is not a command name (use letters, digits and `-`)".into(),
    }
}

/// Why a plugin's command file is not loaded.
#[derive(Debug, thiserror::Error)]
enum PluginCommandError {
    /// It leads outside the plugin, or cannot be resolved.
    #[error(transparent)]
    Confine(#[from] ConfineError),
    /// It cannot be read, or its front matter split or parsed.
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
}

/// Reads a plugin's command `file`: inside the plugin only, named `plugin:name`, with
/// the plugin's directory for `${CLAUDE_PLUGIN_ROOT}`.
fn read_plugin_command(
    plugin: &Plugin,
    file: &Path,
    namespace: Option<String>,
    name: &str,
) -> Result<SlashCommand, PluginCommandError> {
    let real = plugin.confine(file)?;
    let text = front_matter::read(&real)?;
    let label = match namespace {
        Some(ns) => format!("{}:{ns}", plugin.name),
        None => plugin.name.clone(),
    };
    let mut cmd = parse(
        &plugin.expand(&text),
        &plugin.qualify(name),
        Some(label),
        file,
        Scope::Plugin,
    )?;
    cmd.plugin = Some(plugin.name.clone());
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testing::plugin;

    fn put(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_skill_runs_as_a_slash_command_unless_a_command_has_its_name() {
        let project = tempfile::tempdir().unwrap();
        put(
            project.path(),
            ".claude/skills/pdf/SKILL.md",
            "---\nname: pdf\ndescription: Work with PDFs\nallowed-tools: Read\n---\nUse pdftotext.\n",
        );
        put(
            project.path(),
            ".claude/skills/review/SKILL.md",
            "---\nname: review\ndescription: Review as a skill\n---\nSkill body.\n",
        );
        put(project.path(), ".claude/commands/review.md", "Review $1.");
        let skills = SkillCatalog::load(project.path(), None);
        let mut c = CommandCatalog::load(project.path(), None);
        c.add_skills(&skills);
        let pdf = c.get("pdf").unwrap();
        assert_eq!(pdf.description, "Work with PDFs");
        assert_eq!(pdf.body, "Use pdftotext.\n\nARGUMENTS: $ARGUMENTS");
        assert_eq!(
            pdf.allowed_tools
                .clone()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["read_file"]
        );
        assert!(pdf.file.ends_with(".claude/skills/pdf/SKILL.md"));
        // The command file keeps its name; the clash is said, naming both files.
        assert_eq!(c.get("review").unwrap().body, "Review $1.");
        let clashes: Vec<&str> = c.warnings().collect();
        assert_eq!(clashes.len(), 1);
        assert!(
            clashes[0].contains("commands/review.md")
                && clashes[0].contains("skills/review/SKILL.md"),
            "{clashes:?}"
        );
    }

    #[test]
    fn loads_claude_code_command_directories() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        put(
            home.path(),
            ".claude/commands/review.md",
            "Mine: $ARGUMENTS",
        );
        put(
            home.path(),
            ".crew/commands/standup.md",
            "# Write my standup\nFrom git log.",
        );
        put(
            project.path(),
            ".claude/commands/review.md",
            "---\ndescription: Review a file\nallowed-tools: Read, Grep, Bash(git diff:*)\nargument-hint: [file] [focus]\nmodel: claude-x\n---\nReview $1.",
        );
        put(
            project.path(),
            ".claude/commands/frontend/test.md",
            "Run the frontend tests",
        );
        // Not YAML, but read as Claude Code reads it: the value as written.
        put(
            project.path(),
            ".crew/commands/loose.md",
            "---\ndescription: [unclosed: as written\n---\nx",
        );
        // A head with no `key: value` at all is still refused, naming the file.
        put(
            project.path(),
            ".crew/commands/bad.md",
            "---\n- a\n- list\n---\nx",
        );
        let c = CommandCatalog::load(project.path(), Some(home.path()));
        let review = c.get("review").unwrap();
        assert_eq!(review.scope, Scope::Project);
        assert_eq!(review.description, "Review a file");
        assert_eq!(review.argument_hint.as_deref(), Some("[file] [focus]"));
        assert_eq!(review.model.as_deref(), Some("claude-x"));
        let tools: Vec<_> = review.allowed_tools.clone().unwrap().into_iter().collect();
        assert_eq!(tools, ["read_file", "run_command", "search_code"]);
        assert_eq!(c.get("standup").unwrap().description, "Write my standup");
        let test = c.get("test").unwrap();
        assert_eq!(test.origin(), "project:frontend");
        assert_eq!(c.get("frontend:test"), Some(test));
        assert_eq!(c.get("loose").unwrap().description, "[unclosed: as written");
        assert_eq!(
            c.names(),
            ["frontend:test", "loose", "review", "standup", "test"]
        );
        assert_eq!(c.errors.len(), 1);
        assert!(
            c.errors[0].to_string().contains("bad.md"),
            "{}",
            c.errors[0]
        );
        // The project's review.md took /review from the user's, and said so.
        let warnings: Vec<&str> = c.warnings().collect();
        assert_eq!(
            warnings,
            [format!(
                "command `/review` is defined twice: {} is used, not {}",
                project.path().join(".claude/commands/review.md").display(),
                home.path().join(".claude/commands/review.md").display()
            )]
        );
    }

    #[test]
    fn a_name_in_two_subdirectories_goes_to_the_later_and_both_keep_their_full_names() {
        let project = tempfile::tempdir().unwrap();
        put(project.path(), ".claude/commands/a/test.md", "A");
        put(project.path(), ".claude/commands/b/test.md", "B");
        let c = CommandCatalog::load(project.path(), None);
        assert_eq!(c.get("test").unwrap().body, "B");
        assert_eq!(c.get("a:test").unwrap().body, "A");
        let warnings: Vec<&str> = c.warnings().collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("b/test.md is used") && warnings[0].contains("reached as /a:test"),
            "{warnings:?}"
        );
    }

    #[test]
    fn plugin_commands_are_namespaced_with_the_bare_name_only_when_free() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        put(&project, ".claude/commands/review.md", "Mine.");
        let kit = plugin(
            tmp.path(),
            "kit",
            &[
                ("commands/review.md", "Kit review."),
                (
                    "commands/ship.md",
                    "Ship with ${CLAUDE_PLUGIN_ROOT}/bin/ship",
                ),
                ("commands/lint.md", "Kit lint."),
                ("commands/ops/deploy.md", "Deploy."),
            ],
        );
        let other = plugin(tmp.path(), "other", &[("commands/lint.md", "Other lint.")]);
        std::os::unix::fs::symlink("/etc/passwd", kit.part("commands").join("leak.md")).unwrap();
        let mut c = CommandCatalog::load(&project, None);
        c.add_plugins(&Plugins::of(vec![kit.clone(), other]));
        // The project's /review keeps its name; the plugin's is /kit:review.
        assert_eq!(c.get("review").unwrap().body, "Mine.");
        assert_eq!(c.get("kit:review").unwrap().body, "Kit review.");
        // A bare name no other command has reaches the plugin's.
        let ship = c.get("ship").unwrap();
        assert_eq!(ship.name, "kit:ship");
        assert_eq!(ship.origin(), "plugin:kit");
        assert_eq!(
            ship.body,
            format!("Ship with {}/bin/ship", kit.root.display())
        );
        assert_eq!(c.names_of(ship), ["ship", "kit:ship"]);
        // Two plugins have /lint: only their full names reach them.
        assert!(c.get("lint").is_none());
        assert_eq!(c.get("other:lint").unwrap().body, "Other lint.");
        // A subdirectory labels a plugin command.
        let deploy = c.get("kit:deploy").unwrap();
        assert_eq!(deploy.origin(), "plugin:kit:ops");
        assert!(c.names().contains(&"deploy".to_string()));
        assert!(!c.names().contains(&"lint".to_string()));
        // The link out of the plugin is refused with a warning; nothing was read.
        assert_eq!(c.errors.len(), 1, "{:?}", c.errors);
        assert!(c.errors[0].file.ends_with("commands/leak.md"));
        assert!(c.errors[0].message.contains("outside the plugin"));
        assert!(c.get("kit:leak").is_none());
    }
}
