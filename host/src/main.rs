use clap::Parser;

fn main() {
    let cli = cst_agent::cli::Cli::parse();
    // The TUI owns the screen: its logs go to `CST_LOG_FILE`, or nowhere.
    let log_file = match (&cli.command, std::env::var_os("CST_LOG_FILE")) {
        (None, Some(path)) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(std::sync::Arc::new),
        _ => None,
    };
    let to_screen = cli.command.is_some();
    tracing_subscriber::fmt()
        .with_writer(move || Redacting {
            file: log_file.clone(),
            to_screen,
        })
        // No colour codes when stderr is not a terminal or NO_COLOR is set (no-color.org).
        .with_ansi(
            to_screen
                && std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
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

/// The log's writer: stderr (or the TUI's log file) with every secret the host knows replaced
/// (a plugin granted `env:NAME` may log the value; an error may quote a header). The formatter
/// hands over one whole event per write, so a secret is never split across two writes.
struct Redacting {
    file: Option<std::sync::Arc<std::fs::File>>,
    to_screen: bool,
}

impl std::io::Write for Redacting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = cst_agent::cli::redact(&String::from_utf8_lossy(buf));
        if let Some(mut file) = self.file.as_deref() {
            file.write_all(text.as_bytes())?;
        } else if self.to_screen {
            std::io::stderr().write_all(text.as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
