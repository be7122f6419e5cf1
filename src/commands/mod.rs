//! One module per command of the command line.

pub mod mcp;
pub mod rebuild;
pub mod serve;
pub mod status;

use crate::catalog::{Catalog, OpenError};
use crate::config::Settings;

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
