//! The CSV formats of the minimalloc and idealloc benchmark suites.
//!
//! Instance: header `id,lower,upper,size` plus optional `alignment` and `requested` columns, in
//! any order. Placement: the same plus `offset`. Integers only. The reader streams line by line
//! and reports the first problem with file, line and field; it never panics on input.

use crate::error::{quoted, InputError, InputErrorKind as K};
use crate::{Buffer, Columns, Instance, Semantics};
use std::io::BufRead;

/// Columns heaplab knows. Anything else in a header is an error (a typo would otherwise be
/// silently ignored).
const KNOWN: [&str; 7] = ["id", "lower", "upper", "size", "alignment", "requested", "offset"];
const ID: usize = 0;
const LOWER: usize = 1;
const UPPER: usize = 2;
const SIZE: usize = 3;
const ALIGN: usize = 4;
const REQ: usize = 5;
const OFFSET: usize = 6;

/// One parsed data row: a value for each known column present (`None` when absent).
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// 1-based line number in the file.
    pub line: u64,
    /// Values indexed like the `KNOWN` column list.
    values: [Option<u64>; 7],
}

impl Row {
    /// The `id` column.
    pub fn id(&self) -> Option<u64> {
        self.values[ID]
    }
    /// The `offset` column.
    pub fn offset(&self) -> Option<u64> {
        self.values[OFFSET]
    }
    /// `(lower, upper, size)` when all three columns are present.
    pub fn lifetime_and_size(&self) -> Option<(u64, u64, u64)> {
        Some((self.values[LOWER]?, self.values[UPPER]?, self.values[SIZE]?))
    }
}

/// A streaming reader of heaplab CSV rows with validated headers and integer fields.
pub struct Reader<R> {
    input: R,
    file: String,
    /// For each field position in a line, which known column it is.
    positions: Vec<usize>,
    present: [bool; 7],
    line_no: u64,
    buf: String,
}

impl<R: BufRead> Reader<R> {
    /// Reads the header. `required` columns must be present; `allowed` may be.
    pub fn new(mut input: R, file: &str, required: &[&str], allowed: &[&str]) -> Result<Self, InputError> {
        let mut buf = String::new();
        let mut line_no = 0;
        // Skip leading blank lines; the first non-blank line is the header.
        loop {
            buf.clear();
            let n = read_line(&mut input, &mut buf, file, line_no + 1)?;
            line_no += 1;
            if n == 0 {
                return Err(InputError::file(
                    file,
                    K::Shape,
                    format!("empty file: expected a header line with columns {}", required.join(",")),
                ));
            }
            if !buf.trim().is_empty() {
                break;
            }
        }
        let header = buf.trim_end_matches(['\n', '\r']).trim_start_matches('\u{feff}');
        let mut positions = Vec::new();
        let mut present = [false; 7];
        for name in header.split(',') {
            let name = name.trim();
            let Some(col) = KNOWN.iter().position(|k| *k == name) else {
                return Err(InputError::at(
                    file,
                    line_no,
                    Some(name),
                    K::Shape,
                    format!(
                        "unknown column in header; expected {} (optional: {})",
                        required.join(","),
                        allowed.join(",")
                    ),
                ));
            };
            if !required.contains(&name) && !allowed.contains(&name) {
                return Err(InputError::at(
                    file,
                    line_no,
                    Some(name),
                    K::Shape,
                    format!("column not allowed here; expected {}", required.join(",")),
                ));
            }
            if present[col] {
                return Err(InputError::at(file, line_no, Some(name), K::Shape, "column appears twice in header"));
            }
            present[col] = true;
            positions.push(col);
        }
        for r in required {
            let col = KNOWN.iter().position(|k| k == r).expect("required column is known");
            if !present[col] {
                return Err(InputError::at(
                    file,
                    line_no,
                    Some(r),
                    K::Shape,
                    format!("header lacks required column (header is {})", quoted(header)),
                ));
            }
        }
        Ok(Reader { input, file: file.to_string(), positions, present, line_no, buf })
    }

    /// Whether the header had `column`.
    pub fn has(&self, column: &str) -> bool {
        KNOWN.iter().position(|k| *k == column).is_some_and(|c| self.present[c])
    }

    /// The next data row, `Ok(None)` at end of file. Blank lines are skipped.
    pub fn next_row(&mut self) -> Result<Option<Row>, InputError> {
        loop {
            self.buf.clear();
            let n = read_line(&mut self.input, &mut self.buf, &self.file, self.line_no + 1)?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let line = self.buf.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            let mut values = [None; 7];
            let mut count = 0;
            for (i, field) in line.split(',').enumerate() {
                count += 1;
                let Some(&col) = self.positions.get(i) else { continue };
                values[col] = Some(parse_u64(field, &self.file, self.line_no, KNOWN[col])?);
            }
            if count != self.positions.len() {
                return Err(InputError::at(
                    &self.file,
                    self.line_no,
                    None,
                    K::Shape,
                    format!("expected {} fields as in the header, found {count}", self.positions.len()),
                ));
            }
            return Ok(Some(Row { line: self.line_no, values }));
        }
    }
}

/// Reads line `line` (1-based, for the message) into `buf`.
fn read_line<R: BufRead>(input: &mut R, buf: &mut String, file: &str, line: u64) -> Result<usize, InputError> {
    input.read_line(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            InputError::at(file, line, None, K::Value, "not UTF-8 text: a CSV file is text (is this a binary file?)")
        } else {
            InputError::file(file, K::Io, format!("read failed: {e}"))
        }
    })
}

fn parse_u64(field: &str, file: &str, line: u64, col: &str) -> Result<u64, InputError> {
    let t = field.trim();
    if let Ok(v) = t.parse::<u64>() {
        if !t.starts_with('+') {
            return Ok(v);
        }
    }
    let why = if t.is_empty() {
        "empty field: expected a non-negative integer".to_string()
    } else if t.starts_with('-') && t[1..].chars().all(|c| c.is_ascii_digit()) && t.len() > 1 {
        format!("negative value {}: expected a non-negative integer", quoted(t))
    } else if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        format!("value {} does not fit in 64 bits", quoted(t))
    } else {
        format!("{} is not an integer", quoted(t))
    };
    Err(InputError::at(file, line, Some(col), K::Value, why))
}

/// A buffer's fields as read, before the model's rules are checked; `alignment` and
/// `requested` are 0 when absent.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawBuffer {
    /// Identifier.
    pub id: u64,
    /// Lifetime start, in the input's convention.
    pub lower: u64,
    /// Lifetime end, in the input's convention.
    pub upper: u64,
    /// Bytes.
    pub size: u64,
    /// Alignment in bytes (0 or 1: none).
    pub alignment: u64,
    /// Requested bytes (0: not given).
    pub requested: u64,
}

/// What the positions given to [`InstanceBuilder::push`] count, so that a message citing
/// another buffer's position says it in the source's terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Position {
    /// 1-based lines of a text file (and record numbers of a binary one).
    #[default]
    Line,
    /// 0-based indices into arrays.
    Index,
}

impl Position {
    /// Where position `at` is, as a message says it: "on line 4", "at index 3".
    pub fn cite(self, at: u64) -> String {
        match self {
            Position::Line => format!("on line {at}"),
            Position::Index => format!("at index {at}"),
        }
    }
}

/// Builds buffers from rows, enforcing the model's rules (size > 0, upper > lower after
/// conversion, power-of-two alignment, requested ≤ size, sizes summing within 64 bits).
pub struct InstanceBuilder {
    file: String,
    position: Position,
    semantics: Semantics,
    buffers: Vec<Buffer>,
    /// Line numbers, only where they stop counting up by one: `(index, line)` says buffer
    /// `index` came from `line`, and the buffers after it from the lines after it (one entry
    /// for a file without blank or comment lines, instead of 8 bytes a buffer).
    line_jumps: Vec<(usize, u64)>,
    total: u64,
    columns: Columns,
}

impl InstanceBuilder {
    /// A builder for buffers read from `file` in the given lifetime convention, their
    /// positions counting lines ([`Position::Line`]; see [`InstanceBuilder::counting`]).
    pub fn new(file: &str, semantics: Semantics, columns: Columns) -> Self {
        InstanceBuilder { file: file.to_string(), position: Position::Line, semantics, buffers: Vec::new(), line_jumps: Vec::new(), total: 0, columns }
    }

    /// The same builder with positions counting `position` instead.
    pub fn counting(self, position: Position) -> Self {
        InstanceBuilder { position, ..self }
    }

    /// Makes room for `n` more buffers up front (a binary file's header says how many), so the
    /// vector is not grown by doubling (up to twice the memory). Only address space is reserved:
    /// pages count in the resident set once written, and `finish` gives back what a short file
    /// did not use. Capped at 2^26 buffers (3 GiB of address space) against corrupt counts.
    pub fn reserve(&mut self, n: u64) {
        self.buffers.reserve(n.min(1 << 26) as usize);
    }

    /// The line (or record number) buffer `k` came from.
    fn line(&self, k: usize) -> u64 {
        let j = self.line_jumps.partition_point(|&(i, _)| i <= k) - 1;
        let (i, line) = self.line_jumps[j];
        line + (k - i) as u64
    }

    /// Adds one buffer from raw values at position `line` (a line, a binary file's record
    /// number, or an array index, as [`InstanceBuilder::counting`] says).
    pub fn push(&mut self, line: u64, raw: RawBuffer) -> Result<(), InputError> {
        let RawBuffer { id, lower, upper, size, alignment, requested } = raw;
        let f = &self.file;
        if size == 0 {
            return Err(InputError::at(f, line, Some("size"), K::Value, "size 0: every buffer needs at least one byte"));
        }
        let (lo, up) = self.semantics.to_inex(lower, upper).map_err(|why| {
            InputError::at(f, line, Some("upper"), K::Consistency, format!("{why} (lower {lower}, upper {upper})"))
        })?;
        let align_log2 = if alignment == 0 || alignment == 1 {
            0
        } else if alignment.is_power_of_two() {
            alignment.trailing_zeros() as u8
        } else {
            return Err(InputError::at(
                f,
                line,
                Some("alignment"),
                K::Value,
                format!("alignment {alignment} is not a power of two"),
            ));
        };
        if requested > size {
            return Err(InputError::at(
                f,
                line,
                Some("requested"),
                K::Consistency,
                format!("requested {requested} exceeds size {size}"),
            ));
        }
        let padded = size.checked_add((1u64 << align_log2) - 1);
        self.total = match padded.and_then(|p| self.total.checked_add(p)) {
            Some(t) => t,
            None => {
                return Err(InputError::at(
                    f,
                    line,
                    Some("size"),
                    K::Overflow,
                    "sizes (with alignment padding) sum past 2^64: no address space can hold them",
                ))
            }
        };
        let k = self.buffers.len();
        if k == 0 || self.line(k - 1) + 1 != line {
            self.line_jumps.push((k, line));
        }
        self.buffers.push(Buffer { id, lower: lo, upper: up, size, requested, align_log2 });
        Ok(())
    }

    /// Finishes: rejects duplicate ids (naming both positions) and returns the instance.
    pub fn finish(mut self) -> Result<Instance, InputError> {
        // Sorting indices instead of a hash set keeps the check at 8 bytes a buffer.
        let mut order: Vec<u32> = (0..self.buffers.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (self.buffers[i as usize].id, i));
        for w in order.windows(2) {
            let (a, b) = (w[0] as usize, w[1] as usize);
            if self.buffers[a].id == self.buffers[b].id {
                return Err(InputError::at(
                    &self.file,
                    self.line(b),
                    Some("id"),
                    K::Consistency,
                    format!("duplicate id {} (first {})", self.buffers[a].id, self.position.cite(self.line(a))),
                ));
            }
        }
        drop(order);
        // Growth by doubling leaves up to half the vector unused; at 10^7 buffers that is
        // hundreds of megabytes held for the whole run.
        self.buffers.shrink_to_fit();
        Ok(Instance { buffers: self.buffers, columns: self.columns })
    }
}

/// Reads an instance CSV from a stream. An `offset` column is accepted when `allow_offset`, and
/// its values are returned alongside (empty otherwise).
pub fn read_instance_from<R: BufRead>(
    input: R,
    file: &str,
    semantics: Semantics,
    allow_offset: bool,
) -> Result<(Instance, Option<Vec<u64>>), InputError> {
    let allowed: &[&str] = if allow_offset { &["alignment", "requested", "offset"] } else { &["alignment", "requested"] };
    let mut rd = Reader::new(input, file, &["id", "lower", "upper", "size"], allowed)?;
    let columns = Columns { alignment: rd.has("alignment"), requested: rd.has("requested") };
    let has_offset = rd.has("offset");
    let mut b = InstanceBuilder::new(file, semantics, columns);
    let mut offsets = Vec::new();
    while let Some(row) = rd.next_row()? {
        let v = row.values;
        // Required columns are present in every row: the reader checked the header and count.
        b.push(
            row.line,
            RawBuffer {
                id: v[ID].unwrap_or(0),
                lower: v[LOWER].unwrap_or(0),
                upper: v[UPPER].unwrap_or(0),
                size: v[SIZE].unwrap_or(0),
                alignment: v[ALIGN].unwrap_or(0),
                requested: v[REQ].unwrap_or(0),
            },
        )?;
        if has_offset {
            let off = v[OFFSET].unwrap_or(0);
            let size = v[SIZE].unwrap_or(0);
            if off.checked_add(size).is_none() {
                return Err(InputError::at(file, row.line, Some("offset"), K::Overflow, "offset + size overflows 64 bits"));
            }
            offsets.push(off);
        }
    }
    Ok((b.finish()?, has_offset.then_some(offsets)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_ids_are_named_by_their_lines_across_blank_lines() {
        // Lines: 1 header, 2 a, 3 blank, 4 b, 5 c, 6 blank, 7 blank, 8 d (duplicate of b).
        let text = "id,lower,upper,size\n1,0,1,4\n\n2,0,1,4\n3,1,2,4\n\n\n2,2,3,4\n";
        let e = read_instance_from(text.as_bytes(), "t.csv", Semantics::Inex, false).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("t.csv:8:"), "{msg}");
        assert!(msg.contains("duplicate id 2 (first on line 4)"), "{msg}");
        let ok = "id,lower,upper,size\n1,0,1,4\n\n2,0,1,4\n";
        assert_eq!(read_instance_from(ok.as_bytes(), "t.csv", Semantics::Inex, false).unwrap().0.len(), 2);
    }

    #[test]
    fn duplicate_ids_from_arrays_are_named_by_their_indices() {
        let mut b = InstanceBuilder::new("arrays", Semantics::Inex, Columns::default()).counting(Position::Index);
        for (k, id) in [4u64, 9, 4].into_iter().enumerate() {
            b.push(k as u64, RawBuffer { id, lower: 0, upper: 1, size: 8, ..Default::default() }).unwrap();
        }
        let e = b.finish().unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("id")));
        assert_eq!(e.message, "duplicate id 4 (first at index 0)");
    }
}
