//! `skill` (alias `Skill`): returns a skill's instructions and where the files beside it
//! are. A System tool (it only ever narrows what the agent may run, so it must stay
//! callable while a skill is active, to load another); read-only, so Plan Mode keeps it.
//! Putting the skill's `allowed-tools` in force is the agent loop's job, after this tool
//! succeeded (`agent::runner`), through the gate.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, field, schema};
use crate::permission::{Category, PermissionSpec, TargetSpec};
use crate::skills::SkillCatalog;

/// The tool's registry name.
pub(crate) const NAME: &str = crate::skills::TOOL_NAME;

/// The `skill` tool.
pub(crate) struct SkillTool {
    def: Definition,
    skills: Arc<SkillCatalog>,
}

impl SkillTool {
    /// The tool over these skills.
    pub(crate) fn new(skills: Arc<SkillCatalog>) -> Self {
        Self {
            def: definition(),
            skills,
        }
    }
}

/// The tool's definition (the skills themselves are listed in the system prompt).
pub(crate) fn definition() -> Definition {
    Definition {
        name: NAME.into(),
        aliases: vec!["Skill".into()],
        description: "Load a skill listed in the system prompt: returns its instructions. While it is active (until this turn ends or another skill is loaded), only the tools in its allowed-tools run.".into(),
        input_schema: schema::object(
            &[
                ("name", json!({"type": "string", "description": "The skill's name."})),
                ("skill", json!({"type": "string", "description": "The skill's name (Claude Code's spelling of `name`)."})),
            ],
            &[],
        ),
        safety: Safety::ReadOnly,
        system: true,
        timeout: None,
        permission: Some(PermissionSpec::new(Category::Read, [], TargetSpec::None)),
    }
}

/// The skill a call asks for (`name`, or Claude Code's `skill`; a leading `/` is
/// dropped).
pub(crate) fn requested(input: &Value) -> Result<String, ToolError> {
    let name: Option<String> = match field(input, "name")? {
        Some(n) => Some(n),
        None => field(input, "skill")?,
    };
    let name =
        name.ok_or_else(|| ToolError::InvalidInput("missing required argument `name`".into()))?;
    Ok(name.trim().trim_start_matches('/').to_string())
}

#[async_trait]
impl Tool for SkillTool {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, _ctx: ToolContext) -> Result<String, ToolError> {
        let name = requested(&input)?;
        let skill = self.skills.get(&name).ok_or_else(|| {
            let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            ToolError::InvalidInput(format!(
                "no skill named `{name}`; available: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        })?;
        let tools = match &skill.allowed_tools {
            Some(names) => format!(
                "While it is active, only these tools run: {}.",
                names.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
            None => "It does not limit the tools.".to_string(),
        };
        Ok(format!(
            "Skill `{}` is active. Files beside its SKILL.md are in {} (read them with read_file). {tools}\n\n{}",
            skill.name,
            skill.dir.display(),
            skill.body
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Scope, Skill};

    #[tokio::test]
    async fn returns_the_body_or_names_the_skills_there_are() {
        let skills = SkillCatalog::from_skills([Skill {
            name: "review".into(),
            title: None,
            description: "d".into(),
            allowed_tools: Some(["read_file".to_string()].into()),
            argument_hint: None,
            body: "Check the diff.".into(),
            dir: "/s/review".into(),
            scope: Scope::Project,
            plugin: None,
            warnings: Vec::new(),
        }]);
        let tool = SkillTool::new(Arc::new(skills));
        let ctx = ToolContext::new("/", "lead");
        let out = tool
            .run(json!({"skill": "review"}), ctx.clone())
            .await
            .unwrap();
        assert!(out.ends_with("Check the diff."), "{out}");
        assert!(out.contains("/s/review") && out.contains("only these tools run: read_file"));
        let err = tool
            .run(json!({"name": "nope"}), ctx.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("available: review"), "{err}");
        assert!(tool.run(json!({}), ctx).await.is_err());
    }
}
