//! The layering of the workspace, checked on the member crates' manifests: no member
//! depends on `crewmaster`, `crew-protocol` depends on plain-data crates only,
//! `crew-provider` on nothing of the engine, the permission decision (`crew-policy`) on
//! no async runtime, actor, sandbox or provider, and the OS sandbox (`crew-sandbox`) on
//! no actor or provider. The crate boundary makes an import that runs
//! back up a compile error; these tests keep the boundary itself from being dissolved by
//! one added dependency line. Inside the root crate, `imports` keeps the import arrows
//! already cut from running back up.

mod actor_files;
mod imports;
mod module_graph;

use std::path::{Path, PathBuf};

/// The only dependencies `crew-protocol` may have: it is types only.
const PROTOCOL_MAY_USE: &[&str] = &["serde", "serde_json", "thiserror"];

/// What `crew-provider` must never depend on: the engine, the actors, the sandbox.
const PROVIDER_MUST_NOT_USE: &[&str] = &[
    "ractor",
    "ractor_cluster",
    "crew-policy",
    "crew-sandbox",
    "landlock",
    "nix",
];

/// What the permission decision must never depend on: it is a pure function over plain
/// data, below the runtime, the actors, the OS sandbox and the models.
const POLICY_MUST_NOT_USE: &[&str] = &[
    "tokio",
    "ractor",
    "ractor_cluster",
    "crew-sandbox",
    "crew-provider",
    "landlock",
    "nix",
    "reqwest",
];

/// What the OS sandbox must never depend on: it confines processes, it neither runs
/// actors nor talks to models.
const SANDBOX_MUST_NOT_USE: &[&str] = &["ractor", "ractor_cluster", "crew-provider", "reqwest"];

/// The crates a manifest depends on, in every dependency section (normal, dev, build,
/// per-target), by their package name (a renamed dependency's `package = "…"` counts).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            let header = line.trim_matches(|c| c == '[' || c == ']');
            in_deps = false;
            // `[dependencies.tokio]`, `[target.'cfg(unix)'.dev-dependencies.tokio]`
            if let Some((section, name)) = header.rsplit_once('.')
                && section.ends_with("dependencies")
            {
                out.push(name.trim_matches('"').to_string());
            } else {
                in_deps = header.ends_with("dependencies");
            }
            continue;
        }
        if !in_deps || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        // `tokio.workspace = true` names tokio; `rt = { package = "tokio" }` too.
        let key = key.trim().split('.').next().unwrap_or("").trim_matches('"');
        let renamed = value
            .split_once("package")
            .and_then(|(_, rest)| rest.split('"').nth(1));
        out.push(renamed.unwrap_or(key).to_string());
    }
    out
}

fn members() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    out.sort();
    out
}

fn deps_of(member: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(member)
        .join("Cargo.toml");
    dependencies(&std::fs::read_to_string(&path).unwrap())
}

#[test]
fn the_scanner_sees_every_spelling_of_a_dependency() {
    let manifest = r#"
[package]
name = "x"
tokio = "not a dependency: [package]"

[dependencies]
serde.workspace = true
"serde_json" = "1"
rt = { package = "tokio", version = "1" }
# ractor = "0.16"

[dependencies.ractor]
version = "0.16"

[target.'cfg(unix)'.dependencies]
nix = "0.30"

[dev-dependencies]
crewmaster = { path = "../.." }

[build-dependencies]
cc = "1"
"#;
    assert_eq!(
        dependencies(manifest),
        [
            "serde",
            "serde_json",
            "tokio",
            "ractor",
            "nix",
            "crewmaster",
            "cc"
        ]
    );
}

#[test]
fn no_member_crate_depends_on_the_root_package() {
    let members = members();
    assert!(
        members.len() >= 2,
        "expected crew-protocol and crew-provider in crates/, found {members:?}"
    );
    for member in members {
        let deps = dependencies(&std::fs::read_to_string(member.join("Cargo.toml")).unwrap());
        assert!(
            !deps.iter().any(|d| d == "crewmaster"),
            "{} depends on crewmaster: a layer below the root must not reach back up",
            member.display()
        );
    }
}

#[test]
fn crew_protocol_depends_on_plain_data_crates_only() {
    let deps = deps_of("crew-protocol");
    let extra: Vec<&String> = deps
        .iter()
        .filter(|d| !PROTOCOL_MAY_USE.contains(&d.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "crew-protocol is types only and may use {PROTOCOL_MAY_USE:?}; it also uses {extra:?}"
    );
}

#[test]
fn crew_provider_depends_on_nothing_of_the_engine() {
    let deps = deps_of("crew-provider");
    assert!(deps.iter().any(|d| d == "crew-protocol"), "{deps:?}");
    let bad: Vec<&String> = deps
        .iter()
        .filter(|d| PROVIDER_MUST_NOT_USE.contains(&d.as_str()))
        .collect();
    assert!(
        bad.is_empty(),
        "crew-provider must not depend on {bad:?} (the model layer only turns bytes into events)"
    );
}

/// `member` depends on none of `banned`; `why` says what the layer is.
fn assert_avoids(member: &str, banned: &[&str], why: &str) {
    let deps = deps_of(member);
    let bad: Vec<&String> = deps
        .iter()
        .filter(|d| banned.contains(&d.as_str()))
        .collect();
    assert!(bad.is_empty(), "{member} must not depend on {bad:?}: {why}");
}

#[test]
fn crew_policy_is_a_pure_decision() {
    assert_avoids(
        "crew-policy",
        POLICY_MUST_NOT_USE,
        "the permission decision is a pure function, with no async runtime and no actors",
    );
}

#[test]
fn crew_sandbox_runs_no_actors_and_no_models() {
    assert!(deps_of("crew-sandbox").iter().any(|d| d == "crew-policy"));
    assert_avoids(
        "crew-sandbox",
        SANDBOX_MUST_NOT_USE,
        "the OS sandbox confines processes below the agents and the providers",
    );
}
