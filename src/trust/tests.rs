//! Unit tests of the trust list and its pins.

use super::*;

fn fixture() -> (tempfile::TempDir, PathBuf, TrustStore) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap().join("home");
    std::fs::create_dir_all(home.join("proj/sub")).unwrap();
    std::fs::create_dir_all(home.join("proj2")).unwrap();
    let store = TrustStore::for_home(&home);
    (tmp, home, store)
}

#[test]
fn trust_covers_subdirectories_not_siblings_and_revoke_removes_it() {
    let (_t, home, store) = fixture();
    assert!(!store.is_trusted(&home.join("proj")).unwrap());
    // Trusting through a non-canonical spelling stores the canonical path.
    let spelled = home.join("proj/sub/..");
    assert_eq!(
        store.trust(&spelled).unwrap(),
        Granted::Added(home.join("proj"))
    );
    assert!(store.is_trusted(&home.join("proj/sub")).unwrap());
    assert!(!store.is_trusted(&home.join("proj2")).unwrap());
    assert_eq!(
        store.trust(&home.join("proj/sub")).unwrap(),
        Granted::AlreadyCovered(home.join("proj"))
    );
    assert_eq!(store.list().unwrap(), vec![home.join("proj")]);
    assert_eq!(
        store.revoke(&home.join("proj/sub")).unwrap(),
        Revoked::CoveredBy(home.join("proj"))
    );
    assert_eq!(
        store.revoke(&home.join("proj")).unwrap(),
        Revoked::Removed(home.join("proj"))
    );
    assert!(!store.is_trusted(&home.join("proj/sub")).unwrap());
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn a_symlink_is_trusted_by_where_it_points() {
    let (_t, home, store) = fixture();
    let link = home.join("link");
    std::os::unix::fs::symlink(home.join("proj2"), &link).unwrap();
    store.trust(&home.join("proj")).unwrap();
    // A link from a trusted folder's name to an untrusted one is not trusted.
    assert!(!store.is_trusted(&link).unwrap());
    store.trust(&link).unwrap();
    assert!(store.is_trusted(&home.join("proj2")).unwrap());
}

#[test]
fn refuses_root_home_and_missing_dirs_and_reports_a_malformed_list() {
    let (_t, home, store) = fixture();
    assert!(matches!(
        store.trust(Path::new("/")),
        Err(TrustError::TooBroad { .. })
    ));
    assert!(matches!(
        store.trust(&home),
        Err(TrustError::TooBroad { .. })
    ));
    assert!(matches!(
        store.trust(&home.join("nope")),
        Err(TrustError::NoSuchDir { .. })
    ));
    std::fs::create_dir_all(home.join(".crew")).unwrap();
    std::fs::write(store.path(), "{\"trusted\": 3}").unwrap();
    let e = store.is_trusted(&home.join("proj")).unwrap_err();
    assert!(e.to_string().contains("trusted.json"), "{e}");
    assert!(store.trust(&home.join("proj")).is_err(), "never overwrite");
}

#[test]
fn an_entry_without_a_pin_fails_closed_and_trust_pins_it() {
    let (_t, home, store) = fixture();
    std::fs::create_dir_all(home.join(".crew")).unwrap();
    let proj = home.join("proj");
    std::fs::write(
        store.path(),
        serde_json::json!({ "trusted": [proj] }).to_string(),
    )
    .unwrap();
    assert_eq!(
        store.state(&proj).unwrap(),
        TrustState::Unpinned(proj.clone())
    );
    assert!(!store.is_trusted(&proj).unwrap());
    assert!(
        store
            .state(&proj)
            .unwrap()
            .warning(&proj)
            .unwrap()
            .contains("crew trust")
    );
    assert_eq!(store.trust(&proj).unwrap(), Granted::Repinned(proj.clone()));
    assert!(store.is_trusted(&proj).unwrap());
    assert_eq!(store.list().unwrap(), vec![proj]);
}

#[test]
fn an_ancestor_entry_does_not_cover_a_project_with_configuration_of_its_own() {
    let (_t, home, store) = fixture();
    let proj = home.join("proj");
    store.trust(&proj).unwrap();
    // A plain subfolder is covered; one that carries hooks was never pinned.
    assert!(store.is_trusted(&proj.join("sub")).unwrap());
    std::fs::create_dir_all(proj.join("sub/.claude")).unwrap();
    std::fs::write(proj.join("sub/.claude/settings.json"), r#"{"hooks":{}}"#).unwrap();
    assert!(matches!(
        store.state(&proj.join("sub")).unwrap(),
        TrustState::Changed { .. }
    ));
    assert_eq!(
        store.trust(&proj.join("sub")).unwrap(),
        Granted::Added(proj.join("sub"))
    );
    assert!(store.is_trusted(&proj.join("sub")).unwrap());
    // A change in the ancestor's own configuration shows through its subfolders.
    std::fs::create_dir_all(proj.join(".crew")).unwrap();
    std::fs::write(proj.join(".crew/settings.json"), "{}").unwrap();
    assert!(!store.is_trusted(&proj.join("other")).unwrap_or(false));
    assert!(!store.is_trusted(&proj).unwrap());
}
