//! `edit_file`: (implementation pending — see issue 2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, schema};

/// The `edit_file` tool.
pub struct EditFile {
    def: Definition,
}

impl EditFile {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "edit_file".into(),
                description: "Replace an exact string in a file. old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is true.".into(),
                input_schema: schema::object(&[("path", json!({"type": "string", "description": "Path of the file to edit."})), ("old_string", json!({"type": "string", "description": "Exact text to replace; must occur exactly once unless replace_all."})), ("new_string", json!({"type": "string", "description": "Replacement text."})), ("replace_all", json!({"type": "boolean", "description": "Replace every occurrence."}))], &["path", "old_string", "new_string"]),
                safety: Safety::SideEffect,
                system: false,
                timeout: None,
            },
        }
    }
}

impl Default for EditFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for EditFile {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed("not implemented yet".into()))
    }
}
