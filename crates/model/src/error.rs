//! Errors in user input: every one names the file, and where it can the line and field.

use std::fmt;

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
            field: field.map(str::to_string),
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
