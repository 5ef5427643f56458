//! Classification: what a call does (category), which rule names cover it, and what its
//! target is (a path, a command, a subagent type, a URL, an MCP name), read from the tool's
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
    /// A URL as written (checked and matched by host in `check`).
    Url(String),
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
            let path = required.then(|| required_str(&args, field)).transpose()?;
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
        TargetSpec::Url { field } => {
            for f in &spec.required {
                required_str(&args, f)?;
            }
            let url = required_str(&args, field)?;
            if url.trim().is_empty() {
                return Err(ClassifyError::Arguments(format!(
                    "argument `{field}` is empty; send the URL to fetch"
                )));
            }
            Target::Url(url)
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
