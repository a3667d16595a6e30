//! Output paths: the one check every command that writes runs before its work. An output must be
//! creatable (its directory exists, it is not a directory), must not be one of the command's
//! inputs (writing it would destroy the input: the same path, a hard link or a symlink to it,
//! or the file standard input was redirected from), and must not be another output of the same
//! command. Writing itself is atomic (`heaplab_model::files::write_atomic`).

use crate::Failure;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Fails when an output cannot be created, or names the same file as an input or as another
/// output. `-` is standard output (for outputs) or standard input (for inputs).
pub fn check_outputs(outputs: &[&str], inputs: &[&str]) -> Result<(), Failure> {
    for (k, &out) in outputs.iter().enumerate() {
        if out == "-" {
            continue;
        }
        check_writable(out)?;
        let this = identity(out);
        for &inp in inputs {
            if this.is_some() && this == identity(inp) {
                let shown = if inp == "-" { "standard input".to_string() } else { inp.to_string() };
                return Err(Failure::Input(format!(
                    "{out}: is the input {shown} (the same file); writing it would destroy the input: choose another output"
                )));
            }
        }
        for &other in &outputs[..k] {
            if other != "-" && (same_name(out, other) || (this.is_some() && this == identity(other))) {
                return Err(Failure::Input(format!("{out}: given twice as an output ({other}); choose different files")));
            }
        }
    }
    Ok(())
}

/// Fails early (before long work) when an output path cannot be created.
pub fn check_writable(path: &str) -> Result<(), Failure> {
    if path == "-" {
        return Ok(());
    }
    let p = Path::new(path);
    if p.is_dir() {
        return Err(Failure::Input(format!("{path}: is a directory, expected a file name")));
    }
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Failure::Input(format!("{path}: directory {} does not exist", dir.display())));
    }
    Ok(())
}

/// Device and inode of the file a path names (symlinks followed), when it exists.
fn identity(path: &str) -> Option<(u64, u64)> {
    let meta = if path == "-" {
        use std::os::fd::AsFd;
        let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        std::fs::File::from(fd).metadata().ok()?
    } else {
        std::fs::metadata(path).ok()?
    };
    // Pipes and terminals are not files an output could overwrite.
    meta.is_file().then(|| (meta.dev(), meta.ino()))
}

/// Whether two paths name the same place, for files that do not exist yet.
fn same_name(a: &str, b: &str) -> bool {
    let place = |p: &str| -> Option<PathBuf> {
        let p = Path::new(p);
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some(dir.canonicalize().ok()?.join(p.file_name()?))
    };
    a == b || place(a).is_some_and(|x| Some(x) == place(b))
}

/// The failure of writing an output (the path named, as bad input: the caller chose it).
pub fn cannot_write(path: &str, e: std::io::Error) -> Failure {
    Failure::Input(format!("{path}: cannot write: {e}"))
}

/// The report directory `output` (`-o DIR` of `study` and `compare`), checked and staged: the
/// report is written into a temporary sibling and installed whole, replacing only a previous
/// report or an empty directory.
pub fn report_dir(output: &str) -> Result<heaplab_study::outdir::Staging, Failure> {
    heaplab_study::outdir::Staging::create(output).map_err(|e| Failure::Input(e.message("-o", output)))
}
