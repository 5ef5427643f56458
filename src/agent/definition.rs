//! Agent definitions: Markdown files with YAML front matter (`name`, `description`,
//! `tools`, …) whose body is the system prompt. The built-ins in `agents/` are embedded
//! in the binary; the catalog (`catalog.rs`) adds the user's, the project's and the
//! plugins'.

use std::collections::HashSet;

use serde::Deserialize;

use crate::front_matter::{self, ToolList};

/// A parsed agent definition.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDefinition {
    /// The agent type's name (`general-purpose`, `explore`, …).
    pub name: String,
    /// When to use it, for the lead model.
    pub description: String,
    /// Tools it may use (`None`: all), as registry names.
    pub tools: Option<HashSet<String>>,
    /// Tools it may not use, as registry names.
    pub disallowed_tools: HashSet<String>,
    /// Model override.
    pub model: Option<String>,
    /// Permission mode override.
    pub permission_mode: Option<String>,
    /// Turn limit override.
    pub max_turns: Option<u32>,
    /// `worktree` or `none`.
    pub isolation: Option<String>,
    /// Whether it runs in the background by default.
    pub background: bool,
    /// Its `hooks` object (Claude Code's format), run only while an agent of this type
    /// runs; its `Stop` is the agent's `SubagentStop` (see `hooks::config`).
    pub hooks: Option<serde_json::Value>,
    /// The system prompt.
    pub prompt: String,
    /// Where it came from (`built-in`, or a file path).
    pub origin: String,
    /// Where its subagents run (`placement: local|remote`; unset: here, or on a worker
    /// when local slots are full).
    pub placement: crate::agent::placement::Placement,
    /// Whether work lost with a worker is started once more elsewhere (`reschedule`,
    /// default true).
    pub reschedule: bool,
    /// What in its file crew ignored (unknown fields, unknown tools), each naming the
    /// file and the field, for the user to see.
    pub warnings: Vec<String>,
    /// The plugin it came with (its name is then `plugin:agent`).
    pub plugin: Option<String>,
}

impl AgentDefinition {
    /// Where an agent of this type works when the call does not say: its `isolation`
    /// field; else, as in Claude Code, in the caller's checkout for a definition the user
    /// wrote, and in its own worktree for crew's built-ins (which write freely there).
    pub fn isolation(&self) -> crate::permission::delegation::Isolation {
        use crate::permission::delegation::Isolation;
        match self.isolation.as_deref().map(Isolation::parse) {
            Some(Ok(isolation)) => isolation,
            // The catalog refuses other values when it loads a definition; fail towards
            // the worktree should one get through.
            Some(Err(_)) => Isolation::Worktree,
            None if self.origin.starts_with("built-in") => Isolation::Worktree,
            None => Isolation::None,
        }
    }

    /// The tool names this agent may use, after `disallowedTools`.
    pub fn allowed_tools(&self, all: impl Iterator<Item = String>) -> Option<HashSet<String>> {
        if self.tools.is_none() && self.disallowed_tools.is_empty() {
            return None;
        }
        let base: HashSet<String> = match &self.tools {
            Some(t) => t.clone(),
            None => all.collect(),
        };
        Some(base.difference(&self.disallowed_tools).cloned().collect())
    }
}

/// Why a definition could not be loaded; names the origin and the field.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{origin}: {message}")]
pub struct DefinitionError {
    /// The file (or `built-in:<name>`).
    pub origin: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// The fields an agent file may set; any other gets a warning naming it.
const FIELDS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "permissionMode",
    "maxTurns",
    "isolation",
    "background",
    "color",
    "hooks",
    "placement",
    "reschedule",
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    tools: Option<ToolList>,
    #[serde(default)]
    disallowed_tools: Option<ToolList>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    permission_mode: Option<String>,
    #[serde(default)]
    max_turns: Option<u32>,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    background: Option<bool>,
    #[serde(default)]
    color: Option<String>,
    #[serde(default)]
    hooks: Option<serde_json::Value>,
    #[serde(default)]
    placement: Option<String>,
    #[serde(default)]
    reschedule: Option<bool>,
}

/// Parses one definition file's text.
pub(crate) fn parse(text: &str, origin: &str) -> Result<AgentDefinition, DefinitionError> {
    let err = |message: String| DefinitionError {
        origin: origin.to_string(),
        message,
    };
    let (yaml, body) = front_matter::split(text).map_err(|e| err(e.to_string()))?;
    // As leniently as Claude Code: a head that is not quite YAML is read key by key, and
    // a field crew does not know is a warning, not a refusal.
    let map = front_matter::lenient(yaml).map_err(|e| err(e.to_string()))?;
    let unknown = front_matter::unknown_keys(&map, FIELDS);
    let fm: FrontMatter =
        serde_yaml_ng::from_value(map.into()).map_err(|e| err(format!("front matter: {e}")))?;
    let mut def = build(fm, body, origin)?;
    def.warnings.extend(
        unknown
            .into_iter()
            .map(|field| format!("{origin}: field `{field}` is not one crew knows; it is ignored")),
    );
    Ok(def)
}

/// One definition of Claude Code's `--agents` JSON: `name` is its key, and the object holds
/// the front matter's fields (`description`, `tools`, `model`, …) with `prompt` as the body.
pub(crate) fn from_json(
    name: &str,
    value: &serde_json::Value,
    origin: &str,
) -> Result<AgentDefinition, DefinitionError> {
    let err = |message: String| DefinitionError {
        origin: origin.to_string(),
        message,
    };
    let mut fields = value.as_object().cloned().ok_or_else(|| {
        err(format!(
            "agent `{name}`: give an object with `description` and `prompt`"
        ))
    })?;
    let prompt = match fields.remove("prompt") {
        Some(serde_json::Value::String(prompt)) => prompt,
        Some(_) => {
            return Err(err(format!(
                "agent `{name}`: field `prompt` is not a string"
            )));
        }
        None => return Err(err(format!("agent `{name}`: field `prompt` is missing"))),
    };
    fields.insert("name".into(), name.into());
    let unknown: Vec<String> = fields
        .keys()
        .filter(|k| !FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    let fm: FrontMatter =
        serde_json::from_value(fields.into()).map_err(|e| err(format!("agent `{name}`: {e}")))?;
    let mut def = build(fm, &prompt, origin)?;
    def.warnings.extend(unknown.into_iter().map(|field| {
        format!("{origin}: agent `{name}`: field `{field}` is not one crew knows; it is ignored")
    }));
    Ok(def)
}

/// The definition of front matter `fm` with the system prompt `body`.
fn build(fm: FrontMatter, body: &str, origin: &str) -> Result<AgentDefinition, DefinitionError> {
    let err = |message: String| DefinitionError {
        origin: origin.to_string(),
        message,
    };
    let _ = fm.color;
    if let Some(iso) = &fm.isolation {
        if iso != "worktree" && iso != "none" {
            return Err(err(format!(
                "field `isolation`: `{iso}` is not `worktree` or `none`"
            )));
        }
    }
    let placement = match &fm.placement {
        Some(p) => p.parse().map_err(err)?,
        None => crate::agent::placement::Placement::Auto,
    };
    if fm.name.trim().is_empty() {
        return Err(err("field `name` is empty".into()));
    }
    let tools: Option<HashSet<String>> = fm.tools.as_ref().map(|t| t.names().into_iter().collect());
    let warnings = fm
        .tools
        .iter()
        .flat_map(ToolList::unknown)
        .map(|tool| {
            format!("{origin}: field `tools`: `{tool}` is no tool crew has; it allows nothing")
        })
        .collect();
    Ok(AgentDefinition {
        name: fm.name,
        description: fm.description,
        tools,
        disallowed_tools: fm
            .disallowed_tools
            .as_ref()
            .map(|t| t.names().into_iter().collect())
            .unwrap_or_default(),
        model: fm.model,
        permission_mode: fm.permission_mode,
        max_turns: fm.max_turns,
        isolation: fm.isolation,
        background: fm.background.unwrap_or(false),
        hooks: fm.hooks,
        prompt: body.to_string(),
        origin: origin.to_string(),
        placement,
        reschedule: fm.reschedule.unwrap_or(true),
        warnings,
        plugin: None,
    })
}

const BUILT_INS: [(&str, &str); 3] = [
    (
        "general-purpose",
        include_str!("../../agents/general-purpose.md"),
    ),
    ("explore", include_str!("../../agents/explore.md")),
    ("plan", include_str!("../../agents/plan.md")),
];

/// The built-in definitions, embedded in the binary.
pub(crate) fn built_ins() -> Vec<AgentDefinition> {
    BUILT_INS
        .iter()
        // The embedded files are tested below, so parsing cannot fail at run time; a
        // broken one is skipped rather than crashing the binary.
        .filter_map(|(name, text)| parse(text, &format!("built-in:{name}")).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::rule_names::tool_name;

    #[test]
    fn a_claude_code_agent_file_loads_with_a_warning_for_what_crew_ignores() {
        // Written as agent files are in the wild: an unquoted description with colons that
        // runs on over unindented lines, fields crew does not know, a tool crew lacks.
        let text = "---\nname: code-reviewer\ndescription: Use this agent when: a PR is ready.\nExamples: review my diff\ntools: Read, Grep, Glob, WebSearch\nmodel: sonnet\nmemory: project\n---\nYou review code.\n";
        let def = parse(text, ".claude/agents/code-reviewer.md").unwrap();
        assert_eq!(def.name, "code-reviewer");
        assert_eq!(def.description, "Use this agent when: a PR is ready.");
        assert_eq!(def.prompt.trim(), "You review code.");
        let tools = def.tools.as_ref().unwrap();
        assert!(
            tools.contains("read_file") && tools.contains("find_files"),
            "{tools:?}"
        );
        let warnings = def.warnings.join("\n");
        for field in ["`Examples`", "`memory`", "`WebSearch`"] {
            assert!(warnings.contains(field), "{field}: {warnings}");
        }
        assert!(
            def.warnings
                .iter()
                .all(|w| w.starts_with(".claude/agents/code-reviewer.md: field `")),
            "{warnings}"
        );
        // The same from `--agents` JSON.
        let json = serde_json::json!({"description": "d", "prompt": "p", "effort": "high"});
        let def = from_json("r", &json, "--agents").unwrap();
        assert_eq!(
            def.warnings,
            ["--agents: agent `r`: field `effort` is not one crew knows; it is ignored"]
        );
    }

    #[test]
    fn built_ins_all_parse() {
        for (name, text) in BUILT_INS {
            let d = parse(text, name).unwrap();
            assert_eq!(d.name, name);
            assert!(!d.prompt.is_empty());
        }
        let explore = built_ins()
            .into_iter()
            .find(|d| d.name == "explore")
            .unwrap();
        let tools = explore.tools.unwrap();
        assert!(tools.contains("read_file") && !tools.contains("write_file"));
    }

    #[test]
    fn claude_code_names_and_disallowed_tools() {
        let d = parse(
            "---\nname: x\ndescription: y\ntools: Read, Grep, Bash\ndisallowedTools: [Bash]\n---\nBody",
            "x.md",
        )
        .unwrap();
        let allowed = d.allowed_tools(std::iter::empty()).unwrap();
        assert_eq!(
            allowed,
            HashSet::from(["read_file".to_string(), "search_code".to_string()])
        );
        assert_eq!(d.prompt, "Body");
    }

    #[test]
    fn claude_code_tool_names_come_from_the_tool_definitions() {
        let table = [
            ("Read", "read_file"),
            ("Write", "write_file"),
            ("Edit", "edit_file"),
            ("MultiEdit", "edit_file"),
            ("Glob", "find_files"),
            ("Grep", "search_code"),
            ("Bash", "run_command"),
            ("Agent", "agent"),
            ("Task", "agent"),
            ("mcp__gh__x", "mcp__gh__x"),
        ];
        for (claude, ours) in table {
            assert_eq!(tool_name(claude), ours, "{claude}");
        }
    }

    #[test]
    fn errors_name_the_origin_and_field() {
        let e = parse("no front matter", "a.md").unwrap_err();
        assert!(e.to_string().starts_with("a.md:"));
        let e = parse("---\nname: x\ndescription: y\nisolation: vm\n---\n", "b.md").unwrap_err();
        assert!(e.message.contains("isolation"), "{e}");
        let e = parse("---\nname: x\n---\n", "c.md").unwrap_err();
        assert!(e.message.contains("description"), "{e}");
    }
}
