//! Compression of a run's finished traces (`heaplab trace --compress`): each file is compressed
//! whole with zstd once the program has ended and keeps its name; every reader recognises zstd
//! by its magic and reads through it.
//!
//! Why after the run and not window by window inside the tracer: compressing in the traced
//! process would take CPU time from the program while it runs (the tracer's cost is 40–60 ns an
//! event, zstd's several times that), and the shared-mapping design that keeps every committed
//! event on disk through a crash needs fixed-size windows. Real programs' traces compress 6–26×
//! at level 3 (`bench/trace-results.md`).

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use heaplab_model::input::ZSTD_MAGIC;

/// The zstd level `--compress` uses: fast (about 250 MB/s here); level 9 is about a quarter
/// smaller and three times slower.
pub const DEFAULT_LEVEL: i32 = 3;

/// Whether `path` starts with a zstd frame.
pub fn is_compressed(path: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == *ZSTD_MAGIC
}

/// Counts the bytes read through it, for a progress line.
struct Counted<'a, R> {
    inner: R,
    count: &'a AtomicU64,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Compresses `path` in place (through a temporary file beside it, renamed over it, so the
/// trace is never half-written) and returns the compressed size. A file that is already
/// compressed is left as it is. `done` counts the input bytes read.
pub fn compress_in_place(path: &Path, level: i32, done: &AtomicU64) -> std::io::Result<u64> {
    if is_compressed(path) {
        return std::fs::metadata(path).map(|m| m.len());
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.zst.tmp", std::process::id()));
    let result = (|| {
        let mut input = Counted { inner: BufReader::with_capacity(1 << 20, std::fs::File::open(path)?), count: done };
        let out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        let mut enc = zstd::stream::write::Encoder::new(out, level)?;
        // The pledged size lets a reader know the whole length up front.
        enc.set_pledged_src_size(Some(std::fs::metadata(path)?.len()))?;
        std::io::copy(&mut input, &mut enc)?;
        let mut out = enc.finish()?;
        out.flush()?;
        let f = out.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        let size = f.metadata()?.len();
        drop(f);
        std::fs::rename(&tmp, path)?;
        Ok(size)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
