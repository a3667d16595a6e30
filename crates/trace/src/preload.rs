//! The tracer library, embedded: `build.rs` compiles the native layer (`native/`) and the tracer
//! (`preload/tracer.c`) into one .so and this module carries the bytes, so `heaplab trace` needs no install step and works from any directory.
//! At run time the bytes are written once to a private cache file named by their hash.

use std::io::Write;
use std::path::PathBuf;

/// The compiled LD_PRELOAD library.
pub const LIBRARY: &[u8] = include_bytes!(env!("HEAPLAB_PRELOAD_SO"));

/// Environment variable naming a tracer library to use instead of the embedded one.
pub const OVERRIDE_VAR: &str = "HEAPLAB_PRELOAD";

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// The path of a tracer library ready to preload: `$HEAPLAB_PRELOAD` when set, otherwise the
/// embedded library written (atomically, once per content) to the cache directory (see
/// [`install_cached`]).
pub fn library_path() -> std::io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(OVERRIDE_VAR).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, format!("{OVERRIDE_VAR}={}: no such file", p.display())));
        }
        return std::path::absolute(&p);
    }
    install_cached("libheaplab_preload", ".so", LIBRARY, false)
}

/// Writes `bytes` (a program or library embedded in the `heaplab` binary) to
/// `$XDG_CACHE_HOME/heaplab/` or `~/.cache/heaplab/` (a fresh private temporary directory when
/// neither exists) as `STEM-HASH.EXT`, atomically and once per content, and returns its path.
/// `executable` gives the file mode 0755.
pub fn install_cached(stem: &str, ext: &str, bytes: &[u8], executable: bool) -> std::io::Result<PathBuf> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("heaplab"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("heaplab-{}", std::process::id())));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{stem}-{:016x}{ext}", fnv1a(bytes)));
    if std::fs::read(&path).is_ok_and(|b| b == bytes) {
        return Ok(path);
    }
    // One temporary name per call: threads of one process (parallel tests) install at once.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{stem}.{}.{call}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if executable {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o755))?;
        }
        f.sync_all()?;
        // Closed before the rename: a file still open for writing cannot be executed
        // (ETXTBSY), and another heaplab may exec it the moment it has its name.
        drop(f);
        std::fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| path)
}
