//! `read_file`: (implementation pending — see issue 2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, schema};

/// The `read_file` tool.
pub struct ReadFile {
    def: Definition,
}

impl ReadFile {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "read_file".into(),
                description: "Read a UTF-8 text file. Returns numbered lines (cat -n style), 2000 lines by default; use offset and limit for long files. Refuses binary files.".into(),
                input_schema: schema::object(&[("path", json!({"type": "string", "description": "Path of the file, absolute or relative to the working directory."})), ("offset", json!({"type": "integer", "minimum": 1, "description": "1-based line to start at."})), ("limit", json!({"type": "integer", "minimum": 1, "description": "Number of lines to read (default 2000)."}))], &["path"]),
                safety: Safety::ReadOnly,
                system: false,
                timeout: None,
            },
        }
    }
}

impl Default for ReadFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed("not implemented yet".into()))
    }
}
