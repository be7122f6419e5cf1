//! Host names under `localhost` (`bucket.localhost`) resolved to loopback
//! without asking DNS, as RFC 6761 (section 6.3) lets applications do and
//! browsers do: a virtual-hosted S3 bucket of a store on this machine
//! (`http://bucket.localhost:9000/`) is then reachable although the system's
//! resolver knows `localhost` alone. Every other name goes to the system's
//! resolver, as before.

use std::net::{Ipv4Addr, SocketAddr};

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

#[derive(Debug, Default)]
pub struct LocalhostNames(DefaultResolver);

/// Whether `host` is `localhost` or a name beneath it.
fn is_localhost(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

impl Resolver for LocalhostNames {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if let Some(host) = uri.host().filter(|h| is_localhost(h)) {
            let default_port = if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            };
            let port = uri.port_u16().unwrap_or(default_port);
            tracing::trace!("{host} is a loopback name");
            let mut addrs = self.empty();
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
            return Ok(addrs);
        }
        self.0.resolve(uri, config, timeout)
    }
}

/// An agent with `config` whose names under `localhost` are loopback.
pub fn agent(config: ureq::config::Config) -> ureq::Agent {
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::default(),
        LocalhostNames::default(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_under_localhost_are_loopback_and_others_are_not() {
        for name in ["localhost", "bucket.localhost", "A.B.LOCALHOST."] {
            assert!(super::is_localhost(name), "{name}");
        }
        for name in ["localhost.example.org", "notlocalhost", "example.org"] {
            assert!(!super::is_localhost(name), "{name}");
        }
    }
}
