//! Telling a service manager how quarry is doing (systemd's `sd_notify`
//! protocol): one datagram per state to the socket named by `$NOTIFY_SOCKET`, a
//! path or, starting with `@`, an abstract name. Without the variable (no
//! service manager asked) nothing is sent. Failures are logged, never fatal: the
//! daemon serves either way.

use std::os::unix::net::UnixDatagram;

/// The daemon listens and serves: `Type=notify` units count as started now.
pub fn ready() {
    send("READY=1\nSTATUS=serving");
}

/// The daemon is shutting down.
pub fn stopping() {
    send("STOPPING=1");
}

fn send(state: &str) {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send_to(&target.to_string_lossy(), state) {
        tracing::warn!("cannot notify the service manager: {e}");
    }
}

fn send_to(target: &str, state: &str) -> std::io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    match target.strip_prefix('@') {
        #[cfg(target_os = "linux")]
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            socket.send_to_addr(state.as_bytes(), &addr)?;
        }
        #[cfg(not(target_os = "linux"))]
        Some(_) => {
            return Err(std::io::Error::other("abstract sockets need Linux"));
        }
        None => {
            socket.send_to(state.as_bytes(), target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_reach_a_path_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        send_to(path.to_str().unwrap(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
    }
}
