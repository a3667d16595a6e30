//! Ctrl-C (SIGINT) and SIGTERM caught while a long command works: the signal only sets a flag
//! that the work polls, so that it stops at its next check and keeps what it has (a
//! measurement's checkpoint, a plan's best placement). The default dispositions come back when
//! the [`Caught`] guard drops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

/// Set by the handler; shared with the work (a planner takes an `Arc` to poll).
static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

extern "C" fn on_signal(_: libc::c_int) {
    // `FLAG` is made before the handler is installed: here it is one atomic store.
    FLAG.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM caught until this drops.
pub struct Caught {
    flag: Arc<AtomicBool>,
}

impl Caught {
    /// Catches both signals from now on, the flag cleared.
    pub fn start() -> Caught {
        let flag = Arc::clone(&FLAG);
        flag.store(false, Ordering::Relaxed);
        // SAFETY: the handler only stores to an atomic that already exists.
        unsafe {
            libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
            libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        }
        Caught { flag }
    }

    /// The flag the signals set, for work that polls it on other threads.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// Whether a signal came.
    pub fn caught(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

impl Drop for Caught {
    fn drop(&mut self) {
        // SAFETY: restoring the default dispositions.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
        }
    }
}
