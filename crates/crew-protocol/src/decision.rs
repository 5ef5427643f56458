//! What the permission engine answers, as every layer sees it: the three outcomes
//! ([`Verdict`]), what a call does ([`Category`]), the rule layers ([`Layer`]), which
//! stage decided ([`Source`]) and the whole answer ([`Decision`]). The engine that
//! computes them is `crewmaster::permission`; the events, the transcript, the TUI and
//! the worker protocol only carry them.

use serde::{Deserialize, Serialize};

/// The three outcomes, ordered by strength (`Allow < Ask < Deny`): where several
/// decisions apply to one call, the strongest wins — combine them with `max`. A rule's
/// kind (`allow`/`ask`/`deny` in settings) is the same type (`crewmaster::permission::RuleKind`).
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
    /// Fetches a URL (`web_fetch`): it changes nothing here, but the request — and
    /// whatever its URL carries — leaves the machine, so a host that neither a rule nor
    /// `sandbox.network.allowedDomains` lists asks in every mode but bypassPermissions.
    Network,
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
    /// The path sandbox, or the sandbox's network allow list
    /// (`sandbox.network.allowedDomains`, which also lets `web_fetch` through).
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
