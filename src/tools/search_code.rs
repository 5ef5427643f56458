//! `search_code`: (implementation pending — see issue 2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, schema};

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
                description: "Search file contents with a regular expression (ripgrep engine), respecting .gitignore and skipping binary files.".into(),
                input_schema: schema::object(&[("pattern", json!({"type": "string", "description": "Regular expression (Rust regex syntax)."})), ("path", json!({"type": "string", "description": "File or directory to search (default: the working directory)."})), ("glob", json!({"type": "string", "description": "Only search files matching this glob, e.g. *.rs."})), ("output_mode", json!({"type": "string", "enum": ["files_with_matches", "content", "count"], "description": "What to return (default files_with_matches)."})), ("context", json!({"type": "integer", "minimum": 0, "description": "Lines of context around matches (content mode)."})), ("case_insensitive", json!({"type": "boolean"})), ("head_limit", json!({"type": "integer", "minimum": 1, "description": "Return at most this many lines/entries."}))], &["pattern"]),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
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

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed("not implemented yet".into()))
    }
}
