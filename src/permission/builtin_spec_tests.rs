//! Each built-in tool's permission spec, as the engine applies it: how its arguments
//! classify, the mode fallback of its category, and the rule names that cover it. The
//! specs are the tools' (`crate::tools`), the engine is `crew-policy`'s: these tests join
//! the two, so they live here, above both.

use std::path::{Path, PathBuf};

use crate::permission::classify::{Classified, ClassifyError, Target, classify};
use crate::permission::rules::Subject;
use crate::permission::{
    Category, CheckRequest, Layer, PermissionMode, Policy, Rule, RuleKind, RuleName, Verdict, check,
};
use crate::protocol::ToolCall;
use crate::tools::builtin_permission;
use crate::tools::rule_names::ParseRule;

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
        // web_fetch asks for a host nothing lists, except in bypassPermissions; a call
        // without its `url` is malformed, and denied, in every mode.
        ("web_fetch", r#"{"url":"https://docs.rs/x"}"#, Def, false, Verdict::Ask),
        ("web_fetch", r#"{"url":"https://docs.rs/x"}"#, Bypass, true, Verdict::Allow),
        ("web_fetch", "{}", Bypass, false, Verdict::Deny),
        // A tool without a spec is unknown: it asks.
        ("web_search", "{}", Bypass, true, Verdict::Ask),
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

fn classify_builtin(name: &str, args: &str) -> Result<Classified, ClassifyError> {
    classify(name, builtin_permission(name).as_ref(), args)
}

#[test]
#[rustfmt::skip]
fn arguments_classify_by_each_tools_spec() {
    let ok = [
        ("read_file", r#"{"path":"a"}"#, Target::Path(Some("a".into()))),
        ("find_files", r#"{"pattern":"*.rs"}"#, Target::Path(None)),
        ("search_code", r#"{"pattern":"x","path":"src"}"#, Target::Path(Some("src".into()))),
        ("run_command", r#"{"command":"ls"}"#, Target::Command("ls".into())),
        ("agent", r#"{"prompt":"p","subagent_type":"Explore"}"#, Target::Agent("Explore".into())),
        ("Task", r#"{"prompt":"p"}"#, Target::Agent("general-purpose".into())),
        ("mcp__gh__issue", "{}", Target::Mcp("mcp__gh__issue".into())),
        ("web_fetch", r#"{"url":"https://a.example/b"}"#, Target::Url("https://a.example/b".into())),
        ("task_list", "{}", Target::None),
    ];
    for (name, args, want) in ok {
        assert_eq!(classify_builtin(name, args).unwrap().target, want, "{name}");
    }
    let c = classify_builtin("find_files", r#"{"pattern":"*.rs","path":"src"}"#).unwrap();
    assert_eq!(c.patterns, ["*.rs"]);
    assert_eq!(c.rule_names, [RuleName::Glob, RuleName::Read]);
    let bad = [
        ("read_file", "{}", "missing required argument `path`"),
        ("read_file", r#"{"path":3}"#, "`path` must be a string"),
        ("write_file", "not json", "not valid JSON"),
        ("run_command", "[]", "must be a JSON object"),
        ("run_command", r#"{"command":"  "}"#, "empty"),
        ("search_code", r#"{"path":"src"}"#, "`pattern`"),
        ("agent", r#"{"subagent_type":"x"}"#, "`prompt`"),
        ("web_fetch", "{}", "missing required argument `url`"),
        ("web_fetch", r#"{"url":" "}"#, "empty"),
    ];
    for (name, args, want) in bad {
        let e = classify_builtin(name, args).unwrap_err();
        assert!(matches!(e, ClassifyError::Arguments(_)), "{name} {args}");
        assert!(e.to_string().contains(want), "{e}");
    }
    assert!(matches!(classify_builtin("web_search", "{}"), Err(ClassifyError::Unknown(_))));
}

#[test]
#[rustfmt::skip]
fn every_tool_agrees_with_itself_safety_and_category() {
    // One source of truth: a read-only tool falls back as a read, a side-effecting
    // one never does (task_stop is task control, not a read).
    for name in [
        "read_file", "find_files", "search_code", "write_file", "edit_file", "run_command", "agent",
        "task_list", "task_output", "task_stop", "todo_add", "todo_update", "todo_get", "todo_list",
    ] {
        let def = crate::tools::builtin_definition(name).unwrap();
        let spec = def.permission.as_ref().unwrap();
        let reads = spec.category == Category::Read;
        let read_only = def.safety == crate::tools::Safety::ReadOnly;
        assert_eq!(reads, read_only, "{name}: {:?} vs {:?}", spec.category, def.safety);
    }
    let stop = builtin_permission("task_stop").unwrap();
    assert_eq!(stop.category, Category::Control);
    // The one read-only tool that does not fall back as a read: web_fetch changes nothing
    // here (Plan Mode may use it), but its request leaves the machine, so it falls back
    // as network access, which asks.
    let fetch = crate::tools::builtin_definition("web_fetch").unwrap();
    assert_eq!(fetch.safety, crate::tools::Safety::ReadOnly);
    assert_eq!(fetch.permission.as_ref().unwrap().category, Category::Network);
}

#[test]
fn web_fetch_rules_name_it_by_rule_name_or_own_name() {
    let url = |u: &str| format!(r#"{{"url":"{u}"}}"#);
    let tmp = tempfile::tempdir().unwrap();
    for text in ["WebFetch(domain:docs.rs)", "web_fetch(domain:docs.rs)"] {
        let policy = Policy {
            rules: vec![Rule::parse(text, Verdict::Allow, Layer::Local, None).unwrap()],
            ..Policy::default()
        };
        for (u, want) in [
            ("https://docs.rs/a", Verdict::Allow),
            ("https://evil.example/", Verdict::Ask),
        ] {
            let req = CheckRequest {
                call: ToolCall {
                    id: "c".into(),
                    name: "web_fetch".into(),
                    arguments: url(u),
                },
                spec: builtin_permission("web_fetch"),
                cwd: tmp.path().to_path_buf(),
                mode: PermissionMode::Default,
            };
            assert_eq!(check(&req, &policy).verdict, want, "{text} {u}");
        }
    }
    // Agent files and `crew permissions check` say WebFetch, as Claude Code does.
    assert_eq!(crate::tools::rule_names::tool_name("WebFetch"), "web_fetch");
}

#[test]
#[rustfmt::skip]
fn path_patterns() {
    let bases = vec![PathBuf::from("/p")];
    let spec = |tool: &str| crate::tools::builtin_permission(tool).unwrap().rule_names;
    let (read_file, search_code, write_file, edit_file) =
        (spec("read_file"), spec("search_code"), spec("write_file"), spec("edit_file"));
    let m = |r: &str, names: &[RuleName], path: &str| {
        let rule = Rule::parse(r, RuleKind::Allow, Layer::Project, Some(Path::new("/home/u")));
        rule.unwrap().matches(&Subject::Path { names, real: Path::new(path), bases: &bases })
    };
    let table = [
        ("Read(src/**)", &read_file, "/p/src/a/b.rs", true),
        ("Read(src/**)", &read_file, "/p/lib/src/b.rs", false),
        ("Read(*.env)", &read_file, "/p/deep/x/.env", true),
        ("Read(.env)", &read_file, "/p/deep/x/.env", true),
        ("Read(*.env)", &read_file, "/p/deep/prod.env", true),
        ("Read(secrets)", &read_file, "/p/a/secrets/key", true),
        ("Read(/src/*.rs)", &read_file, "/p/src/a.rs", true),
        ("Read(/src/*.rs)", &read_file, "/p/src/a/b.rs", false),
        ("Read(//etc/**)", &read_file, "/etc/hosts", true),
        ("Read(~/.env)", &read_file, "/home/u/.env", true),
        ("Read(src/**)", &search_code, "/p/src/x", true),
        ("Glob(src/**)", &read_file, "/p/src/x", false),
        ("Edit(src/**)", &write_file, "/p/src/x", true),
        ("Edit(src/**)", &edit_file, "/p/src/x", true),
        ("Write(src/**)", &edit_file, "/p/src/x", false),
        ("Edit(!src/**)", &write_file, "/p/docs/x", true),
        ("Edit(=/p/a.txt)", &write_file, "/p/a.txt", true),
        ("Edit(~^/p/.*\\.md$)", &write_file, "/p/x.md", true),
        // A tool's own name stands for its own rule name (from its definition).
        ("write_file(src/**)", &write_file, "/p/src/x", true),
        ("write_file(src/**)", &edit_file, "/p/src/x", false),
        ("read_file(src/**)", &search_code, "/p/src/x", true),
    ];
    for (r, kind, path, want) in table {
        assert_eq!(m(r, kind, path), want, "{r} vs {path}");
    }
}
