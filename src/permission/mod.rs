//! The permission engine's decision: given one tool call, the calling agent's cwd and
//! permission mode, and the configured rules, answer Allow, Ask or Deny — with the
//! source, reason, rule, category and resolved target. A pure function over plain data
//! (`check`, and `Checked::authorize` for an agent's call); the `PermissionEngine` actor
//! that holds its state and routes is `crate::engine`, the settings files and
//! `Policy::load` are `crate::config`, auto mode's classifier is `crate::auto_mode`,
//! trusted folders are `crate::trust`.
//!
//! Order (seed 000, design.md §2–4): classify the call and parse its arguments → hard
//! checks (command blacklist, credential paths, path sandbox) → rules → mode fallback.
//!
//! Modules: `spec` (a tool's permission spec, carried by its `Definition`), `classify`
//! (spec + arguments → category, target), `permit` (`Permit`, `Pending`), `shell` (bash
//! parsing, wrappers), `commands` (read-only and dangerous commands), `blacklist`,
//! `sandbox` (real paths, roots, credentials), `rules` (rule syntax, layer precedence),
//! `grants` (approvals → rules), `delegation` (starting subagents), `walk` (what directory
//! walkers may show), `check` (the decision), `auto` (auto mode's settings, availability
//! and suspended rules), `transition` (the one state machine for mode changes).

pub mod auto;
pub mod blacklist;
pub mod cache;
mod check;
pub mod classify;
mod command_index;
pub mod commands;
pub mod controls;
mod credentials;
pub mod delegation;
pub mod deny_ids;
pub mod grants;
pub mod hook;
pub mod mode;
pub mod path_index;
mod permit;
pub mod profile;
pub mod protected;
pub mod rules;
pub mod sandbox;
mod scopes;
pub mod shell;
pub mod spec;
pub mod transition;
pub mod walk;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::protocol::ToolCall;

pub use crate::config::{SandboxSettings, SettingsError, Warning, find_project_root};
pub use check::check;
pub use grants::{GrantError, grant_rules};
pub use hook::HookOpinion;
pub use mode::{PermissionMode, SharedMode};
pub use permit::{ApprovalMismatch, Checked, Pending, Permit};
pub use rules::{Rule, RuleKind};
pub use spec::{PermissionSpec, RuleName, TargetSpec};

/// The three outcomes, ordered by strength (`Allow < Ask < Deny`): where several
/// decisions apply to one call, the strongest wins — combine them with `max`. A rule's
/// kind (`allow`/`ask`/`deny` in settings) is the same type (`rules::RuleKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask a human (or, under dontAsk, apply the unattended policy).
    Ask,
    /// Refuse it.
    Deny,
}

/// What a call does, for the mode fallback table and for rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Observes files.
    Read,
    /// Changes files.
    Write,
    /// Runs a command or starts an agent.
    Exec,
    /// Calls an MCP server's tool.
    Mcp,
    /// Acts on the session's own background tasks (`task_stop`): a side effect for the
    /// gate (Plan Mode refuses it), but one on crewmaster's own work — no files, no
    /// processes besides the task's own — so the mode fallback treats it like a read
    /// (allowed from default mode up; strict asks).
    Control,
}

/// A rule layer, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// In-memory grants of this session.
    Session,
    /// `.crew/settings.local.json` and `.claude/settings.local.json`.
    Local,
    /// `.crew/settings.json` and `.claude/settings.json`.
    Project,
    /// `~/.crew/settings.json` and `~/.claude/settings.json`.
    User,
}

/// Which stage decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The arguments could not be parsed or lacked a required field.
    Arguments,
    /// The dangerous-command blacklist.
    Blacklist,
    /// A credential path.
    Credentials,
    /// The path sandbox.
    Sandbox,
    /// A rule of the given layer.
    Rule(Layer),
    /// The permission mode's fallback.
    Mode,
    /// A human's answer.
    User,
    /// The tool is not covered by permission rules.
    Unknown,
    /// A PreToolUse hook (its allow skipped the mode's ask, or its ask was added).
    Hook,
    /// Auto mode's classifier model.
    Classifier,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Arguments => f.write_str("arguments"),
            Source::Blacklist => f.write_str("blacklist"),
            Source::Credentials => f.write_str("credentials"),
            Source::Sandbox => f.write_str("sandbox"),
            Source::Rule(l) => write!(
                f,
                "rule:{}",
                serde_json::to_value(l)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            ),
            Source::Mode => f.write_str("mode"),
            Source::User => f.write_str("user"),
            Source::Unknown => f.write_str("unknown"),
            Source::Hook => f.write_str("hook"),
            Source::Classifier => f.write_str("classifier"),
        }
    }
}

/// The engine's answer for one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Allow, Ask or Deny.
    pub verdict: Verdict,
    /// Which stage decided.
    pub source: Source,
    /// Why, in a sentence that says how to change the outcome where one can.
    pub reason: String,
    /// The rule or pattern that matched, if any.
    pub rule: Option<String>,
    /// The call's category, once classified.
    pub category: Option<Category>,
    /// The resolved target (real path, normalised command, MCP name).
    pub target: Option<String>,
    /// Whether an Ask (or, under dontAsk, the Deny it became) came from something meant
    /// for a human — an `ask` rule, a dangerous command, a write to a protected file, an
    /// unknown tool, an unparseable command — rather than from the mode fallback. `check`
    /// already turns every Ask into Deny under dontAsk (the fallback never asks there).
    pub explicit_ask: bool,
}

impl Decision {
    /// A decision with no rule, category or target.
    pub fn new(verdict: Verdict, source: Source, reason: impl Into<String>) -> Self {
        Self {
            verdict,
            source,
            reason: reason.into(),
            rule: None,
            category: None,
            target: None,
            explicit_ask: false,
        }
    }
}

/// One call to decide, with the caller's situation.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    /// The call as the model sent it.
    pub call: ToolCall,
    /// The tool's permission spec, from its `Definition` in the registry (`None`: the
    /// tool is unknown, and the call asks). Outside a session, take it from
    /// `crate::tools::builtin_permission`.
    pub spec: Option<PermissionSpec>,
    /// The calling agent's cwd: the first sandbox root.
    pub cwd: PathBuf,
    /// The calling agent's permission mode.
    pub mode: PermissionMode,
}

/// Everything besides the call that the decision depends on: the rule layers, the extra
/// sandbox roots, and the settings values the rest of crewmaster reads.
///
/// Build it with [`Policy::load`]`(project_root, home)` (reads the three settings files)
/// or `Policy::default()` (no rules, no extra roots) and hand it to the
/// `PermissionEngine` actor as its `Arguments`.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The project root (canonical): base of relative rule patterns and of grants.
    pub project_root: Option<PathBuf>,
    /// Sandbox roots besides the caller's cwd (`additionalDirectories`, canonical).
    pub additional_roots: Vec<PathBuf>,
    /// Directories file tools may read (never write) below besides the sandbox roots:
    /// the user's skill directories (canonical). Credentials and deny rules still apply.
    pub read_roots: Vec<PathBuf>,
    /// The session's `results` directory (canonical), where large tool results are
    /// offloaded: read tools may always read below it, in every mode (a deny rule still
    /// wins). Nothing else below `~/.crew` is opened by this.
    pub results_dir: Option<PathBuf>,
    /// The user's home, for `~` patterns and credential paths.
    pub home: Option<PathBuf>,
    /// Every rule of every layer (session rules included), in any order.
    pub rules: Vec<Rule>,
    /// `permissions.defaultMode` from the highest layer that sets it (else `default`).
    pub default_mode: PermissionMode,
    /// The `sandbox` settings for the command runner.
    pub sandbox: SandboxSettings,
    /// The `sandbox.network` settings of the user's own layers.
    pub network: crate::config::settings_network::NetworkSettings,
    /// The `model` setting from the highest layer that sets it.
    pub model: Option<String>,
    /// The `maxConcurrentAgents` setting from the highest layer that sets it.
    pub max_concurrent_agents: Option<usize>,
    /// The `maxBudgetUsd` setting: the lowest any layer sets (a spending limit only
    /// tightens), or `--max-budget-usd`.
    pub max_budget_usd: Option<f64>,
    /// Whether the project folder is trusted: only then did its shared settings (allow
    /// rules, a looser `defaultMode`, `worktree.setup`) take effect.
    pub trusted: bool,
    /// What the engine knows of the agent types it may be asked to start.
    pub delegation: delegation::Delegation,
    /// `commandEnv.passthrough` of the trusted layers: secret-looking variables commands
    /// may still inherit.
    pub env_passthrough: Vec<String>,
    /// File-system facts computed once, not per decision (canonical roots and cwds,
    /// credential identities).
    pub cache: cache::PolicyCache,
    /// The `autoMode` settings.
    pub auto_mode: auto::AutoSettings,
    /// `permissions.disableBypassPermissionsMode: "disable"` in any layer.
    pub bypass_disabled: bool,
    /// The `limits` objects of every layer, highest first (resolved by
    /// `tools::sandbox::limits::resolve`).
    pub limits: Vec<crate::config::settings::LayeredLimits>,
}

/// A rule as shown by `crew permissions list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleInfo {
    /// The rule text.
    pub rule: String,
    /// allow, ask or deny.
    pub kind: RuleKind,
    /// Its layer.
    pub layer: Layer,
    /// The file it came from (none for session grants).
    pub file: Option<PathBuf>,
    /// Its index in that file's list.
    pub index: usize,
    /// Why auto mode sets it aside, when it does (`auto::suspend`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_in_auto: Option<String>,
}

impl Policy {
    /// The effective rules, highest layer first, deny before ask before allow.
    pub fn rule_infos(&self) -> Vec<RuleInfo> {
        let mut out: Vec<RuleInfo> = self
            .rules
            .iter()
            .map(|r| RuleInfo {
                rule: r.text.clone(),
                kind: r.kind,
                layer: r.layer,
                file: r.file.clone(),
                index: r.index,
                suspended_in_auto: auto::suspend::suspended_in_auto(r).map(String::from),
            })
            .collect();
        out.sort_by_key(|r| (r.layer, std::cmp::Reverse(r.kind), r.index));
        out
    }
}
