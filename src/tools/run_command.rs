//! `run_command`: (implementation pending — see issue 2).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, schema};

/// The `run_command` tool.
pub struct RunCommand {
    def: Definition,
}

impl RunCommand {
    /// The tool with its definition.
    pub fn new() -> Self {
        Self {
            def: Definition {
                name: "run_command".into(),
                description: "Run a bash command in the working directory, in its own process group. Returns exit code, stdout and stderr. The whole process group is killed on timeout.".into(),
                input_schema: schema::object(&[("command", json!({"type": "string", "description": "The bash command to run."})), ("timeout_ms", json!({"type": "integer", "minimum": 1, "maximum": 600000, "description": "Timeout in milliseconds (default 120000, max 600000)."})), ("description", json!({"type": "string", "description": "What the command does, in a few words."}))], &["command"]),
                safety: Safety::SideEffect,
                system: false,
                timeout: None,
            },
        }
    }
}

impl Default for RunCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        Err(ToolError::Failed("not implemented yet".into()))
    }
}
