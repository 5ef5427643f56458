//! Classification: which category a tool belongs to, which rule names cover it, and what
//! its target is (a path, a command, a subagent type, an MCP name), parsed from the raw
//! JSON arguments. Unknown tools and unusable arguments are reported, not guessed.

use serde_json::{Map, Value};

use super::Category;

/// The kinds of tool the engine understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// `read_file`.
    ReadFile,
    /// `find_files`.
    FindFiles,
    /// `search_code`.
    SearchCode,
    /// `write_file`.
    WriteFile,
    /// `edit_file`.
    EditFile,
    /// `run_command`.
    RunCommand,
    /// `agent` (alias `Task`).
    Agent,
    /// `task_list`, `task_output`: control-plane reads of the session's own tasks.
    TaskRead,
    /// `task_stop`: stops one of the session's own tasks.
    TaskStop,
    /// `mcp__server__tool`.
    Mcp,
}

impl ToolKind {
    /// The kind of a tool name, if the engine knows it.
    pub fn of(name: &str) -> Option<ToolKind> {
        Some(match name {
            "read_file" => ToolKind::ReadFile,
            "find_files" => ToolKind::FindFiles,
            "search_code" => ToolKind::SearchCode,
            "write_file" => ToolKind::WriteFile,
            "edit_file" => ToolKind::EditFile,
            "run_command" => ToolKind::RunCommand,
            "agent" | "Task" => ToolKind::Agent,
            "task_list" | "task_output" => ToolKind::TaskRead,
            "task_stop" => ToolKind::TaskStop,
            n if n.starts_with("mcp__") && n.len() > 5 => ToolKind::Mcp,
            _ => return None,
        })
    }

    /// The category used by the mode fallback. System tools act only on crewmaster's
    /// own tasks (no files, no processes besides the session's own), so they fall back
    /// like reads — strict still asks.
    pub fn category(self) -> Category {
        match self {
            ToolKind::ReadFile
            | ToolKind::FindFiles
            | ToolKind::SearchCode
            | ToolKind::TaskRead
            | ToolKind::TaskStop => Category::Read,
            ToolKind::WriteFile | ToolKind::EditFile => Category::Write,
            ToolKind::RunCommand | ToolKind::Agent => Category::Exec,
            ToolKind::Mcp => Category::Mcp,
        }
    }

    /// Whether the tool writes the file at its path.
    pub fn writes(self) -> bool {
        matches!(self, ToolKind::WriteFile | ToolKind::EditFile)
    }
}

/// What a call acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A file or directory argument as written (`None`: the caller's cwd).
    Path(Option<String>),
    /// A shell command.
    Command(String),
    /// A subagent type.
    Agent(String),
    /// An MCP tool's full name.
    Mcp(String),
    /// Nothing rules can name (system tools).
    None,
}

/// A classified call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The tool kind.
    pub kind: ToolKind,
    /// The target.
    pub target: Target,
    /// Glob patterns the tool will walk with (`find_files.pattern`, `search_code.glob`).
    pub patterns: Vec<String>,
}

/// Why a call could not be classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassifyError {
    /// The tool is not covered by permission rules.
    #[error("tool `{0}` is not covered by permission rules")]
    Unknown(String),
    /// The arguments are unusable; names the field.
    #[error("{0}")]
    Arguments(String),
}

/// Classifies a call from its tool name and raw JSON arguments.
pub fn classify(name: &str, arguments: &str) -> Result<Classified, ClassifyError> {
    let kind = ToolKind::of(name).ok_or_else(|| ClassifyError::Unknown(name.to_string()))?;
    let value: Value = serde_json::from_str(arguments).map_err(|e| {
        ClassifyError::Arguments(format!(
            "arguments are not valid JSON ({e}); send a JSON object"
        ))
    })?;
    let Value::Object(args) = value else {
        return Err(ClassifyError::Arguments(
            "arguments must be a JSON object".into(),
        ));
    };
    let mut patterns = Vec::new();
    let target = match kind {
        ToolKind::ReadFile | ToolKind::WriteFile | ToolKind::EditFile => {
            Target::Path(Some(required_str(&args, "path")?))
        }
        ToolKind::FindFiles => {
            patterns.push(required_str(&args, "pattern")?);
            Target::Path(optional_str(&args, "path")?)
        }
        ToolKind::SearchCode => {
            required_str(&args, "pattern")?;
            if let Some(g) = optional_str(&args, "glob")? {
                patterns.push(g);
            }
            Target::Path(optional_str(&args, "path")?)
        }
        ToolKind::RunCommand => {
            let command = required_str(&args, "command")?;
            if command.trim().is_empty() {
                return Err(ClassifyError::Arguments(
                    "argument `command` is empty; send the command to run".into(),
                ));
            }
            Target::Command(command)
        }
        ToolKind::Agent => {
            required_str(&args, "prompt")?;
            Target::Agent(
                optional_str(&args, "subagent_type")?.unwrap_or_else(|| "general-purpose".into()),
            )
        }
        ToolKind::Mcp => Target::Mcp(name.to_string()),
        ToolKind::TaskRead | ToolKind::TaskStop => Target::None,
    };
    Ok(Classified {
        kind,
        target,
        patterns,
    })
}

fn required_str(args: &Map<String, Value>, field: &str) -> Result<String, ClassifyError> {
    optional_str(args, field)?
        .ok_or_else(|| ClassifyError::Arguments(format!("missing required argument `{field}`")))
}

fn optional_str(args: &Map<String, Value>, field: &str) -> Result<Option<String>, ClassifyError> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ClassifyError::Arguments(format!(
            "argument `{field}` must be a string, got {}",
            kind_of(other)
        ))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let ok = [
            (
                "read_file",
                r#"{"path":"a"}"#,
                Target::Path(Some("a".into())),
            ),
            ("find_files", r#"{"pattern":"*.rs"}"#, Target::Path(None)),
            (
                "search_code",
                r#"{"pattern":"x","path":"src"}"#,
                Target::Path(Some("src".into())),
            ),
            (
                "run_command",
                r#"{"command":"ls"}"#,
                Target::Command("ls".into()),
            ),
            (
                "agent",
                r#"{"prompt":"p","subagent_type":"Explore"}"#,
                Target::Agent("Explore".into()),
            ),
            ("mcp__gh__issue", "{}", Target::Mcp("mcp__gh__issue".into())),
            ("task_list", "{}", Target::None),
        ];
        for (name, args, want) in ok {
            assert_eq!(classify(name, args).unwrap().target, want, "{name}");
        }
        let bad = [
            ("read_file", "{}", "missing required argument `path`"),
            ("read_file", r#"{"path":3}"#, "`path` must be a string"),
            ("write_file", "not json", "not valid JSON"),
            ("run_command", "[]", "must be a JSON object"),
            ("run_command", r#"{"command":"  "}"#, "empty"),
        ];
        for (name, args, want) in bad {
            let e = classify(name, args).unwrap_err();
            assert!(matches!(e, ClassifyError::Arguments(_)), "{name} {args}");
            assert!(e.to_string().contains(want), "{e}");
        }
        assert!(matches!(
            classify("web_fetch", "{}"),
            Err(ClassifyError::Unknown(_))
        ));
    }
}
