//! `search_code`: a regular-expression search over files with ripgrep's engine
//! (`grep-regex`, `grep-searcher`) and parallel walker (`ignore`): `.gitignore`
//! respected, binary files skipped, results as file lists, matching lines or counts.
//!
//! Each walker thread searches with its own reused buffers. Files-with-matches mode stops
//! reading a file at its first match and stats only matching files (for newest first).
//! Content and count modes stop the walk once `head_limit` entries are in hand; their
//! output is sorted by path, so it does not depend on thread timing unless the walk
//! stopped early (then which files made the cut does).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::{DirEntry, WalkState};
use serde_json::{Value, json};

use super::beneath::{Beneath, OpenFor, WalkBase};
use super::walk::{self, Worker};
use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};

/// Entries returned when the call gives no `head_limit`.
pub const DEFAULT_HEAD_LIMIT: usize = 500;

/// Characters kept of a matching line in content mode.
pub const MAX_LINE_CHARS: usize = 500;

/// What the search returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Paths of files with at least one match, newest first.
    FilesWithMatches,
    /// `path:line:text` for matching lines, `path-line-text` for context lines.
    Content,
    /// `path:N`, the number of matching lines per file.
    Count,
}

/// The `search_code` tool.
pub struct SearchCode {
    def: Definition,
}

impl SearchCode {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "search_code".into(),
                description: "Search file contents with a regular expression (ripgrep engine), respecting .gitignore and skipping binary files. Paths are shown relative to the working directory. output_mode: files_with_matches (default, newest first), content (path:line:text, context lines as path-line-text) or count (path:N). glob without a / matches file names at any depth (e.g. *.rs).".into(),
                input_schema: schema::object(&[("pattern", json!({"type": "string", "description": "Regular expression (Rust regex syntax)."})), ("path", json!({"type": "string", "description": "File or directory to search (default: the working directory)."})), ("glob", json!({"type": "string", "description": "Only search files matching this glob, e.g. *.rs."})), ("output_mode", json!({"type": "string", "enum": ["files_with_matches", "content", "count"], "description": "What to return (default files_with_matches)."})), ("context", json!({"type": "integer", "minimum": 0, "description": "Lines of context around matches (content mode)."})), ("case_insensitive", json!({"type": "boolean"})), ("head_limit", json!({"type": "integer", "minimum": 1, "description": "Return at most this many lines/entries (default 500); the rest are counted."}))], &["pattern"]),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Read, [RuleName::Grep, RuleName::Read], TargetSpec::walks("path", &["glob"])).requiring(&["pattern"])),
            },
        }
    }
}

impl Default for SearchCode {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for SearchCode {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let pattern: String = required(&input, "pattern")?;
        let path: Option<String> = field(&input, "path")?;
        let glob: Option<String> = field(&input, "glob")?;
        let mode = match field::<String>(&input, "output_mode")?.as_deref() {
            None | Some("files_with_matches") => OutputMode::FilesWithMatches,
            Some("content") => OutputMode::Content,
            Some("count") => OutputMode::Count,
            Some(other) => {
                return Err(ToolError::InvalidInput(format!(
                    "argument `output_mode`: unknown mode `{other}`; use files_with_matches, content or count"
                )));
            }
        };
        let context = field::<usize>(&input, "context")?.unwrap_or(0);
        let case_insensitive = field::<bool>(&input, "case_insensitive")?.unwrap_or(false);
        let head_limit = field::<usize>(&input, "head_limit")?.unwrap_or(DEFAULT_HEAD_LIMIT);

        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&pattern)
            .map_err(|e| {
                ToolError::InvalidInput(format!("argument `pattern` is not a valid regex: {e}"))
            })?;
        let glob = glob
            .map(|g| {
                GlobBuilder::new(&g)
                    .literal_separator(true)
                    .build()
                    .map(|m| (g.contains('/'), m.compile_matcher()))
                    .map_err(|e| ToolError::InvalidInput(format!("argument `glob`: {e}")))
            })
            .transpose()?;
        let query = Query {
            root: path
                .as_deref()
                .map(|p| ctx.resolve(p))
                .unwrap_or_else(|| ctx.cwd.clone()),
            shown_root: path.unwrap_or_else(|| ".".into()),
            cwd: ctx.cwd.clone(),
            matcher,
            glob,
            mode,
            context,
            head_limit: head_limit.max(1),
            beneath: Beneath::reads(&ctx, RuleName::Grep),
        };
        tokio::task::spawn_blocking(move || query.run())
            .await
            .map_err(|e| ToolError::Failed(format!("the search was interrupted: {e}")))?
    }
}

/// One search, fully decided, ready to run on a blocking thread.
struct Query {
    root: PathBuf,
    shown_root: String,
    cwd: PathBuf,
    matcher: RegexMatcher,
    /// (matches whole relative path, matcher)
    glob: Option<(bool, GlobMatcher)>,
    mode: OutputMode,
    context: usize,
    head_limit: usize,
    /// The roots files are opened beneath, deny rules and credentials: what may be opened.
    beneath: Beneath,
}

impl Query {
    fn run(&self) -> Result<String, ToolError> {
        if !self.root.exists() {
            return Err(ToolError::Failed(format!(
                "path not found: `{}` ({}); check the path",
                self.shown_root,
                self.root.display()
            )));
        }
        // Every file is opened again beneath the root before it is read (`beneath.rs`).
        let base = self.beneath.walk_base(&self.root, &self.shown_root)?;
        let shown = AtomicUsize::new(0);
        let stopped = AtomicBool::new(false);
        let workers = walk::parallel(&self.root, self.beneath.scope(), || Searching {
            query: self,
            base: &base,
            searcher: self.searcher(),
            shown: &shown,
            stopped: &stopped,
            hits: Vec::new(),
            binary_skipped: 0,
        });
        let binary_skipped: usize = workers.iter().map(|w| w.binary_skipped).sum();
        let mut hits: Vec<Hit> = workers.into_iter().flat_map(|w| w.hits).collect();
        // Sorted only as the mode needs: newest first, or by path so that output does
        // not depend on which thread finished first.
        match self.mode {
            OutputMode::FilesWithMatches => hits
                .sort_unstable_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path))),
            OutputMode::Count | OutputMode::Content => {
                hits.sort_unstable_by(|a, b| a.path.cmp(&b.path))
            }
        }
        let mut out = Capped::new(self.head_limit);
        for hit in hits {
            let shown = self.display(&hit.path);
            match self.mode {
                OutputMode::FilesWithMatches => out.push(shown),
                OutputMode::Count => out.push(format!("{shown}:{}", hit.matches)),
                OutputMode::Content => {
                    if self.context > 0 {
                        out.separate();
                    }
                    for line in hit.lines {
                        match line {
                            Line::Break => out.separate(),
                            Line::Text { n, matched, text } => {
                                let sep = if matched { ':' } else { '-' };
                                out.push(format!("{shown}{sep}{n}{sep}{text}"));
                            }
                        }
                    }
                    out.more += hit.uncollected;
                }
            }
        }
        if out.lines.last().is_some_and(|l| l == "--") {
            out.lines.pop();
        }
        if out.lines.is_empty() {
            let mut msg = format!("no matches under `{}`", self.shown_root);
            if binary_skipped > 0 {
                msg.push_str(&format!(" ({binary_skipped} binary files skipped)"));
            }
            return Ok(msg);
        }
        let mut text = out.lines.join("\n");
        text.push('\n');
        let more = out.more;
        let what = if self.mode == OutputMode::Content {
            "lines"
        } else {
            "entries"
        };
        let limit = self.head_limit;
        let advice = "narrow the pattern, path or glob, or raise head_limit";
        if stopped.load(Ordering::Relaxed) {
            let counted = if more > 0 {
                format!("at least {more} more {what} not shown")
            } else {
                format!("more {what} may exist")
            };
            text.push_str(&format!(
                "… {counted} (head_limit={limit}; the search stopped there); {advice}\n"
            ));
        } else if more > 0 {
            text.push_str(&format!(
                "… {more} more {what} not shown (head_limit={limit}); {advice}\n"
            ));
        }
        Ok(text)
    }

    /// A searcher for one walker thread.
    fn searcher(&self) -> Searcher {
        let context = if self.mode == OutputMode::Content {
            self.context
        } else {
            0
        };
        SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(self.mode == OutputMode::Content)
            .before_context(context)
            .after_context(context)
            .build()
    }

    fn glob_allows(&self, path: &Path) -> bool {
        match &self.glob {
            None => true,
            Some((true, m)) => path
                .strip_prefix(&self.root)
                .map(|rel| m.is_match(rel))
                .unwrap_or_else(|_| m.is_match(path)),
            Some((false, m)) => path.file_name().is_some_and(|n| m.is_match(n)),
        }
    }

    /// A path relative to the agent's cwd when it lies below it, else absolute.
    fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.cwd)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// Output entries up to a limit; the rest are only counted.
struct Capped {
    lines: Vec<String>,
    shown: usize,
    more: usize,
    limit: usize,
}

impl Capped {
    fn new(limit: usize) -> Self {
        Self {
            lines: Vec::new(),
            shown: 0,
            more: 0,
            limit,
        }
    }

    /// Adds an entry, or counts it once the limit is reached.
    fn push(&mut self, entry: String) {
        if self.shown < self.limit {
            self.lines.push(entry);
            self.shown += 1;
        } else {
            self.more += 1;
        }
    }

    /// Adds a `--` separator between groups, unless output is empty or full.
    fn separate(&mut self) {
        if self.shown > 0 && self.shown < self.limit && self.lines.last().is_some_and(|l| l != "--")
        {
            self.lines.push("--".into());
        }
    }
}

/// One walker thread: its searcher (buffers reused across files) and its hits.
struct Searching<'a> {
    query: &'a Query,
    base: &'a WalkBase,
    searcher: Searcher,
    /// Output entries found so far by all threads (content and count modes).
    shown: &'a AtomicUsize,
    /// Set once `shown` reached the head limit and an entry was then left unvisited.
    stopped: &'a AtomicBool,
    hits: Vec<Hit>,
    binary_skipped: usize,
}

impl Worker for Searching<'_> {
    fn visit(&mut self, e: DirEntry) -> WalkState {
        let q = self.query;
        // Early exit: in content and count modes, once head_limit entries are in hand
        // the rest would only be counted, so the walk stops and the count says "at least".
        if q.mode != OutputMode::FilesWithMatches
            && self.shown.load(Ordering::Relaxed) >= q.head_limit
        {
            self.stopped.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        if !e.file_type().is_some_and(|t| t.is_file()) || !q.glob_allows(e.path()) {
            return WalkState::Continue;
        }
        // The walker's filter skips the root; a file given as `path` is checked here.
        if e.depth() == 0 && !q.beneath.scope().allows(e.path()) {
            return WalkState::Continue;
        }
        // Read only through a descriptor opened beneath the root (no link swapped in on
        // the way), and never (a hard link to) a denied file or a credential.
        let Some((file, meta)) = self.base.open_file(e.path(), false, OpenFor::Reading) else {
            return WalkState::Continue;
        };
        let mut sink = FileSink::new(q.mode, q.head_limit);
        if self
            .searcher
            .search_file(&q.matcher, &file, &mut sink)
            .is_err()
        {
            return WalkState::Continue; // Unreadable files are skipped, as ripgrep does.
        }
        if sink.binary {
            self.binary_skipped += 1;
            return WalkState::Continue;
        }
        if sink.matches == 0 {
            return WalkState::Continue;
        }
        let mtime = if q.mode == OutputMode::FilesWithMatches {
            // Newest first needs the mtime: stat'ed here, for matching files only.
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)
        } else {
            SystemTime::UNIX_EPOCH
        };
        let entries = match q.mode {
            OutputMode::FilesWithMatches => 0,
            OutputMode::Count => 1,
            OutputMode::Content => sink.kept + sink.uncollected,
        };
        self.shown.fetch_add(entries, Ordering::Relaxed);
        self.hits.push(Hit {
            path: e.into_path(),
            mtime,
            matches: sink.matches,
            lines: sink.lines,
            uncollected: sink.uncollected,
        });
        WalkState::Continue
    }
}

/// A file with at least one match.
struct Hit {
    path: PathBuf,
    /// Files-with-matches mode only.
    mtime: SystemTime,
    matches: u64,
    /// Content mode only.
    lines: Vec<Line>,
    /// Content-mode lines past what one file could ever show (the head limit).
    uncollected: usize,
}

/// A line reported for one file.
enum Line {
    /// A matching (`matched`) or context line.
    Text { n: u64, matched: bool, text: String },
    /// A gap between non-adjacent groups of lines.
    Break,
}

/// Collects one file's results; discarded when the file turns out to be binary.
struct FileSink {
    /// Files-with-matches mode: the first match is enough.
    first_only: bool,
    /// Lines whose text is kept (content mode: the head limit; else none).
    keep: usize,
    lines: Vec<Line>,
    /// Lines kept so far (separators not counted).
    kept: usize,
    /// Lines past `keep`, counted only.
    uncollected: usize,
    matches: u64,
    binary: bool,
}

impl FileSink {
    fn new(mode: OutputMode, head_limit: usize) -> Self {
        Self {
            first_only: mode == OutputMode::FilesWithMatches,
            keep: if mode == OutputMode::Content {
                head_limit
            } else {
                0
            },
            lines: Vec::new(),
            kept: 0,
            uncollected: 0,
            matches: 0,
            binary: false,
        }
    }

    fn push(&mut self, n: Option<u64>, matched: bool, bytes: &[u8]) {
        if self.kept >= self.keep {
            self.uncollected += 1;
            return;
        }
        self.kept += 1;
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = match text.char_indices().nth(MAX_LINE_CHARS) {
            None => text.to_string(),
            Some((cut, _)) => format!(
                "{} … [line cut: {} more characters]",
                &text[..cut],
                text[cut..].chars().count()
            ),
        };
        self.lines.push(Line::Text {
            n: n.unwrap_or(0),
            matched,
            text,
        });
    }
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        if self.keep > 0 {
            self.push(mat.line_number(), true, mat.bytes());
        }
        Ok(!self.first_only)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(ctx.line_number(), false, ctx.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.kept < self.keep {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}
