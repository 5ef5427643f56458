//! `crew worker` processes on loopback for tests: a cookie file only its owner can read,
//! a free port, and a worker started with `HOME` set to the test's home, waited for until
//! it listens (on its log, never on time). Killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A worker process; killed when dropped.
pub struct WorkerProcess {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its `--workdir` (task copies live here).
    pub workdir: PathBuf,
    /// Its stderr.
    pub log: PathBuf,
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl WorkerProcess {
    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A free loopback port (bound and released; the worker binds it right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Writes `secret` to `path`, readable by its owner only (as `crew worker` requires).
pub fn write_cookie(path: &Path, secret: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Starts `crew worker --slots SLOTS --name NAME` with `HOME=home` and waits until it
/// listens.
pub fn start_worker(home: &Path, cookie: &Path, name: &str, slots: u32) -> WorkerProcess {
    start_worker_with(home, cookie, name, slots, &[])
}

/// [`start_worker`] with `extra` arguments for `crew worker` (`--orphan-timeout 1`, TLS).
pub fn start_worker_with(
    home: &Path,
    cookie: &Path,
    name: &str,
    slots: u32,
    extra: &[&str],
) -> WorkerProcess {
    let addr = format!("127.0.0.1:{}", free_port());
    let workdir = home.join(format!("workdir-{name}"));
    let log = home.join(format!("{name}.log"));
    let child = Command::new(env!("CARGO_BIN_EXE_crew"))
        .args(["worker", "--listen", &addr, "--cookie-file"])
        .arg(cookie)
        .args(["--slots", &slots.to_string(), "--name", name, "--workdir"])
        .arg(&workdir)
        .args(extra)
        .env("HOME", home)
        .env("CREW_LOG", "crewmaster=info")
        .env("NO_COLOR", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let w = WorkerProcess {
        child,
        addr,
        workdir,
        log,
    };
    // The whole line: `eprintln!` writes it in pieces, and tests read its end (`TLS only`).
    super::wait_until_blocking(&format!("worker {name} to listen"), || {
        w.log()
            .split_inclusive('\n')
            .any(|l| l.contains("listening on") && l.ends_with('\n'))
    });
    w
}
