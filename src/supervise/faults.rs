//! The fault injector, for tests only: compiled in with the `faults` cargo feature (which
//! `cargo test` turns on through the crate's dev-dependency on itself) and a no-op
//! otherwise. `CREW_FAULTS` names the faults, separated by `;`:
//!
//! - `panic:ACTORS@WHEN` — the actor panics inside its message handler on the matching
//!   message (counted per actor, from 1): a real crash with whatever call it was handling
//!   in flight.
//! - `kill:ACTORS@WHEN` — the actor is killed from outside (`ActorRef::kill`) when the
//!   matching tool call of the session starts (counted from 1).
//!
//! - `full:transcript@WHEN` — the matching transcript write fails part-way with "No space
//!   left on device", as on a full disk.
//!
//! `ACTORS` is one or more of `permission`, `approver`, `gate`, `executor`, `worktrees`,
//! `tasks`, joined by `+`; `WHEN` is `N` (the N-th) or `everyK` (every K-th). A `panic` counts the
//! messages that carry a call (`Authorize`, `Ask`, `Submit`, `Execute`); the target
//! `gate.register` counts the gate's `Register` messages instead (a registration lost
//! with a crashed gate).
//! Example: `CREW_FAULTS='kill:gate+executor@every1;panic:permission@7'`.

/// The environment variable read by the injector.
pub(crate) const FAULTS_VAR: &str = "CREW_FAULTS";

/// What kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// Panic inside the actor's handler.
    Panic,
    /// Kill the actor from outside.
    Kill,
    /// Fail a write as on a full disk.
    Full,
}

/// When a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// On the N-th occurrence.
    Nth(u64),
    /// On every K-th occurrence.
    Every(u64),
}

impl When {
    /// Whether the `count`-th occurrence (from 1) fires.
    pub(crate) fn fires(self, count: u64) -> bool {
        match self {
            When::Nth(n) => count == n,
            When::Every(k) => count % k == 0,
        }
    }
}

/// One fault of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    /// Panic or kill.
    pub kind: FaultKind,
    /// The actors it hits.
    pub actors: Vec<String>,
    /// When.
    pub when: When,
}

/// The actors a fault may name.
pub(crate) const ACTORS: [&str; 6] = [
    "permission",
    "approver",
    "gate",
    "executor",
    "worktrees",
    "tasks",
];

/// What a `panic` may name: an actor, or `gate.register` (the gate panics as it handles
/// the matching `Register`, counted apart from its calls).
pub(crate) const PANIC_TARGETS: [&str; 7] = [
    "permission",
    "approver",
    "gate",
    "executor",
    "worktrees",
    "tasks",
    "gate.register",
];

/// A `CREW_FAULTS` rule that does not parse: the rule and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{FAULTS_VAR}: `{rule}`: {why} (e.g. kill:gate@every2)")]
pub(crate) struct BadFault {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub why: String,
}

/// Parses a `CREW_FAULTS` value.
pub(crate) fn parse(text: &str) -> Result<Vec<Fault>, BadFault> {
    let mut faults = Vec::new();
    for rule in text.split(';').map(str::trim).filter(|r| !r.is_empty()) {
        let bad = |why: &str| BadFault {
            rule: rule.to_string(),
            why: why.to_string(),
        };
        let (kind, rest) = rule.split_once(':').ok_or_else(|| bad("no `:`"))?;
        let kind = match kind {
            "panic" => FaultKind::Panic,
            "kill" => FaultKind::Kill,
            "full" => FaultKind::Full,
            _ => return Err(bad("the kind is `panic`, `kill` or `full`")),
        };
        let (actors, when) = rest.split_once('@').ok_or_else(|| bad("no `@`"))?;
        let actors: Vec<String> = actors.split('+').map(|a| a.trim().to_string()).collect();
        let known: &[&str] = match kind {
            FaultKind::Full => &["transcript"],
            FaultKind::Panic => &PANIC_TARGETS,
            FaultKind::Kill => &ACTORS,
        };
        if let Some(a) = actors.iter().find(|a| !known.contains(&a.as_str())) {
            return Err(bad(&format!("unknown target `{a}`; one of {known:?}")));
        }
        let when = match when.strip_prefix("every") {
            Some(k) => When::Every(k.parse().map_err(|_| bad("bad count"))?),
            None => When::Nth(when.parse().map_err(|_| bad("bad count"))?),
        };
        if matches!(when, When::Every(0) | When::Nth(0)) {
            return Err(bad("counts start at 1"));
        }
        faults.push(Fault { kind, actors, when });
    }
    Ok(faults)
}

#[cfg(feature = "faults")]
mod live {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    use super::{Fault, FaultKind, parse};

    fn plan() -> &'static Vec<Fault> {
        static PLAN: OnceLock<Vec<Fault>> = OnceLock::new();
        PLAN.get_or_init(|| match std::env::var(super::FAULTS_VAR) {
            Ok(text) => parse(&text).unwrap_or_else(|e| {
                tracing::error!("{e}; no faults injected");
                Vec::new()
            }),
            Err(_) => Vec::new(),
        })
    }

    fn counters() -> std::sync::MutexGuard<'static, HashMap<String, u64>> {
        static COUNTS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
        COUNTS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one occurrence for `kind` on `target`; whether a fault of that kind fires.
    fn fires(kind: FaultKind, target: &str) -> Option<u64> {
        let mut hits = plan()
            .iter()
            .filter(|f| f.kind == kind && f.actors.iter().any(|a| a == target))
            .peekable();
        hits.peek()?;
        let count = {
            let mut c = counters();
            let n = c.entry(format!("{kind:?}:{target}")).or_insert(0);
            *n += 1;
            *n
        };
        hits.any(|f| f.when.fires(count)).then_some(count)
    }

    /// Counts one call-carrying message of `actor` and panics when a `panic` fault says so.
    pub(crate) fn point(actor: &str) {
        if let Some(count) = fires(FaultKind::Panic, actor) {
            panic!(
                "{}: injected panic in {actor} at message {count}",
                super::FAULTS_VAR
            );
        }
    }

    /// Counts one write to `target`; whether it is to fail as on a full disk.
    pub(crate) fn disk_full(target: &str) -> bool {
        fires(FaultKind::Full, target).is_some()
    }

    /// The actors to kill as the `call`-th tool call (from 1) starts.
    pub(crate) fn kills_at(call: u64) -> Vec<String> {
        plan()
            .iter()
            .filter(|f| f.kind == FaultKind::Kill && f.when.fires(call))
            .flat_map(|f| f.actors.iter().cloned())
            .collect()
    }

    /// Whether any kill fault is planned.
    pub(crate) fn kills_planned() -> bool {
        plan().iter().any(|f| f.kind == FaultKind::Kill)
    }
}

#[cfg(feature = "faults")]
pub(crate) use live::{disk_full, kills_at, kills_planned, point};

/// What kills actors for the `kill` faults: given their names, the session's answer once
/// they are dead (`false`: the session is gone).
pub(crate) type Killer =
    std::sync::Arc<dyn Fn(Vec<String>) -> futures::future::BoxFuture<'static, bool> + Send + Sync>;

/// Starts the `kill` faults of a session: `kill` is called, and awaited, as each matching
/// tool call starts (see [`calls_starting`]). Nothing without the `faults` feature or
/// without a planned kill.
#[cfg(feature = "faults")]
pub(crate) fn start_killer(kill: Killer) {
    if kills_planned() {
        *killer_slot().lock().unwrap_or_else(|e| e.into_inner()) = Some(kill);
    }
}

#[cfg(feature = "faults")]
fn killer_slot() -> &'static std::sync::Mutex<Option<Killer>> {
    static KILLER: std::sync::Mutex<Option<Killer>> = std::sync::Mutex::new(None);
    &KILLER
}

/// Counts `n` tool calls starting in this process and, when a `kill` fault is planned for
/// one of them, kills its actors and waits until they are dead, before the calls go on:
/// a kill "as call k starts" then always lands before call k reaches any actor, however
/// fast the call's way is (a kill sent from a subscriber raced the call).
#[cfg(feature = "faults")]
pub(crate) async fn calls_starting(n: usize) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    if !kills_planned() {
        return;
    }
    let n = n as u64;
    let first = CALLS.fetch_add(n, Ordering::SeqCst) + 1;
    for call in first..first + n {
        let names = kills_at(call);
        let kill = killer_slot()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let (false, Some(kill)) = (names.is_empty(), kill) {
            kill(names).await;
        }
    }
}

/// Without the `faults` feature: nothing to kill.
#[cfg(not(feature = "faults"))]
pub(crate) fn start_killer(_kill: Killer) {}

/// Without the `faults` feature: nothing to count or kill.
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub(crate) async fn calls_starting(_n: usize) {}

/// Without the `faults` feature: no fault is ever injected.
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub(crate) fn point(_actor: &str) {}

/// Without the `faults` feature: no write fails on purpose.
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub(crate) fn disk_full(_target: &str) -> bool {
    false
}

/// Without the `faults` feature: nothing to kill.
#[cfg(not(feature = "faults"))]
pub(crate) fn kills_at(_call: u64) -> Vec<String> {
    Vec::new()
}

/// Without the `faults` feature: no kill is planned.
#[cfg(not(feature = "faults"))]
pub(crate) fn kills_planned() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_fire_when_they_say() {
        let plan = parse("kill:gate+executor@every2; panic:permission@7").unwrap();
        assert_eq!(
            parse("panic:gate.register@2").unwrap()[0].actors,
            ["gate.register"]
        );
        assert_eq!(plan.len(), 2);
        assert_eq!(plan[0].kind, FaultKind::Kill);
        assert_eq!(plan[0].actors, ["gate", "executor"]);
        assert!(!plan[0].when.fires(1) && plan[0].when.fires(2) && plan[0].when.fires(4));
        assert!(plan[1].when.fires(7) && !plan[1].when.fires(14));
    }

    #[test]
    fn bad_rules_are_refused_naming_the_rule() {
        for bad in [
            "kill",
            "boom:gate@1",
            "kill:lead@1",
            "kill:gate@x",
            "kill:gate@every0",
            "full:gate@1",
            "panic:transcript@1",
            "kill:gate.register@1",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }
}
