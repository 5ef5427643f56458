//! Issue 10's load acceptance through the whole pipeline: 16 real teammate actors, each
//! driven by its own generated scripted model, send their share of 2,000 messages with
//! `send_message` tool calls (25 per model turn, run in order as side-effect calls are),
//! through the gate, the team actor and the durable inboxes. What each recipient's model
//! was last shown (its whole conversation) holds every message sent to it exactly once,
//! marked with its sender, and each sender's messages in the order they were sent.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crewmaster::protocol::{ContentBlock, Role};
use crewmaster::team::MemberName;
use serde_json::json;
use support::team::{chat, team_of};
use support::{Setup, start};

const MEMBERS: usize = 16;
const TOTAL: usize = 2000;
const PER_TURN: usize = 25;

/// Who sender `i`'s `k`-th message goes to: round the others in turn.
fn recipient(i: usize, k: usize) -> usize {
    (i + 1 + k % (MEMBERS - 1)) % MEMBERS
}

/// The lead starts m0…m15, each of which says it is ready and waits; once all are there,
/// the lead's "go" to everyone wakes them, and each mI sends its 125 messages, 25 calls a
/// turn, then ends.
fn script() -> String {
    let spawn: Vec<_> = (0..MEMBERS)
        .map(|i| {
            json!({"name": "agent", "input": {
                "description": format!("sender {i}"), "prompt": "Send your messages.",
                "subagent_type": "s", "name": format!("m{i}")}})
        })
        .collect();
    let mut agents = serde_json::Map::new();
    for i in 0..MEMBERS {
        let calls: Vec<_> = (0..TOTAL / MEMBERS)
            .map(|k| {
                json!({"name": "send_message", "input": {
                    "to": format!("m{}", recipient(i, k)), "message": format!("M:{i}:{k}")}})
            })
            .collect();
        let mut turns = vec![json!({"text": "ready"})];
        turns.extend(calls.chunks(PER_TURN).map(|c| json!({"tool_calls": c})));
        turns.push(json!({"text": format!("m{i} sent everything")}));
        agents.insert(format!("m{i}"), json!({"turns": turns}));
    }
    let go = json!({"name": "send_message", "input": {"to": "*", "message": "go"}});
    json!({"turns": [
        {"tool_calls": spawn}, {"text": "team started"},
        {"tool_calls": [go]}, {"text": "go sent"}
    ], "agents": agents})
    .to_string()
}

/// The teammates' messages in a conversation as (sender, sender index, k), in the order
/// shown.
fn received(messages: &[crewmaster::protocol::Message]) -> Vec<(String, usize, usize)> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            // The lead's "go" is not one of the 2,000.
            ContentBlock::Text { text } if text.starts_with("<team-message from=\"m") => Some(text),
            _ => None,
        })
        .map(|text| {
            let from = text["<team-message from=\"".len()..]
                .split('"')
                .next()
                .unwrap()
                .to_string();
            let body = text.split("M:").nth(1).unwrap_or_else(|| panic!("{text}"));
            let mut parts = body.split(|c: char| !c.is_ascii_digit());
            let i: usize = parts.next().unwrap().parse().unwrap();
            let k: usize = parts.next().unwrap().parse().unwrap();
            (from, i, k)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_teammates_send_2000_messages_with_send_message_none_lost_none_twice_in_order() {
    let mut setup = Setup::new(script(), crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.files = vec![(
        ".crew/agents/s.md",
        "---\nname: s\ndescription: sender\nisolation: worktree\ntools: send_message\n---\nSend.\n"
            .to_string(),
    )];
    let mut t = start(setup).await;
    let started = std::time::Instant::now();
    t.session.run(chat("start the team")).await.unwrap();
    // Every teammate must exist before anyone sends: wait until each has finished its
    // first (one-turn) run, so "go" cannot be swallowed by it and wakes each of them.
    let mut ready = std::collections::HashSet::new();
    while ready.len() < MEMBERS {
        let event = tokio::time::timeout(Duration::from_secs(60), t.events.recv())
            .await
            .expect("every teammate finishes its first run")
            .expect("the event bus is open");
        if let crewmaster::events::EventKind::RunFinished { .. } = event.kind
            && event.agent.starts_with("s/m")
        {
            ready.insert(event.agent);
        }
    }
    // The lead is woken by idle notices many times; each of its runs is one short turn.
    tokio::time::timeout(
        Duration::from_secs(300),
        t.session.run_until_quiet(chat("go"), 10_000),
    )
    .await
    .expect("the team goes quiet")
    .unwrap();
    let team = team_of(t.home.path());
    for r in 0..MEMBERS {
        let name = MemberName::parse(&format!("m{r}")).unwrap();
        assert_eq!(team.unread_count(&name).unwrap(), 0, "m{r} has unread mail");
    }
    let all = t.provider.requests();
    let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
    for r in 0..MEMBERS {
        let agent = format!("s/m{r}");
        let last = all
            .iter()
            .rfind(|q| q.agent == agent)
            .unwrap_or_else(|| panic!("{agent} made no request"));
        let mut per_sender: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (from, i, k) in received(&last.messages.to_vec()) {
            assert_eq!(from, format!("m{i}"), "marked with its sender");
            assert_eq!(recipient(i, k), r, "M:{i}:{k} reached m{r}");
            *seen.entry((i, k)).or_default() += 1;
            per_sender.entry(i).or_default().push(k);
        }
        for (i, ks) in per_sender {
            assert!(
                ks.windows(2).all(|w| w[0] < w[1]),
                "m{i}→m{r} out of order: {ks:?}"
            );
            let sent = (0..TOTAL / MEMBERS)
                .filter(|&k| recipient(i, k) == r)
                .count();
            assert_eq!(ks.len(), sent, "m{i}→m{r}: every message, once");
        }
    }
    assert_eq!(seen.len(), TOTAL, "none lost");
    assert!(seen.values().all(|&n| n == 1), "none delivered twice");
    eprintln!(
        "16 teammates, {TOTAL} messages through send_message: {:.1} s, {} model requests",
        started.elapsed().as_secs_f64(),
        all.len()
    );
    t.session.shutdown().await;
}
