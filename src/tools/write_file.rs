//! `write_file`: writes a whole file, creating parent directories, atomically (temp file
//! in the same directory, then rename), so a crash never leaves a half-written file. The
//! directory is opened beneath the sandbox roots and the write done there
//! (`beneath::Parent::write_atomic`, which `edit_file` shares).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::beneath::{Beneath, Missing};
use super::{Definition, Safety, Tool, ToolContext, ToolError, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};

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
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Write, [RuleName::Write, RuleName::Edit], TargetSpec::writes("path"))),
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

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let path: String = required(&input, "path")?;
        let content: String = required(&input, "content")?;
        let resolved = ctx.resolve(&path);
        let beneath = Beneath::writes(&ctx);
        tokio::task::spawn_blocking(move || {
            let parent = beneath.parent(&resolved, &path, Missing::Create)?;
            let existed = parent
                .existing()
                .map_err(|e| ToolError::Failed(format!("cannot write `{path}`: {e}")))?
                .is_some();
            parent.write_atomic(content.as_bytes(), &path)?;
            Ok(format!(
                "{} `{path}`: {} bytes, {} lines",
                if existed { "overwrote" } else { "created" },
                content.len(),
                line_count(&content)
            ))
        })
        .await
        .map_err(|e| ToolError::Failed(format!("writing was interrupted: {e}")))?
    }
}

/// Lines in `text`, counting a last line without a newline.
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}
