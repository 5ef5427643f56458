//! The safety-test ledger, shared by the integration tests (`tests/support/kernel.rs`)
//! and the OS sandbox crate's unit tests (`crates/crew-sandbox/src/test_kernel.rs`), which
//! both include this file with `#[path]`. The including module names the crate holding
//! `sandbox` as `krate` (`use crewmaster as krate;` outside, a module re-exporting
//! `crate as sandbox` inside), so one probe serves both.
//!
//! A safety test calls [`require_named`] with the features it needs: when they are all
//! present it records `ran`; when one is missing it **fails**, unless the feature's
//! opt-out variable (`CREW_TEST_ALLOW_NO_LANDLOCK=1`, …) says it is knowingly absent, in
//! which case it records `skipped` with the reason and the test returns. `.ci/run` prints
//! the ledger, so a skipped safety test never passes unseen.
//!
//! `CREW_TEST_SIMULATE_NO_LANDLOCK=1` and `CREW_TEST_SIMULATE_NO_NAMESPACES=1` (mount and
//! PID namespaces) make crew itself, and so these probes, see the feature missing, to
//! exercise this path on any kernel.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;

use super::krate;

/// A feature a safety test cannot do without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Linux Landlock (confined commands).
    Landlock,
    /// Mount namespaces for confined commands (read-only protected files, hidden credentials).
    MountNamespaces,
    /// PID namespaces for confined commands.
    PidNamespaces,
    /// Network namespaces for confined commands (loopback only, the allow-list proxy).
    NetworkNamespaces,
    /// Landlock's TCP rules (ABI 4, Linux 6.7+), the network fence without namespaces.
    LandlockNetwork,
    /// A `curl` program (HTTP, CONNECT and SOCKS5 clients that read the proxy variables).
    Curl,
    /// A `python3` program (opaque writers the shell parser cannot see through).
    Python3,
    /// A pids cgroup crew can make per command (process limits).
    PidsCgroup,
    /// Unprivileged user namespaces (how a non-root crew gets its mount namespace).
    UserNamespaces,
    /// Running as root with `setpriv`, so a test can act as another local user (uid 65534).
    OtherUser,
    /// Overlay mounts in a mount namespace of crew's own (overlay workspaces).
    Overlays,
}

impl Feature {
    /// The variable that, set to `1`, says the feature is knowingly absent here.
    pub fn opt_out(self) -> &'static str {
        match self {
            Feature::Landlock => "CREW_TEST_ALLOW_NO_LANDLOCK",
            Feature::MountNamespaces => "CREW_TEST_ALLOW_NO_MOUNT_NAMESPACES",
            Feature::PidNamespaces => "CREW_TEST_ALLOW_NO_PID_NAMESPACES",
            Feature::NetworkNamespaces => "CREW_TEST_ALLOW_NO_NETWORK_NAMESPACES",
            Feature::LandlockNetwork => "CREW_TEST_ALLOW_NO_LANDLOCK_NETWORK",
            Feature::Curl => "CREW_TEST_ALLOW_NO_CURL",
            Feature::Python3 => "CREW_TEST_ALLOW_NO_PYTHON3",
            Feature::PidsCgroup => "CREW_TEST_ALLOW_NO_PIDS_CGROUP",
            Feature::UserNamespaces => "CREW_TEST_ALLOW_NO_USER_NAMESPACES",
            Feature::OtherUser => "CREW_TEST_ALLOW_NO_OTHER_USER",
            Feature::Overlays => "CREW_TEST_ALLOW_NO_OVERLAYS",
        }
    }

    /// Whether this machine has the feature, as crew sees it (simulations included).
    pub fn present(self) -> bool {
        use krate::sandbox::landlock::{self, KernelSupport};
        use krate::sandbox::{layers, limits, net};
        let runs = |program: &str, arg: &str| {
            std::process::Command::new(program)
                .arg(arg)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        match self {
            Feature::Landlock => landlock::kernel_support() == KernelSupport::Available,
            Feature::MountNamespaces => layers::mount_namespaces(),
            Feature::PidNamespaces => layers::pid_namespaces(),
            Feature::NetworkNamespaces => net::available(),
            Feature::LandlockNetwork => net::tcp_fence::supported(),
            Feature::Curl => runs("curl", "--version"),
            Feature::Python3 => runs("python3", "-V"),
            Feature::PidsCgroup => {
                matches!(limits::status(), limits::CgroupSupport::Available(_))
            }
            // util-linux's `unshare` makes one, as crew does without root.
            Feature::UserNamespaces => std::process::Command::new("unshare")
                .args(["--user", "--map-root-user", "--mount", "true"])
                .output()
                .is_ok_and(|o| o.status.success()),
            Feature::OtherUser => std::process::Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "id",
                    "-u",
                ])
                .output()
                .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"65534")),
            // util-linux's `unshare` and `mount`, as crew mounts a workspace.
            Feature::Overlays => {
                let Ok(tmp) = tempfile::tempdir() else {
                    return false;
                };
                let d = tmp.path().display();
                let script = format!(
                    "mkdir {d}/l {d}/u {d}/w {d}/m && mount -t overlay overlay \
                     -o lowerdir={d}/l,upperdir={d}/u,workdir={d}/w,userxattr {d}/m"
                );
                std::process::Command::new("unshare")
                    .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
                    .output()
                    .is_ok_and(|o| o.status.success())
            }
        }
    }
}

/// The ledger file: `$CREW_SAFETY_LEDGER`, else `safety-tests.log` in cargo's test temp
/// directory (`target/tmp`).
pub fn ledger_path() -> PathBuf {
    std::env::var_os("CREW_SAFETY_LEDGER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            option_env!("CARGO_TARGET_TMPDIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| workspace_root().join("target/tmp"))
                .join("safety-tests.log")
        })
}

/// The workspace's root: the including crate's manifest directory, or for a member crate
/// (`crates/crew-sandbox`) the directory above `crates/`, so unit tests of every crate
/// write one ledger in the workspace's `target/`.
fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    match manifest.parent() {
        Some(crates) if crates.file_name().is_some_and(|n| n == "crates") => {
            crates.parent().map_or(manifest.clone(), PathBuf::from)
        }
        _ => manifest,
    }
}

/// The running test's name, as `crate::test` (libtest names each test's thread after it).
pub fn test_name() -> String {
    let thread = std::thread::current();
    format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        thread.name().unwrap_or("unknown")
    )
}

/// Appends one line to the ledger.
pub fn record(line: &str) {
    let path = ledger_path();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // One short O_APPEND write per line, so parallel tests do not interleave.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        panic!("cannot write the safety ledger {}: {e}", path.display());
    }
}

/// Whether the running safety test may go on: true when every feature is present
/// (recorded as `ran`); false when a missing one is knowingly absent (recorded as
/// `skipped`); otherwise it panics, naming the feature and the opt-out variable.
pub fn require(features: &[Feature]) -> bool {
    require_named(&test_name(), features)
}

/// [`require`] for a named part of a test (a check a test makes only with the feature).
pub fn require_named(name: &str, features: &[Feature]) -> bool {
    let missing: Vec<Feature> = features.iter().copied().filter(|f| !f.present()).collect();
    if missing.is_empty() {
        record(&format!("ran\t{name}\t{features:?}"));
        return true;
    }
    let not_allowed: Vec<&Feature> = missing
        .iter()
        .filter(|f| std::env::var_os(f.opt_out()).is_none_or(|v| v != "1"))
        .collect();
    if let Some(f) = not_allowed.first() {
        record(&format!("FAILED\t{name}\tmissing {missing:?}"));
        panic!(
            "safety test {name} needs {f:?}, which this machine lacks, so it cannot check \
             what it claims. Run it where {f:?} is available, or set {}=1 to skip it \
             knowingly (it is then reported as skipped, never as passed)",
            f.opt_out()
        );
    }
    record(&format!(
        "skipped\t{name}\tmissing {missing:?}, allowed by opt-out"
    ));
    eprintln!("SKIPPED safety test {name}: missing {missing:?} (knowingly, by opt-out)");
    false
}

/// Records that the test `name` ran with the peer program `what` (not a kernel feature).
pub fn record_ran(name: &str, what: &str) {
    record(&format!("ran\t{name}\t[{what}]"));
}

/// Records that the safety test `name` did not run because `why` (a peer program that is
/// not installed, not a kernel feature), and says so on stderr: the test then returns
/// without failing, and `.ci/run` lists it among the skipped.
pub fn record_skip(name: &str, why: &str) {
    record(&format!("skipped\t{name}\t{why}"));
    eprintln!("SKIPPED {name}: {why}");
}
