//! Approval grants through the `PermissionEngine` actor: a session grant allows the next
//! identical call; a forever grant writes one deduplicated rule that a fresh engine loads.

use crate::support;

use crewmaster::engine::{GrantScope, PermissionEngine, PermissionMsg};
use crewmaster::permission::grants::GrantError;
use crewmaster::permission::{Decision, PermissionMode, Policy, Source, Verdict, grant_rules};
use ractor::{Actor, ActorRef, call};
use support::permission::{Fixture, cmd, path};

async fn engine(policy: Policy) -> ActorRef<PermissionMsg> {
    let (actor, _) = Actor::spawn(None, PermissionEngine, policy.into())
        .await
        .unwrap();
    actor
}

async fn ask(e: &ActorRef<PermissionMsg>, f: &Fixture, tool: &str, args: &str) -> Decision {
    call!(
        e,
        PermissionMsg::Check,
        f.req(tool, args, PermissionMode::Default)
    )
    .unwrap()
}

async fn grant(
    e: &ActorRef<PermissionMsg>,
    f: &Fixture,
    tool: &str,
    args: &str,
    scope: GrantScope,
) -> Result<(), GrantError> {
    call!(
        e,
        PermissionMsg::Grant,
        f.req(tool, args, PermissionMode::Default),
        scope
    )
    .unwrap()
}

#[tokio::test]
async fn session_grant_allows_the_next_identical_call_only() {
    let f = Fixture::new();
    let e = engine(f.policy()).await;
    let c = cmd("cargo build --release");
    assert_eq!(ask(&e, &f, "run_command", &c).await.verdict, Verdict::Ask);
    grant(&e, &f, "run_command", &c, GrantScope::Session)
        .await
        .unwrap();
    let d = ask(&e, &f, "run_command", &c).await;
    assert_eq!(
        (d.verdict, d.source),
        (
            Verdict::Allow,
            Source::Rule(crewmaster::permission::Layer::Session)
        )
    );
    // A different command, or the granted one chained with another, still asks.
    assert_eq!(
        ask(&e, &f, "run_command", &cmd("cargo build"))
            .await
            .verdict,
        Verdict::Ask
    );
    assert_eq!(
        ask(&e, &f, "run_command", &cmd("cargo build --release && rm x"))
            .await
            .verdict,
        Verdict::Ask
    );
    // Writes: the grant is for that file.
    grant(
        &e,
        &f,
        "write_file",
        &path("src/main.rs"),
        GrantScope::Session,
    )
    .await
    .unwrap();
    assert_eq!(
        ask(&e, &f, "write_file", &path("src/main.rs"))
            .await
            .verdict,
        Verdict::Allow
    );
    assert_eq!(
        ask(&e, &f, "write_file", &path("src/other.rs"))
            .await
            .verdict,
        Verdict::Ask
    );
    // Nothing was written to disk.
    assert!(!f.proj.join(".crew/settings.local.json").exists());
}

#[tokio::test]
async fn forever_grant_writes_one_deduplicated_rule_that_a_fresh_engine_loads() {
    let f = Fixture::new();
    f.settings(
        "local",
        r#"{"model": "keep-me", "permissions": {"deny": ["Bash(curl:*)"]}}"#,
    );
    let e = engine(f.policy()).await;
    let c = cmd("npm run lint");
    for _ in 0..2 {
        grant(&e, &f, "run_command", &c, GrantScope::Forever)
            .await
            .unwrap();
    }
    assert_eq!(ask(&e, &f, "run_command", &c).await.verdict, Verdict::Allow);
    let text = std::fs::read_to_string(f.proj.join(".crew/settings.local.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["permissions"]["allow"],
        serde_json::json!(["Bash(npm run lint)"])
    );
    assert_eq!(v["model"], "keep-me");
    assert_eq!(
        v["permissions"]["deny"],
        serde_json::json!(["Bash(curl:*)"])
    );
    // A fresh engine (new session) loads it from disk.
    let fresh = engine(f.policy()).await;
    let d = ask(&fresh, &f, "run_command", &c).await;
    assert_eq!(
        (d.verdict, d.source),
        (
            Verdict::Allow,
            Source::Rule(crewmaster::permission::Layer::Local)
        )
    );
}

#[tokio::test]
async fn hard_denied_and_rule_denied_calls_cannot_be_granted() {
    let f = Fixture::new();
    f.settings(
        "user",
        r#"{"permissions": {"deny": ["Bash(curl:*)", "WebFetch(domain:evil.example)"]}}"#,
    );
    let e = engine(f.policy()).await;
    // A hard check or a deny rule refuses; a tool without rule syntax has nothing to grant.
    for (tool, args, refused) in [
        ("run_command", cmd("rm -rf /"), true),
        ("run_command", cmd("curl x"), true),
        ("read_file", path("../proj2/x.txt"), true),
        ("read_file", path("~/.ssh/id_rsa"), true),
        ("task_list", "{}".to_string(), false),
        ("web_search", "{}".to_string(), false),
        // A fetch of a host a deny rule names cannot be granted either.
        (
            "web_fetch",
            r#"{"url":"https://evil.example/x"}"#.to_string(),
            true,
        ),
    ] {
        let r = grant(&e, &f, tool, &args, GrantScope::Forever).await;
        match r {
            Err(GrantError::Refused(_)) if refused => {}
            Err(GrantError::NoRule(_)) if !refused => {}
            other => panic!("{tool} {args}: {other:?}"),
        }
    }
    assert!(!f.proj.join(".crew/settings.local.json").exists());
}

#[test]
fn derived_rules_are_narrow() {
    let f = Fixture::new();
    let p = f.policy();
    let rules = |tool: &str, args: &str| {
        grant_rules(&f.req(tool, args, PermissionMode::Default), &p).unwrap()
    };
    assert_eq!(
        rules("write_file", &path("src/main.rs")),
        ["Write(/src/main.rs)"]
    );
    assert_eq!(
        rules("edit_file", &path("src/a[1].rs")),
        ["Edit(/src/a\\[1\\].rs)"]
    );
    assert_eq!(
        rules("run_command", &cmd("make  test && ls src/main.rs")),
        ["Bash(make test)", "Bash(ls src/main.rs)"]
    );
    // A glob is granted as the whole command, matched against the raw text only.
    assert_eq!(
        rules("run_command", &cmd("make  test && ls *.rs")),
        ["Bash(=make  test && ls *.rs)"]
    );
    assert_eq!(
        rules("agent", r#"{"prompt":"p","subagent_type":"Explore"}"#),
        ["Agent(Explore)"]
    );
    assert_eq!(rules("mcp__gh__list", "{}"), ["mcp__gh__list"]);
    // A fetch is granted for its host, on every port, whatever the path.
    assert_eq!(
        rules("web_fetch", r#"{"url":"https://Docs.RS:8443/a/b?q=1"}"#),
        ["WebFetch(domain:docs.rs)"]
    );
    // A granted glob-like command matches only itself.
    let mut p2 = f.policy();
    crewmaster::permission::grants::grant_session(
        &f.req("run_command", &cmd("ls *.rs"), PermissionMode::Strict),
        &mut p2,
    )
    .unwrap();
    let check = |c: &str| {
        crewmaster::permission::check(&f.req("run_command", &cmd(c), PermissionMode::Strict), &p2)
            .verdict
    };
    assert_eq!(check("ls *.rs"), Verdict::Allow);
    assert_eq!(check("ls secret.rs"), Verdict::Ask);
}

#[tokio::test]
async fn reload_replaces_layers_but_keeps_session_grants() {
    use crewmaster::permission::Layer;
    let f = Fixture::new();
    let e = engine(f.policy()).await;
    grant(
        &e,
        &f,
        "run_command",
        &cmd("cargo build"),
        GrantScope::Session,
    )
    .await
    .unwrap();
    f.settings("project", r#"{"permissions": {"deny": ["Bash(curl:*)"]}}"#);
    e.cast(PermissionMsg::Reload(Box::new(f.policy()))).unwrap();
    let rules = call!(e, PermissionMsg::ListRules).unwrap();
    let shown: Vec<(String, Layer)> = rules.iter().map(|r| (r.rule.clone(), r.layer)).collect();
    assert_eq!(
        shown,
        [
            ("Bash(cargo build)".to_string(), Layer::Session),
            ("Bash(curl:*)".to_string(), Layer::Project)
        ]
    );
    assert_eq!(
        ask(&e, &f, "run_command", &cmd("cargo build"))
            .await
            .verdict,
        Verdict::Allow
    );
    assert_eq!(
        ask(&e, &f, "run_command", &cmd("curl x")).await.verdict,
        Verdict::Deny
    );
}

#[test]
fn granting_a_search_of_the_whole_project_allows_it_again() {
    let f = Fixture::new();
    let mut p = f.policy();
    let req = f.req(
        "find_files",
        r#"{"pattern":"**/*.rs"}"#,
        PermissionMode::Strict,
    );
    assert_eq!(
        crewmaster::permission::check(&req, &p).verdict,
        Verdict::Ask
    );
    let rules = crewmaster::permission::grants::grant_session(&req, &mut p).unwrap();
    assert_eq!(rules, ["Glob(/)"]);
    assert_eq!(
        crewmaster::permission::check(&req, &p).verdict,
        Verdict::Allow
    );
    // It covers the project root only, not every file below it.
    let deeper = f.req(
        "find_files",
        r#"{"pattern":"*","path":"src"}"#,
        PermissionMode::Strict,
    );
    assert_eq!(
        crewmaster::permission::check(&deeper, &p).verdict,
        Verdict::Ask
    );
}

/// A supervisor that leaves restarts to the test.
struct Quiet;

struct Nothing;
impl ractor::Message for Nothing {}

impl Actor for Quiet {
    type Msg = Nothing;
    type State = ();
    type Arguments = ();
    async fn pre_start(
        &self,
        _: ActorRef<Nothing>,
        _: (),
    ) -> Result<(), ractor::ActorProcessingErr> {
        Ok(())
    }
    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<Nothing>,
        _: ractor::SupervisionEvent,
        _: &mut (),
    ) -> Result<(), ractor::ActorProcessingErr> {
        Ok(())
    }
}

#[tokio::test]
async fn a_session_grant_survives_a_restart_of_the_engine() {
    use crewmaster::session::services::{Service, ServiceArgs, Services};
    let f = Fixture::new();
    let (sup, _) = Actor::spawn(None, Quiet, ()).await.unwrap();
    let services = Services::start(
        ServiceArgs {
            policy: f.policy(),
            approver: crewmaster::approver::actor::ApproverPolicy::Headless,
            registry: std::sync::Arc::new(crewmaster::tools::Registry::new()),
            default_timeout: std::time::Duration::from_secs(10),
            results: None,
        },
        sup.get_cell(),
    )
    .await
    .unwrap();
    let c = cmd("cargo build --release");
    let e = services.permission.get();
    grant(&e, &f, "run_command", &c, GrantScope::Session)
        .await
        .unwrap();
    assert_eq!(ask(&e, &f, "run_command", &c).await.verdict, Verdict::Allow);
    services.kill(Service::Permission).await;
    services.restart(Service::Permission).await.unwrap();
    let restarted = services.permission.get();
    assert_ne!(restarted.get_id(), e.get_id());
    let d = ask(&restarted, &f, "run_command", &c).await;
    assert_eq!(
        (d.verdict, d.source),
        (
            Verdict::Allow,
            Source::Rule(crewmaster::permission::Layer::Session)
        ),
        "the restarted engine lost the session grant"
    );
}
