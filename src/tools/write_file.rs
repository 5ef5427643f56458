//! `write_file`: (implementation pending — see issue 2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, schema};

/// The `write_file` tool.
pub struct WriteFile {
    def: Definition,
}

impl WriteFile {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "write_file".into(),
                description: "Write complete UTF-8 content to a file, creating parent directories. Overwrites an existing file: read it first.".into(),
                input_schema: schema::object(&[("path", json!({"type": "string", "description": "Path of the file to write."})), ("content", json!({"type": "string", "description": "The complete new content."}))], &["path", "content"]),
                safety: Safety::SideEffect,
                system: false,
                timeout: None,
            },
        }
    }
}

impl Default for WriteFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed("not implemented yet".into()))
    }
}
