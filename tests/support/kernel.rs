//! Kernel features the safety tests need, as an explicit state. A safety test calls
//! [`require`] with the features it needs: when they are all present it runs and records
//! `ran` in the safety ledger; when one is missing it **fails**, unless the feature's
//! opt-out variable (`CREW_TEST_ALLOW_NO_LANDLOCK=1`, …) says it is knowingly absent, in
//! which case it records `skipped` with the reason and returns. `.ci/run` prints the
//! ledger, so a skipped safety test never passes unseen.
//!
//! `CREW_TEST_SIMULATE_NO_LANDLOCK=1` makes crew itself (and so these probes) see no
//! Landlock, to exercise this path on any kernel.

use std::io::Write;
use std::path::PathBuf;

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
    /// Running as root with `setpriv`, so a test can act as another local user (uid 65534).
    OtherUser,
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
            Feature::OtherUser => "CREW_TEST_ALLOW_NO_OTHER_USER",
        }
    }

    /// Whether this machine has the feature, as crew sees it.
    pub fn present(self) -> bool {
        use crewmaster::tools::landlock::{self, KernelSupport};
        use crewmaster::tools::sandbox::{mount_ns, pid_ns};
        match self {
            Feature::Landlock => landlock::kernel_support() == KernelSupport::Available,
            Feature::MountNamespaces => mount_ns::available(),
            Feature::PidNamespaces => pid_ns::available(),
            Feature::NetworkNamespaces => crewmaster::tools::sandbox::net::available(),
            Feature::LandlockNetwork => crewmaster::tools::sandbox::net::tcp_fence::supported(),
            Feature::Curl => std::process::Command::new("curl")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success()),
            Feature::PidsCgroup => matches!(
                crewmaster::tools::sandbox::limits::status(),
                crewmaster::tools::sandbox::limits::CgroupSupport::Available(_)
            ),
            Feature::Python3 => std::process::Command::new("python3")
                .arg("-V")
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
        }
    }
}

/// The ledger file: `$CREW_SAFETY_LEDGER`, else `target/tmp/safety-tests.log`.
pub fn ledger_path() -> PathBuf {
    std::env::var_os("CREW_SAFETY_LEDGER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("safety-tests.log"))
}

/// The running test's name, as `crate::test` (libtest names each test's thread after it).
fn test_name() -> String {
    let thread = std::thread::current();
    format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        thread.name().unwrap_or("unknown")
    )
}

fn record(line: &str) {
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

/// Returns from the calling test when [`require`] says so.
#[macro_export]
macro_rules! require_features {
    ($($f:ident),+ $(,)?) => {
        if !$crate::support::kernel::require(&[$($crate::support::kernel::Feature::$f),+]) {
            return;
        }
    };
}
