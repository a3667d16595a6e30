//! The progress line shown on a terminal while a long command runs. Numbers are formatted by
//! `heaplab_model::units`, shared with the bench harness.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A progress line on stderr, redrawn a few times a second while work runs, only when stderr is
/// a terminal (logs and CI output stay clean) and only after the first second.
pub struct ProgressLine {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ProgressLine {
    /// Starts the line; `text` is called for its content with the elapsed time.
    pub fn start(text: impl Fn(Duration) -> String + Send + 'static) -> ProgressLine {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return ProgressLine { stop, handle: None };
        }
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut drawn = false;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let el = t0.elapsed();
                if el >= Duration::from_secs(1) && !flag.load(Ordering::Relaxed) {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{}", text(el));
                    let _ = err.flush();
                    drawn = true;
                }
            }
            if drawn {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            }
        });
        ProgressLine { stop, handle: Some(handle) }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
