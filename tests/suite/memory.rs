//! Memory files end to end (issue 11): `crew -p` on the scripted model in a temporary git
//! repository laid out like the ones Claude Code users commit, with a temporary HOME, and
//! assertions on the requests the model was sent. The root `CLAUDE.md`, its `@import`s
//! and the user's files are in the first system prompt; a subdirectory's `AGENTS.md` is
//! not, and arrives (once) in the result of the first read of a file there; an import
//! cycle ends; imports of a credential or a denied file are refused with a warning and
//! their contents reach no request; a worktree subagent gets its worktree's copies.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{committed_repo, crew, git, put};

const KEY: &str = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ";

const ROOT_CLAUDE: &str = "# Acme monorepo

- Run `cargo fmt` and `cargo clippy -- -D warnings` before you commit.
- Naming and layout rules: @docs/conventions.md
- Release questions go to @release-team (not a file).
- Deploy key, for convenience: @~/.ssh/id_rsa
- Incident notes: @secrets/incidents.md

Decorators in our Python code look like this, which is not an import:

```python
@app.route(\"/health\")
def health(): ...
```

And `@inline_code.md` is not an import either.
ROOT-MARKER-7f3a
";

/// A repository with memory files at the root, in `docs/`, below `services/api/`, a
/// denied `secrets/` directory, and a home with the user's files and an SSH key.
struct Repo {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

fn repo() -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (home, repo) = (base.join("home"), base.join("repo"));
    put(
        &home,
        ".claude/CLAUDE.md",
        "Answer tersely. USER-MARKER-19c2\n",
    );
    put(&home, ".crew/CREW.md", "CREW-USER-MARKER-55aa\n");
    put(
        &home,
        ".ssh/id_rsa",
        &format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n-----END OPENSSH PRIVATE KEY-----\n"),
    );
    put(&repo, "CLAUDE.md", ROOT_CLAUDE);
    put(
        &repo,
        "docs/conventions.md",
        "Modules are snake_case. IMPORT-MARKER-b81e\nSee also @review.md\n",
    );
    // A cycle: conventions → review → checklist → review.
    put(
        &repo,
        "docs/review.md",
        "REVIEW-MARKER-4d0c\n@checklist.md\n",
    );
    put(
        &repo,
        "docs/checklist.md",
        "CHECKLIST-MARKER-e913\n@review.md\n",
    );
    put(&repo, "secrets/incidents.md", "INCIDENT-SECRET-0b7f\n");
    put(
        &repo,
        ".crew/settings.json",
        r#"{"permissions":{"deny":["Read(./secrets/**)"]}}"#,
    );
    put(
        &repo,
        "services/api/AGENTS.md",
        "Handlers return `Result<Json<_>, ApiError>`. API-AGENTS-MARKER-c4d2\n",
    );
    put(&repo, "services/api/handler.rs", "pub fn health() {}\n");
    put(&repo, "services/api/routes.rs", "pub fn routes() {}\n");
    put(&repo, "README.md", "# acme\n");
    committed_repo(&repo, &[]);
    Repo {
        _tmp: tmp,
        home,
        repo,
    }
}

/// Runs `crew -p` with `script` (JSON) in `cwd`; returns stderr and the recorded requests.
fn run(r: &Repo, cwd: &Path, script: &str, mode: &str) -> (String, Vec<Value>) {
    let script_path = r.home.join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let record = r.home.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let out = crew(
        cwd,
        &r.home,
        &[
            "-p",
            "tidy the api handlers",
            "--permission-mode",
            mode,
            "--model",
            &format!("script:{}", script_path.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "crew failed: {stderr}");
    let requests = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (stderr, requests)
}

fn system(req: &Value) -> &str {
    req["system"].as_str().unwrap()
}

fn messages(req: &Value) -> String {
    req["messages"].to_string()
}

const READS: &str = r#"{"turns":[
  {"tool_calls":[{"name":"read_file","input":{"path":"services/api/handler.rs"}}]},
  {"tool_calls":[{"name":"read_file","input":{"path":"services/api/routes.rs"}}]},
  {"text":"done"}]}"#;

#[test]
fn root_memory_and_imports_are_in_the_system_prompt_and_a_subdirectory_arrives_on_first_read() {
    let r = repo();
    let (stderr, requests) = run(&r, &r.repo, READS, "default");
    assert_eq!(requests.len(), 3, "{stderr}");
    let first = system(&requests[0]);
    for marker in [
        "ROOT-MARKER-7f3a",
        "IMPORT-MARKER-b81e",
        "REVIEW-MARKER-4d0c",
        "CHECKLIST-MARKER-e913",
        "USER-MARKER-19c2",
        "CREW-USER-MARKER-55aa",
    ] {
        assert_eq!(
            first.matches(marker).count(),
            1,
            "{marker} once in: {first}"
        );
    }
    // User files first, then the root, each import right after its importer.
    let at = |m: &str| first.find(m).unwrap();
    assert!(at("USER-MARKER-19c2") < at("ROOT-MARKER-7f3a"));
    assert!(at("ROOT-MARKER-7f3a") < at("IMPORT-MARKER-b81e"));
    assert!(at("IMPORT-MARKER-b81e") < at("REVIEW-MARKER-4d0c"));
    // Named relative to the repository root (the same in every worktree), or to the home.
    assert!(first.contains(
        "<memory-file path=\"docs/review.md\" scope=\"project\" imported-by=\"docs/conventions.md\">"
    ));
    assert!(first.contains("<memory-file path=\"~/.claude/CLAUDE.md\" scope=\"user\">"));

    // The subdirectory's file is not there before a file in it was read ...
    for req in &requests[..1] {
        assert!(!system(req).contains("API-AGENTS-MARKER"));
        assert!(!messages(req).contains("API-AGENTS-MARKER"));
    }
    // ... arrives in the read's result as a marked block, with the system prompt (the
    // cached prefix) unchanged ...
    let second = messages(&requests[1]);
    assert_eq!(
        second.matches("API-AGENTS-MARKER-c4d2").count(),
        1,
        "{second}"
    );
    assert!(
        second.contains("pub fn health() {}\\n\\n\\n<system-reminder>"),
        "{second}"
    );
    assert!(
        second.contains(
            "<memory-file path=\\\"services/api/AGENTS.md\\\" scope=\\\"subdirectory\\\">"
        )
    );
    assert_eq!(system(&requests[1]), first);
    // ... and only once: the second read in the same directory adds nothing.
    let third = messages(&requests[2]);
    assert_eq!(
        third.matches("API-AGENTS-MARKER-c4d2").count(),
        1,
        "{third}"
    );
    assert_eq!(system(&requests[2]), first);

    // The cycle ended (the run finished) and was reported.
    assert!(stderr.contains("import cycle"), "{stderr}");
}

#[test]
fn a_credential_or_denied_import_is_refused_with_a_warning_and_never_sent() {
    let r = repo();
    // The user's own file tries too: credentials are refused whoever imports them.
    put(
        &r.home,
        ".crew/CREW.md",
        "CREW-USER-MARKER-55aa @~/.ssh/id_rsa\n",
    );
    // A symlinked memory file pointing at the key is the key.
    std::os::unix::fs::symlink(r.home.join(".ssh/id_rsa"), r.repo.join("CREW.md")).unwrap();
    // A huge log and a binary file imported by mistake are skipped, never read whole.
    let root_claude =
        format!("{ROOT_CLAUDE}Build output: @target/build.log\nLogo: @assets/logo.md\n");
    put(&r.repo, "CLAUDE.md", &root_claude);
    put(
        &r.repo,
        "target/build.log",
        &"HUGE-LOG-LINE\n".repeat(20_000),
    );
    std::fs::create_dir_all(r.repo.join("assets")).unwrap();
    std::fs::write(
        r.repo.join("assets/logo.md"),
        b"\x89PNG\r\n\x1a\n\0\0BINARY-MARKER",
    )
    .unwrap();
    // A memory file found by its place is read through the deny rules too.
    put(&r.repo, "CLAUDE.local.md", "LOCAL-DENIED-MARKER-77e0\n");
    put(
        &r.repo,
        ".crew/settings.json",
        r#"{"permissions":{"deny":["Read(./secrets/**)","Read(./CLAUDE.local.md)"]}}"#,
    );
    let (stderr, requests) = run(&r, &r.repo, READS, "bypassPermissions");
    let all = std::fs::read_to_string(r.home.join("requests.jsonl")).unwrap();
    assert!(!all.contains(KEY), "the key reached the model");
    assert!(
        !all.contains("INCIDENT-SECRET-0b7f"),
        "a denied file reached the model"
    );
    assert!(
        !all.contains("LOCAL-DENIED-MARKER"),
        "a denied file reached the model"
    );
    assert!(
        stderr.contains(&format!(
            "memory file {} was not loaded: a Read deny rule covers it",
            r.repo.join("CLAUDE.local.md").display()
        )),
        "{stderr}"
    );
    assert!(!all.contains("HUGE-LOG-LINE") && !all.contains("BINARY-MARKER"));
    for (file, why) in [
        ("target/build.log", "bytes, more than the 131072-byte limit"),
        ("assets/logo.md", "it is not UTF-8 text"),
    ] {
        let line = format!("memory file {}", r.repo.join(file).display());
        let warning = stderr.lines().find(|l| l.contains(&line)).unwrap_or("");
        assert!(warning.contains(why), "{file}: {stderr}");
    }
    assert!(system(&requests[0]).contains("ROOT-MARKER-7f3a"));
    let key = r.home.join(".ssh/id_rsa").display().to_string();
    let warning = format!(
        "memory file {key} (imported by {}) was not loaded: ~/.ssh is a credential location",
        r.repo.join("CLAUDE.md").display()
    );
    assert!(stderr.contains(&warning), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "memory file {} was not loaded: ~/.ssh is a credential location",
            r.repo.join("CREW.md").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "memory file {} (imported by {}) was not loaded: a Read deny rule covers it",
            r.repo.join("secrets/incidents.md").display(),
            r.repo.join("CLAUDE.md").display()
        )),
        "{stderr}"
    );
    // `@release-team`, the code block and the code span were never taken for imports.
    assert!(!stderr.contains("release-team"), "{stderr}");
    assert!(
        !stderr.contains("app.route") && !stderr.contains("inline_code"),
        "{stderr}"
    );
}

#[test]
fn a_worktree_subagent_gets_the_memory_files_of_its_worktree() {
    let r = repo();
    put(
        &r.repo,
        ".crew/agents/fixer.md",
        "---\nname: fixer\ndescription: fixes things\nisolation: worktree\ntools: read_file, write_file\n---\nFix it.\n",
    );
    git(&r.repo, &["add", "."]);
    git(&r.repo, &["commit", "-qm", "agent"]);
    // An uncommitted edit in the main checkout: the lead sees it, and so does the
    // worktree, which starts from the working state (a snapshot commit of it).
    let edited = format!("{ROOT_CLAUDE}UNCOMMITTED-MARKER-a1b2\n");
    std::fs::write(r.repo.join("CLAUDE.md"), edited).unwrap();
    let script = r#"{"turns":[
      {"tool_calls":[{"name":"agent","input":{"description":"fix","prompt":"fix the api","subagent_type":"fixer"}}]},
      {"text":"done"}],
      "agents":{"fixer":{"turns":[
        {"tool_calls":[{"name":"read_file","input":{"path":"services/api/handler.rs"}}]},
        {"text":"fixed"}]}}}"#;
    let (stderr, requests) = run(&r, &r.repo, script, "default");
    let lead = &requests[0];
    assert_eq!(lead["agent"], "lead");
    assert!(system(lead).contains("UNCOMMITTED-MARKER-a1b2"));
    let sub: Vec<&Value> = requests
        .iter()
        .filter(|q| q["agent"].as_str().unwrap().starts_with("fixer/"))
        .collect();
    assert_eq!(sub.len(), 2, "{stderr}");
    let sys = system(sub[0]);
    assert!(sys.contains("Fix it."), "{sys}");
    assert!(
        sys.contains("ROOT-MARKER-7f3a") && sys.contains("IMPORT-MARKER-b81e"),
        "{sys}"
    );
    assert!(
        sys.contains("UNCOMMITTED-MARKER-a1b2"),
        "the worktree's copy, from the working state, applies: {sys}"
    );
    // Its own first read below its cwd brings the subdirectory's file, from its worktree.
    let after = messages(sub[1]);
    assert!(after.contains("API-AGENTS-MARKER-c4d2"), "{after}");
    assert!(
        !after.contains(&r.repo.join("services").display().to_string()),
        "{after}"
    );
}

#[test]
fn crew_memory_show_lists_the_files_and_where_they_came_from() {
    let r = repo();
    let out = crew(&r.repo, &r.home, &["memory", "show", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<(String, String, Value)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let p = PathBuf::from(f["path"].as_str().unwrap());
            let short = p
                .strip_prefix(&r.repo)
                .or_else(|_| p.strip_prefix(&r.home))
                .unwrap()
                .display()
                .to_string();
            (
                short,
                f["scope"].as_str().unwrap().to_string(),
                f["imported_by"].clone(),
            )
        })
        .collect();
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            ".claude/CLAUDE.md",
            ".crew/CREW.md",
            "CLAUDE.md",
            "docs/conventions.md",
            "docs/review.md",
            "docs/checklist.md"
        ]
    );
    assert_eq!(files[0].1, "user");
    assert_eq!(files[2].1, "project");
    assert_eq!(files[3].2, r.repo.join("CLAUDE.md").display().to_string());
    let skipped = v["skipped"].to_string();
    assert!(skipped.contains("credential location") && skipped.contains("import cycle"));

    let text = crew(&r.repo.join("services/api"), &r.home, &["memory", "show"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!(
        "{} (project, ",
        r.repo.join("services/api/AGENTS.md").display()
    )));
    assert!(
        text.contains("Not loaded:") && text.contains("id_rsa"),
        "{text}"
    );
}

#[test]
fn a_teammate_gets_the_memory_files_of_its_worktree() {
    let r = repo();
    put(
        &r.repo,
        ".crew/agents/fixer.md",
        "---\nname: fixer\ndescription: fixes things\nisolation: worktree\ntools: read_file, write_file, send_message\n---\nFix it.\n",
    );
    git(&r.repo, &["add", "."]);
    git(&r.repo, &["commit", "-qm", "agent"]);
    let script = r#"{"turns":[
      {"tool_calls":[{"name":"agent","input":{"description":"fix","prompt":"fix the api","subagent_type":"fixer","name":"alice"}}]},
      {"text":"started"},{"text":"noted"},{"text":"noted"}],
      "agents":{"alice":{"turns":[
        {"tool_calls":[{"name":"read_file","input":{"path":"services/api/handler.rs"}}]},
        {"text":"fixed"}]}}}"#;
    let (stderr, requests) = run(&r, &r.repo, script, "default");
    let mate: Vec<&Value> = requests
        .iter()
        .filter(|q| q["agent"].as_str().unwrap().contains("alice"))
        .collect();
    assert!(mate.len() >= 2, "{stderr}");
    let sys = system(mate[0]);
    assert!(sys.contains("teammate `alice`"), "{sys}");
    assert!(
        sys.contains("ROOT-MARKER-7f3a") && sys.contains("USER-MARKER-19c2"),
        "{sys}"
    );
    assert!(!messages(mate[0]).contains("API-AGENTS-MARKER"));
    assert!(messages(mate[1]).contains("API-AGENTS-MARKER-c4d2"));
}

#[test]
fn the_memory_section_sits_inside_the_cached_system_block() {
    use crewmaster::memory::render::{Names, prompt_section};
    use crewmaster::memory::{MemoryFile, Scope};
    use crewmaster::provider::{ModelRequest, anthropic::request_body};
    let file = MemoryFile {
        path: "/r/CLAUDE.md".into(),
        scope: Scope::Project,
        imported_by: None,
        depth: 0,
        text: "ROOT-MARKER".into(),
    };
    let names = Names::new(Path::new("/r"), None);
    let section = prompt_section(&[file], &names);
    let system = crewmaster::agent::prompt::with_memory("You are crewmaster.", &section);
    let body = request_body(&ModelRequest {
        model: "m".into(),
        system: system.clone(),
        messages: vec![crewmaster::protocol::Message::user_text("hi")].into(),
        tools: Vec::new().into(),
        max_tokens: 10,
        agent: "lead".into(),
    });
    let blocks = body["system"].as_array().unwrap();
    assert_eq!(blocks.len(), 1);
    let text = blocks[0]["text"].as_str().unwrap();
    assert!(text.starts_with("You are crewmaster.\n\n# Memory files"));
    assert!(text.contains(
        "<memory-file path=\"CLAUDE.md\" scope=\"project\">\nROOT-MARKER\n</memory-file>"
    ));
    assert_eq!(blocks[0]["cache_control"]["type"], "ephemeral");
    // No memory files: the prompt is exactly the base.
    assert_eq!(crewmaster::agent::prompt::with_memory("base", ""), "base");
    // A prompt that already carries its memory (a fork's) is kept verbatim.
    assert_eq!(
        crewmaster::agent::prompt::with_memory(&system, &section),
        system
    );
}

#[test]
fn a_fork_keeps_its_callers_system_prompt_and_subdirectory_files_verbatim() {
    let r = repo();
    // Uncommitted: in the caller's prompt, not in the fork's worktree.
    let edited = format!("{ROOT_CLAUDE}UNCOMMITTED-MARKER-a1b2\n");
    std::fs::write(r.repo.join("CLAUDE.md"), edited).unwrap();
    let script = r#"{"turns":[
      {"tool_calls":[{"name":"read_file","input":{"path":"services/api/handler.rs"}}]},
      {"tool_calls":[{"name":"agent","input":{"description":"fork","prompt":"tidy routes","fork":true}}]},
      {"text":"done"}],
      "agents":{"fork":{"turns":[
        {"tool_calls":[{"name":"read_file","input":{"path":"services/api/routes.rs"}}]},
        {"text":"tidied"}]}}}"#;
    let (stderr, requests) = run(&r, &r.repo, script, "default");
    let lead: Vec<&Value> = requests.iter().filter(|q| q["agent"] == "lead").collect();
    let forks: Vec<&Value> = requests
        .iter()
        .filter(|q| q["agent"].as_str().unwrap().starts_with("fork/"))
        .collect();
    assert_eq!(forks.len(), 2, "{stderr}");
    let (parent, child) = (lead[1], forks[0]);
    assert_eq!(system(parent), system(child), "the shared prefix broke");
    assert_eq!(system(child).matches("# Memory files").count(), 1);
    assert!(system(child).contains("UNCOMMITTED-MARKER-a1b2"));
    // The caller's conversation already holds the subdirectory's file: not again.
    let last = messages(forks[1]);
    assert_eq!(last.matches("API-AGENTS-MARKER-c4d2").count(), 1, "{last}");
}
