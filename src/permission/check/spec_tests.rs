//! Each built-in tool's permission spec, as the engine applies it: the mode fallback of
//! its category and the rule names that cover it.

use crate::permission::{CheckRequest, Layer, PermissionMode, Policy, Rule, Verdict, check};
use crate::protocol::ToolCall;
use crate::tools::builtin_permission;

/// One row per call: the tool, its arguments, the mode and whether the deny rules
/// `Edit(**)` and `Task(Explore)` are set, then the verdict.
#[test]
fn each_tool_falls_back_and_matches_rules_as_its_spec_says() {
    use PermissionMode::{BypassPermissions as Bypass, Default as Def, Strict};
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().canonicalize().unwrap();
    let deny = |text: &str| Rule::parse(text, Verdict::Deny, Layer::User, None).unwrap();
    let denying = Policy {
        rules: vec![deny("Edit(**)"), deny("Task(Explore)")],
        ..Policy::default()
    };
    let explore = r#"{"prompt":"p","subagent_type":"Explore"}"#;
    #[rustfmt::skip]
    let table = [
        // task_stop is task control: allowed from default up, asked in strict.
        ("task_stop", r#"{"task_id":"t1"}"#, Def, false, Verdict::Allow),
        ("task_stop", r#"{"task_id":"t1"}"#, Strict, false, Verdict::Ask),
        // write_file's spec lists Edit among its rule names; read_file's does not.
        ("write_file", r#"{"path":"a.txt","content":"x"}"#, Bypass, true, Verdict::Deny),
        ("read_file", r#"{"path":"."}"#, Bypass, true, Verdict::Allow),
        // `Task` is the agent tool's alias, declared once, on its definition.
        ("agent", explore, Bypass, true, Verdict::Deny),
        ("Task", explore, Bypass, true, Verdict::Deny),
        // A tool without a spec is unknown: it asks.
        ("web_fetch", "{}", Bypass, true, Verdict::Ask),
    ];
    for (tool, args, mode, rules, want) in table {
        let req = CheckRequest {
            call: ToolCall {
                id: "c".into(),
                name: tool.into(),
                arguments: args.into(),
            },
            spec: builtin_permission(tool),
            cwd: cwd.clone(),
            mode,
        };
        let policy = if rules { &denying } else { &Policy::default() };
        assert_eq!(check(&req, policy).verdict, want, "{tool} {args} in {mode}");
    }
}
