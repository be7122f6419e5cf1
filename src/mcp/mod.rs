//! The MCP front end: the tool registry, the server, and its transports.

pub mod budget;
pub mod client;
pub mod codec;
pub mod connection;
pub mod prompts;
pub mod reference;
pub mod relay;
pub mod resources;
pub mod response;
mod server;
pub mod tasks;
pub mod tools;
pub mod transport;

pub use server::QuarryServer;
