//! Running a program grouped: the launcher behind `heaplab run --groups`. It takes checked
//! [`Groups`], writes the runtime table (`table.rs`) into the run's private scratch directory,
//! preloads the embedded grouped allocator (`runtime/group.c`, compiled by `build.rs`) ahead of
//! the fallback allocator, runs the program with its standard streams and exit status untouched,
//! and reads the report the allocator wrote (heaplab_trace's [`RuntimeRun`], shared with the
//! layout runtime's launcher).
//!
//! The allocator groups only in the image the launcher started (it claims the run by removing
//! a claim file named in `HEAPLAB_GROUP`) and in that image's fork children; programs started by
//! exec inherit the variable but find no claim and run on the fallback allocator alone: the
//! groups name call sites of the program that was profiled.

use crate::report::GroupRunReport;
use crate::Groups;
use heaplab_model::{InputError, InputErrorKind};
use heaplab_trace::launch::{find_program, LaunchError, RuntimeRun, Scratch};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};

/// The compiled grouped allocator.
pub const LIBRARY: &[u8] = include_bytes!(env!("HEAPLAB_GROUP_SO"));

/// The environment variable that carries the allocator's settings (lines of key=value).
pub const SETTINGS_VAR: &str = "HEAPLAB_GROUP";

/// The grouped allocator ready to preload: the embedded bytes written once to heaplab's cache.
pub fn library_path() -> std::io::Result<PathBuf> {
    heaplab_trace::preload::install_cached("libheaplab_group", ".so", LIBRARY, false)
}

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The fallback allocator's library, preloaded after the grouped allocator (`None`: glibc's
    /// malloc).
    pub fallback: Option<PathBuf>,
    /// The fallback's name, for the report.
    pub fallback_name: String,
    /// The groups file, for the report.
    pub groups_file: String,
}

/// A finished grouped run.
#[derive(Debug)]
pub struct Grouped {
    /// How the program ended.
    pub status: ExitStatus,
    /// The allocator's report completed with the launcher's fields; `None` when the program
    /// wrote none (it was killed by SIGKILL, or it is statically linked or setuid and ignored
    /// LD_PRELOAD).
    pub report: Option<GroupRunReport>,
    /// Why there is no report, in words.
    pub no_report: Option<String>,
}

/// Why a program could not be run grouped.
#[derive(Debug)]
pub enum RunError {
    /// The groups are invalid or beyond what the runtime can apply (nothing was started).
    Groups(InputError),
    /// The program could not be found or started.
    Launch(LaunchError),
    /// The allocator library or the run's scratch files could not be written.
    Setup(String),
}

impl RunError {
    /// Bad groups or a bad program are the caller's input; a library that cannot be installed is
    /// the work failing.
    pub fn class(&self) -> heaplab_model::ErrorClass {
        match self {
            RunError::Groups(_) => heaplab_model::ErrorClass::BadInput,
            RunError::Launch(e) => e.class(),
            RunError::Setup(_) => heaplab_model::ErrorClass::WorkFailed,
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Groups(e) => write!(f, "{e}"),
            RunError::Launch(e) => write!(f, "{e}"),
            RunError::Setup(m) => f.write_str(m),
        }
    }
}

/// Reads and checks a groups file for running: the format's rules and the runtime's limits, so
/// that a bad file is an error before any program starts.
pub fn load(path: &str) -> Result<Groups, RunError> {
    let g = crate::format::read(path).map_err(RunError::Groups)?;
    crate::table::to_bytes(&g).map_err(|m| RunError::Groups(InputError::file(path, InputErrorKind::Consistency, m)))?;
    Ok(g)
}

/// Runs `command` with `groups` applied. The groups are checked first (invalid ones are an error
/// before the program starts). `setup` adjusts the command (standard streams, working
/// directory, environment) before it starts.
pub fn run(groups: &Groups, command: &[String], opts: &RunOptions, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Grouped, RunError> {
    let what = if opts.groups_file.is_empty() { "groups" } else { opts.groups_file.as_str() };
    crate::format::validate(groups).map_err(|m| RunError::Groups(InputError::file(what, InputErrorKind::Consistency, m)))?;
    let table = crate::table::to_bytes(groups).map_err(|m| RunError::Groups(InputError::file(what, InputErrorKind::Consistency, m)))?;
    let program = &command[0];
    find_program(program).ok_or_else(|| RunError::Launch(LaunchError::NotFound(program.clone())))?;
    let lib = library_path().map_err(|e| RunError::Setup(format!("cannot install the grouped allocator: {e}")))?;
    let scratch = Scratch::new("heaplab-group").map_err(RunError::Launch)?;
    let table_file = scratch.path().join("groups.table");
    std::fs::write(&table_file, &table).map_err(|e| RunError::Setup(format!("{}: {e}", table_file.display())))?;
    let runtime = RuntimeRun {
        library: &lib,
        fallback: opts.fallback.as_deref(),
        settings_var: SETTINGS_VAR,
        settings: vec![("table", table_file.display().to_string()), ("groups", opts.groups_file.clone())],
    };
    let ran = runtime.run(command, &scratch, setup).map_err(RunError::Launch)?;
    let status = ran.status;
    let (report, no_report) = match ran.report {
        Ok(text) => {
            let mut r = GroupRunReport::parse_runtime(&scratch.path().join("report.json").display().to_string(), &text).map_err(RunError::Setup)?;
            r.groups_file = opts.groups_file.clone();
            r.wall_seconds = ran.wall.as_secs_f64();
            r.exit_code = status.code();
            r.signal = status.signal();
            r.command = command.to_vec();
            r.fallback_allocator = if opts.fallback_name.is_empty() { "glibc".into() } else { opts.fallback_name.clone() };
            (Some(r), None)
        }
        Err(why) => (None, Some(why)),
    };
    Ok(Grouped { status, report, no_report })
}
