//! The `crew` binary: parses the command line and hands over to `crewmaster::cli`.

/// See the note at `mimalloc` in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // First, while crew has one thread (the runtime below starts the others): its own
    // mount namespace, where workspaces are overlays. Where that fails, workspaces are
    // full checkouts and the first one made says why.
    crewmaster::sandbox::workspace_ns::enter();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("crew: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    std::process::exit(runtime.block_on(run()));
}

async fn run() -> i32 {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CREW_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // A second fence around crew's own environment (provider keys): a non-dumpable
    // process's /proc/<pid>/environ, mem and fds are closed to other processes of the
    // same (non-root) user, such as commands run unconfined. Confined commands cannot see
    // crew at all (own PID namespace). Children are dumpable again once they exec.
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!("could not make crew non-dumpable: {e}");
    }
    crewmaster::cli::main().await
}
