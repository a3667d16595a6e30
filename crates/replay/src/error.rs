//! What can go wrong in a replay, as typed values: the trace, an option or the allocator
//! cannot be used, or the replay child failed. [`ReplayError::class`] is the one place that
//! sorts them into bad input and failed work; `Display` gives the message shown to the user.

use crate::placed::Overlap;
use heaplab_model::{ErrorClass, InputError};
use std::process::ExitStatus;

/// How a replay went wrong.
#[derive(Debug)]
pub enum ReplayError {
    /// The trace file cannot be opened, read twice, or is not a trace.
    BadTrace(InputError),
    /// The trace is damaged and the replay was not allowed to use only its usable part.
    DamagedTrace {
        /// The trace's name.
        trace: String,
        /// What is wrong with it.
        reason: String,
        /// Events with sequence numbers below this are usable.
        usable_below: u64,
    },
    /// The ring length is not a power of two ≥ 256.
    BadRingLength(u32),
    /// The trace has more threads than a replay runs.
    TooManyThreads {
        /// The trace's name.
        trace: String,
        /// Its threads.
        threads: usize,
    },
    /// More blocks are live at once than the child's block table holds.
    TooManyLiveBlocks,
    /// The allocator's library is not where the replay process gets malloc from (it does not
    /// define malloc, or the loader refused to preload it).
    AllocatorNotInUse {
        /// The library as shown ("glibc" for none).
        library: String,
        /// The object malloc comes from in the replay process (empty when unknown).
        provider: String,
        /// The loader's first line on standard error, if it wrote one.
        loader_said: Option<String>,
    },
    /// The replay child could not be set up or waited for.
    Setup {
        /// What could not be done ("start the replay child …").
        step: String,
        /// Why.
        source: std::io::Error,
    },
    /// The replay child failed, died, did not start in time or ended badly.
    ChildFailed {
        /// What happened ("died", "did not start within 30 s", …).
        what: String,
        /// Its exit status, when it did not succeed.
        status: Option<ExitStatus>,
        /// The message it left in shared memory (empty: none).
        message: String,
        /// Its first non-empty line on standard error.
        said: Option<String>,
    },
    /// The replay's jobs are not a valid placement: a heaplab bug, not the input's fault.
    InvalidPlacement {
        /// The trace's name.
        trace: String,
        /// The allocator's name.
        allocator: String,
        /// The first clash.
        overlap: Overlap,
    },
}

impl ReplayError {
    /// The class of the error: a trace, option or allocator that cannot be used, or a replay
    /// that failed. The CLI's exit code comes from here alone.
    pub fn class(&self) -> ErrorClass {
        match self {
            ReplayError::BadTrace(_)
            | ReplayError::DamagedTrace { .. }
            | ReplayError::BadRingLength(_)
            | ReplayError::TooManyThreads { .. }
            | ReplayError::TooManyLiveBlocks
            | ReplayError::AllocatorNotInUse { .. } => ErrorClass::BadInput,
            ReplayError::Setup { .. } | ReplayError::ChildFailed { .. } | ReplayError::InvalidPlacement { .. } => ErrorClass::WorkFailed,
        }
    }
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::BadTrace(e) => write!(f, "{e}"),
            ReplayError::DamagedTrace { trace, reason, usable_below } => {
                write!(f, "{trace}: {reason} (events with sequence numbers < {usable_below} are usable; pass --allow-truncated to replay them)")
            }
            ReplayError::BadRingLength(n) => write!(f, "ring length {n} must be a power of two ≥ 256"),
            ReplayError::TooManyThreads { trace, threads } => write!(f, "{trace}: {threads} threads; heaplab replays at most {}", crate::driver::MAX_THREADS),
            ReplayError::TooManyLiveBlocks => write!(f, "more than {} blocks live at once", crate::driver::MAX_SLOTS),
            ReplayError::AllocatorNotInUse { library, provider, loader_said } => {
                let provider = if provider.is_empty() { "an unknown object" } else { provider };
                write!(f, "{library}: does not provide malloc in the replay process (malloc comes from {provider})")?;
                match loader_said {
                    Some(l) => write!(f, " (the loader said: {l})"),
                    None => Ok(()),
                }
            }
            ReplayError::Setup { step, source } => write!(f, "cannot {step}: {source}"),
            ReplayError::ChildFailed { what, status, message, said } => {
                write!(f, "the replay child {what}")?;
                if let Some(s) = status {
                    write!(f, " ({s})")?;
                }
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                match said {
                    Some(l) => write!(f, "; it said: {l}"),
                    None => Ok(()),
                }
            }
            ReplayError::InvalidPlacement { trace, allocator, overlap } => {
                write!(f, "{trace}: the replay under {allocator} produced an invalid placement ({overlap}); this is a heaplab bug, please report it")
            }
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<InputError> for ReplayError {
    fn from(e: InputError) -> Self {
        ReplayError::BadTrace(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the user could fix is bad input; what broke in the replay is failed work; the
    /// texts are the ones the CLI has always shown.
    #[test]
    fn classes_and_messages() {
        let e = ReplayError::BadRingLength(100);
        assert_eq!((e.class(), e.to_string()), (ErrorClass::BadInput, "ring length 100 must be a power of two ≥ 256".to_string()));
        let e = ReplayError::AllocatorNotInUse { library: "/lib/libm.so.6".into(), provider: String::new(), loader_said: Some("nope".into()) };
        assert_eq!(e.class(), ErrorClass::BadInput);
        assert_eq!(e.to_string(), "/lib/libm.so.6: does not provide malloc in the replay process (malloc comes from an unknown object) (the loader said: nope)");
        let e = ReplayError::ChildFailed { what: "died".into(), status: None, message: "out of slots".into(), said: Some("segfault".into()) };
        assert_eq!((e.class(), e.to_string()), (ErrorClass::WorkFailed, "the replay child died: out of slots; it said: segfault".to_string()));
        let e = ReplayError::Setup { step: "create the shared memory".into(), source: std::io::Error::from_raw_os_error(libc::ENOMEM) };
        assert_eq!(e.class(), ErrorClass::WorkFailed);
        assert!(e.to_string().starts_with("cannot create the shared memory: "), "{e}");
    }
}
