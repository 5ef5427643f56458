//! Classification: what a call does (category), which rule names cover it, and what its
//! target is (a path, a command, a subagent type, an MCP name), read from the tool's
//! permission spec (carried by its `Definition`) and parsed from the raw JSON
//! arguments. Unknown tools (no spec) and unusable arguments are reported, not guessed.

use serde_json::{Map, Value};

use super::Category;
use super::spec::{PermissionSpec, RuleName, TargetSpec};

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
    /// What the call does, for the mode fallback.
    pub category: Category,
    /// The rule names that cover the tool, its own first.
    pub rule_names: Vec<RuleName>,
    /// Whether the tool writes the file at its path.
    pub writes: bool,
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

/// Classifies a call from its tool name, the tool's permission spec (`None`: the tool is
/// unknown) and the raw JSON arguments.
pub fn classify(
    name: &str,
    spec: Option<&PermissionSpec>,
    arguments: &str,
) -> Result<Classified, ClassifyError> {
    let spec = spec.ok_or_else(|| ClassifyError::Unknown(name.to_string()))?;
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
    let target = match &spec.target {
        TargetSpec::Path {
            field,
            required,
            glob_fields,
            ..
        } => {
            let path = if *required {
                Some(required_str(&args, field)?)
            } else {
                None
            };
            for g in glob_fields {
                if spec.required.contains(g) {
                    patterns.push(required_str(&args, g)?);
                } else if let Some(p) = optional_str(&args, g)? {
                    patterns.push(p);
                }
            }
            for f in &spec.required {
                required_str(&args, f)?;
            }
            match path {
                Some(p) => Target::Path(Some(p)),
                None => Target::Path(optional_str(&args, field)?),
            }
        }
        TargetSpec::Command { field } => {
            let command = required_str(&args, field)?;
            if command.trim().is_empty() {
                return Err(ClassifyError::Arguments(format!(
                    "argument `{field}` is empty; send the command to run"
                )));
            }
            Target::Command(command)
        }
        TargetSpec::Agent { field, default } => {
            for f in &spec.required {
                required_str(&args, f)?;
            }
            Target::Agent(optional_str(&args, field)?.unwrap_or_else(|| default.clone()))
        }
        TargetSpec::Mcp { .. } => Target::Mcp(name.to_string()),
        TargetSpec::None => Target::None,
    };
    Ok(Classified {
        category: spec.category,
        rule_names: spec.rule_names.clone(),
        writes: spec.writes(),
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
    use crate::tools::builtin_permission;

    fn classify_builtin(name: &str, args: &str) -> Result<Classified, ClassifyError> {
        classify(name, builtin_permission(name).as_ref(), args)
    }

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
            (
                "Task",
                r#"{"prompt":"p"}"#,
                Target::Agent("general-purpose".into()),
            ),
            ("mcp__gh__issue", "{}", Target::Mcp("mcp__gh__issue".into())),
            ("task_list", "{}", Target::None),
        ];
        for (name, args, want) in ok {
            assert_eq!(classify_builtin(name, args).unwrap().target, want, "{name}");
        }
        let c = classify_builtin("find_files", r#"{"pattern":"*.rs","path":"src"}"#).unwrap();
        assert_eq!(c.patterns, ["*.rs"]);
        assert_eq!(c.rule_names, [RuleName::Glob, RuleName::Read]);
        let bad = [
            ("read_file", "{}", "missing required argument `path`"),
            ("read_file", r#"{"path":3}"#, "`path` must be a string"),
            ("write_file", "not json", "not valid JSON"),
            ("run_command", "[]", "must be a JSON object"),
            ("run_command", r#"{"command":"  "}"#, "empty"),
            ("search_code", r#"{"path":"src"}"#, "`pattern`"),
            ("agent", r#"{"subagent_type":"x"}"#, "`prompt`"),
        ];
        for (name, args, want) in bad {
            let e = classify_builtin(name, args).unwrap_err();
            assert!(matches!(e, ClassifyError::Arguments(_)), "{name} {args}");
            assert!(e.to_string().contains(want), "{e}");
        }
        assert!(matches!(
            classify_builtin("web_fetch", "{}"),
            Err(ClassifyError::Unknown(_))
        ));
    }

    #[test]
    fn every_tool_agrees_with_itself_safety_and_category() {
        // One source of truth: a read-only tool falls back as a read, a side-effecting
        // one never does (task_stop is task control, not a read).
        for name in [
            "read_file",
            "find_files",
            "search_code",
            "write_file",
            "edit_file",
            "run_command",
            "agent",
            "task_list",
            "task_output",
            "task_stop",
            "todo_add",
            "todo_update",
            "todo_get",
            "todo_list",
        ] {
            let def = crate::tools::builtin_definition(name).unwrap();
            let spec = def.permission.as_ref().unwrap();
            let reads = spec.category == Category::Read;
            assert_eq!(
                reads,
                def.safety == crate::tools::Safety::ReadOnly,
                "{name}: {:?} vs {:?}",
                spec.category,
                def.safety
            );
        }
        let stop = builtin_permission("task_stop").unwrap();
        assert_eq!(stop.category, Category::Control);
    }
}
