//! The valgrind tool, embedded: `build.rs` compiles `tool/` into the static tool executable and
//! its malloc-replacement preload, and this module carries their bytes and installs them at run
//! time as a `VALGRIND_LIB` folder valgrind can load `--tool=heaplab` from.

use heaplab_trace::preload::install_cached;
use std::path::{Path, PathBuf};

/// The tool executable (empty when valgrind's tool libraries were missing at build time).
pub const TOOL: &[u8] = include_bytes!(env!("HEAPLAB_VG_TOOL"));
/// Its preload object, holding valgrind's malloc-replacement stubs.
pub const PRELOAD: &[u8] = include_bytes!(env!("HEAPLAB_VG_PRELOAD"));
/// The tool's name (`valgrind --tool=heaplab`).
pub const NAME: &str = "heaplab";
/// Where Debian's valgrind keeps its tools, preload objects and suppressions.
pub const SYSTEM_LIB: &str = "/usr/libexec/valgrind";

/// Whether this build carries the tool.
pub fn built() -> bool {
    !TOOL.is_empty() && !PRELOAD.is_empty()
}

/// A folder to pass as `VALGRIND_LIB`: the tool and its preload (written once per content by
/// [`install_cached`]) linked beside symlinks to everything in `system` (the core's preload
/// objects and suppression files). Made under a temporary name and renamed into place, so
/// concurrent runs never see half a folder.
pub fn install(system: &Path) -> std::io::Result<PathBuf> {
    let tool = install_cached("heaplab-amd64-linux", "", TOOL, true)?;
    let preload = install_cached("vgpreload_heaplab-amd64-linux", ".so", PRELOAD, true)?;
    let cache = tool.parent().expect("installed in a folder").to_path_buf();
    // Named by the tool's hash (its file name) and the system folder, so a new build or another
    // valgrind gets a folder of its own.
    let tag = heaplab_trace::context::fnv1a(format!("{}|{}|{}", tool.display(), preload.display(), system.display()).as_bytes());
    let dir = cache.join(format!("valgrind-lib-{tag:016x}"));
    if dir.join(format!("{NAME}-amd64-linux")).exists() {
        return Ok(dir);
    }
    let tmp = cache.join(format!(".valgrind-lib.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let filled = (|| {
        for entry in std::fs::read_dir(system)? {
            let entry = entry?;
            std::os::unix::fs::symlink(entry.path(), tmp.join(entry.file_name()))?;
        }
        std::os::unix::fs::symlink(&tool, tmp.join(format!("{NAME}-amd64-linux")))?;
        std::os::unix::fs::symlink(&preload, tmp.join(format!("vgpreload_{NAME}-amd64-linux.so")))?;
        std::fs::rename(&tmp, &dir)
    })();
    if filled.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another run may have put the same folder in place first.
        if dir.join(format!("{NAME}-amd64-linux")).exists() {
            return Ok(dir);
        }
    }
    filled.map(|()| dir)
}
