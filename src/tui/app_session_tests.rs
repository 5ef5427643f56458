//! Unit tests of the session commands (`/clear`, `/resume`, `/model`, `/cost`, `/hooks`)
//! and of the editing and transcript keys (Ctrl+U, Ctrl+O with a call's output).

use super::tests::{app, key, notices, type_line};
use super::*;
use crate::events::{Event, EventKind};
use crate::protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};
use crate::tasks::TaskRecord;
use crate::tui::session_commands::{Switch, sessions_text};
use crate::tui::session_switch::ModelSwitchError;

fn switches(effects: Vec<Effect>) -> Vec<Switch> {
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Switch(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn running_task(a: &mut App) {
    let rec: TaskRecord = serde_json::from_value(serde_json::json!({
        "id": "t1", "kind": "agent", "description": "d", "status": "running",
        "owner": "lead", "created_ms": 0, "output_file": "/tmp/x", "host_pid": 1
    }))
    .unwrap();
    a.tasks.set_records(vec![rec]);
}

fn ev(agent: &str, kind: EventKind) -> Event {
    Event {
        agent: agent.into(),
        kind,
    }
}

#[test]
fn clear_switches_to_a_new_session_but_not_while_a_turn_runs() {
    let mut a = app();
    type_line(&mut a, "/clear");
    assert_eq!(switches(a.take_effects()), [Switch::Clear]);

    let mut busy = app();
    type_line(&mut busy, "work on it");
    busy.take_effects();
    type_line(&mut busy, "/clear");
    assert!(switches(busy.take_effects()).is_empty());
    assert!(
        notices(&busy).contains("A turn is running"),
        "{}",
        notices(&busy)
    );
}

#[test]
fn clear_and_resume_with_background_work_running_go_ahead_only_when_typed_again() {
    let mut a = app();
    running_task(&mut a);
    type_line(&mut a, "/clear");
    assert!(switches(a.take_effects()).is_empty());
    assert!(notices(&a).contains("Type /clear again"), "{}", notices(&a));
    // Another switch is not the one armed.
    type_line(&mut a, "/resume abc");
    assert!(switches(a.take_effects()).is_empty());
    type_line(&mut a, "/resume abc");
    assert_eq!(switches(a.take_effects()), [Switch::Resume("abc".into())]);
    assert_eq!(a.armed_switch, None);
}

#[test]
fn resume_without_an_id_lists_the_sessions_and_the_list_marks_this_one() {
    let mut a = app();
    type_line(&mut a, "/resume");
    assert!(matches!(a.take_effects()[..], [Effect::ListSessions]));
    let r = |id: &str, live_pid| crate::session::recent::Recent {
        id: id.into(),
        age: "3m ago".into(),
        title: format!("task of {id}"),
        live_pid,
    };
    let text = sessions_text(&[r("s1", None), r("old", None), r("other", Some(9))], "s1");
    assert!(
        text.contains("s1") && text.contains("[this session]"),
        "{text}"
    );
    assert!(text.contains("  old    3m ago  task of old\n"), "{text}");
    assert!(text.contains("[live, pid 9]"), "{text}");
    assert_eq!(
        sessions_text(&[r("s1", None)], "s1"),
        "No other sessions of this project yet."
    );
}

#[test]
fn model_shows_the_model_and_a_name_switches_it_for_the_next_turns() {
    let mut a = app();
    type_line(&mut a, "/model");
    assert!(a.take_effects().is_empty());
    assert!(notices(&a).contains("Model: script."), "{}", notices(&a));
    type_line(&mut a, "/model haiku");
    let effects = a.take_effects();
    assert!(
        matches!(&effects[..], [Effect::SetModel(m)] if m == "haiku"),
        "{effects:?}"
    );
    a.model_switched(Ok("claude-haiku-4-5".into()));
    assert_eq!(a.info.model, "claude-haiku-4-5");
    assert!(notices(&a).contains("The lead uses claude-haiku-4-5 from its next turn"));
    a.model_switched(Err(ModelSwitchError::Unusable(
        "/model gpt-9: unknown model".into(),
    )));
    assert_eq!(
        a.info.model, "claude-haiku-4-5",
        "a failed switch changes nothing"
    );
    assert!(notices(&a).contains("/model gpt-9: unknown model"));
}

#[test]
fn cost_adds_up_each_request_at_its_own_models_price_by_agent() {
    let mut a = app();
    type_line(&mut a, "/cost");
    assert!(notices(&a).contains("nothing spent yet"), "{}", notices(&a));
    let usage = |agent: &str, model: &str, cost| {
        ev(
            agent,
            EventKind::RequestUsage {
                turn: 1,
                model: model.into(),
                cached: 1000,
                created: 0,
                uncached: 2000,
                output: 500,
                cost_usd: cost,
            },
        )
    };
    a.on_event(usage("lead", "claude-sonnet-4-5", Some(0.25)));
    a.on_event(usage("lead", "claude-haiku-4-5", Some(0.05)));
    a.on_event(usage("explore/t1", "llama", None));
    type_line(&mut a, "/cost");
    let text = notices(&a);
    assert!(text.contains("Total cost: $0.3000"), "{text}");
    assert!(text.contains("3 model request(s)"), "{text}");
    assert!(
        text.contains("6.0k input · 1.5k output · 3.0k cache read"),
        "{text}"
    );
    assert!(
        text.contains("lead (claude-haiku-4-5): 2 request(s) · 7.0k tokens · $0.3000"),
        "{text}"
    );
    assert!(text.contains("explore/t1 (llama): 1 request(s)"), "{text}");
    assert!(
        text.contains("1 request(s) to models without a known price"),
        "{text}"
    );
}

#[test]
fn hooks_lists_what_runs_here() {
    let mut a = app();
    type_line(&mut a, "/hooks");
    let text = notices(&a);
    assert!(
        text.contains("no hooks run in /nonexistent/crew-tui-test"),
        "{text}"
    );
}

#[test]
fn ctrl_u_clears_the_input_box() {
    let mut a = app();
    for ch in "half a thought".chars() {
        a.on_key(key(KeyCode::Char(ch)));
    }
    a.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert!(a.input.is_empty(), "{:?}", a.input.text());
    a.on_key(key(KeyCode::Enter));
    assert!(a.take_effects().is_empty(), "nothing was sent");
}

#[test]
fn ctrl_o_shows_the_output_a_call_returned_not_only_its_arguments() {
    let mut a = app();
    let call = ToolCall {
        id: "c1".into(),
        name: "run_command".into(),
        arguments: r#"{"command":"ls"}"#.into(),
    };
    a.on_event(ev("lead", EventKind::ToolCallStarted { call }));
    a.on_event(ev(
        "lead",
        EventKind::ToolCallFinished {
            call_id: "c1".into(),
            name: "run_command".into(),
            is_error: false,
            error_code: None,
            summary: "exit 0".into(),
        },
    ));
    a.on_event(ev(
        "lead",
        EventKind::MessageAppended {
            message: Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult(ToolResult::ok(
                    "c1",
                    "exit 0\nCargo.toml\nsrc-listing-line",
                ))],
            },
        },
    ));
    let shown = |a: &App| {
        a.transcript
            .lines()
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(!shown(&a).contains("src-listing-line"), "{}", shown(&a));
    a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let text = shown(&a);
    assert!(text.contains(r#"args: {"command":"ls"}"#), "{text}");
    assert!(
        text.contains("Cargo.toml") && text.contains("src-listing-line"),
        "{text}"
    );
}
