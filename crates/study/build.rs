//! Compiles the run launcher (`launcher/heaplab_run.c`) into OUT_DIR; `src/measure.rs` embeds
//! it (see the launcher's comment for why it exists).

use heaplab_native_build::CBuild;

fn main() {
    CBuild::program("heaplab_run").source("launcher/heaplab_run.c").embed("HEAPLAB_RUN_LAUNCHER");
}
