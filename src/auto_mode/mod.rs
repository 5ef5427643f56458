//! Auto mode (seed 003): where the permission engine would ask, a classifier model
//! decides instead. Hard checks, deny rules, explicit `ask` rules, the gate and Plan Mode
//! come first and are unchanged; only the mode fallback's Ask reaches the classifier.
//!
//! Modules: `classifier` (the model call, its prompt and the fail-closed parse; the
//! top-level `crate::classifier`, re-exported here),
//! `breaker` (3 denials in a row or 20 in a session switch auto off). `availability`
//! (whether auto mode can be entered). The pure part of auto mode — its settings and the
//! allow rules set aside while in it — is the engine's (`permission::auto`); this module is the async part the
//! decision cannot hold: the model call through the provider and the session's tally.
//! `AutoMode` is the session's one copy of the classifier, the breaker and the tally
//! shared by the lead, its subagents and teammates.

mod availability;
pub(crate) mod breaker;
pub use crate::classifier;

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use availability::Availability;

use crate::permission::auto::AutoSettings;
use crate::permission::{Decision, PermissionMode, SharedMode, Verdict};
use crate::protocol::{ToolCall, Usage};
use breaker::Breaker;

/// The mode the breaker drops to: calls ask again.
pub const AFTER_BREAKER: PermissionMode = PermissionMode::Default;
use classifier::{ClassifierAllow, ClassifierConfig, Intent};

/// One call the classifier judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassifierDecision {
    /// The calling agent.
    pub agent: String,
    /// The tool.
    pub tool: String,
    /// allow or deny.
    pub decision: Verdict,
    /// The classifier's reason (for a failure: what failed).
    pub reason: String,
}

/// What auto mode did in a session (`--output-format json` shows it as `auto_mode`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AutoSummary {
    /// Calls the classifier allowed.
    pub allowed: u32,
    /// Calls it denied (failures and timeouts included).
    pub denied: u32,
    /// Each judgement, in order.
    pub decisions: Vec<ClassifierDecision>,
    /// The breaker's state.
    pub breaker: Breaker,
    /// What the classifier's requests cost, as the provider reported it (cache writes and
    /// reads included).
    pub usage: Usage,
}

/// The classifier's answer as the pipeline uses it.
#[derive(Debug)]
pub enum Judged {
    /// Run it: the token makes the permit.
    Allowed(ClassifierAllow, String),
    /// Refuse it with this reason; `tripped` says why auto mode was switched off, when
    /// this denial tripped the breaker.
    Denied {
        /// The classifier's reason.
        reason: String,
        /// Set when this denial tripped the breaker.
        tripped: Option<String>,
    },
    /// The classifier cannot be used now, or not for this call (why): ask as the mode
    /// before auto would (headless: denied).
    Unavailable(String),
}

/// The session's auto mode: the classifier, the breaker and the tally.
pub struct AutoMode {
    settings: AutoSettings,
    classifier: Option<ClassifierConfig>,
    lead_mode: Mutex<Option<SharedMode>>,
    state: Mutex<AutoSummary>,
}

impl std::fmt::Debug for AutoMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoMode")
            .field("settings", &self.settings)
            .field("classifier", &self.classifier)
            .finish_non_exhaustive()
    }
}

impl AutoMode {
    /// Auto mode with these settings and this classifier (`None`: none configured).
    pub fn new(settings: AutoSettings, classifier: Option<ClassifierConfig>) -> Arc<Self> {
        Arc::new(AutoMode {
            settings,
            classifier,
            lead_mode: Mutex::new(None),
            state: Mutex::new(AutoSummary::default()),
        })
    }

    /// Tells auto mode the lead's mode, which the breaker switches off when it trips.
    pub fn watch_lead(&self, mode: SharedMode) {
        *lock(&self.lead_mode) = Some(mode);
    }

    /// Whether the lead is in auto mode now: a subagent started now then runs in auto
    /// (the classifier judges its asks) instead of dontAsk.
    pub fn lead_in_auto(&self) -> bool {
        lock(&self.lead_mode)
            .as_ref()
            .is_some_and(|m| m.get() == PermissionMode::Auto)
    }

    /// Whether auto mode can be entered now.
    pub fn availability(&self) -> Availability {
        if self.settings.disabled {
            return Availability::Disabled;
        }
        if self.classifier.is_none() {
            return Availability::NoClassifier;
        }
        match &lock(&self.state).breaker.tripped {
            Some(why) => Availability::Tripped(why.clone()),
            None => Availability::Available,
        }
    }

    /// `/auto reset`: closes the breaker.
    pub fn reset(&self) {
        lock(&self.state).breaker.reset();
    }

    /// What auto mode did so far.
    pub fn summary(&self) -> AutoSummary {
        lock(&self.state).clone()
    }

    /// Asks the classifier about a call the engine would have asked about, and counts
    /// the answer. A denial that trips the breaker switches the lead (and `caller_mode`)
    /// out of auto to `default`, where calls ask again.
    pub async fn judge(
        &self,
        agent: &str,
        caller_mode: &SharedMode,
        call: &ToolCall,
        decision: &Decision,
        intent: &Intent,
        cancel: &CancellationToken,
    ) -> Judged {
        if let Some(why) = self.availability().refusal() {
            return Judged::Unavailable(why);
        }
        let Some(config) = &self.classifier else {
            return Judged::Unavailable("no classifier is configured".into());
        };
        // What the classifier is not shown whole is for a human (headless: denied).
        if let Some(why) = classifier::unseen(call, decision) {
            return Judged::Unavailable(why);
        }
        let judgement = classifier::classify(config, call, decision, intent, cancel).await;
        let mut state = lock(&self.state);
        state.usage.add(&judgement.usage);
        match judgement.allow {
            Some(allow) => {
                state.allowed += 1;
                state.decisions.push(ClassifierDecision {
                    agent: agent.to_string(),
                    tool: call.name.clone(),
                    decision: Verdict::Allow,
                    reason: judgement.reason.clone(),
                });
                state.breaker.allowed();
                Judged::Allowed(allow, judgement.reason)
            }
            None => {
                state.denied += 1;
                state.decisions.push(ClassifierDecision {
                    agent: agent.to_string(),
                    tool: call.name.clone(),
                    decision: Verdict::Deny,
                    reason: judgement.reason.clone(),
                });
                let tripped = state.breaker.denied();
                drop(state);
                if tripped.is_some() {
                    self.switch_off(caller_mode);
                }
                Judged::Denied {
                    reason: judgement.reason,
                    tripped,
                }
            }
        }
    }

    fn switch_off(&self, caller_mode: &SharedMode) {
        let lead = lock(&self.lead_mode).clone();
        for mode in lead.iter().chain(std::iter::once(caller_mode)) {
            if mode.get() == PermissionMode::Auto {
                mode.set(AFTER_BREAKER);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock left plain counters behind; they are still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}
