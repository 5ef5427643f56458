//! The `crew` binary: parses the command line and hands over to `crewmaster::cli`.

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CREW_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    std::process::exit(crewmaster::cli::main().await);
}
