//! Logs go to stderr: in `mcp` mode stdout carries the protocol.

use tracing_subscriber::EnvFilter;

pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 => "quarry=info,warn",
        1 => "quarry=debug,info",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}
