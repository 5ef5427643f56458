//! [`SessionConfig::builder`]: a session from what it cannot do without (its directory, its
//! model, its lead and its tools), everything else at a default that fails closed — commands
//! confined below the directory, every Ask refused with a how-to-allow message, no hooks,
//! no subagents — and changed with one call each.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Orchestration, SessionConfig, SessionHooks};
use crate::agent::runner::AgentSpec;
use crate::approver::actor::ApproverPolicy;
use crate::events::EventBus;
use crate::permission::{PermissionMode, Policy};
use crate::protocol::Message;
use crate::provider::Provider;
use crate::tools::{CommandSandbox, Registry};

/// Builds a [`SessionConfig`]; start from [`SessionConfig::builder`].
pub struct SessionConfigBuilder {
    config: SessionConfig,
}

impl SessionConfig {
    /// A session in `cwd` whose lead `lead` runs on `provider` with the tools of
    /// `registry`. The rest is at its default until set: the `default` permission mode, an
    /// empty policy, Asks refused (headless), commands confined below `cwd` (write profile),
    /// the executor's default tool timeout, no conversation to resume, a new event bus, no
    /// orchestration, hooks or auto mode, and the default context settings.
    pub fn builder(
        cwd: impl Into<PathBuf>,
        provider: Arc<dyn Provider>,
        lead: AgentSpec,
        registry: Arc<Registry>,
    ) -> SessionConfigBuilder {
        let cwd = cwd.into();
        SessionConfigBuilder {
            config: SessionConfig {
                sandbox: CommandSandbox::landlock(vec![cwd.clone()]),
                cwd,
                permission_mode: PermissionMode::Default,
                policy: Policy::default(),
                provider,
                lead,
                approver: ApproverPolicy::Headless,
                registry,
                default_tool_timeout: crate::executor::DEFAULT_TIMEOUT,
                conversation: Vec::new(),
                events: EventBus::new(),
                orchestration: None,
                hooks: None,
                auto: None,
                context: Default::default(),
            },
        }
    }
}

impl SessionConfigBuilder {
    /// The lead's permission mode.
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.config.permission_mode = mode;
        self
    }

    /// The permission policy (rules, roots, settings).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.config.policy = policy;
        self
    }

    /// How Asks are answered.
    pub fn approver(mut self, approver: ApproverPolicy) -> Self {
        self.config.approver = approver;
        self
    }

    /// OS confinement for the lead's commands.
    pub fn sandbox(mut self, sandbox: CommandSandbox) -> Self {
        self.config.sandbox = sandbox;
        self
    }

    /// The executor's timeout for tools that set none.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.config.default_tool_timeout = timeout;
        self
    }

    /// A conversation to resume.
    pub fn conversation(mut self, conversation: Vec<Message>) -> Self {
        self.config.conversation = conversation;
        self
    }

    /// The event bus (the caller's, so it can subscribe before anything runs).
    pub fn events(mut self, events: EventBus) -> Self {
        self.config.events = events;
        self
    }

    /// Background tasks and subagents (`None`: the lead works alone).
    pub fn orchestration(mut self, orchestration: impl Into<Option<Orchestration>>) -> Self {
        self.config.orchestration = orchestration.into();
        self
    }

    /// The configured hooks (`None`: no hooks).
    pub fn hooks(mut self, hooks: impl Into<Option<SessionHooks>>) -> Self {
        self.config.hooks = hooks.into();
        self
    }

    /// Auto mode's classifier, breaker and tally (`None`: auto mode asks as default does).
    pub fn auto(mut self, auto: impl Into<Option<Arc<crate::auto_mode::AutoMode>>>) -> Self {
        self.config.auto = auto.into();
        self
    }

    /// Context windows and when agents compact.
    pub fn context(mut self, context: crate::agent::context::ContextSettings) -> Self {
        self.config.context = context;
        self
    }

    /// The configuration.
    pub fn build(self) -> SessionConfig {
        self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead() -> AgentSpec {
        AgentSpec {
            id: "lead".into(),
            model: "script".into(),
            system_prompt: "test".into(),
            allowed_tools: None,
            max_turns: 3,
            max_tokens: 100,
        }
    }

    fn provider() -> Arc<dyn Provider> {
        Arc::new(crate::provider::scripted::ScriptedProvider::new(
            Default::default(),
        ))
    }

    #[test]
    fn the_defaults_fail_closed() {
        let registry = Arc::new(Registry::with_tools(Vec::new()).unwrap());
        let c = SessionConfig::builder("/w", provider(), lead(), registry).build();
        assert_eq!(
            c.sandbox,
            CommandSandbox::landlock(vec![PathBuf::from("/w")])
        );
        assert!(matches!(c.approver, ApproverPolicy::Headless));
        assert_eq!(c.permission_mode, PermissionMode::Default);
        assert_eq!(c.default_tool_timeout, crate::executor::DEFAULT_TIMEOUT);
        assert!(c.orchestration.is_none() && c.hooks.is_none() && c.auto.is_none());
        assert!(c.conversation.is_empty() && c.policy.rules.is_empty());
    }

    #[test]
    fn each_setter_sets_its_field() {
        let registry = Arc::new(Registry::with_tools(Vec::new()).unwrap());
        let c = SessionConfig::builder("/w", provider(), lead(), registry)
            .permission_mode(PermissionMode::AcceptEdits)
            .sandbox(CommandSandbox::None)
            .tool_timeout(Duration::from_secs(7))
            .conversation(vec![Message::user_text("hi")])
            .build();
        assert_eq!(c.permission_mode, PermissionMode::AcceptEdits);
        assert_eq!(c.sandbox, CommandSandbox::None);
        assert_eq!(c.default_tool_timeout, Duration::from_secs(7));
        assert_eq!(c.conversation.len(), 1);
    }
}
