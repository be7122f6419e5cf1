//! One module per command of the command line.

pub mod call;
pub mod mcp;
mod notify;
pub mod rebuild;
mod render;
pub mod serve;
pub mod status;
pub mod tools;

use crate::catalog::{Catalog, OpenError};
use crate::config::Settings;

/// `quarry completions SHELL`: the shell's completion script on stdout.
pub fn completions(args: crate::cli::CompletionsArgs) -> anyhow::Result<()> {
    let mut command = crate::cli::command();
    // Made in memory: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "quarry", &mut script);
    print_out(&String::from_utf8_lossy(&script))
}

/// Writes a command's output to stdout. A reader that has gone away
/// (`quarry tools --json | grep -q call`, `| head`) ends the output quietly,
/// as for any Unix tool: Rust ignores SIGPIPE, and `print!` would panic.
pub(crate) fn print_out(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => Ok(written?),
    }
}

/// The message for a catalog another quarry process holds.
pub(crate) fn in_use(settings: &Settings) -> anyhow::Error {
    anyhow::anyhow!(
        "the catalog at {} is in use by another quarry process (serving on {}); \
         use `quarry mcp` to connect to it, `quarry status` to see it, or stop it first",
        settings.catalog_dir.display(),
        settings.socket.display()
    )
}

/// Opens the catalog for a command that must own it (serve, rebuild). A brief
/// hold by `quarry status` is waited out; a serving process is reported.
pub(crate) fn open_owned(settings: &Settings) -> anyhow::Result<Catalog> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match Catalog::open(&settings.catalog_dir, &settings.roots) {
            Ok(catalog) => return Ok(catalog),
            Err(OpenError::Locked) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(OpenError::Locked) => return Err(in_use(settings)),
            Err(OpenError::Failed(e) | OpenError::Corrupt(e)) => return Err(e),
        }
    }
}
