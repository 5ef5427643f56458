//! Auto mode sees everything it allows: a call longer than the classifier is shown is
//! asked (denied headless) however the classifier would answer, a long call under that
//! bound is shown whole, and a package runner's allow rule (`Bash(npm:*)`) is set aside
//! in auto so `npm exec -c CMD` goes to the classifier.

use super::{answer, dirs, run_commands};
use crewmaster::auto_mode::classifier::MAX_CALL_CHARS;

/// A classifier that allows everything it is asked about.
fn allow_all(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|_| answer("allow", "it serves the task"))
        .collect()
}

#[test]
fn a_call_longer_than_the_classifier_is_shown_never_runs_on_its_allow() {
    let (_d, work, home) = dirs();
    // The unseen tail of a call past the bound: the classifier would allow anything.
    let padding = "a".repeat(MAX_CALL_CHARS);
    let long = format!("echo {padding} >/dev/null; touch PWNED");
    // Spelled with a comment, and as a heredoc-free multi-line script.
    let commented = format!("true # {padding}\ntouch PWNED2");
    let r = run_commands(&work, &home, "auto", &[&long, &commented], allow_all(4));
    assert!(!work.join("PWNED").exists(), "{}", r.stderr);
    assert!(!work.join("PWNED2").exists(), "{}", r.stderr);
    assert!(
        r.of("classifier").is_empty(),
        "a call the classifier cannot see whole must not be put to it"
    );
    let saw = r.lead_saw();
    assert!(saw.contains("nobody can answer"), "{saw}");
    assert_eq!(r.result["auto_mode"]["allowed"], 0, "{}", r.result);
}

#[test]
fn a_call_past_the_old_cut_is_shown_whole_tail_included() {
    let (_d, work, home) = dirs();
    // 10,000 characters: the classifier used to see only the first 4,000.
    let cmd = format!("echo {} >/dev/null; touch SEEN_TAIL", "b".repeat(10_000));
    let r = run_commands(
        &work,
        &home,
        "auto",
        &[&cmd],
        vec![answer("deny", "the tail creates a file")],
    );
    let asked = r.of("classifier");
    assert_eq!(asked.len(), 1, "{}", r.stderr);
    let prompt = asked[0]["messages"].to_string();
    // The whole command, in one piece (the engine's reason quoting it may be clipped;
    // the arguments are not).
    assert!(prompt.contains(&cmd), "the call was not shown whole");
    assert!(!work.join("SEEN_TAIL").exists());
}

#[test]
fn an_npm_allow_rule_does_not_let_npm_exec_past_the_classifier() {
    for (cmd, marker) in [
        ("npm exec -c 'touch npm-exec.txt'", "npm-exec.txt"),
        ("npx -c 'touch npx.txt'", "npx.txt"),
        ("npm x -c 'touch npm-x.txt'", "npm-x.txt"),
    ] {
        let (_d, work, home) = dirs();
        super::put(
            &home,
            ".crew/settings.json",
            r#"{"permissions": {"allow": ["Bash(npm:*)", "Bash(npx:*)"]}}"#,
        );
        let r = run_commands(
            &work,
            &home,
            "auto",
            &[cmd],
            vec![answer("deny", "runs an arbitrary command")],
        );
        let asked = r.of("classifier");
        assert_eq!(
            asked.len(),
            1,
            "`{cmd}` skipped the classifier: {}",
            r.stderr
        );
        assert!(asked[0]["messages"].to_string().contains("touch"), "{cmd}");
        assert!(!work.join(marker).exists(), "`{cmd}` ran");
        assert_eq!(r.result["auto_mode"]["denied"], 1, "{}", r.result);
    }
}
