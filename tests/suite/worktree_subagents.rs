//! The heart of issue 5, end to end on a real git repository: a lead starts three
//! background subagents, each writing a file; they run concurrently, each in its own
//! worktree; the main checkout stays clean; a subagent cannot write into the main
//! checkout; the lead hears of all three; kept worktrees show in `crew worktrees list`
//! and in `git worktree list`; a clean subagent's worktree is removed.

use crate::support;

use std::process::Command;

use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::events::EventKind;
use crewmaster::protocol::ContentBlock;
use crewmaster::tasks::{TaskStatus, load_records};
use support::{Setup, git, start, tool_results};

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

fn agent_file(name: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: test writer {name}\nisolation: worktree\ntools: write_file, read_file\n---\nWrite your file.\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_background_subagents_work_in_their_own_worktrees() {
    // The attacks: a subagent writing into the main checkout (`@CWD@` is replaced by its
    // path), climbing out of its worktree, and writing to an unrelated directory.
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().canonicalize().unwrap().join("escape.txt");
    // Each subagent's first turn signals its start and holds until `go`, created once all
    // four have started: they can only finish if they ran at the same time.
    let sig = tempfile::tempdir().unwrap();
    let s = sig.path().display();
    let gate = format!(r#""touch":"{s}/started-{{agent}}","wait_for":"{s}/go""#);
    let script = format!(
        r#"{{"turns":[
            {{"tool_calls":[
              {{"name":"agent","input":{{"description":"writer one","prompt":"p","subagent_type":"w1","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"writer two","prompt":"p","subagent_type":"w2","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"writer three","prompt":"p","subagent_type":"w3","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"reader","prompt":"p","subagent_type":"w4","run_in_background":true}}}}]}},
            {{"text":"started"}},
            {{"text":"noted"}},{{"text":"noted"}},{{"text":"noted"}},{{"text":"noted"}}],
          "agents":{{
            "w1":{{"turns":[{{{gate},"tool_calls":[{{"name":"write_file","input":{{"path":"one.txt","content":"1"}}}}]}},{{"text":"one written"}}]}},
            "w2":{{"turns":[{{{gate},"tool_calls":[{{"name":"write_file","input":{{"path":"two.txt","content":"2"}}}}]}},{{"text":"two written"}}]}},
            "w3":{{"turns":[{{{gate},"tool_calls":[
                {{"name":"write_file","input":{{"path":"three.txt","content":"3"}}}},
                {{"name":"write_file","input":{{"path":"../../escape.txt","content":"x"}}}},
                {{"name":"write_file","input":{{"path":"@CWD@/escape.txt","content":"x"}}}},
                {{"name":"write_file","input":{{"path":"{escape}","content":"x"}}}}]}},
              {{"text":"three written"}}]}},
            "w4":{{"turns":[{{{gate},"tool_calls":[{{"name":"read_file","input":{{"path":"README.md"}}}}]}},{{"text":"read only"}}]}}
          }}}}"#,
        escape = escape.display()
    );
    let mut setup = Setup::new(script, crewmaster::tools::builtin_tools());
    setup.orchestration = true;
    setup.git = true;
    setup.files = vec![
        (".crew/agents/w1.md", agent_file("w1")),
        (".crew/agents/w2.md", agent_file("w2")),
        (".crew/agents/w3.md", agent_file("w3")),
        (".crew/agents/w4.md", agent_file("w4")),
    ];
    let mut t = start(setup).await;
    let main = t.cwd();

    t.session.run(chat("split the work")).await.unwrap();
    let started = || {
        std::fs::read_dir(sig.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("started-"))
            .count()
    };
    support::wait_until("all four subagents to be running at once", || {
        started() == 4
    })
    .await;
    std::fs::write(sig.path().join("go"), b"").unwrap();
    while t.session.next_completion().await.is_some() {
        t.session.run(chat("continue")).await.unwrap();
    }

    // The lead received four completions.
    let conv = t.session.conversation().await.unwrap();
    let notes = conv
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(
            |b| matches!(b, ContentBlock::Text { text } if text.starts_with("<task-notification>")),
        )
        .count();
    assert_eq!(notes, 4);

    // They ran concurrently: every subagent started before any finished.
    let mut order = Vec::new();
    while let Ok(e) = t.events.try_recv() {
        match e.kind {
            EventKind::RunStarted { .. } if e.agent != "lead" => order.push("start"),
            EventKind::RunFinished { .. } if e.agent != "lead" => order.push("end"),
            _ => {}
        }
    }
    let first_end = order.iter().position(|k| *k == "end").unwrap();
    assert_eq!(order[..first_end].len(), 4, "{order:?}");

    let records = load_records(&t.session_dir()).unwrap();
    let rec = |d: &str| records.iter().find(|r| r.description == d).unwrap().clone();
    for (desc, file) in [
        ("writer one", "one.txt"),
        ("writer two", "two.txt"),
        ("writer three", "three.txt"),
    ] {
        let r = rec(desc);
        assert_eq!(r.status, TaskStatus::Completed, "{r:?}");
        let wt = r.worktree.clone().expect("a worktree");
        assert!(wt.join(file).is_file(), "{file} in its own worktree");
        for other in ["one.txt", "two.txt", "three.txt"]
            .iter()
            .filter(|o| **o != file)
        {
            assert!(
                !wt.join(other).exists(),
                "{other} must not be in {}",
                wt.display()
            );
        }
        assert!(
            !main.join(file).exists(),
            "{file} must not be in the main checkout"
        );
        assert!(
            r.result.unwrap().contains("kept"),
            "a worktree with work is kept"
        );
    }
    // The main checkout is untouched.
    assert_eq!(git(&main, &["status", "--porcelain"]), "");
    assert!(!escape.exists(), "the subagent wrote outside its worktree");
    assert!(
        !main.join("escape.txt").exists(),
        "the subagent wrote into the main checkout"
    );

    // The escape attempts were refused by the sandbox.
    let w3_requests: Vec<_> = t
        .provider
        .requests()
        .into_iter()
        .filter(|r| r.agent.starts_with("w3/"))
        .collect();
    let results = tool_results(&w3_requests.last().unwrap().messages.to_vec());
    assert!(!results[0].is_error, "{:?}", results[0]);
    for r in &results[1..] {
        assert_eq!(r.error_code.as_deref(), Some("permission_denied"), "{r:?}");
        assert!(r.content.contains("sandbox"), "{}", r.content);
    }

    // The read-only subagent left nothing: its worktree and branch are gone.
    let reader = rec("reader");
    let reader_wt = reader.worktree.clone().unwrap();
    assert!(!reader_wt.exists());
    assert!(reader.result.unwrap().contains("removed"));

    // `git worktree list` and `crew worktrees list` agree on the three kept ones.
    let porcelain = git(&main, &["worktree", "list", "--porcelain"]);
    let listed = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["worktrees", "list"])
        .current_dir(&main)
        .env("HOME", t.home.path())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    for desc in ["writer one", "writer two", "writer three"] {
        let r = rec(desc);
        let wt = r.worktree.unwrap();
        assert!(
            porcelain.contains(&format!("worktree {}", wt.display())),
            "{porcelain}"
        );
        assert!(listed.contains(&r.id), "{listed}");
    }
    assert!(!porcelain.contains(&reader_wt.display().to_string()));
    assert!(!listed.contains(&reader.id));
    t.session.shutdown().await;
}
