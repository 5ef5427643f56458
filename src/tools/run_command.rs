//! `run_command`: runs `bash -c COMMAND` in the agent's working directory, in its own
//! process group (under Landlock when the context asks for it), and reports the exit
//! code with capped stdout and stderr. A non-zero exit code is a normal result; a
//! timeout or cancellation kills the whole group and is an error.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};
use crate::sandbox::process::{self, ProcessError, ProcessOutput};

/// Timeout when the call gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest timeout a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

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
                description: "Run a bash command in the working directory, in its own process group, with stdin closed. Returns the exit code (non-zero is reported, not an error), stdout and stderr (long output: head and tail shown, the whole stream saved to a file you can read_file with offset and limit). The whole process group is killed on timeout, and background processes still running when the command ends are killed too, even those started with setsid or nohup. For servers, watchers and long builds set run_in_background: the command then runs as a background task (output to its log; task_output and task_stop manage it; you are notified when it ends).".into(),
                input_schema: schema::object(&[("command", json!({"type": "string", "description": "The bash command to run."})), ("timeout_ms", json!({"type": "integer", "minimum": 1, "maximum": 600000, "description": "Timeout in milliseconds (default 120000, max 600000)."})), ("description", json!({"type": "string", "description": "What the command does, in a few words."})), ("run_in_background", json!({"type": "boolean", "description": "Run as a background task and return its id at once."})), (crate::permission::profile::OUTSIDE_SANDBOX_ARG, json!({"type": "boolean", "description": "Ask the user to run this command outside the OS sandbox (it always asks the user, and is refused where nobody can answer). Use it only after the sandbox stopped the command."}))], &["command"]),
                safety: Safety::SideEffect,
                system: false,
                // Above MAX_TIMEOUT so our own limit (which kills the group and keeps
                // the partial output) always fires before the executor's.
                timeout: Some(MAX_TIMEOUT + Duration::from_secs(10)),
                aliases: Vec::new(),
                permission: Some(PermissionSpec::new(Category::Exec, [RuleName::Bash], TargetSpec::Command { field: "command".into() })),
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

    fn streams_output(&self) -> bool {
        true
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let command: String = required(&input, "command")?;
        if command.trim().is_empty() {
            return Err(ToolError::InvalidInput(
                "argument `command` is empty; give the bash command to run".into(),
            ));
        }
        if field::<bool>(&input, "run_in_background")?.unwrap_or(false) {
            let Some(tasks) = &ctx.tasks else {
                return Err(ToolError::Failed(
                    "background tasks are not available in this session".into(),
                ));
            };
            let rec =
                super::background::start(tasks, &ctx, &command, field(&input, "description")?)
                    .await
                    .map_err(|e| ToolError::Failed(e.to_string()))?;
            return Ok(format!(
                "Started background task {} (command). Its output goes to {}; you will be notified when it ends. \
Use task_output to read it and task_stop to stop it.",
                rec.id,
                rec.output_file.display()
            ));
        }
        let timeout = field::<u64>(&input, "timeout_ms")?
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TIMEOUT)
            .min(MAX_TIMEOUT);
        // Output beyond the preview streams to the offload file, never into memory.
        let save_to = ctx.offload_to.as_deref();
        let ran = process::run_in_group_saving(
            &command,
            &ctx.cwd,
            timeout,
            &ctx.cancel,
            &ctx.sandbox,
            save_to,
            Some(&ctx.walk),
        )
        .await;
        match ran {
            Ok(output) => {
                let mut text = render(&output);
                if output.exit_code() != Some(0)
                    && let Some(hint) = crate::sandbox::profile::failure_hint(
                        ctx.sandbox.profile(),
                        &output.stderr.text(),
                    )
                {
                    text.push_str(&hint);
                    text.push('\n');
                }
                Ok(text)
            }
            Err(e @ (ProcessError::TimedOut { .. } | ProcessError::Cancelled { .. })) => {
                let partial = match &e {
                    ProcessError::TimedOut { output, .. }
                    | ProcessError::Cancelled { output, .. } => {
                        let mut text = render_streams(output);
                        if let Some(report) = &output.protected_restored {
                            text.push_str(report);
                        }
                        text.push_str(&network_note(&output.network_refused));
                        text
                    }
                    _ => String::new(),
                };
                Err(ToolError::Failed(if partial.is_empty() {
                    e.to_string()
                } else {
                    format!("{e}\noutput before it was killed:\n{partial}")
                }))
            }
            Err(e) => Err(ToolError::Failed(e.to_string())),
        }
    }
}

/// The text the model sees for a finished command.
fn render(output: &ProcessOutput) -> String {
    let mut text = match (output.exit_code(), output.signal()) {
        (Some(code), _) => format!("exit code: {code}\n"),
        (None, Some(sig)) => format!("exit code: none (killed by signal {sig})\n"),
        (None, None) => "exit code: unknown\n".to_string(),
    };
    let streams = render_streams(output);
    if streams.is_empty() {
        text.push_str("(no output)\n");
    } else {
        text.push_str(&streams);
    }
    if output.leftovers_killed {
        text.push_str(&format!(
            "note: processes the command left running (in its process group {} or started \
             outside it with setsid or nohup) were killed; commands cannot leave background \
             processes behind: use run_in_background for servers and watchers\n",
            output.pgid
        ));
    }
    if output.output_abandoned {
        text.push_str(
            "note: a process that left the process group kept the output open; reading stopped\n",
        );
    }
    if let Some(report) = &output.protected_restored {
        text.push_str(report);
        text.push('\n');
    }
    text.push_str(&network_note(&output.network_refused));
    text
}

/// The note for hosts the sandbox's network proxy refused (empty when none was).
fn network_note(refused: &[String]) -> String {
    match crate::sandbox::net::allow::refused_note(refused) {
        Some(note) => format!("{note}\n"),
        None => String::new(),
    }
}

/// The stdout and stderr sections, each only when non-empty.
fn render_streams(output: &ProcessOutput) -> String {
    let mut text = String::new();
    for (name, capture) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if capture.is_empty() {
            continue;
        }
        let body = capture.text();
        text.push_str(&format!("{name}:\n{body}"));
        if !body.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}
