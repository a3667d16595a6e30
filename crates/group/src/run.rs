//! Running a program grouped: the launcher behind `heaplab run --groups`. It takes checked
//! [`Groups`], writes the runtime table (`table.rs`) into the run's private scratch directory,
//! preloads the embedded grouped allocator (`runtime/group.c`, compiled by `build.rs`) ahead of
//! the fallback allocator, runs the program with its standard streams and exit status untouched,
//! and reads the report the allocator wrote (heaplab_trace's [`RuntimeRun`], its options,
//! outcome and errors shared with the layout runtime's launcher).
//!
//! The allocator groups only in the image the launcher started (it claims the run by removing
//! a claim file named in `HEAPLAB_GROUP`) and in that image's fork children; programs started by
//! exec inherit the variable but find no claim and run on the fallback allocator alone: the
//! groups name call sites of the program that was profiled.

use crate::report::GroupRunReport;
use crate::same_layout::{self, SizeClasses};
use crate::Groups;
use heaplab_model::{InputError, InputErrorKind};
use heaplab_trace::launch::{find_program, run_alone as run_alone_with, LaunchError, RuntimeError, RuntimeFinished, RuntimeOptions, RuntimeRun, Scratch};
use heaplab_trace::runtime_report::Common;
use std::path::PathBuf;
use std::process::Command;

/// The compiled grouped allocator.
pub const LIBRARY: &[u8] = include_bytes!(env!("HEAPLAB_GROUP_SO"));

/// The environment variable that carries the allocator's settings (lines of key=value).
pub const SETTINGS_VAR: &str = "HEAPLAB_GROUP";

/// The grouped allocator ready to preload: the embedded bytes written once to heaplab's cache.
pub fn library_path() -> std::io::Result<PathBuf> {
    heaplab_trace::preload::install_cached("libheaplab_group", ".so", LIBRARY, false)
}

/// A finished grouped run.
pub type Grouped = RuntimeFinished<GroupRunReport>;

/// Runs `command` with `groups` applied; `groups_file` names them in errors and the report. The
/// groups are checked first (invalid ones are an error before the program starts). When the
/// fallback allocator would lay out every group the same way ([`crate::same_layout`]), the
/// program runs on it alone, unless `every_group`. `setup` adjusts the command (standard
/// streams, working directory, environment) before it starts.
pub fn run(groups: &Groups, groups_file: &str, command: &[String], opts: &RuntimeOptions, every_group: bool, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Grouped, RuntimeError> {
    let what = if groups_file.is_empty() { "groups" } else { groups_file };
    let invalid = |m| RuntimeError::Input(InputError::file(what, InputErrorKind::Consistency, m));
    crate::format::validate(groups).map_err(invalid)?;
    let table = crate::table::to_bytes(groups).map_err(invalid)?;
    let program = &command[0];
    let found = find_program(program).ok_or_else(|| RuntimeError::Launch(LaunchError::NotFound(program.clone())))?;
    let foreign = foreign_program(groups, &found);
    let declined = match SizeClasses::of(&opts.fallback_name) {
        Some(classes) if !every_group => same_layout::declined(groups, classes),
        _ => Vec::new(),
    };
    if groups.groups.is_empty() || declined.len() == groups.groups.len() {
        let mut done = run_alone(groups, groups_file, command, opts, setup)?;
        if let Some(r) = &mut done.report {
            r.declined = declined;
        }
        return Ok(done);
    }
    let lib = library_path().map_err(|e| RuntimeError::Setup(format!("cannot install the grouped allocator: {e}")))?;
    let scratch = Scratch::new("heaplab-group").map_err(RuntimeError::Launch)?;
    let table_file = scratch.path().join("groups.table");
    std::fs::write(&table_file, &table).map_err(|e| RuntimeError::Setup(format!("{}: {e}", table_file.display())))?;
    let settings = vec![("table", table_file.display().to_string()), ("groups", groups_file.to_string())];
    let runtime = RuntimeRun { library: &lib, options: opts, settings_var: SETTINGS_VAR, settings };
    let mut done: Grouped = runtime.run_reported(command, &scratch, setup)?;
    if let Some(r) = &mut done.report {
        r.groups_file = groups_file.to_string();
        r.foreign = foreign;
    }
    Ok(done)
}

/// The program's file name and the modules of the groups' call sites (sorted, at most four
/// named), when the program (symbolic links followed, as the loader names it) is none of them.
fn foreign_program(groups: &Groups, program: &std::path::Path) -> Option<(String, Vec<String>)> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let name = real.file_name()?.to_string_lossy().into_owned();
    let modules: std::collections::BTreeSet<&str> = groups.sites.iter().map(|s| s.module.as_str()).collect();
    if modules.is_empty() || modules.contains(name.as_str()) {
        return None;
    }
    let mut named: Vec<String> = modules.iter().take(4).map(|m| m.to_string()).collect();
    if modules.len() > 4 {
        named.push(format!("{} more", modules.len() - 4));
    }
    Some((name, named))
}

/// A run without groups: the allocator would identify every allocation and group none, so the
/// program runs on the fallback alone (HALO's baseline with nothing to co-allocate) and pays
/// nothing for heaplab; the report has the launcher's figures only.
fn run_alone(groups: &Groups, groups_file: &str, command: &[String], opts: &RuntimeOptions, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Grouped, RuntimeError> {
    use std::os::unix::process::ExitStatusExt;
    let (status, wall, peak) = run_alone_with(opts, SETTINGS_VAR, command, setup).map_err(RuntimeError::Launch)?;
    let how = Common {
        peak_rss_bytes: peak,
        wall_seconds: wall.as_secs_f64(),
        exit_code: status.code(),
        signal: status.signal(),
        command: command.to_vec(),
        fallback_allocator: if opts.fallback_name.is_empty() { "glibc".into() } else { opts.fallback_name.clone() },
        ..Common::default()
    };
    Ok(Grouped { status, report: Some(GroupRunReport::without_allocator(groups_file, &groups.params, how)), no_report: None })
}
