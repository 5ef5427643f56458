//! Unit tests of the app state: keys, commands, plan flow and run endings.

use super::*;
use crate::agent::runner::{RunOutcome, RunStatus};
use crate::events::{Event, EventKind};
use crate::protocol::ToolCall;
use crate::tasks::TaskRecord;

pub(super) fn app() -> App {
    App::new(
        SessionInfo {
            session_id: "s1".into(),
            // No settings files: keeps `/permissions` independent of the test's cwd.
            project_root: "/nonexistent/crew-tui-test".into(),
            model: "script".into(),
            agents: vec![("general-purpose".into(), "does things".into())],
            ..SessionInfo::default()
        },
        PermissionMode::Default,
    )
}

pub(super) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub(super) fn type_line(app: &mut App, text: &str) {
    for ch in text.chars() {
        app.on_key(key(KeyCode::Char(ch)));
    }
    app.on_key(key(KeyCode::Enter));
}

fn runs(effects: Vec<Effect>) -> Vec<RunRequest> {
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Run(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn completed(result: &str) -> Result<RunOutcome, crate::tui::jobs::JobError> {
    Ok(RunOutcome {
        result: result.into(),
        status: RunStatus::Completed,
        usage: Usage::default(),
        turns: 1,
        tool_calls: 0,
    })
}

pub(super) fn notices(app: &App) -> String {
    app.transcript
        .entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Notice(t) | Entry::Error(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn typed_input_runs_a_chat_request() {
    let mut a = app();
    type_line(&mut a, "hello there");
    let runs = runs(a.take_effects());
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].mode, AgentMode::Chat);
    assert_eq!(runs[0].task, "hello there");
    assert_eq!(a.running, Some(AgentMode::Chat));
}

#[test]
fn plan_then_approve_runs_do_with_task_plan_and_picked_mode() {
    let mut a = app();
    type_line(&mut a, "/plan");
    assert_eq!(a.agent_mode(), AgentMode::Plan);
    type_line(&mut a, "add a flag");
    let plan_run = runs(a.take_effects()).remove(0);
    assert_eq!(plan_run.mode, AgentMode::Plan);
    a.on_run_finished(completed("1. edit main.rs"));
    assert!(notices(&a).contains("Plan ready"));
    // Shift+Tab in review picks the mode for the Do run.
    a.on_key(key(KeyCode::BackTab));
    a.on_key(key(KeyCode::Char('1')));
    let effects = a.take_effects();
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::SetPermissionMode(PermissionMode::AcceptEdits)))
    );
    let run = runs(effects).remove(0);
    assert_eq!(run.mode, AgentMode::Do);
    assert_eq!(run.task, "add a flag");
    assert_eq!(run.plan.as_deref(), Some("1. edit main.rs"));
    assert_eq!(a.agent_mode(), AgentMode::Do);
    a.on_run_finished(completed("done"));
    assert_eq!(a.agent_mode(), AgentMode::Chat);
}

#[test]
fn edit_the_plan_in_the_input_box_then_approve_with_do() {
    let mut a = app();
    type_line(&mut a, "/plan");
    type_line(&mut a, "task");
    a.take_effects();
    a.on_run_finished(completed("draft"));
    a.on_key(key(KeyCode::Char('2')));
    assert_eq!(a.input.text(), "draft");
    type_line(&mut a, " v2");
    assert!(
        runs(a.take_effects()).is_empty(),
        "editing must not run anything"
    );
    type_line(&mut a, "/do");
    let run = runs(a.take_effects()).remove(0);
    assert_eq!(run.plan.as_deref(), Some("draft v2"));
}

#[test]
fn do_without_a_plan_returns_to_chat() {
    let mut a = app();
    type_line(&mut a, "/plan");
    type_line(&mut a, "/do");
    assert_eq!(a.plan, PlanStage::Off);
    assert!(notices(&a).contains("No plan to carry out"));
    type_line(&mut a, "plain");
    assert_eq!(runs(a.take_effects())[0].mode, AgentMode::Chat);
}

#[test]
fn shift_tab_cycles_default_accept_plan_bypass_and_back_without_a_classifier() {
    let mut a = app();
    let mut seen = Vec::new();
    for _ in 0..4 {
        a.on_key(key(KeyCode::BackTab));
        seen.push(format!("{}/{}", a.agent_mode().as_str(), a.permission));
    }
    assert_eq!(
        seen,
        [
            "chat/acceptEdits",
            "plan/acceptEdits",
            "chat/bypassPermissions",
            "chat/default"
        ]
    );
    let sets: Vec<PermissionMode> = a
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::SetPermissionMode(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(
        sets,
        [
            PermissionMode::AcceptEdits,
            PermissionMode::BypassPermissions,
            PermissionMode::Default
        ]
    );
}

fn with_classifier(a: &mut App) -> std::sync::Arc<crate::auto_mode::AutoMode> {
    let script = crate::provider::scripted::ScriptedProvider::new(Default::default());
    let auto = crate::auto_mode::AutoMode::new(
        Default::default(),
        Some(crate::auto_mode::classifier::ClassifierConfig {
            provider: std::sync::Arc::new(script),
            model: "script".into(),
            timeout: std::time::Duration::from_secs(5),
        }),
    );
    a.info.auto = Some(auto.clone());
    a.info.suspended_in_auto = vec!["Bash(python:*)".into()];
    auto
}

#[test]
fn shift_tab_reaches_auto_with_a_classifier_and_names_the_suspended_rules() {
    let mut a = app();
    with_classifier(&mut a);
    for _ in 0..4 {
        a.on_key(key(KeyCode::BackTab));
    }
    assert_eq!(a.permission, PermissionMode::Auto);
    assert!(notices(&a).contains("Suspended until you leave auto: Bash(python:*)"));
    a.on_key(key(KeyCode::BackTab));
    assert_eq!(a.permission, PermissionMode::Default);
    assert!(notices(&a).contains("restored: Bash(python:*)"));
}

#[test]
fn the_breaker_drops_auto_to_asking_says_why_and_holds_until_auto_reset() {
    let mut a = app();
    let auto = with_classifier(&mut a);
    type_line(&mut a, "/auto");
    assert_eq!(a.permission, PermissionMode::Auto);
    // The session trips the breaker (three denials) and reports it.
    for _ in 0..3 {
        let _ = auto_deny(&auto);
    }
    a.on_event(Event {
        agent: "lead".into(),
        kind: EventKind::AutoModeOff {
            reason: "the classifier denied 3 calls in a row".into(),
        },
    });
    assert_eq!(a.permission, PermissionMode::Default);
    let status = crate::tui::view::status(&a);
    assert_eq!(
        status.auto_off.as_deref(),
        Some("the classifier denied 3 calls in a row")
    );
    let line: String = status
        .line()
        .spans
        .iter()
        .map(|s| s.content.to_string())
        .collect();
    assert!(
        line.contains("auto off: the classifier denied 3 calls in a row"),
        "{line}"
    );
    // Auto is skipped by Shift+Tab and refused by /auto until /auto reset.
    for _ in 0..4 {
        a.on_key(key(KeyCode::BackTab));
        assert_ne!(a.permission, PermissionMode::Auto);
    }
    while a.permission != PermissionMode::Default || a.plan != PlanStage::Off {
        a.on_key(key(KeyCode::BackTab));
    }
    type_line(&mut a, "/auto");
    assert_eq!(a.permission, PermissionMode::Default);
    assert!(notices(&a).contains("/auto reset"));
    type_line(&mut a, "/auto reset");
    assert!(a.auto_off.is_none());
    type_line(&mut a, "/auto");
    assert_eq!(a.permission, PermissionMode::Auto);
}

/// Records one denial the way the pipeline does, through the real classifier path
/// (an empty script answers `[script exhausted]`, which is not a decision: a denial).
fn auto_deny(auto: &crate::auto_mode::AutoMode) -> crate::auto_mode::Judged {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = ToolCall {
        id: "c".into(),
        name: "run_command".into(),
        arguments: r#"{"command":"rm -r build"}"#.into(),
    };
    let d = crate::permission::Decision::new(
        Verdict::Ask,
        crate::permission::Source::Mode,
        "auto mode asks before exec tools",
    );
    let mode = crate::permission::SharedMode::new(PermissionMode::Auto);
    rt.block_on(auto.judge(
        "lead",
        &mode,
        &call,
        &d,
        &Default::default(),
        &Default::default(),
    ))
}

#[test]
fn rejecting_a_plan_restores_the_mode_from_before_plan() {
    let mut a = app();
    a.on_key(key(KeyCode::BackTab)); // acceptEdits
    a.on_key(key(KeyCode::BackTab)); // plan over acceptEdits
    assert_eq!(a.agent_mode(), AgentMode::Plan);
    type_line(&mut a, "task");
    a.take_effects();
    a.on_run_finished(completed("the plan"));
    a.on_key(key(KeyCode::Char('3')));
    assert_eq!(a.plan, PlanStage::Off);
    assert_eq!(a.permission, PermissionMode::AcceptEdits);
    assert!(notices(&a).contains("Plan rejected"));
}

#[test]
fn esc_cancels_a_running_turn_and_input_typed_meanwhile_is_queued() {
    let mut a = app();
    type_line(&mut a, "first");
    a.take_effects();
    type_line(&mut a, "second");
    assert!(runs(a.take_effects()).is_empty());
    a.on_key(key(KeyCode::Esc));
    assert!(a.take_effects().iter().any(|e| matches!(e, Effect::Cancel)));
    a.on_run_finished(Ok(RunOutcome {
        result: String::new(),
        status: RunStatus::Cancelled,
        usage: Usage::default(),
        turns: 1,
        tool_calls: 0,
    }));
    assert_eq!(runs(a.take_effects())[0].task, "second");
}

#[test]
fn ctrl_c_twice_quits_but_asks_first_when_tasks_run() {
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut a = app();
    a.on_key(ctrl_c);
    assert!(!a.quit);
    a.on_key(ctrl_c);
    assert!(a.quit);

    let mut a = app();
    let rec: TaskRecord = serde_json::from_value(serde_json::json!({
        "id": "t1", "kind": "agent", "description": "d", "status": "running",
        "owner": "lead", "created_ms": 0, "output_file": "/tmp/x", "host_pid": 1
    }))
    .unwrap();
    a.tasks.set_records(vec![rec]);
    type_line(&mut a, "/exit");
    assert!(a.confirm_quit && !a.quit);
    a.on_key(key(KeyCode::Char('n')));
    assert!(!a.confirm_quit && !a.quit);
    type_line(&mut a, "/exit");
    a.on_key(key(KeyCode::Char('y')));
    assert!(a.quit);
}

#[test]
fn events_stream_into_the_transcript_and_usage_adds_up() {
    let mut a = app();
    let ev = |agent: &str, kind| Event {
        agent: agent.into(),
        kind,
    };
    a.on_event(ev("lead", EventKind::TextDelta { text: "Hel".into() }));
    a.on_event(ev("lead", EventKind::TextDelta { text: "lo".into() }));
    a.on_event(ev(
        "general-purpose/t1",
        EventKind::TextDelta {
            text: "sub noise".into(),
        },
    ));
    a.on_event(ev(
        "lead",
        EventKind::ToolCallStarted {
            call: ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.rs"}"#.into(),
            },
        },
    ));
    a.on_event(ev(
        "general-purpose/t1",
        EventKind::TurnFinished {
            turn: 1,
            stop_reason: crate::protocol::StopReason::EndTurn,
            usage: Usage {
                input_tokens: 5,
                output_tokens: 2,
                ..Usage::default()
            },
        },
    ));
    let e = a.transcript.entries();
    assert_eq!(e[0], Entry::Assistant("Hello".into()));
    assert!(matches!(&e[1], Entry::Tool(t) if t.target == "a.rs"));
    assert_eq!(e.len(), 2, "subagent text stays in its log");
    assert_eq!(a.usage.input_tokens + a.usage.output_tokens, 7);
}

#[test]
fn a_call_refused_after_the_engine_allowed_it_reads_refused_and_an_idle_teammate_idle() {
    let mut a = app();
    let ev = |agent: &str, kind| Event {
        agent: agent.into(),
        kind,
    };
    let call = ToolCall {
        id: "c1".into(),
        name: "edit_file".into(),
        arguments: r#"{"path":"main.rs"}"#.into(),
    };
    a.on_event(ev("lead", EventKind::ToolCallStarted { call }));
    a.on_event(ev(
        "lead",
        EventKind::PermissionDecided {
            call_id: "c1".into(),
            verdict: crate::protocol::decision::Verdict::Allow,
            source: crate::protocol::decision::Source::Mode,
            reason: "mode".into(),
        },
    ));
    a.on_event(ev(
        "lead",
        EventKind::ToolCallFinished {
            call_id: "c1".into(),
            name: "edit_file".into(),
            is_error: true,
            error_code: Some("tool_not_allowed".into()),
            summary: "tool is not available in the current mode".into(),
        },
    ));
    let shown = a.transcript.tool("lead", "c1").unwrap().decision.clone();
    assert_eq!(shown, Some(("refused".into(), "the gate".into())));
    // A teammate's run ending means it waits for mail; a subagent's means it is done.
    let member = |name: &str, id: &str| crate::team::view::MemberView {
        name: name.into(),
        agent_type: "general-purpose".into(),
        agent_id: Some(id.into()),
        status: None,
        current_item: None,
        last_activity_ms: None,
        unread: 0,
        worktree: None,
    };
    a.team.set_view(crate::team::view::TeamView {
        team: "s1".into(),
        dir: "/t".into(),
        members: vec![member("alice", "general-purpose/alice")],
        items: Vec::new(),
    });
    for agent in ["general-purpose/alice", "general-purpose/t1"] {
        let end = EventKind::RunFinished {
            result: String::new(),
            status: "completed".into(),
            usage: Usage::default(),
            turns: 1,
        };
        a.on_event(ev(agent, end));
    }
    let text = notices(&a);
    assert!(text.contains("[general-purpose/alice] idle"), "{text}");
    assert!(text.contains("[general-purpose/t1] completed"), "{text}");
}

#[test]
fn commands_print_help_status_permissions_agents_worktrees() {
    let mut a = app();
    for c in [
        "/help",
        "/status",
        "/permissions",
        "/agents",
        "/bogus",
        // Last: it opens the worktrees panel, which then has the keyboard.
        "/worktrees",
    ] {
        type_line(&mut a, c);
    }
    let text = notices(&a);
    assert!(
        text.contains("/plan") && text.contains("Alt+Enter"),
        "{text}"
    );
    assert!(text.contains("Session s1"));
    assert!(text.contains("Permission mode: default (read: allow, write: ask, exec: ask"));
    assert!(text.contains("general-purpose: does things"));
    assert!(text.contains("Unknown command /bogus"));
    assert!(a.worktrees.open, "/worktrees opens the review panel");
    let effects = a.take_effects();
    assert!(
        effects.iter().any(|e| matches!(e, Effect::LoadWorktrees)),
        "{effects:?}"
    );
    assert!(runs(effects).is_empty());
}

#[test]
fn mcp_command_asks_the_runtime_for_the_servers_status() {
    let mut a = app();
    type_line(&mut a, "/mcp");
    let effects = a.take_effects();
    assert!(
        matches!(effects.as_slice(), [Effect::McpStatus]),
        "{effects:?}"
    );
}

#[test]
fn a_background_completion_starts_a_follow_up_only_when_idle() {
    let rec: TaskRecord = serde_json::from_value(serde_json::json!({
        "id": "t1", "kind": "agent", "description": "d", "status": "completed",
        "owner": "lead", "created_ms": 0, "output_file": "/tmp/x", "host_pid": 1
    }))
    .unwrap();
    let mut a = app();
    type_line(&mut a, "busy");
    a.take_effects();
    a.on_task_completed(&rec);
    assert!(runs(a.take_effects()).is_empty());
    a.on_run_finished(completed("ok"));
    a.on_task_completed(&rec);
    assert_eq!(runs(a.take_effects())[0].task, FOLLOW_UP);
}

#[test]
fn team_mail_wakes_an_idle_lead_and_waits_for_a_busy_one() {
    let mut a = app();
    type_line(&mut a, "busy");
    a.take_effects();
    a.on_team_mail();
    assert!(runs(a.take_effects()).is_empty());
    a.on_run_finished(completed("ok"));
    a.on_team_mail();
    assert_eq!(
        runs(a.take_effects())[0].task,
        crate::agent::follow_up::TEAM_NEWS
    );
}

#[test]
fn permissions_lists_the_rules_of_the_settings_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".crew")).unwrap();
    std::fs::write(
        dir.path().join(".crew/settings.json"),
        r#"{"permissions":{"allow":["Read(src/**)"],"deny":["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    let mut a = app();
    a.info.project_root = dir.path().to_path_buf();
    type_line(&mut a, "/permissions");
    let text = notices(&a);
    // The folder is not trusted: the project's allow rule is ignored, and said so.
    assert!(!text.contains("allow Read(src/**)"), "{text}");
    assert!(
        text.contains("not trusted") && text.contains("`Read(src/**)`"),
        "{text}"
    );
    assert!(text.contains("deny Bash(rm:*)"), "{text}");
    assert!(text.contains("settings.json"), "{text}");
    std::fs::write(
        dir.path().join(".crew/settings.local.json"),
        r#"{"permissions":{"allow":["Read(src/**)"]}}"#,
    )
    .unwrap();
    type_line(&mut a, "/permissions");
    assert!(
        notices(&a).contains("allow Read(src/**)"),
        "local rules need no trust"
    );
}

#[test]
fn team_panel_keys_become_team_effects_and_leave_the_input_alone() {
    use crate::team::view::{MemberView, TeamView};
    let mut a = app();
    a.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    assert!(a.team.open);
    assert_eq!(a.team.tab, super::super::team_panel::TeamTab::Items);
    a.on_key(key(KeyCode::Esc));
    assert!(!a.team.open);
    type_line(&mut a, "/team");
    assert!(a.team.open);
    assert_eq!(a.team.tab, super::super::team_panel::TeamTab::Members);
    a.team.set_view(TeamView {
        team: "s1".into(),
        dir: "/tmp/t".into(),
        members: vec![MemberView {
            name: "bob".into(),
            agent_type: "general-purpose".into(),
            agent_id: Some("general-purpose/t1".into()),
            status: Some(crate::team::MemberStatus::Idle),
            current_item: None,
            last_activity_ms: Some(1),
            unread: 0,
            worktree: None,
        }],
        items: Vec::new(),
    });
    a.take_effects();
    a.on_key(key(KeyCode::Char('x')));
    a.on_key(key(KeyCode::Enter));
    for c in "go".chars() {
        a.on_key(key(KeyCode::Char(c)));
    }
    a.on_key(key(KeyCode::Enter));
    let effects: Vec<String> = a.take_effects().iter().map(|e| format!("{e:?}")).collect();
    assert_eq!(
        effects,
        [
            r#"StopTeammate("bob")"#,
            r#"LoadTeammateTranscript("bob")"#,
            r#"SendToTeammate { to: "bob", message: "go" }"#
        ]
    );
    assert!(a.input.text().is_empty(), "typing went to the teammate");
    assert!(a.running.is_none(), "nothing was sent to the lead");
}

fn app_with_commands() -> App {
    let mut a = app();
    a.info.commands = vec![
        ("review".into(), "[file] Review a file (project)".into()),
        (
            "frontend:test".into(),
            "Run the UI tests (project:frontend)".into(),
        ),
    ];
    a
}

#[test]
fn typing_a_slash_offers_built_in_and_custom_commands_and_tab_completes() {
    let mut a = app_with_commands();
    a.on_key(key(KeyCode::Char('/')));
    let offered: Vec<String> = a.completions().into_iter().map(|(n, _)| n).collect();
    assert!(offered.contains(&"plan".to_string()) && offered.contains(&"review".to_string()));
    for ch in "rev".chars() {
        a.on_key(key(KeyCode::Char(ch)));
    }
    assert_eq!(a.completions().len(), 1);
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.input.text(), "/review ");
    // Once arguments are being typed, nothing is offered.
    assert!(a.completions().is_empty());
    for ch in "src/main.rs".chars() {
        a.on_key(key(KeyCode::Char(ch)));
    }
    a.on_key(key(KeyCode::Enter));
    let effects = a.take_effects();
    let started: Vec<(String, String)> = effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::RunCommand { name, args, .. } => Some((name, args)),
            _ => None,
        })
        .collect();
    assert_eq!(started, [("review".to_string(), "src/main.rs".to_string())]);
    assert_eq!(a.running, Some(AgentMode::Chat));
    // While it runs, another command waits its turn.
    type_line(&mut a, "/frontend:test");
    assert!(a.take_effects().is_empty());
    a.on_run_finished(completed("reviewed"));
    assert!(matches!(
        a.take_effects().as_slice(),
        [Effect::RunCommand { name, .. }] if name == "frontend:test"
    ));
}

#[test]
fn an_unknown_slash_name_is_still_a_notice_not_a_run() {
    let mut a = app_with_commands();
    type_line(&mut a, "/revue x");
    assert!(a.take_effects().is_empty());
    assert!(notices(&a).contains("Unknown command /revue"));
}

#[test]
fn memory_command_lists_loaded_files_and_those_added_as_the_lead_worked() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(home.join(".claude/CLAUDE.md"), "terse").unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "rules @docs/x.md").unwrap();
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    std::fs::write(repo.join("docs/x.md"), "style").unwrap();
    let mut a = app();
    a.info.cwd = repo.clone();
    a.info.project_root = repo.clone();
    a.info.home = Some(home.clone());
    type_line(&mut a, "/memory");
    let text = notices(&a);
    assert!(text.contains(&format!(
        "{} (user,",
        home.join(".claude/CLAUDE.md").display()
    )));
    assert!(text.contains(&format!(
        "{} (project, 5 bytes, imported by {})",
        repo.join("docs/x.md").display(),
        repo.join("CLAUDE.md").display()
    )));
    let sub = crate::memory::MemoryFile {
        path: repo.join("api/AGENTS.md"),
        scope: crate::memory::Scope::Subdirectory,
        imported_by: None,
        depth: 0,
        text: "api".into(),
    };
    let result = crate::protocol::ToolResult::ok(
        "c1",
        format!(
            "fn f() {{}}{}",
            crate::memory::render::reminder(
                &[sub],
                &crate::memory::render::Names::new(&repo, Some(&home))
            )
        ),
    );
    a.on_event(Event {
        agent: "lead".into(),
        kind: EventKind::MessageAppended {
            message: crate::protocol::Message {
                role: crate::protocol::Role::User,
                content: vec![crate::protocol::ContentBlock::ToolResult(result)],
            },
        },
    });
    type_line(&mut a, "/memory");
    assert!(notices(&a).contains(&format!(
        "Added to the lead's conversation so far:\n  {} (subdirectory)",
        "api/AGENTS.md"
    )));
}

#[test]
fn a_custom_command_after_plan_plans_and_the_do_run_gets_the_expanded_task() {
    let mut a = app_with_commands();
    type_line(&mut a, "/plan");
    type_line(&mut a, "/review src/main.rs");
    let effects = a.take_effects();
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::RunCommand { name, args, mode: AgentMode::Plan }]
                if name == "review" && args == "src/main.rs"
        ),
        "{effects:?}"
    );
    assert_eq!(a.running, Some(AgentMode::Plan));
    a.on_command_expanded("Review src/main.rs for bugs.".into());
    a.on_run_finished(completed("1. read main.rs"));
    assert!(notices(&a).contains("Plan ready"));
    a.on_key(key(KeyCode::Char('1')));
    let run = runs(a.take_effects()).remove(0);
    assert_eq!(run.mode, AgentMode::Do);
    assert_eq!(run.task, "Review src/main.rs for bugs.");
    assert_eq!(run.plan.as_deref(), Some("1. read main.rs"));
    // Back in Chat, a command runs as Chat again.
    a.on_run_finished(completed("done"));
    type_line(&mut a, "/review x");
    assert!(matches!(
        a.take_effects().as_slice(),
        [Effect::RunCommand {
            mode: AgentMode::Chat,
            ..
        }]
    ));
}

#[test]
fn a_restarted_service_is_shown_with_what_happened() {
    let mut a = app();
    a.on_event(crate::events::Event {
        agent: "session".into(),
        kind: crate::events::EventKind::ActorRestarted {
            actor: "gate".into(),
            reason: "panicked".into(),
            restarts: 1,
        },
    });
    assert!(notices(&a).contains("restarted the gate after it failed: panicked"));
}

#[test]
fn compact_command_asks_the_runtime_to_compact_with_what_to_keep_but_not_mid_turn() {
    let mut a = app();
    type_line(&mut a, "/compact keep the API notes");
    let effects = a.take_effects();
    assert!(
        matches!(effects.as_slice(), [Effect::Compact(Some(w))] if w == "keep the API notes"),
        "{effects:?}"
    );
    type_line(&mut a, "/compact");
    assert!(matches!(
        a.take_effects().as_slice(),
        [Effect::Compact(None)]
    ));
    type_line(&mut a, "busy");
    a.take_effects();
    type_line(&mut a, "/compact");
    assert!(a.take_effects().is_empty());
}
