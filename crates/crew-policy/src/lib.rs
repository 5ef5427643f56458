//! The permission engine's decision: given one tool call, the calling agent's cwd and
//! permission mode, and the configured rules, answer Allow, Ask or Deny — with the
//! source, reason, rule, category and resolved target. A pure function over plain data
//! ([`check`]), with no async runtime and no actors: this crate must never depend on
//! `crewmaster`, so an import that runs back up from here is a compile error.
//!
//! Around it, in the root crate: the `PermissionEngine` actor (`engine`), the permits it
//! hands out (`permission::Permit`, `permission::Checked::authorize`), the settings files
//! (`config`), `Rule::parse` with the built-in tools' names (`tools::rule_names`), auto
//! mode's classifier (`classifier`), trusted folders (`trust`) and the mode changes
//! (`agent::transition`). The root crate's `permission` module re-exports this crate.
//!
//! Order (seed 000, design.md §2–4): classify the call and parse its arguments → hard
//! checks (command blacklist, credential paths, path sandbox) → rules → mode fallback.
//! A web fetch is decided on its URL's host (`web`): rules, then
//! `sandbox.network.allowedDomains`, then an ask.
//! The types every layer sees (`Verdict`, `Decision`, `PermissionMode`, `PermissionSpec`)
//! are `crew_protocol`'s, re-exported here; each module opens with what it decides.

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
pub mod profile;
pub mod protected;
pub mod rules;
pub mod sandbox;
mod scopes;
pub mod shell;
pub mod walk;
pub mod web;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crew_protocol::ToolCall;

pub use check::check;
pub use crew_config::places::find_project_root;
pub use crew_config::sandbox_settings::SandboxSettings;
pub use crew_config::settings::{SettingsError, Warning};
pub use crew_protocol::decision::{Category, Decision, Layer, Source, Verdict};
pub use crew_protocol::permission_spec::{self as spec, PermissionSpec, RuleName, TargetSpec};
pub use grants::{GrantError, grant_rules};
pub use hook::HookOpinion;
pub use mode::{PermissionMode, SharedMode};
pub use rules::{Rule, RuleKind};

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
    pub network: crew_config::settings_network::NetworkSettings,
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
    /// `sandbox::limits::resolve`).
    pub limits: Vec<crew_config::settings::LayeredLimits>,
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
