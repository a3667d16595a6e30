//! Errors in user input: every one names the file, and where it can the line and field. Values
//! from the file are quoted through [`quoted`], the one rule that keeps a message short however
//! long the field (an 8 MB field gives a line of stderr, not 8 MB).

use std::fmt;

/// What went wrong, in the two classes every front end tells apart: the input or the options
/// were bad (the caller can fix them), or the work itself failed. Each library error type says
/// its class through a `class()` method; the CLI turns the class into its exit code (2 and 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// A file, option or program given by the caller cannot be used.
    BadInput,
    /// The input was fine but the work failed (a child died, a write failed, a check found an
    /// invalid result).
    WorkFailed,
}

/// Characters of a value quoted in full; longer ones are cut here.
const QUOTE_CHARS: usize = 40;

/// Quotes a value from a file for a message: `'text'`, or for a long value its first 40
/// characters and its length: `'1234…' (8388608 bytes)`. Control characters are escaped so a
/// message stays on one line.
pub fn quoted(value: &str) -> String {
    match cut(value) {
        (s, None) => format!("'{s}'"),
        (s, Some(n)) => format!("'{s}…' ({n} bytes)"),
    }
}

/// A field or column name as shown in a message (unquoted), cut like [`quoted`] values.
fn short_name(name: &str) -> String {
    match cut(name) {
        (s, None) => s,
        (s, Some(n)) => format!("{s}… ({n} bytes)"),
    }
}

/// The first [`QUOTE_CHARS`] characters of `value` with control characters escaped, and the
/// value's length in bytes when it was cut.
fn cut(value: &str) -> (String, Option<usize>) {
    let mut out = String::new();
    for (k, c) in value.chars().enumerate() {
        if k == QUOTE_CHARS {
            return (out, Some(value.len()));
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    (out, None)
}

/// What went wrong, broadly; lets callers and tests tell errors apart without string matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputErrorKind {
    /// The file could not be opened or read.
    Io,
    /// Header missing, unknown or duplicated columns, wrong number of fields.
    Shape,
    /// A field that is not a valid value (not an integer, negative, zero size, …).
    Value,
    /// Values that are individually fine but inconsistent (upper ≤ lower, duplicate ids, …).
    Consistency,
    /// Sums that exceed 64 bits.
    Overflow,
    /// A binary file with the wrong magic, version, or truncated.
    Format,
}

/// An error in a file the user gave us.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The file's path as the user gave it.
    pub file: String,
    /// 1-based line (CSV) or record number (binary), when known.
    pub line: Option<u64>,
    /// The column or field concerned, when known.
    pub field: Option<String>,
    /// The category.
    pub kind: InputErrorKind,
    /// What was expected and what was found.
    pub message: String,
}

impl InputError {
    /// An error about the file as a whole.
    pub fn file(file: &str, kind: InputErrorKind, message: impl Into<String>) -> Self {
        InputError { file: file.to_string(), line: None, field: None, kind, message: message.into() }
    }

    /// An error at a line, optionally about one field.
    pub fn at(
        file: &str,
        line: u64,
        field: Option<&str>,
        kind: InputErrorKind,
        message: impl Into<String>,
    ) -> Self {
        InputError {
            file: file.to_string(),
            line: Some(line),
            field: field.map(short_name),
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(c) = &self.field {
            write!(f, ": field '{c}'")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_to_a_short_prefix() {
        assert_eq!(quoted("12x"), "'12x'");
        assert_eq!(quoted("a\tb"), "'a\\tb'");
        let long = "9".repeat(8 << 20);
        let q = quoted(&long);
        assert!(q.len() < 80 && q.ends_with("(8388608 bytes)"), "{q}");
        let e = InputError::at("f.csv", 1, Some(&long), InputErrorKind::Shape, "unknown column");
        assert!(e.to_string().len() < 120, "{e}");
    }
}
