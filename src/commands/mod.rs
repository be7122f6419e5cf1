//! One module per command of the command line.

pub mod mcp;
pub mod rebuild;
pub mod serve;
pub mod status;

use crate::catalog::OpenError;
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

pub(crate) fn open_error(settings: &Settings, e: OpenError) -> anyhow::Error {
    match e {
        OpenError::Locked => in_use(settings),
        OpenError::Failed(e) => e,
    }
}
