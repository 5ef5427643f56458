//! The worktree operations on one repository, synchronous: create, finish, list, diff,
//! merge, discard and reconcile. The `WorktreeManager` actor serialises calls to them;
//! the `crew worktrees` command calls them directly. Every operation reloads the registry
//! from disk, so the actor and a command in another terminal see each other's changes.
//!
//! The rule throughout: a worktree is deleted automatically only when it holds nothing
//! beyond its base (no uncommitted change, no commit); `merge` deletes it after its
//! commits are in the main branch, and `discard` because the user asked.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use git2::{Oid, Repository};

use super::add;
use super::include::{self, WorktreeSettings};
use super::naming::{branch_name, check_task_id, default_base_dir, repo_dir};
use super::overlay;
use super::registry::{self, Layout, Record, Registry};
use super::{
    DiffSummary, Finished, Listing, MergeStyle, Merged, Pruned, ReconcileReport, Status, Worktree,
    WorktreeError, git, io_err,
};

/// The operations on one repository's worktrees (cheap to clone: paths and settings).
#[derive(Debug, Clone)]
pub struct Manager {
    /// The main checkout.
    root: PathBuf,
    /// Where the lead works; its HEAD is the default base.
    start: PathBuf,
    /// This repository's worktrees folder (holds the registry).
    dir: PathBuf,
    /// The `worktree` key of `.crew/settings.json`.
    settings: WorktreeSettings,
}

impl Manager {
    /// Opens the repository containing `start` (the lead's cwd). Worktrees go under
    /// `base_dir` (default `~/.crew/worktrees`) in a folder named after the repository.
    pub fn open(start: &Path, base_dir: Option<&Path>) -> Result<Self, WorktreeError> {
        let (_, root) = git::open_main(start)?;
        let base = match base_dir {
            Some(b) => b.to_path_buf(),
            None => default_base_dir().ok_or_else(|| WorktreeError::Io {
                op: "find the home directory for",
                path: PathBuf::from("~/.crew/worktrees"),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "HOME is not set"),
            })?,
        };
        std::fs::create_dir_all(&base).map_err(io_err("create", &base))?;
        let base = base.canonicalize().map_err(io_err("resolve", &base))?;
        let settings = WorktreeSettings::load(&root)?;
        Ok(Self {
            dir: repo_dir(&base, &root),
            start: start.to_path_buf(),
            root,
            settings,
        })
    }

    /// The main checkout.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This repository's worktrees folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The registry file.
    pub fn registry_path(&self) -> PathBuf {
        self.dir.join(registry::FILE_NAME)
    }

    /// The configured `worktree.setup` command, if any.
    pub fn setup_command(&self) -> Option<&str> {
        self.settings.setup.as_deref()
    }

    /// Drops the `worktree.setup` command: a folder the user has not trusted cannot make
    /// crewmaster run its commands.
    pub fn ignore_setup(&mut self) {
        self.settings.setup = None;
    }

    fn repo(&self) -> Result<Repository, WorktreeError> {
        Ok(git::open_main(&self.root)?.0)
    }

    fn load(&self) -> Result<Registry, WorktreeError> {
        let mut reg = Registry::load(&self.registry_path())?;
        reg.repo_root.clone_from(&self.root);
        Ok(reg)
    }

    /// Re-reads the registry, applies `change` and writes it back, all under the
    /// registry's inter-process lock: another process (a `crew worktrees` command next to
    /// a running session) or a parallel creation in this one never loses an update.
    fn update(&self, change: impl FnOnce(&mut Registry)) -> Result<(), WorktreeError> {
        let _held = registry::lock(&self.registry_path())?;
        let mut reg = self.load()?;
        change(&mut reg);
        reg.save(&self.registry_path())
    }

    fn record(&self, reg: &Registry, id: &str) -> Result<Record, WorktreeError> {
        reg.get(id).cloned().ok_or_else(|| WorktreeError::NotFound {
            id: id.to_string(),
            registry: self.registry_path(),
        })
    }

    /// Creates the worktree of `task_id` on a new branch from `base` (default:
    /// `worktree.base`, else the lead's HEAD) and copies the `.worktreeinclude` files.
    /// The setup command is not run here (see [`include::run_setup`]).
    pub fn create(
        &self,
        task_id: &str,
        description: &str,
        base: Option<&str>,
    ) -> Result<Worktree, WorktreeError> {
        check_task_id(task_id)?;
        let _span = tracing::debug_span!("worktree.create").entered();
        let reg = self.load()?;
        let path = self.dir.join(task_id);
        if reg.get(task_id).is_some() || path.exists() {
            return Err(WorktreeError::AlreadyExists {
                id: task_id.to_string(),
                path,
            });
        }
        let base_ref = base.or(self.settings.base.as_deref());
        // From the lead's HEAD, the worktree starts from the user's working state: one
        // snapshot commit of what is uncommitted, recorded as the base (see `snapshot`).
        let snapshot = match base_ref {
            None => super::snapshot::of_working_state(&self.start)?,
            Some(_) => None,
        };
        let base_commit = match snapshot {
            Some(commit) => commit,
            None => git::resolve_base(&self.start, base_ref)?,
        };
        let branch = branch_name(task_id, description);
        let main = self.repo()?;
        std::fs::create_dir_all(&self.dir).map_err(io_err("create", &self.dir))?;
        let add = |layout| add::add(&main, task_id, &path, &branch, base_commit, layout);
        let layout = match overlay::available().then(|| add(Layout::Overlay)) {
            Some(Ok(())) => Layout::Overlay,
            tried => {
                if let Some(Err(e)) = tried {
                    // An upper directory on overlayfs, say: this one is a checkout.
                    overlay::fall_back(&e.to_string());
                }
                add(Layout::Checkout)?;
                Layout::Checkout
            }
        };
        let included = {
            let _span = tracing::debug_span!("worktree.include").entered();
            include::copy_included(&main, &self.root, &path)
        };
        let copied = match included {
            Ok(c) => c,
            Err(e) => {
                // The worktree is seconds old and holds nothing: undo it.
                let _ = git::remove(&main, &self.dir, task_id, &path, &branch);
                return Err(e);
            }
        };
        let record = Record {
            id: task_id.to_string(),
            path: path.clone(),
            branch: branch.clone(),
            base_commit: base_commit.to_string(),
            snapshot: snapshot.is_some(),
            created_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            description: description.to_string(),
            status: Status::Active,
            layout,
        };
        self.update(|reg| reg.worktrees.push(record))?;
        Ok(Worktree {
            id: task_id.to_string(),
            path,
            branch,
            base_commit: base_commit.to_string(),
            repo_root: self.root.clone(),
            setup: None,
            copied,
        })
    }

    /// Ends a task's worktree: removed with its branch if it holds nothing beyond its
    /// base, otherwise kept (status `kept`) and summarised.
    pub fn finish(&self, id: &str) -> Result<Finished, WorktreeError> {
        let _span = tracing::debug_span!("worktree.finish").entered();
        let rec = self.record(&self.load()?, id)?;
        overlay::release(&self.dir, id);
        let main = self.repo()?;
        let summary = {
            let _span = tracing::debug_span!("worktree.finish.summary").entered();
            self.summary_of(&main, &rec)?
        };
        if summary.is_clean() {
            let _span = tracing::debug_span!("worktree.finish.remove").entered();
            git::remove(&main, &self.dir, &rec.id, &rec.path, &rec.branch)?;
            self.update(|reg| reg.remove(id))?;
            return Ok(Finished::Removed);
        }
        self.update(|reg| {
            if let Some(r) = reg.get_mut(id) {
                r.status = Status::Kept;
            }
        })?;
        Ok(Finished::Kept {
            reason: kept_reason(&summary, &rec),
            summary,
        })
    }

    fn summary_of(&self, main: &Repository, rec: &Record) -> Result<DiffSummary, WorktreeError> {
        overlay::ensure_mounted(&self.dir, rec)?;
        if !rec.path.exists() {
            return Err(WorktreeError::Missing {
                id: rec.id.clone(),
                path: rec.path.clone(),
                branch: rec.branch.clone(),
            });
        }
        let scope = overlay::scope(&self.dir, rec);
        git::summarize(
            main,
            &rec.path,
            &rec.branch,
            parse_oid(&rec.base_commit)?,
            scope,
        )
    }

    /// Every registered worktree with what it holds now.
    pub fn list(&self) -> Result<Vec<Listing>, WorktreeError> {
        let reg = self.load()?;
        let main = self.repo()?;
        let mut out = Vec::new();
        for rec in reg.worktrees {
            let summary = match self.summary_of(&main, &rec) {
                Ok(s) => Some(s),
                Err(WorktreeError::Missing { .. } | WorktreeError::Overlay { .. }) => None,
                Err(e) => return Err(e),
            };
            out.push(Listing {
                id: rec.id,
                branch: rec.branch,
                path: rec.path,
                status: rec.status,
                description: rec.description,
                base_commit: rec.base_commit,
                summary,
            });
        }
        Ok(out)
    }

    /// The unified diff of a worktree against its base, uncommitted changes included.
    pub fn diff(&self, id: &str) -> Result<String, WorktreeError> {
        let rec = self.record(&self.load()?, id)?;
        self.summary_of(&self.repo()?, &rec)?;
        let scope = overlay::scope(&self.dir, &rec);
        git::diff_text(&rec.path, parse_oid(&rec.base_commit)?, scope)
    }

    /// Merges a worktree's branch into the main checkout's current branch (a merge commit,
    /// or one squashed commit), then removes the worktree and branch. Refuses, changing
    /// nothing, if the worktree has uncommitted changes (we never commit on the user's
    /// behalf), if the merge would conflict, or if the main checkout has uncommitted
    /// changes to files the merge touches.
    pub fn merge(&self, id: &str, style: MergeStyle) -> Result<Merged, WorktreeError> {
        let rec = self.record(&self.load()?, id)?;
        let main = self.repo()?;
        let summary = self.summary_of(&main, &rec)?;
        if summary.uncommitted {
            // Subagents leave their changes in the working tree; asking to merge them is
            // asking to bring them in, so they are committed on the task's branch first.
            git::commit_all(
                &rec.path,
                &rec.branch,
                &format!(
                    "{}\n\nWork left uncommitted by crew task {}.\n",
                    first_line(&rec.description, &rec.id),
                    rec.id
                ),
            )?;
        }
        let base = parse_oid(&rec.base_commit)?;
        let tip = git::branch_tip(&main, &rec.branch).ok_or_else(|| WorktreeError::Missing {
            id: rec.id.clone(),
            path: rec.path.clone(),
            branch: rec.branch.clone(),
        })?;
        if git::worktree_head(&rec.path)? != Some(tip) {
            return Err(WorktreeError::HeadMoved {
                id: rec.id,
                path: rec.path,
                branch: rec.branch,
            });
        }
        let commits = git::ahead(&main, tip, base)?;
        if commits == 0 {
            return Err(WorktreeError::NothingToMerge {
                id: rec.id,
                branch: rec.branch,
            });
        }
        let message = match style {
            MergeStyle::Squash => format!(
                "{}\n\nSquashed from {} (crew task {}, {commits} commit(s)).\n",
                first_line(&rec.description, &rec.id),
                rec.branch,
                rec.id
            ),
            MergeStyle::Merge => format!(
                "Merge crew task {}: {}\n\nBranch {}.\n",
                rec.id,
                first_line(&rec.description, &rec.id),
                rec.branch
            ),
        };
        let plan = if rec.snapshot {
            super::snapshot::plan_merge(
                &main,
                &self.root,
                &rec.id,
                &rec.branch,
                (base, tip),
                style,
                &message,
            )?
        } else {
            git::plan_merge(
                &main,
                &self.root,
                &rec.id,
                &rec.branch,
                tip,
                style,
                &message,
            )?
        };
        git::fast_forward(&self.root, plan.commit)?;
        git::remove(&main, &self.dir, &rec.id, &rec.path, &rec.branch)?;
        self.update(|reg| reg.remove(id))?;
        Ok(Merged {
            commit: plan.commit.to_string(),
            into: plan.into,
            squash: style == MergeStyle::Squash,
            files: plan.files,
        })
    }

    /// Deletes a worktree and its branch whatever they hold (the user asked); returns what
    /// they held, or `None` if the directory was already gone.
    pub fn discard(&self, id: &str) -> Result<Option<DiffSummary>, WorktreeError> {
        let rec = self.record(&self.load()?, id)?;
        let main = self.repo()?;
        let summary = match self.summary_of(&main, &rec) {
            Ok(s) => Some(s),
            Err(WorktreeError::Missing { .. } | WorktreeError::Overlay { .. }) => None,
            Err(e) => return Err(e),
        };
        git::remove(&main, &self.dir, &rec.id, &rec.path, &rec.branch)?;
        self.update(|reg| reg.remove(id))?;
        Ok(summary)
    }

    /// Turns the overlay workspace of `id` into an ordinary checkout at its path, so that
    /// editors and shells outside crew see it (uncommitted changes included); returns the
    /// path. A checkout is returned as it is. Refused while another crew has it mounted.
    pub fn materialize(&self, id: &str) -> Result<PathBuf, WorktreeError> {
        let rec = self.record(&self.load()?, id)?;
        if rec.layout != Layout::Overlay {
            return Ok(rec.path);
        }
        let main = self.repo()?;
        let meta = main.path().join("worktrees").join(&rec.id);
        overlay::materialize(&self.dir, &rec, &meta)?;
        self.update(|reg| {
            if let Some(r) = reg.get_mut(id) {
                r.layout = Layout::Checkout;
            }
        })?;
        Ok(rec.path)
    }

    /// Brings the registry, git's worktree list and the folder on disk into agreement
    /// after a crash: entries whose directory is gone are pruned (their branch kept if it
    /// has commits beyond its base), entries left `active` become `kept`, and directories
    /// or git worktrees in our folder that the registry does not know are reported as
    /// orphaned — never deleted.
    pub fn reconcile(&self) -> Result<ReconcileReport, WorktreeError> {
        git::empty_trash(&self.dir);
        let reg = self.load()?;
        let main = self.repo()?;
        let mut report = ReconcileReport::default();
        let mut kept = Vec::new();
        let bases: Vec<String> = reg
            .worktrees
            .iter()
            .filter(|r| r.layout == Layout::Overlay)
            .map(|r| r.base_commit.clone())
            .collect();
        for rec in reg.worktrees {
            if rec.layout == Layout::Overlay && !overlay::layers(&self.dir, &rec.id).is_dir() {
                // Its changes are gone with its layers: nothing left to mount.
                let _ = overlay::remove_layers(&self.dir, &rec.id, &rec.path);
                let _ = std::fs::remove_dir(&rec.path);
            }
            if let Err(e) = overlay::ensure_mounted(&self.dir, &rec) {
                // Kept as it is: the layers hold the work, and say where.
                tracing::warn!("{e}");
            }
            if rec.path.exists() {
                if rec.status == Status::Active {
                    report.interrupted.push(rec.id.clone());
                }
                kept.push(rec.path);
                continue;
            }
            git::prune_metadata(&main, &rec.id)?;
            let tip = git::branch_tip(&main, &rec.branch);
            // An unreadable base counts as work: the branch is kept.
            let commits_ahead = match (tip, Oid::from_str(&rec.base_commit)) {
                (Some(tip), Ok(base)) => git::ahead(&main, tip, base)?,
                (Some(_), Err(_)) => u32::MAX,
                (None, _) => 0,
            };
            if tip.is_some() && commits_ahead == 0 {
                git::delete_branch(&main, &rec.branch)?;
            }
            report.pruned.push(Pruned {
                id: rec.id,
                branch: rec.branch,
                branch_kept: tip.is_some() && commits_ahead > 0,
                commits_ahead,
            });
        }
        let known = |p: &Path| kept.iter().any(|k| k == p);
        for (name, path) in git::list_git_worktrees(&main)? {
            if !path.starts_with(&self.dir) || known(&path) {
                continue;
            }
            if path.exists() {
                report.orphaned.push(path);
            } else {
                git::prune_metadata(&main, &name)?;
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name();
                let trash = name == git::TRASH_DIR
                    || name == overlay::BASES_DIR
                    || name == overlay::LAYERS_DIR;
                if path.is_dir() && !trash && !known(&path) && !report.orphaned.contains(&path) {
                    report.orphaned.push(path);
                }
            }
        }
        report.orphaned.sort();
        let in_use: Vec<&str> = bases.iter().map(String::as_str).collect();
        overlay::sweep_bases(&self.dir, &in_use);
        self.update(|reg| {
            reg.worktrees
                .retain(|r| !report.pruned.iter().any(|p| p.id == r.id));
            for r in &mut reg.worktrees {
                if report.interrupted.contains(&r.id) {
                    r.status = Status::Kept;
                }
            }
        })?;
        Ok(report)
    }
}

fn parse_oid(hex: &str) -> Result<Oid, WorktreeError> {
    Oid::from_str(hex).map_err(|source| WorktreeError::BadBase {
        base: hex.to_string(),
        source,
    })
}

fn first_line<'a>(description: &'a str, id: &'a str) -> &'a str {
    description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or(id)
}

/// Why a worktree was kept, in words.
fn kept_reason(s: &DiffSummary, rec: &Record) -> String {
    let mut parts = Vec::new();
    if s.uncommitted {
        parts.push("uncommitted changes".to_string());
    }
    if s.commits_ahead > 0 {
        parts.push(format!(
            "{} commit(s) beyond base {}",
            s.commits_ahead,
            &rec.base_commit[..rec.base_commit.len().min(8)]
        ));
    }
    format!(
        "{} ({} file(s) changed, +{} -{}); kept at {} on branch {}",
        parts.join(" and "),
        s.files_changed,
        s.insertions,
        s.deletions,
        rec.path.display(),
        rec.branch
    )
}
