//! `find_files`: (implementation pending — see issue 2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, schema};

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
                description: "Find files by glob pattern, respecting .gitignore. Returns paths, newest first.".into(),
                input_schema: schema::object(&[("pattern", json!({"type": "string", "description": "Glob pattern, e.g. **/*.rs or src/**/mod.rs."})), ("path", json!({"type": "string", "description": "Directory to search (default: the working directory)."}))], &["pattern"]),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
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

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed("not implemented yet".into()))
    }
}
