//! Unit tests of the hidden set: what it lists for a crafted home, project and crew home.

use super::*;
use crew_policy::{Layer, Policy, Rule, RuleKind};

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    let proj = base.join("proj");
    for d in [
        ".ssh",
        ".config/gh",
        ".claude",
        ".crew/worktrees/r/a",
        ".crew/worktrees/r/b",
        ".crew/projects/p/s1/results",
    ] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "KEY").unwrap();
    std::fs::write(home.join(".config/gh/hosts.yml"), "token").unwrap();
    std::fs::write(home.join(".claude/.credentials.json"), "{}").unwrap();
    std::fs::write(home.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(home.join(".crew/cluster.cookie"), "COOKIE").unwrap();
    std::fs::create_dir_all(proj.join("secrets/deep")).unwrap();
    std::fs::create_dir_all(proj.join("src/tls")).unwrap();
    std::fs::write(proj.join("secrets/deep/key.txt"), "TOPSECRET").unwrap();
    std::fs::write(proj.join(".env"), "A=1").unwrap();
    std::fs::write(proj.join("src/tls/server.pem"), "PEM").unwrap();
    std::fs::write(proj.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::hard_link(home.join(".ssh/id_rsa"), proj.join("src/copy")).unwrap();
    std::fs::hard_link(home.join(".crew/cluster.cookie"), proj.join("cookie")).unwrap();
    std::fs::hard_link(proj.join("src/main.rs"), proj.join("src/main2.rs")).unwrap();
    std::fs::write(proj.join("elsewhere"), "x").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), proj.join("link")).unwrap();
    Fixture {
        _tmp: tmp,
        home,
        proj,
    }
}

fn filter(f: &Fixture, rules: &[&str]) -> Arc<WalkFilter> {
    let policy = Policy {
        project_root: Some(f.proj.clone()),
        home: Some(f.home.clone()),
        rules: rules
            .iter()
            .map(|r| {
                Rule::parse_with(r, RuleKind::Deny, Layer::User, Some(&f.home), &|_| None).unwrap()
            })
            .collect(),
        ..Policy::default()
    };
    Arc::new(WalkFilter::new(&policy))
}

#[test]
fn credentials_crew_home_deny_rules_and_links_to_them_are_hidden() {
    let f = fixture();
    let walk = filter(
        &f,
        &["Read(./secrets/**)", "Read(./.env)", "Read(**/*.pem)"],
    );
    let set = HiddenSet::for_command(&HideScope::new(
        walk,
        std::slice::from_ref(&f.proj),
        &f.proj,
    ));
    assert!(set.dirs.contains(&f.home.join(".ssh")), "{set:?}");
    assert!(set.dirs.contains(&f.home.join(".config/gh")), "{set:?}");
    assert!(
        set.files
            .contains(&f.home.join(".claude/.credentials.json")),
        "{set:?}"
    );
    assert!(!set.hides(&f.home.join(".claude/settings.json")), "{set:?}");
    assert!(
        set.dirs.contains(&f.proj.join("secrets")),
        "the directory whole: {set:?}"
    );
    assert!(set.files.contains(&f.proj.join(".env")), "{set:?}");
    assert!(
        set.files.contains(&f.proj.join("src/tls/server.pem")),
        "{set:?}"
    );
    assert!(
        set.files.contains(&f.proj.join("src/copy")),
        "hard link to a key: {set:?}"
    );
    assert!(
        set.files.contains(&f.proj.join("cookie")),
        "hard link to the cookie: {set:?}"
    );
    assert!(!set.hides(&f.proj.join("src/main.rs")), "{set:?}");
    assert!(!set.hides(&f.proj.join("src/main2.rs")), "{set:?}");
    // crew's home is veiled whole; the project lies outside it, so nothing is kept.
    let veil = set.veil.as_ref().expect("crew's home is veiled");
    assert_eq!(veil.over, f.home.join(".crew"));
    assert!(veil.keep.is_empty(), "{veil:?}");
    assert!(set.hides(&f.home.join(".crew/cluster.cookie")));
    // Nothing is listed twice or below another entry (the cookie is under the veil).
    assert!(
        !set.files.contains(&f.home.join(".crew/cluster.cookie")),
        "{set:?}"
    );
    for p in set.dirs.iter().chain(&set.files) {
        let others = set
            .dirs
            .iter()
            .filter(|d| p.starts_with(d) && *d != p)
            .count();
        assert_eq!(
            others, 0,
            "{p:?} lies below another hidden directory: {set:?}"
        );
    }
}

#[test]
fn the_agents_own_worktree_and_results_stay_visible_under_the_veil() {
    let f = fixture();
    let own = f.home.join(".crew/worktrees/r/a");
    let policy = Policy {
        project_root: Some(f.proj.clone()),
        home: Some(f.home.clone()),
        results_dir: Some(f.home.join(".crew/projects/p/s1/results")),
        ..Policy::default()
    };
    let walk = Arc::new(WalkFilter::new(&policy));
    let set = HiddenSet::for_command(&HideScope::new(walk, std::slice::from_ref(&own), &own));
    let veil = set.veil.as_ref().unwrap();
    assert_eq!(
        veil.keep,
        vec![
            f.home.join(".crew/projects/p/s1/results"),
            f.home.join(".crew/worktrees/r/a"),
        ]
    );
    assert!(!set.hides(&own.join("file")));
    assert!(set.hides(&f.home.join(".crew/worktrees/r/b")));
    assert!(set.hides(&f.home.join(".crew/projects/p/s2")));
}

#[test]
fn a_project_holding_the_home_still_veils_crews_home() {
    let f = fixture();
    let walk = filter(&f, &[]);
    let set = HiddenSet::for_command(&HideScope::new(
        walk,
        std::slice::from_ref(&f.home),
        &f.home,
    ));
    let veil = set.veil.as_ref().unwrap();
    assert_eq!(veil.over, f.home.join(".crew"));
    assert!(veil.keep.is_empty());
    assert!(set.dirs.contains(&f.home.join(".ssh")));
}

#[test]
fn allow_read_lets_a_credential_store_through_and_nothing_else() {
    let f = fixture();
    let walk = filter(&f, &[]);
    let mut scope = HideScope::new(walk, std::slice::from_ref(&f.proj), &f.proj);
    scope.allow_read = vec![f.home.join(".config/gh")];
    let set = HiddenSet::for_command(&scope);
    assert!(!set.hides(&f.home.join(".config/gh/hosts.yml")), "{set:?}");
    assert!(set.hides(&f.home.join(".ssh/id_rsa")), "{set:?}");
    assert!(set.veil.is_some());
}

#[test]
fn the_teams_files_stay_hidden_even_when_allow_read_lifts_the_veil() {
    let f = fixture();
    std::fs::create_dir_all(f.home.join(".crew/teams/t/todos")).unwrap();
    std::fs::write(f.home.join(".crew/teams/t/todos.lock"), "").unwrap();
    let lock = f.home.join(".crew/teams/t/todos.lock");
    let walk = filter(&f, &[]);
    let mut scope = HideScope::new(walk, std::slice::from_ref(&f.proj), &f.proj);
    assert!(HiddenSet::for_command(&scope).hides(&lock));
    for wide in [f.home.join(".crew"), f.home.clone()] {
        scope.allow_read = vec![wide.clone()];
        let set = HiddenSet::for_command(&scope);
        assert!(set.veil.is_none(), "{wide:?}: {set:?}");
        assert!(set.hides(&lock), "{wide:?}: {set:?}");
        assert!(set.dirs.contains(&f.home.join(".crew/teams")), "{set:?}");
    }
}
