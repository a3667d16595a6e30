//! Reading and writing instance and placement files by path: format detection (CSV or binary
//! by magic, through [`Input`], `-` for standard input) and atomic output (a temporary file
//! renamed into place, so a failed run never leaves a half-written file).

use crate::error::{ErrorClass, InputError, InputErrorKind as K};
use crate::input::{FileKind, Input, Wanted};
use crate::{binary, csv, Instance, Semantics};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Output formats for instances and placements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `id,lower,upper,size[,alignment][,requested][,offset]`.
    Csv,
    /// heaplab's binary format (see [`binary`]).
    Binary,
}

impl Format {
    /// `.hlbin` files are binary; everything else is CSV.
    pub fn from_path(p: &str) -> Format {
        if p.ends_with(".hlbin") {
            Format::Binary
        } else {
            Format::Csv
        }
    }
}

/// Reads an instance (CSV or binary, detected by content). An `offset` column or field is
/// allowed when `allow_offsets`, and returned.
pub fn read(path: &str, semantics: Semantics, allow_offsets: bool) -> Result<(Instance, Option<Vec<u64>>), InputError> {
    read_input(Input::open(path)?, semantics, allow_offsets)
}

/// Reads an instance from an opened input; see [`read`]. Other heaplab files (traces, placed
/// files) are rejected with a message that says what they are.
pub fn read_input(mut input: Input, semantics: Semantics, allow_offsets: bool) -> Result<(Instance, Option<Vec<u64>>), InputError> {
    let path = input.name().to_string();
    let (inst, offs) = match input.kind()? {
        FileKind::Hlbin => binary::read_input(input, semantics)?,
        FileKind::Text | FileKind::Empty => csv::read_instance_from(input, &path, semantics, allow_offsets)?,
        FileKind::Trace | FileKind::Placed | FileKind::RunIndex | FileKind::Unknown => return Err(input.wrong_kind(Wanted::Instance)),
    };
    if offs.is_some() && !allow_offsets {
        return Err(InputError::file(&path, K::Shape, "this file holds a placement (offsets); expected an instance"));
    }
    Ok((inst, offs))
}

/// Reads an instance, rejecting files with offsets.
pub fn read_instance(path: &str, semantics: Semantics) -> Result<Instance, InputError> {
    read(path, semantics, false).map(|(i, _)| i)
}

/// Reads a placement: an instance with an offset for every buffer.
pub fn read_placement(path: &str, semantics: Semantics) -> Result<(Instance, Vec<u64>), InputError> {
    read_placement_input(Input::open(path)?, semantics)
}

/// Reads a placement from an opened input; see [`read_placement`].
pub fn read_placement_input(input: Input, semantics: Semantics) -> Result<(Instance, Vec<u64>), InputError> {
    let name = input.name().to_string();
    match read_input(input, semantics, true)? {
        (inst, Some(o)) => Ok((inst, o)),
        (_, None) => Err(InputError::file(&name, K::Shape, "no 'offset' column: this is an instance, not a placement")),
    }
}

/// Writes `inst` (with `offsets` when given) as CSV. Lifetimes are written as `[lower, upper)`.
pub fn write_csv<W: Write>(mut w: W, inst: &Instance, offsets: Option<&[u64]>) -> std::io::Result<()> {
    let c = inst.columns;
    let mut head = String::from("id,lower,upper,size");
    if c.alignment {
        head.push_str(",alignment");
    }
    if c.requested {
        head.push_str(",requested");
    }
    if offsets.is_some() {
        head.push_str(",offset");
    }
    writeln!(w, "{head}")?;
    for (i, b) in inst.buffers.iter().enumerate() {
        write!(w, "{},{},{},{}", b.id, b.lower, b.upper, b.size)?;
        if c.alignment {
            write!(w, ",{}", b.alignment())?;
        }
        if c.requested {
            write!(w, ",{}", b.requested)?;
        }
        if let Some(o) = offsets {
            write!(w, ",{}", o[i])?;
        }
        writeln!(w)?;
    }
    Ok(())
}

/// Writes a file atomically: `fill` writes into a temporary file beside `path`, which is renamed
/// over `path` only if `fill` succeeds. `-` writes to standard output, and a path that names
/// something other than a regular file (`/dev/null`, a FIFO) is written in place: renaming
/// over it would replace the device with a file.
pub fn write_atomic<F>(path: &str, fill: F) -> std::io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    if path == "-" {
        let out = std::io::stdout();
        let mut w = BufWriter::new(out.lock());
        fill(&mut w)?;
        return w.flush();
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut w = BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
        fill(&mut w)?;
        return w.flush();
    }
    let target = PathBuf::from(path);
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let f = File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 16, f);
        fill(&mut w)?;
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes an instance or placement to `path` in the format its extension names, atomically.
pub fn write(path: &str, inst: &Instance, offsets: Option<&[u64]>) -> std::io::Result<()> {
    match Format::from_path(path) {
        Format::Csv => write_atomic(path, |w| write_csv(w, inst, offsets)),
        Format::Binary => write_atomic(path, |w| binary::write(w, inst, offsets)),
    }
}

/// Reads the whole file at `path`, one of heaplab's own formats (a layout, groups); an input
/// error naming it when it cannot be read.
pub fn read_bytes(path: &str) -> Result<Vec<u8>, InputError> {
    std::fs::read(path).map_err(|e| InputError::file(path, K::Io, format!("cannot read: {e}")))
}

/// Writes `bytes`, a file of one of heaplab's own formats already checked, to `path` atomically
/// ([`write_atomic`]).
pub fn write_bytes(path: &str, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic(path, |w| w.write_all(bytes)).map_err(|e| WriteError::Io(path.to_string(), e))
}

/// Why a file of one of heaplab's own formats (a layout, groups) could not be written.
#[derive(Debug)]
pub enum WriteError {
    /// The content breaks a rule of the format (a bug of whoever built it): what it is (for
    /// example "an invalid layout") and the rule.
    Invalid(&'static str, String),
    /// The file could not be written.
    Io(String, std::io::Error),
}

impl WriteError {
    /// Both are failures of the work, not of the caller's input.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::WorkFailed
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Invalid(what, m) => write!(f, "refusing to write {what}: {m}"),
            WriteError::Io(path, e) => write!(f, "{path}: cannot write: {e}"),
        }
    }
}

impl std::error::Error for WriteError {}
