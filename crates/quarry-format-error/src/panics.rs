//! Turning a caught panic into a message for a file's error or a tool's answer,
//! and keeping expected panics out of the log. Third-party parsers panic on
//! hostile files ("not a number" deep inside pdf-extract); such a panic is
//! caught and becomes the file's error, so the default hook's message and
//! stack trace on stderr would only bury the one line the caller logs. Panics
//! nobody catches still go to the default hook.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    /// How many `catch_quietly` calls this thread is inside.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// Where the last quietly caught panic of this thread happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// A panic caught by `catch_quietly`: its message and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caught {
    pub message: String,
    /// `file:line` of the panic, when the hook saw it.
    pub location: Option<String>,
}

impl std::fmt::Display for Caught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Runs `f`, catching a panic as its message; while it runs, the hook that
/// `install_hook` set prints nothing for this thread's panics (the caller
/// reports them, in one line).
pub fn catch_quietly<T>(f: impl FnOnce() -> T) -> Result<T, Caught> {
    CATCHING.with(|c| c.set(c.get() + 1));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    outcome.map_err(|panic| Caught {
        message: panic_message(panic.as_ref()),
        location: LOCATION.with_borrow_mut(Option::take),
    })
}

/// Installs the panic hook: silent for panics `catch_quietly` catches (it
/// keeps their location for the caller), the default hook for the others.
pub fn install_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if CATCHING.with(Cell::get) > 0 {
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            LOCATION.with_borrow_mut(|slot| *slot = location);
            return;
        }
        default(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_is_its_message_and_place() {
        install_hook();
        let caught = catch_quietly(|| -> u32 { panic!("not a number") }).unwrap_err();
        assert_eq!(caught.message, "not a number");
        let location = caught.location.expect("the hook saw it");
        assert!(location.contains("src/panics.rs:"), "{location}");
        assert_eq!(catch_quietly(|| 7), Ok(7));
        let caught = catch_quietly(|| std::panic::panic_any(3u8)).unwrap_err();
        assert_eq!(caught.message, "unknown panic");
    }
}
