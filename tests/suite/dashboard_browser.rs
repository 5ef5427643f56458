//! The web dashboard in a real browser (headless Chromium over WebDriver): a `crew -p
//! --dashboard` run on the scripted model starts three background subagents; the page
//! shows them appear, stream their text and finish; the lead's command waits for an
//! approval, answered by clicking "Allow once"; one worktree is merged and another
//! (holding work) discarded after the page asks for confirmation. Screenshots go to
//! `target/dashboard-screenshots/`. Skipped, saying why, where Chromium or chromedriver
//! is missing (scripts/install-chromium.sh installs them).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support;
use crate::support::dashboard::{crew_command, serve};
use crate::support::webdriver::Browser;

fn agent_file(name: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: test writer {name}\nisolation: worktree\ntools: write_file, read_file\n---\nWrite your file.\n"
    )
}

/// Three writers that stream a sentence, wait for `go`, write a file and finish; a lead
/// that starts them, asks to run a command, then waits for `release`.
fn script(go: &Path, release: &Path) -> String {
    let writer = |file: &str, words: &str| {
        format!(
            r#"{{"turns":[
                {{"text":"{words}","chunk_delay_ms":30,"wait_for":"{go}",
                  "tool_calls":[{{"name":"write_file","input":{{"path":"{file}","content":"{file}\n"}}}}],
                  "usage":{{"input_tokens":1200,"output_tokens":300}}}},
                {{"text":"{file} written","usage":{{"input_tokens":1500,"output_tokens":40}}}}]}}"#,
            go = go.display()
        )
    };
    format!(
        r#"{{"model":"claude-sonnet-4-5","turns":[
            {{"tool_calls":[
              {{"name":"agent","input":{{"description":"writer one","prompt":"p","subagent_type":"w1","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"writer two","prompt":"p","subagent_type":"w2","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"writer three","prompt":"p","subagent_type":"w3","run_in_background":true}}}}],
              "usage":{{"input_tokens":900,"output_tokens":120}}}},
            {{"text":"Three writers started; one command to run.","tool_calls":[{{"name":"run_command","input":{{"command":"touch approved.txt"}}}}]}},
            {{"text":"Approved and done.","wait_for":"{release}","wait_timeout_ms":600000}},
            {{"text":"noted"}},{{"text":"noted"}},{{"text":"noted"}}],
          "agents":{{"w1":{w1},"w2":{w2},"w3":{w3}}}}}"#,
        release = release.display(),
        w1 = writer(
            "one.txt",
            "I will write the first file of three, one word at a time."
        ),
        w2 = writer(
            "two.txt",
            "I will write the second file, streaming as I think."
        ),
        w3 = writer(
            "three.txt",
            "I will write the third file and then report back."
        ),
    )
}

fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots")
}

/// The page's agents: `[[id, state], …]` from the tree.
const AGENTS: &str = "return [...document.querySelectorAll('#tree [data-agent]')].map(e => [e.dataset.agent, e.dataset.state]);";

fn writers(agents: &Value) -> Vec<(String, String)> {
    agents
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a[0].as_str().unwrap().to_string(),
                a[1].as_str().unwrap().to_string(),
            )
        })
        .filter(|(id, _)| id.starts_with('w'))
        .collect()
}

#[tokio::test]
async fn a_browser_watches_subagents_answers_an_approval_and_reviews_worktrees() {
    let browser = match Browser::start().await {
        Ok(b) => b,
        Err(why) => {
            eprintln!("skipped: the dashboard's browser test needs headless Chromium: {why}");
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (dir, home) = (root.join("repo"), root.join("home"));
    let (go, release) = (root.join("go"), root.join("release"));
    // Merging commits what a subagent left: crew commits as the user's git identity.
    support::put(&home, ".gitconfig", "[user]\n\tname = t\n\temail = t@t\n");
    support::put(&dir, "README.md", "hello\n");
    for w in ["w1", "w2", "w3"] {
        support::put(&dir, &format!(".crew/agents/{w}.md"), &agent_file(w));
    }
    support::git(&dir, &["init", "-q", "-b", "main"]);
    support::git(&dir, &["add", "-A"]);
    support::git(&dir, &["commit", "-q", "-m", "init"]);
    std::fs::write(dir.join("script.json"), script(&go, &release)).unwrap();
    let served = serve(crew_command(
        &dir,
        &home,
        &[
            "-p",
            "split the work",
            "--model",
            "script:script.json",
            "--dashboard",
        ],
    ));
    let shots = screenshots();
    browser.goto(&served.url).await;

    // Three subagents appear and stream their text.
    let first = browser
        .wait(
            "three subagents in the tree",
            &(AGENTS.replace("return ", "const a = ")
                + "; return a.filter(x => x[0].startsWith('w')).length === 3 && a;"),
        )
        .await;
    let (one, _) = writers(&first)
        .into_iter()
        .find(|(id, _)| id.starts_with("w1/"))
        .expect("writer one in the tree");
    browser
        .click(&format!("#tree [data-agent=\"{one}\"]"))
        .await;
    browser
        .wait(
            "writer one's streamed text",
            "return document.querySelector('#transcript .item.text')?.textContent.includes('first file');",
        )
        .await;
    browser.screenshot(&shots.join("1-streaming.png")).await;

    // The lead's command waits for an approval; the page answers it.
    browser
        .wait(
            "the approval",
            "return document.querySelector('#approvals [data-approval]') !== null;",
        )
        .await;
    let target = browser
        .eval("return document.querySelector('#approvals .target').textContent;")
        .await;
    assert_eq!(target, "touch approved.txt");
    browser.screenshot(&shots.join("2-approval.png")).await;
    assert!(!dir.join("approved.txt").exists());
    browser
        .click("#approvals [data-approval] button[data-answer=\"allow_once\"]")
        .await;
    browser
        .wait(
            "the approval to go",
            "return document.querySelector('#approvals [data-approval]') === null;",
        )
        .await;
    support::wait_until("the approved command to run", || {
        dir.join("approved.txt").exists()
    })
    .await;

    // The writers finish.
    std::fs::write(&go, "").unwrap();
    browser
        .wait(
            "three finished subagents",
            &(AGENTS.replace("return ", "const a = ")
                + "; return a.filter(x => x[0].startsWith('w') && x[1] === 'done').length === 3;"),
        )
        .await;

    // Their worktrees: merge writer one's, discard writer two's (it holds work: confirm).
    let rows = browser
        .wait(
            "three worktrees",
            "document.getElementById('worktrees-refresh').click(); const r = [...document.querySelectorAll('#worktrees [data-worktree]')].map(e => [e.dataset.worktree, e.textContent]); return r.length === 3 && r;",
        )
        .await;
    let id_of = |what: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r[1].as_str().unwrap().contains(what))
            .map(|r| r[0].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no worktree for {what}: {rows}"))
    };
    let (merge, discard) = (id_of("writer one"), id_of("writer two"));
    browser.screenshot(&shots.join("3-finished.png")).await;
    browser
        .click(&format!(
            "[data-worktree=\"{merge}\"] button[data-action=\"merge\"]"
        ))
        .await;
    let said = browser
        .wait(
            "the merge's outcome",
            "return document.getElementById('worktree-message').textContent;",
        )
        .await;
    assert!(
        said.as_str().unwrap().contains("merged into main"),
        "{said}"
    );
    browser
        .wait(
            "the merged worktree to go",
            &format!("return document.querySelector('[data-worktree=\"{merge}\"]') === null;"),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(dir.join("one.txt")).unwrap(),
        "one.txt\n"
    );
    browser
        .click(&format!(
            "[data-worktree=\"{discard}\"] button[data-action=\"discard\"]"
        ))
        .await;
    browser
        .wait(
            "the confirmation",
            &format!("return document.querySelector('[data-worktree=\"{discard}\"] [data-action=\"confirm-discard\"]') !== null;"),
        )
        .await;
    browser
        .screenshot(&shots.join("4-confirm-discard.png"))
        .await;
    browser
        .click(&format!(
            "[data-worktree=\"{discard}\"] [data-action=\"confirm-discard\"]"
        ))
        .await;
    browser
        .wait(
            "the discarded worktree to go",
            &format!("return document.querySelector('[data-worktree=\"{discard}\"]') === null;"),
        )
        .await;
    assert!(
        !dir.join("two.txt").exists(),
        "the discarded work did not land"
    );
    let branches = support::git(&dir, &["branch", "--list"]);
    assert!(!branches.contains(&discard), "{branches}");
    let cost = browser
        .eval("return document.getElementById('total-cost').textContent;")
        .await;
    assert_ne!(cost, "$0.0000", "the priced model's spending shows");
    browser.screenshot(&shots.join("5-reviewed.png")).await;
    std::fs::write(&release, "").unwrap();
    browser.quit().await;
}
