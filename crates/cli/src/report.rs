//! Human-readable figures: byte sizes with units, grouped integers, and the progress line shown
//! on a terminal while a long command runs.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `1234567` → `1,234,567`.
pub fn grouped(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes with a binary unit: `1.50 MiB`.
pub fn bytes(v: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = v as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v} B")
    } else {
        format!("{x:.2} {}", UNITS[u])
    }
}

/// Fragmentation in percent of the lower bound (0 when the bound is 0).
pub fn pct(makespan: u64, lower: u64) -> f64 {
    if lower == 0 {
        0.0
    } else {
        (makespan - lower) as f64 * 100.0 / lower as f64
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(123), "123");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(pct(110, 100), 10.0);
    }
}
