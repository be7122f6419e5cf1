//! Retries with back-off: a request that failed in a way that may pass (the
//! connection refused, reset or timed out, a 5xx or 429 answer, a body cut
//! short) is tried again after a growing pause; anything else fails at once.

use std::io;
use std::time::Duration;

/// A failed attempt, and whether another may succeed.
#[derive(Debug)]
pub struct Failure {
    pub error: io::Error,
    pub transient: bool,
}

impl Failure {
    pub fn transient(error: io::Error) -> Failure {
        Failure {
            error,
            transient: true,
        }
    }

    pub fn permanent(error: io::Error) -> Failure {
        Failure {
            error,
            transient: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Policy {
    /// Attempts after the first.
    pub retries: u32,
    /// The first pause; each next one is three times longer.
    pub first_pause: Duration,
    /// No attempt starts after this long since the first: a server that
    /// times out every request holds a read for about this long, not for
    /// every retry's full timeout.
    pub give_up_after: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            retries: 4,
            first_pause: Duration::from_millis(100),
            give_up_after: Duration::from_secs(60),
        }
    }
}

/// Runs `attempt` until it succeeds, fails permanently, `stopped` says to give
/// up, or the retries are spent. A transient failure that outlasts the retries
/// keeps an error kind that `transient::is_transient` recognises, so the index
/// defers the file rather than recording it as bad.
pub fn with_retries<T>(
    policy: &Policy,
    stopped: &dyn Fn() -> bool,
    mut attempt: impl FnMut() -> Result<T, Failure>,
) -> io::Result<T> {
    let mut pause = policy.first_pause;
    let mut tries = 0;
    let started = std::time::Instant::now();
    loop {
        match attempt() {
            Ok(v) => return Ok(v),
            Err(f) if !f.transient => return Err(f.error),
            Err(f)
                if tries >= policy.retries
                    || stopped()
                    || started.elapsed() + pause > policy.give_up_after =>
            {
                return Err(io::Error::new(
                    transient_kind(f.error.kind()),
                    format!("{} (after {} attempts)", f.error, tries + 1),
                ));
            }
            Err(f) => {
                tracing::debug!("remote read failed, retrying in {pause:?}: {}", f.error);
                std::thread::sleep(pause);
                pause *= 3;
                tries += 1;
            }
        }
    }
}

/// An error kind the index treats as passing, keeping a network kind as it is.
fn transient_kind(kind: io::ErrorKind) -> io::ErrorKind {
    match kind {
        io::ErrorKind::TimedOut
        | io::ErrorKind::ConnectionRefused
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::NotConnected => kind,
        _ => io::ErrorKind::ConnectionAborted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Policy {
        Policy {
            retries: 3,
            first_pause: Duration::from_millis(1),
            give_up_after: Duration::from_secs(60),
        }
    }

    #[test]
    fn transient_failures_are_retried_and_permanent_ones_are_not() {
        let mut n = 0;
        let got = with_retries(&quick(), &|| false, || {
            n += 1;
            if n < 3 {
                Err(Failure::transient(io::Error::other("503")))
            } else {
                Ok(n)
            }
        });
        assert_eq!(got.unwrap(), 3);
        let mut n = 0;
        let err = with_retries(&quick(), &|| false, || -> Result<(), _> {
            n += 1;
            Err(Failure::permanent(io::Error::new(
                io::ErrorKind::NotFound,
                "404",
            )))
        })
        .unwrap_err();
        assert_eq!((n, err.kind()), (1, io::ErrorKind::NotFound));
        let err = with_retries(&quick(), &|| false, || -> Result<(), _> {
            Err(Failure::transient(io::Error::other("503")))
        })
        .unwrap_err();
        assert!(crate::transient::is_transient(&err), "{err}");
        assert!(err.to_string().contains("after 4 attempts"), "{err}");
        // A stop ends the retries at once.
        let mut n = 0;
        let _ = with_retries(&quick(), &|| true, || -> Result<(), _> {
            n += 1;
            Err(Failure::transient(io::Error::other("503")))
        });
        assert_eq!(n, 1);
        // Past its time budget, no attempt starts.
        let slow = Policy {
            give_up_after: Duration::from_millis(30),
            first_pause: Duration::from_millis(20),
            ..quick()
        };
        let mut n = 0;
        let _ = with_retries(&slow, &|| false, || -> Result<(), _> {
            n += 1;
            std::thread::sleep(Duration::from_millis(15));
            Err(Failure::transient(io::Error::other("timed out")))
        });
        assert_eq!(n, 1);
    }
}
