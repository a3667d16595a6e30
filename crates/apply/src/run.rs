//! Running a program with a layout: the launcher behind `heaplab run`. It checks the layout
//! fully before anything starts, preloads the embedded runtime library (`runtime/apply.c`,
//! compiled by `build.rs`) ahead of the fallback allocator, runs the program with its standard
//! streams and exit status untouched (heaplab_trace's `Supervised` discipline: signals passed
//! on, the program ended if heaplab dies), and reads the report the runtime wrote
//! ([`RuntimeRun`], shared with the grouped allocator's launcher).
//!
//! The runtime applies the layout only in the image the launcher started: it claims the layout
//! by removing a claim file named in `HEAPLAB_APPLY`; programs that image starts by exec inherit
//! the variable but find no claim and run on the fallback allocator alone.

use crate::report::RunReport;
use heaplab_model::InputError;
use heaplab_trace::launch::{find_program, LaunchError, RuntimeRun, Scratch};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};

/// The compiled runtime library.
pub const LIBRARY: &[u8] = include_bytes!(env!("HEAPLAB_APPLY_SO"));

/// The environment variable that carries the runtime's settings (lines of key=value).
pub const SETTINGS_VAR: &str = "HEAPLAB_APPLY";

/// The runtime library ready to preload: the embedded bytes written once to heaplab's cache.
pub fn library_path() -> std::io::Result<PathBuf> {
    heaplab_trace::preload::install_cached("libheaplab_apply", ".so", LIBRARY, false)
}

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The fallback allocator's library, preloaded after the runtime (`None`: glibc's malloc).
    pub fallback: Option<PathBuf>,
    /// The fallback's name, for the report.
    pub fallback_name: String,
}

/// A finished run.
#[derive(Debug)]
pub struct Applied {
    /// How the program ended.
    pub status: ExitStatus,
    /// The runtime's report completed with the launcher's fields; `None` when the program
    /// wrote none (it was killed by SIGKILL, or it is statically linked or setuid and ignored
    /// LD_PRELOAD).
    pub report: Option<RunReport>,
    /// Why there is no report, in words.
    pub no_report: Option<String>,
}

/// Why a program could not be run with a layout.
#[derive(Debug)]
pub enum RunError {
    /// The layout file is damaged or invalid (nothing was started).
    Layout(InputError),
    /// The program could not be found or started.
    Launch(LaunchError),
    /// The runtime library or the run's scratch files could not be written.
    Setup(String),
}

impl RunError {
    /// A bad layout or program is the caller's input; a library that cannot be installed is the
    /// work failing.
    pub fn class(&self) -> heaplab_model::ErrorClass {
        match self {
            RunError::Layout(_) => heaplab_model::ErrorClass::BadInput,
            RunError::Launch(e) => e.class(),
            RunError::Setup(_) => heaplab_model::ErrorClass::WorkFailed,
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Layout(e) => write!(f, "{e}"),
            RunError::Launch(e) => write!(f, "{e}"),
            RunError::Setup(m) => f.write_str(m),
        }
    }
}

/// Runs `command` with the layout at `layout` applied. The layout is read and validated first
/// (a bad file is an error before the program starts). `setup` adjusts the command (standard
/// streams, working directory, environment) before it starts.
pub fn run(layout: &str, command: &[String], opts: &RunOptions, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Applied, RunError> {
    crate::format::read(layout).map_err(RunError::Layout)?;
    let program = &command[0];
    find_program(program).ok_or_else(|| RunError::Launch(LaunchError::NotFound(program.clone())))?;
    let lib = library_path().map_err(|e| RunError::Setup(format!("cannot install the runtime library: {e}")))?;
    let layout_abs = std::path::absolute(layout).map_err(|e| RunError::Setup(format!("{layout}: {e}")))?;
    let scratch = Scratch::new("heaplab-run").map_err(RunError::Launch)?;
    let runtime = RuntimeRun {
        library: &lib,
        fallback: opts.fallback.as_deref(),
        settings_var: SETTINGS_VAR,
        settings: vec![("layout", layout_abs.display().to_string())],
    };
    let ran = runtime.run(command, &scratch, setup).map_err(RunError::Launch)?;
    let status = ran.status;
    let (report, no_report) = match ran.report {
        Ok(text) => {
            let mut r = RunReport::parse_runtime(&scratch.path().join("report.json").display().to_string(), &text).map_err(RunError::Setup)?;
            r.layout = layout.to_string();
            r.wall_seconds = ran.wall.as_secs_f64();
            r.exit_code = status.code();
            r.signal = status.signal();
            r.command = command.to_vec();
            r.fallback_allocator = if opts.fallback_name.is_empty() { "glibc".into() } else { opts.fallback_name.clone() };
            (Some(r), None)
        }
        Err(why) => (None, Some(why)),
    };
    Ok(Applied { status, report, no_report })
}
