//! Speculative execution (issue 13) on the scripted model, through a real session: the
//! lead runs a turn, the model suggests the next prompt, a fork of the lead runs it
//! ahead into an overlay, and the user's submission decides. Each test checks the disk:
//! the workspace, the overlay directory, and the marker a refused command would make.

use crate::support;
use crewmaster::tools::rule_names::ParseRule;

use std::path::{Path, PathBuf};

use crewmaster::permission::PermissionMode;
use crewmaster::speculation::{Ending, Limits, Resolution, Speculation, ahead};
use support::team::chat;
use support::{Setup, start, tool_results};

/// The lead's first answer, the suggestion, and the speculation's turns.
fn script(speculation_turns: &str) -> String {
    format!(
        r#"{{"turns":[{{"text":"I looked at a.txt."}}],
            "agents":{{
              "suggestion":{{"turns":[{{"text":"\"add a notes file\"\n"}}]}},
              "speculation":{{"turns":{speculation_turns}}}}}}}"#
    )
}

/// Writes notes.txt, reads it back (served from the overlay), then answers.
const WRITES_NOTES: &str = r#"[
  {"tool_calls":[{"name":"read_file","input":{"path":"a.txt"}},
                 {"name":"write_file","input":{"path":"notes.txt","content":"from the speculation\n"}}]},
  {"tool_calls":[{"name":"read_file","input":{"path":"notes.txt"}}]},
  {"text":"Wrote notes.txt."}
]"#;

/// Waits (bounded) until `path` exists.
async fn wait_for(path: &Path) {
    support::wait_until(&path.display().to_string(), || path.exists()).await;
}

/// A session whose lead has finished one turn, and a speculation of the suggestion.
async fn speculating(
    mode: PermissionMode,
    turns: &str,
) -> (support::TestSession, Speculation, tempfile::TempDir) {
    let mut setup = Setup::new(script(turns), crewmaster::tools::builtin_tools());
    setup.mode = mode;
    setup.files = vec![("a.txt", "alpha\n".into())];
    let t = start(setup).await;
    t.session.run(chat("look at a.txt")).await.unwrap();
    let lead = t.session.lead().clone();
    let snapshot = ahead::snapshot(&lead).await.expect("the lead is idle");
    let suggestion = ahead::suggest(&snapshot).await;
    assert_eq!(suggestion.as_deref(), Some("add a notes file"));
    let overlays = tempfile::tempdir().unwrap();
    let spec = Speculation::start(
        lead,
        snapshot,
        suggestion.unwrap(),
        "speculation/1",
        overlays.path(),
        Limits::default(),
    )
    .await
    .unwrap();
    (t, spec, overlays)
}

fn speculation_requests(t: &support::TestSession) -> usize {
    t.provider
        .requests()
        .iter()
        .filter(|r| r.agent.starts_with("speculation/"))
        .count()
}

#[tokio::test]
async fn an_accepted_suggestion_adopts_the_overlays_write_into_the_workspace() {
    let (t, spec, _overlays) = speculating(PermissionMode::AcceptEdits, WRITES_NOTES).await;
    let overlay: PathBuf = spec.overlay_dir().to_path_buf();
    wait_for(&overlay.join("notes.txt")).await;
    // Written ahead, but only into the overlay.
    assert!(!t.cwd().join("notes.txt").exists());

    let Resolution::Adopted {
        steps,
        outcome,
        messages,
    } = spec.resolve("add a notes file").await
    else {
        panic!("not adopted");
    };
    assert_eq!(steps, 3);
    assert_eq!(outcome.result, "Wrote notes.txt.");
    assert_eq!(
        std::fs::read_to_string(t.cwd().join("notes.txt")).unwrap(),
        "from the speculation\n"
    );
    assert!(!overlay.exists(), "the overlay is deleted after adoption");
    // The read after the write saw the overlay's copy.
    let results = tool_results(&messages);
    assert!(
        results[2].content.contains("from the speculation"),
        "{results:?}"
    );
    // The lead's conversation holds the speculated messages; its model was asked once.
    let conversation = t.session.conversation().await.unwrap();
    assert_eq!(conversation.last().unwrap().text(), "Wrote notes.txt.");
    assert!(conversation.iter().any(|m| m.text() == "add a notes file"));
    let lead_requests = t
        .provider
        .requests()
        .iter()
        .filter(|r| r.agent == "lead")
        .count();
    assert_eq!(lead_requests, 1);
}

#[tokio::test]
async fn a_different_input_leaves_the_workspace_untouched_and_the_overlay_gone() {
    let (t, spec, _overlays) = speculating(PermissionMode::AcceptEdits, WRITES_NOTES).await;
    let overlay = spec.overlay_dir().to_path_buf();
    wait_for(&overlay.join("notes.txt")).await;
    let before = t.session.conversation().await.unwrap().len();

    assert_eq!(spec.resolve("add a todo file").await, Resolution::Discarded);
    assert!(!overlay.exists(), "the overlay directory is deleted");
    assert!(!t.cwd().join("notes.txt").exists());
    assert_eq!(
        std::fs::read_to_string(t.cwd().join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(t.session.conversation().await.unwrap().len(), before);
}

#[tokio::test]
async fn a_command_that_is_not_read_only_stops_the_speculation_before_it_runs() {
    // Even bypassPermissions, where the engine would allow the command, does not let a
    // speculation run it.
    let turns = r#"[
      {"tool_calls":[{"name":"run_command","input":{"command":"ls"}}]},
      {"tool_calls":[{"name":"run_command","input":{"command":"touch marker"}}]},
      {"text":"Made the marker."}
    ]"#;
    let (t, spec, _overlays) = speculating(PermissionMode::BypassPermissions, turns).await;
    let overlay = spec.overlay_dir().to_path_buf();
    let resolution = spec.resolve("add a notes file").await;
    let Resolution::NotAdopted { reason } = resolution else {
        panic!("{resolution:?}");
    };
    assert!(reason.contains("not read-only: touch marker"), "{reason}");
    assert!(!t.cwd().join("marker").exists(), "the command never ran");
    assert!(!overlay.exists());
    // It ran `ls` (a read), then stopped at `touch` without asking the model again.
    assert_eq!(speculation_requests(&t), 2);
    // Nothing was adopted: the lead's conversation is the first run's.
    let conversation = t.session.conversation().await.unwrap();
    assert!(!conversation.iter().any(|m| m.text() == "add a notes file"));
}

#[tokio::test]
async fn a_web_fetch_stops_the_speculation_before_any_request_leaves() {
    // Allowed by the mode, and read-only, but a request would reach the server whether or
    // not the user sends the predicted prompt.
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_string("page"))
        .expect(0)
        .mount(&server)
        .await;
    let turns = format!(
        r#"[{{"tool_calls":[{{"name":"web_fetch","input":{{"url":"{}/docs"}}}}]}},
            {{"text":"Read the docs."}}]"#,
        server.uri()
    );
    let (_t, spec, _overlays) = speculating(PermissionMode::BypassPermissions, &turns).await;
    let Resolution::NotAdopted { reason } = spec.resolve("add a notes file").await else {
        panic!("adopted a speculation that fetched a page");
    };
    assert!(reason.contains("web_fetch"), "{reason}");
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn a_write_outside_accept_edits_stops_the_speculation() {
    let (t, spec, _overlays) = speculating(PermissionMode::Default, WRITES_NOTES).await;
    let Resolution::NotAdopted { reason } = spec.resolve("add a notes file").await else {
        panic!("adopted a write in default mode");
    };
    assert!(reason.contains("default mode"), "{reason}");
    assert!(!t.cwd().join("notes.txt").exists());
}

#[tokio::test]
async fn the_runner_reports_the_limit_it_reached() {
    // Three reads, a two-turn limit: it stops with the limit, never completed.
    let turns = r#"[
      {"tool_calls":[{"name":"read_file","input":{"path":"a.txt"}}]},
      {"tool_calls":[{"name":"read_file","input":{"path":"a.txt"}}]},
      {"text":"done"}
    ]"#;
    let mut setup = Setup::new(script(turns), crewmaster::tools::builtin_tools());
    setup.files = vec![("a.txt", "alpha\n".into())];
    let t = start(setup).await;
    t.session.run(chat("look")).await.unwrap();
    let snapshot = ahead::snapshot(t.session.lead()).await.unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let fork = crewmaster::speculation::runner::Fork::new(snapshot, "speculation/2", &cancel)
        .await
        .unwrap();
    let overlays = tempfile::tempdir().unwrap();
    let mut overlay =
        crewmaster::speculation::overlay::Overlay::create(overlays.path(), &t.cwd()).unwrap();
    let limits = Limits {
        max_turns: 2,
        max_messages: 100,
    };
    let out = fork.run("look again", &mut overlay, limits, &cancel).await;
    assert_eq!(out.ending, Ending::Limit("2 turns".into()));
    assert_eq!(out.turns, 2);
    // The prompt, then two answered turns.
    assert_eq!(out.messages.len(), 5);
}

#[tokio::test]
async fn an_adopted_write_the_permission_engine_now_denies_is_not_applied() {
    use crewmaster::engine::PermissionMsg;
    use crewmaster::permission::rules::{Rule, RuleKind};
    use crewmaster::permission::{Layer, Policy};

    let (t, spec, _overlays) = speculating(PermissionMode::AcceptEdits, WRITES_NOTES).await;
    let overlay = spec.overlay_dir().to_path_buf();
    wait_for(&overlay.join("notes.txt")).await;
    // The user denies writes to notes.txt after the speculation wrote it ahead.
    let snapshot_engine = {
        let lead = t.session.lead().clone();
        // The lead is idle: its snapshot carries the session's permission engine.
        ahead::snapshot(&lead)
            .await
            .unwrap()
            .runner
            .pipeline
            .permission
    };
    let mut policy = Policy::default();
    for rule in ["Write(**/notes.txt)", "Edit(**/notes.txt)"] {
        policy
            .rules
            .push(Rule::parse(rule, RuleKind::Deny, Layer::User, None).unwrap());
    }
    snapshot_engine.cast(PermissionMsg::Reload(Box::new(policy)));
    let before = t.session.conversation().await.unwrap().len();

    let resolution = spec.resolve("add a notes file").await;
    let Resolution::NotAdopted { reason } = resolution else {
        panic!("{resolution:?}");
    };
    assert!(reason.contains("was refused"), "{reason}");
    assert!(
        !t.cwd().join("notes.txt").exists(),
        "the denied write was not applied"
    );
    assert!(!overlay.exists());
    assert_eq!(t.session.conversation().await.unwrap().len(), before);
}

#[tokio::test]
async fn an_edit_lands_in_the_overlay_and_is_applied_whole_on_adoption() {
    let turns = r#"[
      {"tool_calls":[{"name":"edit_file","input":{"path":"a.txt","old_string":"alpha","new_string":"beta"}}]},
      {"tool_calls":[{"name":"read_file","input":{"path":"a.txt"}}]},
      {"text":"Edited."}
    ]"#;
    let (t, spec, _overlays) = speculating(PermissionMode::AcceptEdits, turns).await;
    let overlay = spec.overlay_dir().to_path_buf();
    wait_for(&overlay.join("a.txt")).await;
    assert_eq!(
        std::fs::read_to_string(t.cwd().join("a.txt")).unwrap(),
        "alpha\n",
        "the workspace keeps its file while the speculation edits its copy"
    );
    let Resolution::Adopted { messages, .. } = spec.resolve("add a notes file").await else {
        panic!("not adopted");
    };
    let results = tool_results(&messages);
    assert!(
        results[0].content.contains("replaced 1 occurrence"),
        "{results:?}"
    );
    assert!(results[1].content.contains("beta"), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(t.cwd().join("a.txt")).unwrap(),
        "beta\n"
    );
}
