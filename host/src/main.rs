use clap::Parser;

fn main() {
    let cli = cst_agent::cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("CST_LOG").unwrap_or_else(|_| "warn".into()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(cst_agent::cli::run(cli));
    // Do not wait for background tasks (MCP servers are killed by their guards on drop).
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}
