//! End-to-end tests of the terminal UI: the real `crew` binary in a pseudo-terminal,
//! read back through a terminal emulator (`vt100`), driven by a scripted model. Every
//! wait polls the screen with a generous limit; nothing asserts on durations.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};
use serde_json::Value;

const ROWS: u16 = 40;
const COLS: u16 = 120;
/// How long any one expected screen may take to appear (a loaded CI machine is slow).
const PATIENCE: Duration = Duration::from_secs(120);

/// `crew` running in a pseudo-terminal.
struct Tui {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    fn start(dir: &Path, script: &Path, extra: &[&str]) -> Tui {
        Tui::spawn(dir, Some(script), extra)
    }

    /// `crew` on `script`, or on no model at all (the built-in demo) when `None`.
    fn spawn(dir: &Path, script: Option<&Path>, extra: &[&str]) -> Tui {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crew"));
        if let Some(script) = script {
            cmd.arg("--model");
            cmd.arg(format!("script:{}", script.display()));
        }
        cmd.arg("--cwd");
        cmd.arg(dir.join("work"));
        cmd.arg("--record-requests");
        cmd.arg(dir.join("requests.jsonl"));
        cmd.args(extra);
        cmd.env("HOME", dir.join("home"));
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("ANTHROPIC_API_KEY");
        cmd.env_remove("OPENAI_API_KEY");
        cmd.cwd(dir.join("work"));
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().process(&buf[..n]);
            }
        });
        let writer = pty.master.take_writer().unwrap();
        Tui {
            screen,
            writer,
            child,
            _master: pty.master,
        }
    }

    fn text(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Polls until the screen satisfies `cond`; returns that screen.
    fn wait(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.text();
            if cond(&screen) {
                return screen;
            }
            if start.elapsed() > PATIENCE {
                panic!("gave up waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn wait_for(&self, needles: &[&str]) -> String {
        self.wait(&format!("{needles:?}"), |s| {
            needles.iter().all(|n| s.contains(n))
        })
    }

    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types a line and presses Enter.
    fn line(&mut self, text: &str) {
        self.send(text);
        self.send("\r");
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup(script: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, script).unwrap();
    (dir, path)
}

fn requests(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn wait_file(path: &Path, content: &str) {
    let start = Instant::now();
    while std::fs::read_to_string(path).ok().as_deref() != Some(content) {
        assert!(
            start.elapsed() < PATIENCE,
            "{} never held {content:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[test]
fn approval_dialog_allow_once_allow_for_session_and_deny_with_a_message() {
    let (dir, script) = setup(
        r#"{"turns":[
        {"text":"Writing one.","tool_calls":[{"id":"w1","name":"write_file","input":{"path":"a.txt","content":"one"}}]},
        {"text":"Again.","tool_calls":[{"id":"w2","name":"write_file","input":{"path":"a.txt","content":"two"}}]},
        {"text":"Third.","tool_calls":[{"id":"w3","name":"write_file","input":{"path":"a.txt","content":"two"}}]},
        {"text":"Now c.","tool_calls":[{"id":"w4","name":"write_file","input":{"path":"c.txt","content":"four"}}]},
        {"text":"All done."}]}"#,
    );
    let work = dir.path().join("work");
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task", "default"]);
    tui.line("write the files");

    // 1: allow once. The dialog names the tool, the path and the asking agent.
    // The whole dialog, down to its last choice, before answering it.
    tui.wait_for(&[
        "Writing one.",
        "lead wants to run write_file",
        "a.txt",
        "1. Allow once",
        "4. Deny",
    ]);
    assert!(
        !work.join("a.txt").exists(),
        "nothing runs before the answer"
    );
    tui.send("1");
    wait_file(&work.join("a.txt"), "one");

    // 2: allow for the session; the next identical call must not ask (if it did, its
    // dialog would wait for an answer and the model would never reach "Now c.").
    tui.wait_for(&["Again.", "lead wants to run write_file", "4. Deny"]);
    tui.send("2");
    wait_file(&work.join("a.txt"), "two");
    let screen = tui.wait_for(&["Now c.", "lead wants to run write_file", "c.txt", "4. Deny"]);
    assert!(
        screen.contains("write_file(a.txt) allow by rule:session"),
        "the third call is allowed by the session grant, not by a human:\n{screen}"
    );

    // 4: deny, with a message for the model.
    tui.send("4");
    tui.wait_for(&["message for the model"]);
    tui.line("not that file");
    tui.wait_for(&["All done."]);
    assert!(
        !work.join("c.txt").exists(),
        "a denied write must not happen"
    );

    let reqs = requests(dir.path());
    assert_eq!(reqs.len(), 5, "one request per scripted turn");
    let result_of = |req: &Value, id: &str| {
        req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().unwrap().iter())
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
            .cloned()
    };
    let third = result_of(&reqs[3], "w3").expect("w3 ran and its result went back");
    assert_eq!(third["is_error"], false, "{third}");
    let last = serde_json::to_string(&reqs[4]["messages"]).unwrap();
    let denial =
        result_of(&reqs[4], "w4").unwrap_or_else(|| panic!("no tool_result for w4 in {last}"));
    assert_eq!(denial["is_error"], true, "{denial}");
    assert!(
        denial["content"]
            .as_str()
            .unwrap()
            .contains("not that file"),
        "the model must receive the user's message: {denial}"
    );
}

#[test]
fn plan_approve_do_runs_the_task_with_the_approved_plan_and_all_tools() {
    let (dir, script) = setup(
        r#"{"turns":[
        {"text":"PLAN-STEP-1: create notes.txt saying hello"},
        {"text":"Carrying out.","tool_calls":[{"id":"n1","name":"write_file","input":{"path":"notes.txt","content":"hello"}}]},
        {"text":"Done doing."}]}"#,
    );
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("/plan");
    tui.wait_for(&["Plan Mode: describe the task", " plan "]);
    tui.line("make the notes file");
    tui.wait_for(&["Plan ready for review", "PLAN-STEP-1", "1. Approve"]);
    // Shift+Tab in review picks acceptEdits for the Do run: the write needs no dialog.
    tui.send("\x1b[Z");
    tui.wait_for(&["permission mode acceptEdits"]);
    tui.send("1");
    tui.wait_for(&["Done doing."]);
    wait_file(&dir.path().join("work/notes.txt"), "hello");

    let reqs = requests(dir.path());
    let plan_tools = tool_names(&reqs[0]);
    assert!(
        !plan_tools.contains(&"write_file".to_string()),
        "{plan_tools:?}"
    );
    let do_req = serde_json::to_string(&reqs[1]["messages"]).unwrap();
    assert!(do_req.contains("make the notes file"), "{do_req}");
    assert!(
        do_req.contains("PLAN-STEP-1: create notes.txt saying hello"),
        "{do_req}"
    );
    assert!(do_req.contains("Approved plan"), "{do_req}");
    let do_tools = tool_names(&reqs[1]);
    for t in [
        "read_file",
        "write_file",
        "edit_file",
        "run_command",
        "agent",
    ] {
        assert!(
            do_tools.contains(&t.to_string()),
            "{t} missing from {do_tools:?}"
        );
    }
    assert!(do_tools.len() > plan_tools.len());
}

#[test]
fn typing_echoes_while_a_turn_streams_and_three_subagents_run() {
    // Gates, not durations: the helpers hold until `helpers-go` (never created, so they
    // are still running whenever the test looks), and the lead's turn holds after its
    // text until `stream-go`, which the test creates only after checking the echo.
    let (dir, _) = setup("{}");
    let gate = |name: &str| dir.path().join(name).display().to_string();
    let agent = |n: u32| {
        format!(
            r#"{{"id":"a{n}","name":"agent","input":{{"description":"helper {n}","prompt":"help {n}","subagent_type":"general-purpose","run_in_background":true}}}}"#
        )
    };
    let script = format!(
        r#"{{"turns":[
        {{"text":"Starting helpers.","tool_calls":[{},{},{}]}},
        {{"text":"STREAM-START","wait_for":"{stream_go}","wait_timeout_ms":600000,
          "tool_calls":[{{"name":"find_files","input":{{"pattern":"*.nothing"}}}}]}},
        {{"text":"END-OF-STREAM"}}],
        "agents":{{"general-purpose":{{"turns":[
            {{"text":"helper holding","wait_for":"{helpers_go}","wait_timeout_ms":600000}},
            {{"text":"helper done"}}]}}}}}}"#,
        agent(1),
        agent(2),
        agent(3),
        stream_go = gate("stream-go"),
        helpers_go = gate("helpers-go"),
    );
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let mut tui = Tui::start(
        dir.path(),
        &script_path,
        &["--permission-mode", "bypassPermissions"],
    );
    tui.wait_for(&["type a task"]);
    tui.line("start three helpers then talk");
    tui.wait_for(&["STREAM-START", "3 running tasks"]);
    tui.send("typed-while-streaming");
    let screen = tui.wait_for(&["typed-while-streaming"]);
    // The turn cannot have ended: it holds until the test creates `stream-go`.
    assert!(!screen.contains("END-OF-STREAM"), "{screen}");
    assert!(screen.contains("3 running tasks"), "{screen}");
    // Released, the turn goes on to its end, with the typed text still in the input box.
    std::fs::write(gate("stream-go"), b"").unwrap();
    let screen = tui.wait_for(&["END-OF-STREAM"]);
    assert!(screen.contains("typed-while-streaming"), "{screen}");
}

#[test]
fn the_lead_wakes_when_a_teammate_writes_to_it() {
    // The teammate writes only once the test has seen the lead go idle, so the mail
    // arrives while nobody types: the lead must wake for it by itself.
    let (dir, _) = setup("{}");
    let gate = dir.path().join("alice-go").display().to_string();
    let script = format!(
        r#"{{"turns":[
        {{"text":"Asking alice.","tool_calls":[{{"name":"agent","input":{{"description":"helper","prompt":"Greet the lead.","subagent_type":"general-purpose","name":"alice"}}}}]}},
        {{"text":"LEAD-IDLE"}},
        {{"text":"MAIL-READ-BY-LEAD"}}],
        "agents":{{"general-purpose":{{"turns":[
            {{"text":"holding","wait_for":"{gate}","wait_timeout_ms":600000,
              "tool_calls":[{{"name":"send_message","input":{{"to":"lead","message":"hello from alice"}}}}]}},
            {{"text":"alice done"}}]}}}}}}"#
    );
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let mut tui = Tui::start(
        dir.path(),
        &script_path,
        &["--permission-mode", "bypassPermissions"],
    );
    tui.wait_for(&["type a task"]);
    tui.line("ask alice");
    let screen = tui.wait_for(&["LEAD-IDLE"]);
    assert!(!screen.contains("MAIL-READ-BY-LEAD"), "{screen}");
    std::fs::write(&gate, b"").unwrap();
    tui.wait_for(&["MAIL-READ-BY-LEAD"]);
    // The lead's wake-up run is the one that was handed alice's message.
    let woken = requests(dir.path())
        .into_iter()
        .rev()
        .find(|r| r["agent"] == "lead")
        .expect("the lead's requests are recorded")
        .to_string();
    assert!(woken.contains("hello from alice"), "{woken}");
}

#[test]
fn worktrees_are_reviewed_in_the_tui_diff_then_merge_and_discard_after_asking() {
    let (dir, _) = setup("{}");
    let work = dir.path().join("work");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.name", "t"]);
    git(&["config", "user.email", "t@t"]);
    std::fs::write(work.join("README.md"), "base\n").unwrap();
    git(&["add", "."]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "base",
    ]);
    let agent = |d: &str| {
        format!(
            r#"{{"name":"agent","input":{{"description":"{d}","prompt":"write {d}","subagent_type":"general-purpose"}}}}"#
        )
    };
    let script = format!(
        r#"{{"turns":[
        {{"text":"Delegating.","tool_calls":[{}]}},
        {{"tool_calls":[{}]}},
        {{"text":"BOTH-DONE"}}],
        "agents":{{"general-purpose":{{"turns":[
            {{"tool_calls":[{{"name":"write_file","input":{{"path":"{{agent}}.txt","content":"REVIEW-ME"}}}}]}},
            {{"text":"wrote it"}}]}}}}}}"#,
        agent("keeper"),
        agent("loser"),
    );
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script).unwrap();
    let mut tui = Tui::start(
        dir.path(),
        &script_path,
        &["--permission-mode", "bypassPermissions"],
    );
    tui.wait_for(&["type a task"]);
    tui.line("delegate two writes");
    tui.wait_for(&["BOTH-DONE"]);
    tui.line("/worktrees");
    let screen = tui.wait_for(&["Worktrees (", "keeper", "loser"]);
    assert!(screen.contains("dirty"), "{screen}");
    // The first is keeper's: its diff, then merge it.
    let first_keeper = screen.find("keeper") < screen.find("loser");
    if !first_keeper {
        tui.send("\x1b[B");
    }
    tui.send("\r");
    tui.wait_for(&["diff of", "+REVIEW-ME"]);
    tui.send("\x1b");
    tui.wait_for(&["Worktrees ("]);
    tui.send("m");
    tui.wait("the merge's notice", |s| s.contains("merged into main"));
    // Now only loser's is left: x asks first, y discards it.
    tui.wait("keeper's worktree gone from the list", |s| {
        !s.contains("/keeper")
    });
    tui.send("x");
    tui.wait_for(&["with the work it holds?"]);
    tui.send("y");
    tui.wait_for(&["discarded"]);
    let merged: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    assert_eq!(
        merged.len(),
        1,
        "one worktree's file was merged into the checkout: {merged:?}"
    );
    assert_eq!(
        std::fs::read_to_string(work.join(&merged[0])).unwrap(),
        "REVIEW-ME"
    );
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["worktrees", "list", "--json"])
        .current_dir(&work)
        .env("HOME", dir.path().join("home"))
        .output()
        .unwrap();
    let left: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(left, serde_json::json!([]), "none is left to review");
}

#[test]
fn crew_without_a_terminal_says_to_use_print_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
        .arg("--cwd")
        .arg(dir.path())
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a terminal") && err.contains("crew -p"),
        "{err}"
    );
}

#[test]
fn continue_in_the_tui_shows_the_resumed_conversation() {
    let (dir, script) = setup(r#"{"turns":[{"text":"FIRST-ANSWER from the headless run"}]}"#);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["-p", "the first task", "--model"])
        .arg(format!("script:{}", script.display()))
        .arg("--cwd")
        .arg(dir.path().join("work"))
        .env("HOME", dir.path().join("home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let tui = Tui::start(dir.path(), &script, &["--continue"]);
    let screen = tui.wait_for(&["Resumed session", "the first task"]);
    assert!(
        screen.contains("FIRST-ANSWER from the headless run"),
        "{screen}"
    );
}

#[test]
fn esc_cancels_the_streaming_turn_and_the_next_input_runs() {
    // The first turn streams its text, then holds on a file nobody creates: only Esc can
    // end it. Had Esc not stopped it, the next input would wait behind it and the second
    // answer would never appear.
    let (dir, _) = setup("{}");
    let never = dir.path().join("never-created");
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        format!(
            r#"{{"turns":[{{"text":"w0 w1 w2 w3 talking","wait_for":"{}","wait_timeout_ms":600000,"tool_calls":[{{"name":"find_files","input":{{"pattern":"*"}}}}]}},{{"text":"Second answer."}}]}}"#,
            never.display()
        ),
    )
    .unwrap();
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("talk for a while");
    tui.wait_for(&["w3", "esc to interrupt"]);
    tui.send("\x1b");
    tui.wait_for(&["Turn cancelled."]);
    tui.line("next question");
    tui.wait_for(&["Second answer."]);
    // Exactly two requests: the cancelled turn's tool call never ran a turn of its own.
    assert_eq!(requests(dir.path()).len(), 2);
}

#[test]
fn always_allow_saves_a_rule_to_settings_local_json() {
    let (dir, script) = setup(
        r#"{"turns":[
        {"text":"Writing.","tool_calls":[{"id":"w1","name":"write_file","input":{"path":"keep.txt","content":"k"}}]},
        {"text":"Saved."}]}"#,
    );
    let work = dir.path().join("work");
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("write keep.txt");
    tui.wait_for(&["lead wants to run write_file", "keep.txt"]);
    tui.send("3");
    tui.wait_for(&["Saved."]);
    wait_file(&work.join("keep.txt"), "k");
    let settings = std::fs::read_to_string(work.join(".crew/settings.local.json")).unwrap();
    assert!(settings.contains("keep.txt"), "{settings}");
    // `/permissions` shows the saved rule.
    tui.line("/permissions");
    tui.wait_for(&["Rules (deny, then ask, then allow)", "settings.local.json"]);
}

#[test]
fn first_run_trust_prompt_decides_whether_shared_settings_apply() {
    let (dir, script) = untrusted_project();
    let work = dir.path().join("work");
    let trusted = dir.path().join("home/.crew/trusted.json");

    // Declined: the session starts, says what it ignored, and the write still asks.
    let mut tui = Tui::start(dir.path(), &script, &[]);
    let screen = tui.wait_for(&["Trust this folder?", "permissions.allow: Write", "[y]"]);
    assert!(
        !screen.contains("type a task"),
        "asked before the session starts"
    );
    tui.send("n");
    tui.wait_for(&["type a task", "not trusted", "`Write`"]);
    tui.line("write it");
    tui.wait_for(&["lead wants to run write_file"]);
    assert!(!trusted.exists());
    drop(tui);

    // Trusted: recorded in the user's config, and the project's allow rule applies.
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["Trust this folder?"]);
    tui.send("y");
    tui.wait_for(&["type a task"]);
    let list = std::fs::read_to_string(&trusted).unwrap();
    assert!(
        list.contains(&work.canonicalize().unwrap().display().to_string()),
        "{list}"
    );
    tui.line("write it");
    wait_file(&work.join("a.txt"), "one");
    drop(tui);

    // Once trusted, there is no prompt.
    let tui = Tui::start(dir.path(), &script, &[]);
    let screen = tui.wait_for(&["type a task"]);
    assert!(!screen.contains("Trust this folder?"), "{screen}");
}

/// Keys typed the instant the trust prompt is answered, before the session's screen is up,
/// reach the session. (They once sat unread until the next keystroke: the prompt's own
/// input stream, dropped, left a wake-up pending that swallowed the terminal's readiness.)
#[test]
fn keys_typed_right_after_the_trust_answer_reach_the_session() {
    for round in 0..3 {
        let (dir, script) = untrusted_project();
        let mut tui = Tui::start(dir.path(), &script, &[]);
        tui.wait_for(&["Trust this folder?", "[y]"]);
        tui.send("n");
        // Typed as soon as the prompt is gone, not waiting for the session's screen.
        tui.wait("the prompt to go", |s| !s.contains("Trust this folder?"));
        tui.line("write it");
        let screen = tui.wait_for(&["lead wants to run write_file", "a.txt"]);
        assert!(screen.contains("not trusted"), "round {round}:\n{screen}");
    }
}

/// The terminal is taken before the session loads; a session that cannot start gives it
/// back (raw mode and the alternate screen off) and then says why.
#[test]
fn a_session_that_cannot_start_gives_the_terminal_back_and_says_why() {
    let (dir, _) = setup("{}");
    let missing = dir.path().join("no-such-script.json");
    let mut tui = Tui::start(dir.path(), &missing, &[]);
    let screen = tui.wait_for(&["crew: --model script:PATH"]);
    assert_eq!(tui.child.wait().unwrap().exit_code(), 2, "{screen}");
    let parser = tui.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen(), "{screen}");
}

/// A project whose shared settings allow `Write`, and a script whose first turn writes.
fn untrusted_project() -> (tempfile::TempDir, PathBuf) {
    let (dir, script) = setup(
        r#"{"turns":[
        {"text":"Writing.","tool_calls":[{"id":"w1","name":"write_file","input":{"path":"a.txt","content":"one"}}]},
        {"text":"All done."}]}"#,
    );
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join(".crew")).unwrap();
    std::fs::write(
        work.join(".crew/settings.json"),
        r#"{"permissions":{"allow":["Write"]}}"#,
    )
    .unwrap();
    (dir, script)
}

/// Shift+Tab walks default → acceptEdits → plan → bypassPermissions → auto → default with
/// a classifier (the session's scripted model), and skips auto without one (the demo).
#[test]
fn shift_tab_cycles_the_modes_and_skips_auto_without_a_classifier() {
    let stops = |with_auto: bool| {
        let mut s = vec![
            "chat  │ ⏵ acceptEdits",
            "plan  │ ⏵ acceptEdits",
            "chat  │ ⏵ bypassPermissions",
        ];
        if with_auto {
            s.push("chat  │ ⏵ auto (shift+tab)");
        }
        s.push("chat  │ ⏵ default");
        s
    };
    for with_auto in [true, false] {
        let (dir, script) = setup(r#"{"turns": [{"text": "hi"}]}"#);
        let mut tui = Tui::spawn(dir.path(), with_auto.then_some(script.as_path()), &[]);
        tui.wait_for(&["chat  │ ⏵ default"]);
        for stop in stops(with_auto) {
            tui.send("\x1b[Z");
            let screen = tui.wait_for(&[stop]);
            if !with_auto {
                assert!(!screen.contains("⏵ auto"), "{screen}");
            }
        }
    }
}

#[test]
fn a_suggestion_taken_with_tab_is_adopted_from_its_speculation() {
    // The model suggests the next prompt; the fork writes notes.txt into its overlay;
    // Tab + Enter adopts it: the file lands through the lead's write path and the lead's
    // model is never asked about the prompt.
    let (dir, script) = setup(
        r#"{"turns":[{"text":"First answer."}],
        "agents":{
          "suggestion":{"turns":[{"text":"write the notes"},{"text":"NONE"}]},
          "speculation":{"turns":[
            {"tool_calls":[{"name":"write_file","input":{"path":"notes.txt","content":"ahead"}}]},
            {"text":"Notes written ahead."}]}}}"#,
    );
    let settings = dir.path().join("home/.crew");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(settings.join("settings.json"), r#"{"speculation": true}"#).unwrap();
    let mut tui = Tui::start(dir.path(), &script, &["--permission-mode", "acceptEdits"]);
    tui.wait_for(&["type a task"]);
    tui.line("hello");
    tui.wait_for(&["First answer.", "write the notes  (Tab)"]);
    assert!(!dir.path().join("work/notes.txt").exists());
    tui.send("\t");
    tui.send("\r");
    tui.wait_for(&["Notes written ahead.", "pre-ran 2 steps"]);
    wait_file(&dir.path().join("work/notes.txt"), "ahead");
    let lead = requests(dir.path())
        .iter()
        .filter(|r| r["agent"] == "lead")
        .count();
    assert_eq!(lead, 1, "the adopted prompt never went to the lead's model");
    // The overlay lived in the session's directory and is gone once adopted.
    let overlays = find_dirs(&dir.path().join("home"), "speculation");
    assert_eq!(overlays.len(), 1, "{overlays:?}");
    assert_eq!(std::fs::read_dir(&overlays[0]).unwrap().count(), 0);
}

/// Directories named `name` below `root`.
fn find_dirs(root: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                if entry.file_name() == name {
                    found.push(path.clone());
                }
                stack.push(path);
            }
        }
    }
    found
}
