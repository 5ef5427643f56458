//! Differential tests against the real Claude Code CLI, used as an oracle: the same
//! settings and the same Bash call go through `claude -p` (against a scripted
//! Anthropic-compatible server on 127.0.0.1) and through `crew -p` (on crew's scripted
//! model), each in its own fresh git repository; the disk or the command's output then says
//! whether the command ran. Every case states the expected relation, `Same` or
//! `DifferOnPurpose(why)`, and the test fails when either side changes, so a new
//! difference is noticed and either fixed or documented in docs/claude-code-differences.md.
//!
//! The CLI comes from `scripts/install-claude-code.sh` (path in `$CREW_CLAUDE_CODE`, else
//! the script's cache directory). Without it the tests are skipped, saying so on stderr
//! and in the safety ledger.

use crate::support;

/// What hooks read on stdin, on both sides (tests/suite/claude_code_differential/hook_input.rs).
#[path = "claude_code_differential/hook_input.rs"]
mod hook_input;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::provider::{
    a_end, a_message_start, a_text_turn, a_tool_block, anthropic_sse, sse_response,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The commit message of each case's repository, printed by `git log`.
const COMMIT: &str = "differential-oracle-commit";

/// How long one `claude -p` run may take before the test gives up on it.
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(180);

/// The Claude Code program, or why the tests cannot run.
pub(crate) fn claude_code() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("CREW_CLAUDE_CODE").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "CREW_CLAUDE_CODE={} is not a file; run scripts/install-claude-code.sh",
                p.display()
            ))
        };
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_default()
        .join("crew-peers/claude-code/node/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    if cache.is_file() {
        return Ok(cache);
    }
    Err(format!(
        "the Claude Code CLI is not installed (no $CREW_CLAUDE_CODE, no {}); run \
         scripts/install-claude-code.sh and export CREW_CLAUDE_CODE=<the path it prints>",
        cache.display()
    ))
}

/// The CLI, or `None` after recording the skip.
fn oracle_or_skip(test: &str) -> Option<PathBuf> {
    let name = format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        crate::support::own_test(module_path!(), test)
    );
    match claude_code() {
        Ok(p) => {
            support::kernel::record_ran(&name, "Claude Code CLI");
            Some(p)
        }
        Err(why) => {
            support::kernel::record_skip(&name, &why);
            None
        }
    }
}

/// Whether a command ran, as the disk or its output shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ran,
    Refused,
}

/// What the two sides are expected to do with a case.
#[derive(Debug, Clone, Copy)]
enum Relation {
    /// Both ran it, or both refused it.
    Same,
    /// They differ, for the reason given (also in docs/claude-code-differences.md).
    DifferOnPurpose(&'static str),
}

/// How to see that the command ran.
#[derive(Debug, Clone, Copy)]
enum Probe {
    /// This path (relative to the project; `outside/` is a sibling of it) exists.
    File(&'static str),
    /// The command's result contains this text.
    Output(&'static str),
    /// This file (relative to the project) no longer exists.
    Gone(&'static str),
    /// This file (relative to the project) no longer holds its first commit's text.
    Changed(&'static str, &'static str),
}

/// One differential case.
struct Case {
    name: &'static str,
    mode: &'static str,
    settings: Value,
    /// Whether the folder is trusted (both tools ignore a project's allow rules otherwise).
    trusted: bool,
    /// The command; `{outside}` stands for the sibling directory outside the project.
    command: &'static str,
    probe: Probe,
    relation: Relation,
}

const WRITE_TARGET: &str = "a grant of a program is not a grant of the files it writes: crew checks \
     a literal write target (touch's operand, a redirect) as a write, which default mode asks \
     about; Claude Code lets Bash(touch:*) create files in a trusted project";
const WRAPPER: &str = "a rule on a wrapper (env, timeout, nice, ...) never grants what it wraps in \
     crew; Claude Code matches Bash(env:*) or Bash(timeout:*) against the whole command line";
const DENY_SEEN_THROUGH: &str = "while a Bash deny rule is in force, crew does not let a grant of a \
     program that runs programs its words do not show (python3 -c, sh -c, ...) run unasked, since \
     the deny could not be checked inside it; Claude Code runs it under Bash(python3:*) and the \
     inner git push runs despite the deny";
const REVIEWABLE_EDITS: &str = "crew's acceptEdits lets through only commands whose effect is an \
     edit you can review afterwards (mkdir, touch, cp, mv, a redirect); a removal still asks \
     (as does a sed script, in both). Claude Code's acceptEdits also runs rm inside the project";
const SHELL_SCRIPT: &str = "crew reads the script of bash -c / sh -c as shell and checks each part \
     as if typed directly, so Bash(bash:*) does not grant the `touch m` inside (which writes m); \
     Claude Code runs it under the grant";
const DONT_ASK: &str = "crew's dontAsk keeps the seeds' meaning: a mode-fallback ask becomes a run \
     in the OS sandbox's write profile; Claude Code's dontAsk denies every ask";

/// The cases: the four, acceptEdits' file-editing commands, dontAsk, interpreters
/// under a grant and a deny, a read-only command, writes outside the project, wrappers.
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let allow = |rules: &[&str]| json!({"permissions": {"allow": rules}});
    let c = |name, mode, settings, command, probe, relation| Case {
        name, mode, settings, trusted: true, command, probe, relation,
    };
    use Probe::*;
    use Relation::*;
    let push_denied = json!({"permissions": {"allow": ["Bash(python3:*)"], "deny": ["Bash(git push:*)"]}});
    vec![
        c("touch under Bash(touch:*)", "default", allow(&["Bash(touch:*)"]), "touch m", File("m"), DifferOnPurpose(WRITE_TARGET)),
        Case { trusted: false, ..c("touch under Bash(touch:*), untrusted folder", "default", allow(&["Bash(touch:*)"]), "touch m", File("m"), Same) },
        c("redirect under Bash(git status)", "default", allow(&["Bash(git status)"]), "git status > m", File("m"), Same),
        c("env touch under Bash(env:*)", "default", allow(&["Bash(env:*)"]), "env touch m", File("m"), DifferOnPurpose(WRAPPER)),
        c("timeout touch under Bash(timeout:*)", "default", allow(&["Bash(timeout:*)"]), "timeout 5 touch m", File("m"), DifferOnPurpose(WRAPPER)),
        c("nice touch under Bash(nice:*)", "default", allow(&["Bash(nice:*)"]), "nice touch m", File("m"), DifferOnPurpose(WRAPPER)),
        c("bash -c under Bash(bash:*)", "default", allow(&["Bash(bash:*)"]), "bash -c 'touch m'", File("m"), DifferOnPurpose(SHELL_SCRIPT)),
        c("compound: a granted command && touch", "default", allow(&["Bash(git status)"]), "git status && touch m", File("m"), Same),
        c("acceptEdits mkdir", "acceptEdits", json!({}), "mkdir d", File("d"), Same),
        c("acceptEdits touch", "acceptEdits", json!({}), "touch f", File("f"), Same),
        c("acceptEdits cp", "acceptEdits", json!({}), "cp a b", File("b"), Same),
        c("acceptEdits mv", "acceptEdits", json!({}), "mv a b", File("b"), Same),
        c("acceptEdits echo redirect", "acceptEdits", json!({}), "echo x > f", File("f"), Same),
        c("acceptEdits rm", "acceptEdits", json!({}), "rm a", Gone("a"), DifferOnPurpose(REVIEWABLE_EDITS)),
        c("acceptEdits sed -i", "acceptEdits", json!({}), "sed -i s/a/b/ a", Changed("a", "a\n"), Same),
        c("dontAsk turns an ask into", "dontAsk", json!({}), "touch f", File("f"), DifferOnPurpose(DONT_ASK)),
        c("dontAsk under an explicit ask rule", "dontAsk", json!({"permissions": {"ask": ["Bash(touch:*)"]}}), "touch f", File("f"), Same),
        c("dontAsk read-only command", "dontAsk", json!({}), "git log --oneline -5", Output(COMMIT), Same),
        c("python3 -c under Bash(python3:*)", "default", allow(&["Bash(python3:*)"]), "python3 -c \"open('m','w')\"", File("m"), Same),
        c("os.system('git push') under a deny of Bash(git push:*)", "default", push_denied, "python3 -c \"import os; os.system('git push')\"", Output("push destination"), DifferOnPurpose(DENY_SEEN_THROUGH)),
        c("read-only git log in default mode", "default", json!({}), "git log --oneline -5", Output(COMMIT), Same),
        c("a write outside the project in acceptEdits", "acceptEdits", json!({}), "touch {outside}/x", File("../outside/x"), Same),
        c("a granted command with a literal write outside", "default", allow(&["Bash(git status)"]), "git status > {outside}/m", File("../outside/m"), Same),
    ]
}

/// A fresh case directory: `proj` (a git repository with `a` and `README.md`, the case's
/// `.claude/settings.json`), `home` and `outside`, all canonical.
struct Dirs {
    _tmp: tempfile::TempDir,
    proj: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

fn dirs(case: &Case) -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (proj, home, outside) = (base.join("proj"), base.join("home"), base.join("outside"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&proj).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&proj)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main", "."]);
    support::put(&proj, "a", "a\n");
    support::put(&proj, "README.md", "# readme\n");
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.email=o@example.invalid",
        "-c",
        "user.name=o",
        "commit",
        "-qm",
        COMMIT,
    ]);
    support::put(&proj, ".claude/settings.json", &case.settings.to_string());
    Dirs {
        _tmp: tmp,
        proj,
        home,
        outside,
    }
}

fn command_in(case: &Case, d: &Dirs) -> String {
    case.command
        .replace("{outside}", d.outside.to_str().unwrap())
}

fn observed(case: &Case, d: &Dirs, result: &str) -> Outcome {
    let ran = match case.probe {
        Probe::File(rel) => d.proj.join(rel).exists(),
        Probe::Output(text) => result.contains(text),
        Probe::Gone(rel) => !d.proj.join(rel).exists(),
        Probe::Changed(rel, was) => {
            std::fs::read_to_string(d.proj.join(rel)).ok().as_deref() != Some(was)
        }
    };
    if ran { Outcome::Ran } else { Outcome::Refused }
}

/// The scripted Anthropic server's answers: to Claude Code's main loop (a request offering
/// `Bash` with no tool result yet) one `tool_use` of Bash, to anything else a final text.
struct Oracle {
    command: String,
}

impl Respond for Oracle {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().unwrap_or(Value::Null);
        let offers_bash = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
        let answered = !tool_results(&body).is_empty();
        let streamed = body["stream"] == true;
        if offers_bash && !answered {
            let input = json!({"command": self.command, "description": "run it"}).to_string();
            if streamed {
                let mut e = vec![a_message_start(10, 0)];
                e.extend(a_tool_block(0, "toolu_01", "Bash", &[&input]));
                e.extend(a_end("tool_use", 5));
                return sse_response(anthropic_sse(&e));
            }
            return message(
                json!([{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                "input": {"command": self.command}}]),
                "tool_use",
            );
        }
        if streamed {
            return sse_response(a_text_turn(&["done"]));
        }
        message(json!([{"type": "text", "text": "done"}]), "end_turn")
    }
}

fn message(content: Value, stop: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"id": "msg_1", "type": "message",
        "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
        "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}}))
}

/// The `tool_result` blocks of an Anthropic request body.
fn tool_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// The text of a tool result's content (a string or text blocks).
fn result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.to_string(),
    }
}

/// What one side did with a case.
#[derive(Debug)]
struct Run {
    outcome: Outcome,
    /// The tool result the model saw (the reason, when refused).
    result: String,
}

/// What `claude -p` did: the run, and the requests the scripted server received.
async fn run_claude(claude: &Path, case: &Case) -> (Run, Vec<Request>) {
    let d = dirs(case);
    if case.trusted {
        let trust =
            json!({"projects": {d.proj.to_str().unwrap(): {"hasTrustDialogAccepted": true}}});
        support::put(&d.home, ".claude.json", &trust.to_string());
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Oracle {
            command: command_in(case, &d),
        })
        .mount(&server)
        .await;
    let mut cmd = tokio::process::Command::new(claude);
    cmd.args([
        "-p",
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        case.mode,
    ])
    .current_dir(&d.proj)
    .env("HOME", &d.home)
    .env("ANTHROPIC_BASE_URL", server.uri())
    .env("ANTHROPIC_API_KEY", "anything")
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env_remove("ANTHROPIC_AUTH_TOKEN")
    .env_remove("CLAUDE_CODE_USE_BEDROCK")
    .env_remove("CLAUDE_CODE_USE_VERTEX")
    .kill_on_drop(true);
    let out = tokio::time::timeout(CLAUDE_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "claude -p did not finish in {CLAUDE_TIMEOUT:?}: {}",
                case.name
            )
        })
        .expect("claude runs");
    let requests = server.received_requests().await.unwrap_or_default();
    let result = requests
        .iter()
        .rev()
        .filter_map(|r| r.body_json::<Value>().ok())
        .find_map(|b| tool_results(&b).last().map(result_text))
        .unwrap_or_else(|| {
            panic!(
                "{}: no tool_result reached the server\nstdout: {}\nstderr: {}",
                case.name,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let outcome = observed(case, &d, &result);
    (Run { outcome, result }, requests)
}

/// What `crew -p` did with the same case, on its scripted model.
fn run_crew(case: &Case) -> Run {
    let d = dirs(case);
    if case.trusted {
        let out = support::crew(&d.proj, &d.home, &["trust", d.proj.to_str().unwrap()]);
        assert!(out.status.success(), "crew trust: {out:?}");
    }
    let script = json!({"turns": [
        {"text": "go", "tool_calls": [{"name": "run_command", "input": {"command": command_in(case, &d)}}]},
        {"text": "done"}
    ]});
    let (out, requests) = support::crew_scripted_output(
        &d.proj,
        &d.home,
        &script,
        &["-p", "go", "--permission-mode", case.mode],
    );
    let conversation: Vec<crewmaster::protocol::Message> = requests
        .last()
        .and_then(|r| serde_json::from_value(r["messages"].clone()).ok())
        .unwrap_or_default();
    let result = support::tool_results(&conversation)
        .last()
        .map(|r| r.content.clone())
        .unwrap_or_else(|| {
            panic!(
                "{}: crew sent no tool result\nstdout: {}\nstderr: {}",
                case.name,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let outcome = observed(case, &d, &result);
    Run { outcome, result }
}

fn describe(relation: Relation) -> String {
    match relation {
        Relation::Same => "the same".into(),
        Relation::DifferOnPurpose(why) => format!("a difference on purpose: {why}"),
    }
}

fn holds(relation: Relation, claude: Outcome, crew: Outcome) -> bool {
    match relation {
        Relation::Same => claude == crew,
        Relation::DifferOnPurpose(_) => claude != crew,
    }
}

fn short(s: &str) -> String {
    let one_line = s.replace('\n', " ");
    one_line.chars().take(160).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crew_and_claude_code_decide_the_same_bash_calls_or_differ_on_purpose() {
    let Some(claude) =
        oracle_or_skip("crew_and_claude_code_decide_the_same_bash_calls_or_differ_on_purpose")
    else {
        return;
    };
    let cases = cases();
    let mut table = Vec::new();
    let mut broken = Vec::new();
    // Three cases at a time: each runs one `claude` and one `crew` process.
    for chunk in cases.chunks(3) {
        let runs = futures::future::join_all(chunk.iter().map(|case| {
            let claude = claude.clone();
            async move {
                let (theirs, _) = run_claude(&claude, case).await;
                let ours = tokio::task::block_in_place(|| run_crew(case));
                (case, theirs, ours)
            }
        }))
        .await;
        for (case, theirs, ours) in runs {
            let ok = holds(case.relation, theirs.outcome, ours.outcome);
            let line = format!(
                "{} {:<55} claude: {:<7?} crew: {:<7?} expected {}\n    claude said: {}\n    crew said:   {}",
                if ok { "ok  " } else { "FAIL" },
                case.name,
                theirs.outcome,
                ours.outcome,
                describe(case.relation),
                short(&theirs.result),
                short(&ours.result)
            );
            if !ok {
                broken.push(line.clone());
            }
            table.push(line);
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        broken.is_empty(),
        "{} case(s) no longer hold their relation; fix the side that changed, or record the \
         new difference (with its reason) in the case table and docs/claude-code-differences.md:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// The real CLI's requests have the shape the scripted server answers: a streamed POST to
/// `/v1/messages?beta=true` with the key, a `Bash` tool taking `command`, and the tool
/// result sent back under the scripted `tool_use` id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_requests_match_the_scripted_server() {
    let Some(claude) = oracle_or_skip("claude_code_requests_match_the_scripted_server") else {
        return;
    };
    let case = cases()
        .into_iter()
        .find(|c| c.name == "read-only git log in default mode")
        .unwrap();
    let (run, requests) = run_claude(&claude, &case).await;
    assert_eq!(run.outcome, Outcome::Ran, "{run:?}");
    let main: Vec<(&Request, Value)> = requests
        .iter()
        .filter_map(|r| Some((r, r.body_json::<Value>().ok()?)))
        .filter(|(_, b)| {
            b["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"))
        })
        .collect();
    assert!(
        main.len() >= 2,
        "expected the tool_use turn and the tool_result turn, got {}",
        main.len()
    );
    let (first, body) = &main[0];
    assert_eq!(first.url.path(), "/v1/messages");
    assert!(
        first.url.query().is_some_and(|q| q.contains("beta=true")),
        "{}",
        first.url
    );
    assert_eq!(first.headers["x-api-key"], "anything");
    assert!(
        first.headers.contains_key("anthropic-version"),
        "{:?}",
        first.headers
    );
    assert_eq!(
        body["stream"], true,
        "the CLI no longer streams: the server must answer JSON"
    );
    assert!(
        body["model"].is_string() && body["max_tokens"].is_u64(),
        "{body}"
    );
    let bash = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Bash")
        .unwrap();
    assert_eq!(
        bash["input_schema"]["properties"]["command"]["type"], "string",
        "{bash}"
    );
    assert_eq!(body["messages"][0]["role"], "user", "{body}");
    let (_, second) = &main[1];
    let results = tool_results(second);
    assert_eq!(results.len(), 1, "{second}");
    assert_eq!(results[0]["tool_use_id"], "toolu_01");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert!(result_text(&results[0]).contains(COMMIT), "{}", results[0]);
}
