//! One agent's memory during a run: the files it starts with (for its system prompt) and,
//! as it reads, edits or writes files below its cwd, the files of those directories,
//! appended once to the tool result that touched them (see the module doc of
//! `crate::memory` for why not to the system prompt).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::discover;
use super::load::Loader;
use super::render::{self, Names};
use super::{Memory, MemoryFile, Scope};
use crate::permission::sandbox;
use crate::permission::walk::WalkFilter;
use crate::protocol::{Message, ToolCall, ToolResult};

/// The tools whose target's directory counts as "worked in" (canonical names).
const TOUCHING_TOOLS: [&str; 3] = ["read_file", "edit_file", "write_file"];

/// An agent's memory files for one run.
#[derive(Debug, Clone)]
pub struct AgentMemory {
    loader: Loader,
    cwd: PathBuf,
    home: Option<PathBuf>,
    names: Names,
    start: Memory,
}

impl AgentMemory {
    /// Loads the memory files of an agent in `cwd` (the user's home from `HOME`), and
    /// notes the subdirectory files its `conversation` was already given.
    pub fn start(walk: &Arc<WalkFilter>, cwd: &Path, conversation: &[Message]) -> Self {
        Self::start_with_home(walk, cwd, crate::store::home_dir().as_deref(), conversation)
    }

    /// [`AgentMemory::start`] with an explicit home directory.
    pub fn start_with_home(
        walk: &Arc<WalkFilter>,
        cwd: &Path,
        home: Option<&Path>,
        conversation: &[Message],
    ) -> Self {
        let root = crate::store::project_root(cwd);
        let mut loader = Loader::new(walk, &root, cwd, home);
        let start = loader.load(&discover::start_files(home, &root, cwd));
        let names = Names::new(&root, home);
        for name in render::injected_paths(conversation) {
            loader.mark_seen(&names.resolve(&name));
        }
        Self {
            loader,
            cwd: cwd.to_path_buf(),
            home: home.map(Path::to_path_buf),
            names,
            start,
        }
    }

    /// The files for the system prompt, in order.
    pub fn start_files(&self) -> &[MemoryFile] {
        &self.start.files
    }

    /// The system prompt section of the start files (empty when there are none).
    pub fn prompt_section(&self) -> String {
        render::prompt_section(&self.start.files, &self.names)
    }

    /// Warnings about start files that were not loaded (each names the file).
    pub fn warnings(&self) -> Vec<String> {
        self.start
            .skipped
            .iter()
            .filter(|s| s.is_warning())
            .map(|s| s.warning())
            .collect()
    }

    /// After a successful `read_file`/`edit_file`/`write_file` (`tool` is the canonical
    /// name) of a file below the cwd, appends the memory files of the directories on the
    /// way to it that the agent was not given yet. Returns warnings about files skipped.
    pub fn after_call(
        &mut self,
        tool: &str,
        call: &ToolCall,
        result: &mut ToolResult,
    ) -> Vec<String> {
        if result.is_error || !TOUCHING_TOOLS.contains(&tool) {
            return Vec::new();
        }
        let Some(raw) = target(&call.arguments) else {
            return Vec::new();
        };
        let file = sandbox::lexical(&sandbox::absolute(&raw, &self.cwd, self.home.as_deref()));
        let mut loaded = Memory::default();
        for dir in discover::dirs_below(&self.cwd, &file) {
            let found = self
                .loader
                .load(&discover::files_in(&dir, Scope::Subdirectory));
            loaded.files.extend(found.files);
            loaded.skipped.extend(found.skipped);
        }
        result
            .content
            .push_str(&render::reminder(&loaded.files, &self.names));
        loaded
            .skipped
            .iter()
            .filter(|s| s.is_warning())
            .map(|s| s.warning())
            .collect()
    }
}

/// The `path` (or Claude Code's `file_path`) argument of a file tool's call.
fn target(arguments: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(arguments).ok()?;
    v.get("path")
        .or_else(|| v.get("file_path"))
        .and_then(|p| p.as_str())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, path: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: serde_json::json!({ "path": path }).to_string(),
        }
    }

    #[test]
    fn a_subdirectorys_files_come_once_with_the_first_file_touched_there() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (home, root) = (base.join("home"), base.join("repo"));
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("api/v1")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "root rules").unwrap();
        std::fs::write(root.join("api/AGENTS.md"), "api rules").unwrap();
        std::fs::write(root.join("api/v1/CLAUDE.md"), "v1 rules @../../secret.bin").unwrap();
        std::fs::write(root.join("secret.bin"), b"\0\0").unwrap();
        let walk = Arc::new(WalkFilter::default());
        let mut m = AgentMemory::start_with_home(&walk, &root, Some(&home), &[]);
        assert_eq!(m.start_files().len(), 1);

        let mut r = ToolResult::ok("c", "fn main() {}");
        let warnings = m.after_call("read_file", &call("read_file", "api/v1/x.rs"), &mut r);
        assert!(r.content.starts_with("fn main() {}\n\n<system-reminder>"));
        assert!(r.content.contains("api rules") && r.content.contains("v1 rules"));
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("secret.bin") && warnings[0].contains("not UTF-8"));

        let mut again = ToolResult::ok("c", "x");
        m.after_call("edit_file", &call("edit_file", "api/y.rs"), &mut again);
        assert_eq!(again.content, "x", "given once per agent");

        let conversation = vec![Message {
            role: crate::protocol::Role::User,
            content: vec![crate::protocol::ContentBlock::ToolResult(r)],
        }];
        let mut resumed = AgentMemory::start_with_home(&walk, &root, Some(&home), &conversation);
        let mut third = ToolResult::ok("c", "x");
        resumed.after_call("read_file", &call("read_file", "api/v1/z.rs"), &mut third);
        assert_eq!(
            third.content, "x",
            "a resumed conversation already has them"
        );

        let mut failed = ToolResult::error("c", "permission_denied", "no");
        let fresh = &mut AgentMemory::start_with_home(&walk, &root, Some(&home), &[]);
        fresh.after_call("read_file", &call("read_file", "api/x.rs"), &mut failed);
        assert!(
            !failed.content.contains("api rules"),
            "a refused read loads nothing"
        );
        let mut searched = ToolResult::ok("c", "x");
        fresh.after_call(
            "search_code",
            &call("search_code", "api/x.rs"),
            &mut searched,
        );
        assert_eq!(searched.content, "x");
    }
}
