//! Claude Code's command line on crew: the task from standard input (`-p` alone or `-p -`),
//! `--dangerously-skip-permissions`, `--permission-mode plan`, `--verbose`,
//! `--allowedTools`/`--disallowedTools`, `--add-dir`, `--agents`/`--agent`, the system
//! prompt flags, Claude Code's tool names in `crew permissions check`, and the exit codes a
//! script relies on (bad arguments exit 2 before anything runs).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// `crew ARGS…` with `stdin` piped in, on the scripted model `script`; returns the
/// output and the recorded requests.
fn crew_with_stdin(
    dir: &std::path::Path,
    script: &Value,
    args: &[&str],
    stdin: &str,
) -> (std::process::Output, Vec<Value>) {
    let files = tempfile::tempdir().unwrap();
    let (path, record) = (files.path().join("s.json"), files.path().join("r.jsonl"));
    std::fs::write(&path, script.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(args)
        .arg("--model")
        .arg(format!("script:{}", path.display()))
        .arg("--record-requests")
        .arg(&record)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, requests)
}

fn first_user_text(requests: &[Value]) -> String {
    requests
        .first()
        .map(|r| r["messages"][0].to_string())
        .unwrap_or_default()
}

#[test]
fn the_task_comes_from_stdin_with_p_alone_or_p_dash() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "Read you."}]});
    for args in [&["-p"][..], &["-p", "-"][..], &["--print"][..]] {
        let (out, requests) = crew_with_stdin(dir.path(), &script, args, "summarise STDIN-TASK\n");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("Read you."));
        let sent = first_user_text(&requests);
        assert!(sent.contains("summarise STDIN-TASK"), "{args:?}: {sent}");
        assert!(!sent.contains("\"-\""), "{sent}");
    }
    // Nothing on stdin: a clear error, exit 2, and no model call.
    let (out, requests) = crew_with_stdin(dir.path(), &script, &["-p"], "  \n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input held no task"));
    assert!(requests.is_empty());
}

#[test]
fn an_unknown_permission_mode_exits_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "should not run"}]});
    let (out, requests) = crew_with_stdin(
        dir.path(),
        &script,
        &["-p", "hi", "--permission-mode", "yolo"],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--permission-mode") && stderr.contains("yolo"),
        "{stderr}"
    );
    assert!(requests.is_empty(), "no model call was made");
}

#[test]
fn dangerously_skip_permissions_runs_what_default_mode_refuses_headless() {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "run_command", "input": {"command": "echo made > made.txt"}}]},
        {"text": "done"}]});
    // Default mode: nobody can approve the command headless, so it does not run.
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = crew_with_stdin(dir.path(), &script, &["-p", "make it"], "");
    assert!(out.status.success());
    assert!(!dir.path().join("made.txt").exists());
    // Claude Code's flag is bypassPermissions: it runs.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-p",
        "make it",
        "--dangerously-skip-permissions",
        "--verbose",
    ];
    let (out, _) = crew_with_stdin(dir.path(), &script, &args, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "made\n"
    );
    // With an explicit mode as well, clap refuses the pair (exit 2).
    let both = [
        "-p",
        "x",
        "--dangerously-skip-permissions",
        "--permission-mode",
        "default",
    ];
    let (out, _) = crew_with_stdin(dir.path(), &script, &both, "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn permission_mode_plan_plans_with_read_only_tools() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "1. read 2. change"}]});
    let (out, requests) = crew_with_stdin(
        dir.path(),
        &script,
        &["-p", "plan it", "--permission-mode", "plan"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"read_file"), "{tools:?}");
    assert!(
        !tools.contains(&"write_file") && !tools.contains(&"run_command"),
        "{tools:?}"
    );
}

#[test]
fn allowed_and_disallowed_tools_are_rules_of_this_session() {
    let write = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "kept"}}]},
        {"text": "done"}]});
    // Default mode headless: nobody approves the write.
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = crew_with_stdin(dir.path(), &write, &["-p", "write"], "");
    assert!(out.status.success());
    assert!(!dir.path().join("notes.txt").exists());
    // `--allowedTools Write` allows it, for this run only.
    for flag in ["--allowedTools", "--allowed-tools"] {
        let dir = tempfile::tempdir().unwrap();
        let (out, _) = crew_with_stdin(
            dir.path(),
            &write,
            &["-p", "write", flag, "Bash(git log:*), Write"],
            "",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "kept",
            "{flag}"
        );
        assert!(
            !dir.path().join(".crew/settings.local.json").exists(),
            "nothing is saved"
        );
    }
    // `--disallowedTools` denies, even under bypassPermissions.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-p",
        "write",
        "--permission-mode",
        "bypassPermissions",
        "--disallowedTools",
        "Write(notes.txt)",
    ];
    let (out, _) = crew_with_stdin(dir.path(), &write, &args, "");
    assert!(
        !dir.path().join("notes.txt").exists(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("✗ write_file"));
    // A rule that does not parse is refused before anything runs.
    let (out, requests) = crew_with_stdin(
        dir.path(),
        &write,
        &["-p", "x", "--disallowedTools", "Bash("],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--disallowedTools `Bash(`"));
    assert!(requests.is_empty());
}

#[test]
fn the_system_prompt_can_be_replaced_or_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!({"turns": [{"text": "ok"}]});
    let args = ["-p", "hi", "--append-system-prompt", "EXTRA-HOUSE-RULE"];
    let (_, requests) = crew_with_stdin(dir.path(), &script, &args, "");
    let system = requests[0]["system"].as_str().unwrap();
    assert!(system.ends_with("EXTRA-HOUSE-RULE"), "{system}");
    assert!(
        system.len() > 200,
        "crew's own prompt is still there: {system}"
    );
    let args = ["-p", "hi", "--system-prompt", "ONLY-THIS-PROMPT"];
    let (_, requests) = crew_with_stdin(dir.path(), &script, &args, "");
    assert_eq!(requests[0]["system"], "ONLY-THIS-PROMPT");
}

#[test]
fn permissions_check_takes_claude_codes_tool_names_and_refuses_an_unknown_tool() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    crate::support::committed_repo(&proj, &[("README.md", "# p\n")]);
    std::fs::create_dir_all(proj.join(".crew")).unwrap();
    std::fs::write(
        proj.join(".crew/settings.json"),
        json!({"permissions": {"deny": ["Bash(git push:*)"], "allow": ["Read"]}}).to_string(),
    )
    .unwrap();
    let check = |tool: &str, input: Value| {
        Command::new(env!("CARGO_BIN_EXE_crew"))
            .args(["permissions", "check", "--json", "--tool", tool, "--input"])
            .arg(input.to_string())
            .current_dir(&proj)
            .env("HOME", &home)
            .output()
            .unwrap()
    };
    // Claude Code's names are decided as crew's own tools: `Bash` is `run_command`, under
    // the same deny rule, and `Read` under the same allow rule.
    for (tool, input, verdict, code) in [
        (
            "Bash",
            json!({"command": "git push origin main"}),
            "deny",
            3,
        ),
        (
            "run_command",
            json!({"command": "git push origin main"}),
            "deny",
            3,
        ),
        ("Read", json!({"path": "README.md"}), "allow", 0),
        ("Grep", json!({"pattern": "p"}), "allow", 0),
    ] {
        let out = check(tool, input);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{tool}: {stdout}");
        let decision: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(decision["decision"], verdict, "{tool}: {decision}");
    }
    // A tool no session has is a usage error, not a decision on a made-up name.
    let out = check("Bsh", json!({"command": "ls"}));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tool Bsh: no such tool") && stderr.contains("run_command"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "no decision is printed for an unknown tool"
    );
}

#[test]
fn add_dir_opens_another_directory_to_the_file_tools_and_to_sandboxed_commands() {
    require_features!(Landlock);
    let base = tempfile::tempdir().unwrap();
    let base = base.path().canonicalize().unwrap();
    let (proj, other) = (base.join("proj"), base.join("other"));
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let (by_tool, by_command) = (other.join("by-tool.txt"), other.join("by-command.txt"));
    let script = json!({"turns": [
        {"tool_calls": [
            {"name": "write_file", "input": {"path": by_tool, "content": "tool"}},
            {"name": "run_command", "input": {"command": format!("touch {}", by_command.display())}}
        ]},
        {"text": "done"}]});
    // Unattended, with the command allowed by rule: both writes land outside the roots.
    let args = [
        "-p",
        "write there",
        "--permission-mode",
        "dontAsk",
        "--allowedTools",
        "Write Bash(touch:*)",
    ];
    let (out, _) = crew_with_stdin(&proj, &script, &args, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!by_tool.exists() && !by_command.exists(), "{stderr}");
    // With `--add-dir`, the directory is a root of this session: the file tool writes
    // there, and the OS sandbox lets the command write there too.
    let other_arg = other.display().to_string();
    let mut with_dir = args.to_vec();
    with_dir.extend(["--add-dir", &other_arg]);
    let (out, _) = crew_with_stdin(&proj, &script, &with_dir, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&by_tool).unwrap(),
        "tool",
        "{stderr}"
    );
    assert!(by_command.exists(), "{stderr}");
    assert!(
        !proj.join(".crew/settings.local.json").exists(),
        "nothing is saved"
    );
    // A directory that is not there is a usage error naming the flag.
    let (out, requests) = crew_with_stdin(
        &proj,
        &script,
        &["-p", "x", "--add-dir", "/nonexistent/d"],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--add-dir /nonexistent/d: no such directory")
    );
    assert!(requests.is_empty());
}

/// The request offers the two tools the reviewer names (`Read`, `Grep`) and none that
/// writes, runs or delegates (crew adds the task and team tools every agent has).
fn assert_reads_only(request: &Value) {
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"read_file") && tools.contains(&"search_code"),
        "{tools:?}"
    );
    for other in [
        "write_file",
        "edit_file",
        "run_command",
        "find_files",
        "agent",
    ] {
        assert!(!tools.contains(&other), "{other} in {tools:?}");
    }
}

#[test]
fn agents_json_defines_subagents_for_this_session() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::committed_repo(dir.path(), &[("README.md", "# p\n")]);
    let script = json!({
        "turns": [
            {"tool_calls": [{"name": "agent", "input": {"description": "review", "prompt": "look", "subagent_type": "reviewer"}}]},
            {"text": "done"}
        ],
        "agents": {"reviewer": {"turns": [{"text": "looks fine"}]}}
    });
    let agents = json!({"reviewer": {
        "description": "Reviews code for bugs",
        "prompt": "You are REVIEWER-PROMPT-7.",
        "tools": ["Read", "Grep"]
    }})
    .to_string();
    let args = ["-p", "review", "--agents", &agents];
    let (out, requests) = crew_with_stdin(dir.path(), &script, &args, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The lead is offered the new type, and the subagent runs with its prompt and tools.
    assert!(
        requests[0].to_string().contains("Reviews code for bugs"),
        "{stderr}"
    );
    let sub = requests
        .iter()
        .find(|r| {
            r["agent"]
                .as_str()
                .is_some_and(|a| a.starts_with("reviewer"))
        })
        .unwrap_or_else(|| panic!("no request of the reviewer: {stderr}"));
    assert!(
        sub["system"].to_string().contains("REVIEWER-PROMPT-7"),
        "{sub}"
    );
    assert_reads_only(sub);
    // `--agent`: the lead itself runs as the agent, with its prompt and tools.
    let lead = json!({"turns": [{"text": "reviewed"}]});
    let args = ["-p", "review", "--agents", &agents, "--agent", "reviewer"];
    let (out, requests) = crew_with_stdin(dir.path(), &lead, &args, "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(requests[0]["system"], "You are REVIEWER-PROMPT-7.");
    assert_reads_only(&requests[0]);
    let (out, requests) = crew_with_stdin(dir.path(), &lead, &["-p", "x", "--agent", "nobody"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--agent nobody: no such agent"));
    assert!(requests.is_empty());
    // A definition that cannot be used stops the run before the model is asked.
    let bad = json!({"reviewer": {"description": "no prompt"}}).to_string();
    let (out, requests) = crew_with_stdin(dir.path(), &script, &["-p", "x", "--agents", &bad], "");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--agents: agent `reviewer`: field `prompt` is missing"),
        "{stderr}"
    );
    assert!(requests.is_empty());
}

/// The stderr line of `tool`'s refusal when a headless `crew -p` runs one call of it
/// (with `input`) in `dir`.
fn headless_refusal(dir: &std::path::Path, tool: &str, input: Value) -> String {
    let script = json!({"turns": [
        {"tool_calls": [{"name": tool, "input": input}]},
        {"text": "done"}
    ]});
    let (out, _) = crew_with_stdin(dir, &script, &["-p", "do it"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find(|l| l.contains(&format!("✗ {tool}")))
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_string()
}

/// Headless text never cuts a message: a refusal, however long, reaches stderr whole,
/// with the way to allow the call at its end.
#[test]
fn headless_text_shows_a_long_refusal_whole() {
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"path": "out.txt", "content": "x"});
    let line = headless_refusal(dir.path(), "write_file", input);
    assert!(line.chars().count() > 200, "a long message: {line}");
    assert!(!line.ends_with('…'), "cut: {line}");
    assert!(line.contains("--permission-mode acceptEdits"), "{line}");
    assert!(!dir.path().join("out.txt").exists());
}

/// A headless refusal of a command names the rule that allows exactly that command (not
/// an unrelated example), and does not credit the user with a decision nobody made; the
/// rule it names works.
#[test]
fn a_headless_refusal_names_the_rule_for_this_command_and_blames_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"command": "touch made.txt"});
    let line = headless_refusal(dir.path(), "run_command", input.clone());
    assert!(line.contains("`Bash(touch made.txt)`"), "{line}");
    assert!(!line.contains("npm run test"), "{line}");
    assert!(!line.contains("source: user"), "{line}");
    assert!(!dir.path().join("made.txt").exists());
    let script = json!({"turns": [
        {"tool_calls": [{"name": "run_command", "input": input}]},
        {"text": "done"}
    ]});
    let (out, _) = crew_with_stdin(
        dir.path(),
        &script,
        &["-p", "make it", "--allowedTools", "Bash(touch made.txt)"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        dir.path().join("made.txt").exists(),
        "the named rule allows it"
    );
}

/// A crafted command cannot make the refusal suggest a rule or a command line that is
/// not the command refused: the engine reads this one touch without its quotes, as three
/// commands, and pasted into a shell the quoted one-run form would run `touch
/// pwned.txt`. Neither is offered.
#[test]
fn a_headless_refusal_suggests_no_rule_a_quote_could_turn_into_another_command() {
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"command": "touch x'; touch pwned.txt; echo '"});
    let line = headless_refusal(dir.path(), "run_command", input);
    assert!(line.contains("add an allow rule for it"), "{line}");
    assert!(!line.contains("rule `Bash("), "{line}");
    assert!(!line.contains("--allowedTools"), "{line}");
    assert!(!dir.path().join("pwned.txt").exists());
    assert!(!dir.path().join("x; touch pwned.txt; echo ").exists());
}
