//! `find_files`: files whose path matches a glob, walked in parallel with ripgrep's
//! `ignore` crate (so `.gitignore` is respected, in a git repository or not), newest
//! first. Only matching files are stat'ed, and only the shown ones fully sorted.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, WalkState};
use serde_json::{Value, json};

use super::beneath::{Beneath, OpenFor, WalkBase};
use super::walk::{self, Worker};
use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::walk::WalkScope;
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};

/// Paths returned at most; the rest are counted.
pub const MAX_RESULTS: usize = 100;

/// The `find_files` tool.
pub struct FindFiles {
    def: Definition,
}

impl FindFiles {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "find_files".into(),
                description: "Find files by glob pattern, respecting .gitignore. Returns paths relative to the search directory, newest first, at most 100. `*` does not cross `/`: use **/*.rs for every depth, *.rs for the top level only.".into(),
                input_schema: schema::object(&[("pattern", json!({"type": "string", "description": "Glob pattern, e.g. **/*.rs or src/**/mod.rs."})), ("path", json!({"type": "string", "description": "Directory to search (default: the working directory)."}))], &["pattern"]),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Read, [RuleName::Glob, RuleName::Read], TargetSpec::walks("path", &["pattern"])).requiring(&["pattern"])),
            },
        }
    }
}

impl Default for FindFiles {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for FindFiles {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let pattern: String = required(&input, "pattern")?;
        let path: Option<String> = field(&input, "path")?;
        let root = path
            .as_deref()
            .map(|p| ctx.resolve(p))
            .unwrap_or_else(|| ctx.cwd.clone());
        let shown_root = path.unwrap_or_else(|| ".".into());
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::InvalidInput(format!("argument `pattern`: {e}")))?
            .compile_matcher();
        let beneath = Beneath::reads(&ctx, RuleName::Glob);
        tokio::task::spawn_blocking(move || find(&root, &shown_root, &pattern, &matcher, &beneath))
            .await
            .map_err(|e| ToolError::Failed(format!("the search was interrupted: {e}")))?
    }
}

/// Walks `root` and lists files matching `matcher`, newest first.
fn find(
    root: &Path,
    shown_root: &str,
    pattern: &str,
    matcher: &GlobMatcher,
    beneath: &Beneath,
) -> Result<String, ToolError> {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::InvalidInput(format!(
                "argument `path`: `{shown_root}` is a file; give a directory to search"
            )));
        }
        Err(_) => {
            return Err(ToolError::Failed(format!(
                "directory not found: `{shown_root}` ({}); check the path",
                root.display()
            )));
        }
    }
    // Every match is opened again beneath the root before it is shown (`beneath.rs`).
    let base = beneath.walk_base(root, shown_root)?;
    let scope = beneath.scope();
    // An absolute pattern is matched against absolute paths, a relative one against
    // paths relative to the root. Only matching files are stat'ed, for their mtime.
    let absolute = Path::new(pattern).is_absolute();
    let workers = walk::parallel(root, scope, || Finder {
        root,
        absolute,
        matcher,
        scope,
        base: &base,
        found: Vec::new(),
    });
    let mut found: Vec<(SystemTime, PathBuf)> = workers.into_iter().flat_map(|w| w.found).collect();
    if found.is_empty() {
        return Ok(format!("no files match `{pattern}` under `{shown_root}`"));
    }
    // Newest first, ties by path; only the shown entries are fully sorted.
    let newest = |a: &(SystemTime, PathBuf), b: &(SystemTime, PathBuf)| {
        b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))
    };
    if found.len() > MAX_RESULTS {
        found.select_nth_unstable_by(MAX_RESULTS, newest);
        found[..MAX_RESULTS].sort_unstable_by(newest);
    } else {
        found.sort_unstable_by(newest);
    }
    let total = found.len();
    let mut out: String = found
        .iter()
        .take(MAX_RESULTS)
        .map(|(_, p)| format!("{}\n", p.display()))
        .collect();
    if total > MAX_RESULTS {
        out.push_str(&format!(
            "… {} more files not shown (newest {MAX_RESULTS} of {total}); narrow the pattern or path\n",
            total - MAX_RESULTS
        ));
    }
    Ok(out)
}

/// One walker thread's matches.
struct Finder<'a> {
    root: &'a Path,
    absolute: bool,
    matcher: &'a GlobMatcher,
    scope: &'a WalkScope,
    base: &'a WalkBase,
    /// (mtime, path relative to the root)
    found: Vec<(SystemTime, PathBuf)>,
}

impl Worker for Finder<'_> {
    fn visit(&mut self, e: DirEntry) -> WalkState {
        // The walker's filter skips the root; a root given as `path` is checked here.
        if e.depth() == 0 && !self.scope.allows(e.path()) {
            return WalkState::Continue;
        }
        let is_file = e.file_type().is_some_and(|t| t.is_file())
            || (e.path_is_symlink() && e.path().is_file());
        if !is_file {
            return WalkState::Continue;
        }
        let Ok(rel) = e.path().strip_prefix(self.root) else {
            return WalkState::Continue;
        };
        let matched = if self.absolute {
            self.matcher.is_match(e.path())
        } else {
            self.matcher.is_match(rel)
        };
        // Shown only when it is still there, reached beneath the root without a link
        // swapped in on the way, and not (a hard link to) a denied file or credential.
        if matched
            && let Some((_, meta)) =
                self.base
                    .open_file(e.path(), e.path_is_symlink(), OpenFor::Metadata)
        {
            let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            self.found.push((mtime, rel.to_path_buf()));
        }
        WalkState::Continue
    }
}
