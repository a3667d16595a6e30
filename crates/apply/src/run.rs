//! Running a program with a layout: the launcher behind `heaplab run`. It checks the layout
//! fully before anything starts, preloads the embedded runtime library (`runtime/apply.c`,
//! compiled by `build.rs`) ahead of the fallback allocator, runs the program with its standard
//! streams and exit status untouched (heaplab_trace's `Supervised` discipline: signals passed
//! on, the program ended if heaplab dies), and reads the report the runtime wrote
//! ([`RuntimeRun`], its options, outcome and errors shared with the grouped allocator's
//! launcher).
//!
//! The runtime applies the layout only in the image the launcher started: it claims the layout
//! by removing a claim file named in `HEAPLAB_APPLY`; programs that image starts by exec inherit
//! the variable but find no claim and run on the fallback allocator alone.

use crate::report::RunReport;
use heaplab_trace::launch::{find_program, LaunchError, RuntimeError, RuntimeFinished, RuntimeOptions, RuntimeRun, Scratch};
use std::path::PathBuf;
use std::process::Command;

/// The compiled runtime library.
pub const LIBRARY: &[u8] = include_bytes!(env!("HEAPLAB_APPLY_SO"));

/// The environment variable that carries the runtime's settings (lines of key=value).
pub const SETTINGS_VAR: &str = "HEAPLAB_APPLY";

/// The runtime library ready to preload: the embedded bytes written once to heaplab's cache.
pub fn library_path() -> std::io::Result<PathBuf> {
    heaplab_trace::preload::install_cached("libheaplab_apply", ".so", LIBRARY, false)
}

/// A finished run with a layout.
pub type Applied = RuntimeFinished<RunReport>;

/// Runs `command` with the layout at `layout` applied. The layout is read and validated first
/// (a bad file is an error before the program starts). `setup` adjusts the command (standard
/// streams, working directory, environment) before it starts.
pub fn run(layout: &str, command: &[String], opts: &RuntimeOptions, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Applied, RuntimeError> {
    crate::format::read(layout).map_err(RuntimeError::Input)?;
    let program = &command[0];
    find_program(program).ok_or_else(|| RuntimeError::Launch(LaunchError::NotFound(program.clone())))?;
    let lib = library_path().map_err(|e| RuntimeError::Setup(format!("cannot install the runtime library: {e}")))?;
    let layout_abs = std::path::absolute(layout).map_err(|e| RuntimeError::Setup(format!("{layout}: {e}")))?;
    let scratch = Scratch::new("heaplab-run").map_err(RuntimeError::Launch)?;
    let runtime = RuntimeRun { library: &lib, options: opts, settings_var: SETTINGS_VAR, settings: vec![("layout", layout_abs.display().to_string())] };
    let mut done: Applied = runtime.run_reported(command, &scratch, setup)?;
    if let Some(r) = &mut done.report {
        r.layout = layout.to_string();
    }
    Ok(done)
}
