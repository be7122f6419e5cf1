//! The worker's side: limits itself, then answers requests from its standard
//! input (a Unix socket carrying each request's file) on its standard output,
//! until the input ends.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use super::{PROGRESS_FRAME, fdpass};

/// The worker's address space in MiB follows this argument.
pub(super) const MEMORY_FLAG: &str = "--memory-mib";
/// The worker's CPU seconds per request follow this argument.
pub(super) const CPU_FLAG: &str = "--cpu-secs";

/// Tells the parent how a request advances (progress frames before the answer).
pub struct Progress<'a> {
    out: &'a mut dyn Write,
}

impl Progress<'_> {
    /// Sends (done, total); a parent that went away ends the worker at its
    /// next read, so a failed write is not an error here.
    pub fn report(&mut self, done: u64, total: u64) {
        let mut frame = [0u8; 24];
        frame[..8].copy_from_slice(&PROGRESS_FRAME.to_le_bytes());
        frame[8..16].copy_from_slice(&done.to_le_bytes());
        frame[16..].copy_from_slice(&total.to_le_bytes());
        let _ = self.out.write_all(&frame).and_then(|()| self.out.flush());
    }
}

/// The limits a worker was started with (its arguments after the service's).
#[derive(Debug, Default, PartialEq, Eq)]
struct Limits {
    memory_mib: Option<u64>,
    cpu_secs: Option<u64>,
}

impl Limits {
    fn from_args(mut args: impl Iterator<Item = String>) -> Result<Limits, String> {
        let mut limits = Limits::default();
        while let Some(flag) = args.next() {
            let value = args
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{flag} needs a number"))?;
            match flag.as_str() {
                MEMORY_FLAG => limits.memory_mib = Some(value),
                CPU_FLAG => limits.cpu_secs = Some(value),
                _ => return Err(format!("unknown worker argument {flag}")),
            }
        }
        Ok(limits)
    }
}

/// Runs a worker: limits itself as its arguments say, then hands each
/// request's body and file to `answer`, whose bytes go back framed by their
/// length. Returns when the input ends (the parent closed it or went away).
pub fn serve(mut answer: impl FnMut(&[u8], File, &mut Progress<'_>) -> Vec<u8>) -> ExitCode {
    crate::panics::install_hook();
    let limits = match Limits::from_args(std::env::args().skip(2)) {
        Ok(limits) => limits,
        Err(why) => {
            eprintln!("quarry worker: {why}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = limit_memory(limits.memory_mib) {
        eprintln!("quarry worker: cannot limit its memory: {e}");
        return ExitCode::FAILURE;
    }
    let Ok(input) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return ExitCode::FAILURE;
    };
    let requests = UnixStream::from(input);
    let mut stdout = std::io::stdout().lock();
    loop {
        let (fd, body) = match fdpass::receive(&requests) {
            Ok(Some(got)) => got,
            Ok(None) => return ExitCode::SUCCESS,
            Err(_) => return ExitCode::FAILURE,
        };
        if let Some(secs) = limits.cpu_secs
            && let Err(e) = limit_cpu_from_now(secs)
        {
            eprintln!("quarry worker: cannot limit its CPU time: {e}");
            return ExitCode::FAILURE;
        }
        let bytes = answer(&body, File::from(fd), &mut Progress { out: &mut stdout });
        let framed = stdout
            .write_all(&(bytes.len() as u64).to_le_bytes())
            .and_then(|()| stdout.write_all(&bytes))
            .and_then(|()| stdout.flush());
        if framed.is_err() {
            return ExitCode::FAILURE;
        }
    }
}

/// Caps the address space (soft and hard: the worker cannot raise it again)
/// and turns core files off: a worker killed by a limit leaves nothing behind.
fn limit_memory(mib: Option<u64>) -> std::io::Result<()> {
    set_limit(libc::RLIMIT_CORE, 0, 0)?;
    if let Some(mib) = mib {
        let bytes = mib.saturating_mul(1 << 20);
        set_limit(libc::RLIMIT_AS, bytes, bytes)?;
    }
    Ok(())
}

/// Lets the coming request use `secs` of CPU time: the soft limit is what the
/// worker has used so far and `secs` (past it the kernel sends SIGXCPU, which
/// ends the worker). A pooled worker's earlier requests do not count against
/// the next one.
fn limit_cpu_from_now(secs: u64) -> std::io::Result<()> {
    // SAFETY: getrusage writes one rusage struct that we own.
    let used = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1) as u64
    };
    let hard = current_limit(libc::RLIMIT_CPU)?.1;
    set_limit(libc::RLIMIT_CPU, (used + secs).min(hard), hard)
}

fn current_limit(resource: libc::__rlimit_resource_t) -> std::io::Result<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct that we own.
    if unsafe { libc::getrlimit(resource, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((limit.rlim_cur, limit.rlim_max))
}

/// Sets a limit, never above the hard limit the worker inherited.
fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> std::io::Result<()> {
    let inherited = current_limit(resource)?.1;
    let limit = libc::rlimit {
        rlim_cur: soft.min(inherited),
        rlim_max: hard.min(inherited),
    };
    // SAFETY: setrlimit reads one rlimit struct that we own.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_arguments_name_its_limits() {
        let args = |a: &[&str]| Limits::from_args(a.iter().map(|s| s.to_string()));
        assert_eq!(
            args(&[MEMORY_FLAG, "512", CPU_FLAG, "130"]),
            Ok(Limits {
                memory_mib: Some(512),
                cpu_secs: Some(130)
            })
        );
        assert_eq!(args(&[]), Ok(Limits::default()));
        assert!(args(&[MEMORY_FLAG]).is_err());
        assert!(args(&[MEMORY_FLAG, "lots"]).is_err());
        assert!(args(&["--other", "1"]).is_err());
    }
}
