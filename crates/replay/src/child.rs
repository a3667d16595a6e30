//! The replay child, embedded: `build.rs` compiles `child/heaplab_replay_child.c` and this module
//! carries the executable, written once to the cache directory at first use (as the trace crate
//! does with its preload library).

use std::path::PathBuf;

/// The compiled child program.
pub const PROGRAM: &[u8] = include_bytes!(env!("HEAPLAB_REPLAY_CHILD"));

/// Environment variable naming a replay child to use instead of the embedded one.
pub const OVERRIDE_VAR: &str = "HEAPLAB_REPLAY_CHILD";

/// The path of the replay child: `$HEAPLAB_REPLAY_CHILD` when set, otherwise the embedded
/// program installed in the cache directory.
pub fn program_path() -> std::io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(OVERRIDE_VAR).filter(|p| !p.is_empty()) {
        return std::path::absolute(PathBuf::from(p));
    }
    heaplab_trace::preload::install_cached("heaplab_replay_child", "", PROGRAM, true)
}
