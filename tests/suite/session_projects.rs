//! Sessions belong to one project: two real projects whose old directory slug is the
//! same (`…/a-b` and `…/a/b`) never see each other's conversation through `--continue`
//! or `--resume`, checked in the requests the scripted model receives; old-layout
//! directories are adopted only when they can only be this project's, and otherwise
//! left on disk untouched.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

const SECRET: &str = "PROJECT-A-SECRET-7f3c1d";
const TASK: &str = "the task of project A: summarise secret.txt";

/// A base directory holding project A (`a-b`, with `secret.txt`), and a HOME.
struct Fixture {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    support::put(&base, "a-b/secret.txt", &format!("{SECRET}\n"));
    Fixture {
        _tmp: tmp,
        base,
        home,
    }
}

impl Fixture {
    fn a(&self) -> PathBuf {
        self.base.join("a-b")
    }

    /// Makes project B, `a/b`: the same old slug as A.
    fn b(&self) -> PathBuf {
        let b = self.base.join("a/b");
        std::fs::create_dir_all(&b).unwrap();
        b
    }

    fn projects(&self) -> PathBuf {
        self.home.join(".crew/projects")
    }

    /// Runs project A's first session: the model reads the secret file.
    fn run_a(&self) {
        let script = json!({"turns": [
            {"tool_calls": [{"name": "read_file", "input": {"path": "secret.txt"}}]},
            {"text": "summarised"}
        ]});
        let (_, requests) = support::crew_scripted(&self.a(), &self.home, &script, &["-p", TASK]);
        assert!(
            all_text(&requests).contains(SECRET),
            "the secret is in A's own conversation"
        );
    }

    /// `crew ARGS` in `dir` with a one-answer script; output and recorded requests.
    fn run(&self, dir: &Path, args: &[&str]) -> (std::process::Output, Vec<Value>) {
        support::crew_scripted_output(dir, &self.home, &json!({"turns": [{"text": "ok"}]}), args)
    }

    /// Turns A's new-layout directory into the old layout's (no root recorded).
    fn make_old_layout(&self) -> PathBuf {
        let a = self.a();
        let new = self.projects().join(crewmaster::store::project_slug(&a));
        let old = self.projects().join(crewmaster::store::legacy_slug(&a));
        std::fs::remove_file(new.join(crewmaster::store::ROOT_RECORD)).unwrap();
        std::fs::rename(&new, &old).unwrap();
        old
    }
}

fn all_text(requests: &[Value]) -> String {
    serde_json::to_string(requests).unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_no_trace_of_a(out: &std::process::Output, requests: &[Value]) {
    let text = all_text(requests);
    for trace in [SECRET, "the task of project A", "summarised"] {
        assert!(!text.contains(trace), "`{trace}` reached B's model: {text}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(trace),
            "`{trace}` on B's screen"
        );
    }
}

/// Every `*.jsonl` under `dir`, with its content.
fn transcripts(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            found.push((e.path(), std::fs::read_to_string(e.path()).unwrap()));
        }
    }
    found.sort();
    found
}

#[test]
fn continue_and_resume_in_a_colliding_project_never_reach_the_other_projects_session() {
    let f = fixture();
    f.run_a();
    let b = f.b();
    let a_session = transcripts(&f.projects().join(crewmaster::store::project_slug(&f.a())));
    assert_eq!(a_session.len(), 1, "A has one session");
    let a_id = a_session[0]
        .0
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    // --continue in B: B has no session; nothing of A is sent or shown.
    let (out, requests) = f.run(&b, &["--continue", "-p", "what did we do?"]);
    assert!(!out.status.success(), "B has nothing to continue");
    assert!(
        stderr(&out).contains("no earlier session"),
        "{}",
        stderr(&out)
    );
    assert_no_trace_of_a(&out, &requests);

    // --resume with A's id, plainly and through `..`: refused in B.
    let sneaky = format!("../{}/{a_id}", crewmaster::store::project_slug(&f.a()));
    for id in [a_id.as_str(), sneaky.as_str()] {
        let (out, requests) = f.run(&b, &["--resume", id, "-p", "go on"]);
        assert!(!out.status.success(), "--resume {id} in B must fail");
        assert_no_trace_of_a(&out, &requests);
    }

    // B's own session, then --continue in B: only B's conversation.
    let (out, _) = f.run(&b, &["-p", "project B's own task"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, requests) = f.run(&b, &["--continue", "-p", "and now?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(all_text(&requests).contains("project B's own task"));
    assert_no_trace_of_a(&out, &requests);

    // --continue in A still resumes A.
    let (out, requests) = f.run(&f.a(), &["--continue", "-p", "go on"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = all_text(&requests);
    assert!(text.contains(SECRET) && text.contains(TASK), "{text}");
    assert!(!text.contains("project B's own task"), "{text}");
}

#[test]
fn an_old_layout_directory_is_adopted_when_only_this_project_can_own_it() {
    let f = fixture();
    f.run_a();
    let old = f.make_old_layout();
    let before = transcripts(&old);
    assert_eq!(before.len(), 1);

    let (out, requests) = f.run(&f.a(), &["--continue", "-p", "go on"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = all_text(&requests);
    assert!(text.contains(SECRET) && text.contains(TASK), "{text}");
    assert!(stderr(&out).contains("moved this project's sessions"));

    // Moved whole: the old directory is gone, the transcript is in the new one, intact
    // up to the lines this run appended.
    assert!(!old.exists());
    let new = f.projects().join(crewmaster::store::project_slug(&f.a()));
    let after = transcripts(&new);
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].0.file_name(), before[0].0.file_name());
    assert!(after[0].1.starts_with(&before[0].1));
    assert!(crewmaster::store::owned_by(&new, &f.a()));
}

#[test]
fn an_old_layout_directory_two_projects_could_own_is_picked_by_neither_and_kept() {
    let f = fixture();
    f.run_a();
    let b = f.b();
    let old = f.make_old_layout();
    let before = transcripts(&old);

    let (out, requests) = f.run(&b, &["--continue", "-p", "what did we do?"]);
    assert!(!out.status.success(), "B must not continue A's session");
    assert_no_trace_of_a(&out, &requests);
    let err = stderr(&out);
    assert!(
        err.contains("left there") && err.contains(&old.display().to_string()),
        "{err}"
    );

    // Fail closed for A too: it cannot be told from B's, so it is not resumed, and
    // the files stay as they were, where they were.
    let (out, requests) = f.run(&f.a(), &["--continue", "-p", "go on"]);
    assert!(!out.status.success());
    assert!(!all_text(&requests).contains(SECRET));
    assert_eq!(transcripts(&old), before);

    // `crew sessions list` in B lists none of it either.
    let out = support::crew(&b, &f.home, &["sessions", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(!listed.contains("the task of project A"), "{listed}");
}
