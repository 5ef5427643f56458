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
        .worker_threads(worker_threads())
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

/// The runtime's worker threads: one, unless `TOKIO_WORKER_THREADS` asks for more.
///
/// Between model answers crew's work comes in short pieces handed from actor to actor
/// (agent, engine, gate, executor, the printer). On one worker each hand-off is a queue
/// push; on two, most of them wake the other thread, and that wake cost more than the
/// work itself (a turn 38 % and a batched call 13 % cheaper on one, with half the CPU;
/// 32 subagents fanned out took the same time). What may block runs off the workers:
/// git, searches, offloads and files not in the page cache on the blocking pool,
/// commands in their own processes.
fn worker_threads() -> usize {
    let Some(asked) = std::env::var_os("TOKIO_WORKER_THREADS") else {
        return 1;
    };
    match asked.to_str().and_then(|n| n.trim().parse::<usize>().ok()) {
        Some(n) if n > 0 => n,
        _ => {
            eprintln!(
                "crew: TOKIO_WORKER_THREADS={} is not a positive number of threads; using 1",
                asked.to_string_lossy()
            );
            1
        }
    }
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
