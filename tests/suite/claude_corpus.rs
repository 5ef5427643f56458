//! Claude Code's files load unchanged: the corpus in `tests/fixtures/claude-corpus/`
//! (agents, a skill named with spaces, a command, and a plugin with commands, agents,
//! skills and hooks, in the shapes found in the wild) through `crew agents list`, `crew
//! skills list`, `crew commands list`, `crew hooks list` and `crew -p` on the scripted
//! model; plugins from `--plugin-dir` and from `~/.claude/plugins` with `enabledPlugins`;
//! and the attacks: a plugin's symbolic links out of its directory, and a plugin inside an
//! untrusted project, whose hooks must not run.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{committed_repo, crew, put};

/// The corpus in the repository.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-corpus")
}

/// Copies the regular files below `from` to `to` (modes kept).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A home, the corpus project as a committed git repository below it, and the corpus
/// plugin beside them (outside the project).
struct Corpus {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
    plugin: PathBuf,
}

fn setup() -> Corpus {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, proj, plugin) = (
        base.join("home"),
        base.join("proj"),
        base.join("plugins/pr-toolkit"),
    );
    std::fs::create_dir_all(&home).unwrap();
    copy_tree(&corpus().join("project"), &proj);
    committed_repo(&proj, &[]);
    copy_tree(&corpus().join("plugins/pr-toolkit"), &plugin);
    Corpus {
        _tmp: tmp,
        home,
        proj,
        plugin,
    }
}

/// `crew ARGS…` in the project; returns stdout and the exit code.
fn list(c: &Corpus, args: &[&str]) -> (String, Option<i32>) {
    let out = crew(&c.proj, &c.home, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty() || out.status.success(), "{stderr}");
    (stdout, out.status.code())
}

/// `crew -p TASK ARGS…` on the scripted model `turns`; returns stderr and the requests.
fn run_p(c: &Corpus, turns: Value, task: &str, args: &[&str]) -> (String, Vec<Value>) {
    run_script(c, json!({ "turns": turns }), task, args)
}

/// `crew -p TASK ARGS…` on a whole script (the lead's `turns`, subagents' `agents`).
fn run_script(c: &Corpus, script_json: Value, task: &str, args: &[&str]) -> (String, Vec<Value>) {
    let script = c.home.join("script.json");
    std::fs::write(&script, script_json.to_string()).unwrap();
    let record = c.home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let model = format!("script:{}", script.display());
    let mut all = vec![
        "-p",
        task,
        "--model",
        &model,
        "--record-requests",
        record.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = crew(&c.proj, &c.home, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "crew failed: {stderr}");
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (stderr, requests)
}

/// Every tool result text of the last request.
fn tool_results(requests: &[Value]) -> Vec<String> {
    requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn call(name: &str, input: Value) -> Value {
    json!({ "name": name, "input": input })
}

#[test]
fn crew_agents_list_loads_every_corpus_agent_with_warnings_not_refusals() {
    let c = setup();
    let dir = c.plugin.to_str().unwrap();
    let (out, code) = list(&c, &["agents", "list", "--plugin-dir", dir]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("not loaded"), "{out}");
    // The examples stay in the description: `Context:` and `user:` are not fields.
    assert!(
        out.contains("code-reviewer      Use this agent when the user has finished")
            && out.contains("Context: The user just added an endpoint"),
        "{out}"
    );
    assert!(
        out.contains("tools: find_files, read_file, run_command, search_code"),
        "{out}"
    );
    // `tools` as a YAML list, and the unknown field named with its file.
    assert!(
        out.contains("test-runner") && out.contains("tools: read_file, run_command, search_code")
    );
    assert!(
        out.contains("test-runner.md: field `memory` is not one crew knows; it is ignored"),
        "{out}"
    );
    assert!(
        !out.contains("field `Context`") && !out.contains("field `user`"),
        "{out}"
    );
    // The plugin's agent: namespaced, with its origin.
    let plugin_agent =
        "pr-toolkit:silent-failure-hunter Use this agent when reviewing code that handles errors";
    assert!(out.contains(plugin_agent), "{out}");
    assert!(
        out.contains(&format!(
            "from: {}/agents/silent-failure-hunter.md (plugin pr-toolkit)",
            c.plugin.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "pr-toolkit 1.2.0 ({}; --plugin-dir)",
            c.plugin.display()
        )),
        "{out}"
    );
    // Without the flag (and no enabled installed plugin) there is no plugin agent.
    let (out, _) = list(&c, &["agents", "list"]);
    assert!(!out.contains("pr-toolkit"), "{out}");
}

#[test]
fn crew_skills_list_shows_the_slugged_name_the_title_and_the_plugins_skill() {
    let c = setup();
    let dir = c.plugin.to_str().unwrap();
    let (out, code) = list(&c, &["skills", "list", "--plugin-dir", dir]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("hook-development   This skill should be used when the user asks")
            && out.contains("PreToolUse, PostToolUse, Stop, SessionStart. (Hook Development)"),
        "{out}"
    );
    assert!(out.contains("tools: read_file, search_code"), "{out}");
    assert!(
        out.contains(
            "hook-development/SKILL.md: field `version` is not one crew knows; it is ignored"
        ),
        "{out}"
    );
    assert!(
        out.contains("pr-toolkit:writing-hookify-rules") && out.contains("(Writing Hookify Rules)"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "from: {}/skills/writing-rules/SKILL.md (plugin pr-toolkit)",
            c.plugin.display()
        )),
        "{out}"
    );
}

#[test]
fn crew_commands_list_names_plugin_commands_both_ways_and_warns_about_unknown_fields() {
    let c = setup();
    let dir = c.plugin.to_str().unwrap();
    let (out, code) = list(&c, &["commands", "list", "--plugin-dir", dir]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("/review-pr [pr-number] [priority]"), "{out}");
    assert!(
        out.contains("tools: read_file, run_command, search_code"),
        "{out}"
    );
    assert!(
        out.contains("review-pr.md: field `disable-model-invocation` is not one crew knows"),
        "{out}"
    );
    // No other command is /review or /ship: the bare names reach the plugin's.
    assert!(
        out.contains("/review [files...] (also /pr-toolkit:review)")
            && out.contains("(plugin:pr-toolkit)"),
        "{out}"
    );
    assert!(out.contains("/ship  (also /pr-toolkit:ship)"), "{out}");
}

#[test]
fn crew_hooks_list_shows_the_plugins_hook_with_its_root() {
    let c = setup();
    let dir = c.plugin.to_str().unwrap();
    let (out, code) = list(&c, &["hooks", "list", "--plugin-dir", dir]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            r#"PreToolUse        Bash             bash "${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh""#
        ),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "timeout 30 s · plugin:pr-toolkit · {}/hooks/hooks.json (hooks.PreToolUse[0].hooks[0]) · CLAUDE_PLUGIN_ROOT={}",
            c.plugin.display(),
            c.plugin.display()
        )),
        "{out}"
    );
    let (out, _) = list(&c, &["hooks", "list", "--json", "--plugin-dir", dir]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hooks"][0]["scope"], "plugin:pr-toolkit");
    assert_eq!(v["hooks"][0]["plugin_root"], c.plugin.to_str().unwrap());
}

#[test]
fn a_run_uses_the_corpus_the_plugins_command_skill_agent_and_its_guard_hook() {
    let c = setup();
    let dir = c.plugin.to_str().unwrap();
    let hunter = "pr-toolkit:silent-failure-hunter";
    let (stderr, requests) = run_script(
        &c,
        json!({"turns": [
            {"tool_calls": [
                call("run_command", json!({"command": "echo deploy > deployed.txt"})),
                call("run_command", json!({"command": "echo fine > fine.txt"}))
            ]},
            {"tool_calls": [call("agent", json!({
                "description": "hunt", "prompt": "Check src/lib.rs.", "subagent_type": hunter}))]},
            {"tool_calls": [call("skill", json!({"name": "Hook Development"}))]},
            {"text": "reviewed"}
        ], "agents": {hunter: {"turns": [{"text": "HUNTER-REPORT: nothing swallowed"}]}}}),
        "/review src/lib.rs",
        &["--plugin-dir", dir, "--dangerously-skip-permissions"],
    );
    // The plugin's /review (bare name), its `${CLAUDE_PLUGIN_ROOT}` expanded.
    let first = requests[0]["messages"][0].to_string();
    assert!(
        first.contains(&format!(
            "Review these files: src/lib.rs. Use the checklist in {}/checklist.md.",
            c.plugin.display()
        )),
        "{first}"
    );
    // The skills (the title beside the slug) and the plugin's agent type are offered.
    let system = requests[0]["system"].to_string();
    assert!(
        system.contains("- hook-development (Hook Development): This skill should be used")
            && system.contains("- pr-toolkit:writing-hookify-rules (Writing Hookify Rules)"),
        "{system}"
    );
    let tools = requests[0]["tools"].to_string();
    assert!(
        tools.contains("pr-toolkit:silent-failure-hunter"),
        "{tools}"
    );
    // The guard hook blocks the deploy, and only that; the skill loads by the name as
    // written.
    let results = tool_results(&requests);
    assert!(
        results[0].contains("pr-toolkit guard: deploys go through CI")
            && results[0].contains(&format!("(from {})", c.plugin.display())),
        "{results:?}"
    );
    assert!(
        results[3].contains("Skill `hook-development` is active"),
        "{results:?}"
    );
    // The plugin's agent ran as a subagent, with its own prompt.
    assert!(
        results[2].contains("HUNTER-REPORT: nothing swallowed"),
        "{results:?}"
    );
    let sub = requests
        .iter()
        .find(|r| {
            r["system"]
                .to_string()
                .contains("You hunt for silent failures")
        })
        .expect("the plugin agent's prompt reached the model");
    assert!(
        sub["messages"][0].to_string().contains("Check src/lib.rs."),
        "{sub}"
    );
    assert!(
        !c.proj.join("deployed.txt").exists(),
        "the guarded command ran"
    );
    assert!(c.proj.join("fine.txt").exists(), "{stderr}");
    // The corpus's ignored fields are named on stderr, not refused.
    assert!(stderr.contains("field `memory`"), "{stderr}");
}

#[test]
fn an_installed_plugin_loads_only_when_the_settings_enable_it() {
    let c = setup();
    copy_tree(
        &c.plugin,
        &c.home.join(".claude/plugins/cache/corpus/pr-toolkit/1.2.0"),
    );
    // A marketplace clone holds it too; the installed copy is the one used.
    copy_tree(
        &c.plugin,
        &c.home
            .join(".claude/plugins/marketplaces/corpus/plugins/pr-toolkit"),
    );
    let (out, _) = list(&c, &["commands", "list"]);
    assert!(
        !out.contains("pr-toolkit"),
        "not enabled, yet loaded: {out}"
    );
    put(
        &c.home,
        ".claude/settings.json",
        r#"{"enabledPlugins": {"pr-toolkit@corpus": true}}"#,
    );
    let (out, code) = list(&c, &["commands", "list"]);
    assert_eq!(code, Some(0), "{out}");
    let cached = c.home.join(".claude/plugins/cache/corpus/pr-toolkit/1.2.0");
    assert!(
        out.contains(&format!("from: {}/commands/ship.md", cached.display())),
        "{out}"
    );
    assert!(out.contains("enabled as `pr-toolkit@corpus`"), "{out}");
    let (out, _) = list(&c, &["hooks", "list"]);
    assert!(out.contains("plugin:pr-toolkit"), "{out}");
    // Disabled again in the project's local settings: gone.
    put(
        &c.proj,
        ".claude/settings.local.json",
        r#"{"enabledPlugins": {"pr-toolkit@corpus": false}}"#,
    );
    let (out, _) = list(&c, &["agents", "list"]);
    assert!(!out.contains("pr-toolkit"), "{out}");
}

#[test]
fn a_plugins_links_out_of_its_directory_are_refused_and_nothing_of_them_is_read_or_run() {
    let c = setup();
    let outside = c.plugin.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("secret.md");
    std::fs::write(
        &secret,
        "---\nname: stolen\ndescription: TOP-SECRET-CONTENT\n---\nTOP-SECRET-CONTENT",
    )
    .unwrap();
    let marker = outside.join("escaped-hook-ran");
    std::fs::write(
        outside.join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "", "hooks": [
            {"type": "command", "command": format!("touch {}", marker.display())}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    // `agents/leak.md -> …/secret.md` (absolute), `hooks/hooks.json -> ../../outside/…`
    // (relative), and a skill folder that is a link out of the plugin.
    std::os::unix::fs::symlink(&secret, c.plugin.join("agents/leak.md")).unwrap();
    std::fs::remove_file(c.plugin.join("hooks/hooks.json")).unwrap();
    std::os::unix::fs::symlink(
        "../../outside/hooks.json",
        c.plugin.join("hooks/hooks.json"),
    )
    .unwrap();
    put(
        &outside,
        "skill/SKILL.md",
        "---\nname: s\ndescription: TOP-SECRET-CONTENT\n---\nx",
    );
    std::os::unix::fs::symlink(outside.join("skill"), c.plugin.join("skills/linked")).unwrap();
    let dir = c.plugin.to_str().unwrap();

    let (out, code) = list(&c, &["agents", "list", "--plugin-dir", dir]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "not loaded: {}/agents/leak.md: a symbolic link that leads outside the plugin",
            c.plugin.display()
        )),
        "{out}"
    );
    assert!(
        !out.contains("TOP-SECRET-CONTENT") && !out.contains("stolen"),
        "{out}"
    );
    assert!(
        out.contains("pr-toolkit:silent-failure-hunter"),
        "the rest still loads: {out}"
    );
    let (out, _) = list(&c, &["skills", "list", "--plugin-dir", dir]);
    assert!(
        out.contains("skills/linked/SKILL.md: a symbolic link that leads outside the plugin"),
        "{out}"
    );
    assert!(!out.contains("TOP-SECRET-CONTENT"), "{out}");
    let (out, _) = list(&c, &["hooks", "list", "--plugin-dir", dir]);
    assert!(!out.contains("escaped-hook-ran"), "{out}");
    assert!(
        out.contains("not used:")
            && out.contains("hooks/hooks.json: a symbolic link that leads outside the plugin"),
        "{out}"
    );
    assert!(out.contains("no hooks run"), "{out}");
    let (stderr, _) = run_p(
        &c,
        json!([
            {"tool_calls": [call("read_file", json!({"path": "src/lib.rs"}))]},
            {"text": "done"}
        ]),
        "read it",
        &["--plugin-dir", dir],
    );
    assert!(!marker.exists(), "a hook of the linked hooks.json ran");
    assert!(stderr.contains("outside the plugin"), "{stderr}");
}

#[test]
fn a_plugin_inside_an_untrusted_project_loads_but_runs_no_hooks_until_trusted() {
    let c = setup();
    // The repository vendors the plugin and tells users to pass `--plugin-dir`.
    let vendored = c.proj.join("vendor/pr-toolkit");
    copy_tree(&c.plugin, &vendored);
    support::git(&c.proj, &["add", "."]);
    support::git(&c.proj, &["commit", "-qm", "vendor the plugin"]);
    let turns = json!([
        {"tool_calls": [call("run_command", json!({"command": "echo deploy > deployed.txt"}))]},
        {"text": "done"}
    ]);
    let args = [
        "--plugin-dir",
        "vendor/pr-toolkit",
        "--dangerously-skip-permissions",
    ];
    let (stderr, requests) = run_p(&c, turns.clone(), "ship it", &args);
    assert!(
        stderr.contains("the plugin `pr-toolkit` is inside this folder, which is not trusted, so its hooks will not run")
            && stderr.contains("crew trust"),
        "{stderr}"
    );
    // Its agents still load (they can only narrow); its hook did not run.
    assert!(
        requests[0]["tools"]
            .to_string()
            .contains("pr-toolkit:silent-failure-hunter")
    );
    assert!(
        c.proj.join("deployed.txt").exists(),
        "the hook ran untrusted"
    );
    std::fs::remove_file(c.proj.join("deployed.txt")).unwrap();
    let (out, _) = list(&c, &["hooks", "list", "--plugin-dir", "vendor/pr-toolkit"]);
    assert!(
        out.contains("not used:") && out.contains("not trusted"),
        "{out}"
    );

    let trust = crew(&c.proj, &c.home, &["trust", c.proj.to_str().unwrap()]);
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    let (_, requests) = run_p(&c, turns, "ship it", &args);
    assert!(
        !c.proj.join("deployed.txt").exists(),
        "the trusted guard did not run"
    );
    assert!(
        tool_results(&requests)[0].contains("pr-toolkit guard: deploys go through CI"),
        "{:?}",
        tool_results(&requests)
    );
}

#[test]
fn a_plugin_dir_that_is_no_plugin_exits_2_naming_the_manifest() {
    let c = setup();
    let out = crew(&c.proj, &c.home, &["agents", "list", "--plugin-dir", "src"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--plugin-dir src") && stderr.contains(".claude-plugin/plugin.json"),
        "{stderr}"
    );
    put(
        &c.proj,
        "bad/.claude-plugin/plugin.json",
        r#"{"name": "has space"}"#,
    );
    let out = crew(&c.proj, &c.home, &["-p", "x", "--plugin-dir", "bad"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("field `name`: `has space` is not a plugin name"),
        "{stderr}"
    );
}
