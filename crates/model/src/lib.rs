//! The data model every heaplab stage shares: buffers with lifetimes, instances (sets of
//! buffers), placements (an offset per buffer), and the file formats they travel in.
//!
//! Lifetimes are always half-open `[lower, upper)` in integer ticks inside heaplab; other
//! conventions are converted when a file is read (see [`Semantics`]), never inside algorithms.

pub mod binary;
pub mod csv;
mod error;
pub mod files;
pub mod input;
pub mod placement;
pub mod units;
pub mod varint;

pub use error::{quoted, ErrorClass, InputError, InputErrorKind};
pub use input::{FileKind, Input, Wanted};

/// One buffer: `size` bytes live during `[lower, upper)`.
///
/// Kept compact (48 bytes) because instances reach ten million buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Buffer {
    /// The identifier from the input file (need not be dense or sorted).
    pub id: u64,
    /// First tick the buffer is live.
    pub lower: u64,
    /// First tick the buffer is no longer live (`upper > lower`).
    pub upper: u64,
    /// Bytes the buffer occupies (> 0).
    pub size: u64,
    /// Bytes the program asked for, when known (≤ `size`); 0 when not given.
    pub requested: u64,
    /// log2 of the required alignment of its offset (0 = any offset).
    pub align_log2: u8,
}

impl Buffer {
    /// A buffer without alignment or requested size.
    pub fn new(id: u64, lower: u64, upper: u64, size: u64) -> Self {
        Buffer { id, lower, upper, size, requested: 0, align_log2: 0 }
    }

    /// Required alignment of the offset in bytes (a power of two, 1 when unconstrained).
    #[inline]
    pub fn alignment(&self) -> u64 {
        1u64 << self.align_log2
    }

    /// Lifetime length in ticks.
    #[inline]
    pub fn length(&self) -> u64 {
        self.upper - self.lower
    }

    /// Whether the two lifetimes intersect (half-open intervals).
    #[inline]
    pub fn conflicts(&self, other: &Buffer) -> bool {
        self.lower < other.upper && other.lower < self.upper
    }
}

/// Rounds `x` up to a multiple of `1 << align_log2`; `None` on overflow.
#[inline]
pub fn align_up(x: u64, align_log2: u8) -> Option<u64> {
    let mask = (1u64 << align_log2) - 1;
    x.checked_add(mask).map(|v| v & !mask)
}

/// Which optional columns an instance carried, so that outputs keep them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    /// The input had an `alignment` column.
    pub alignment: bool,
    /// The input had a `requested` column.
    pub requested: bool,
}

/// A set of buffers to be placed. Buffer order is the input order; algorithms refer to buffers
/// by their index in `buffers`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instance {
    /// The buffers, in input order.
    pub buffers: Vec<Buffer>,
    /// Optional columns present in the source.
    pub columns: Columns,
}

impl Instance {
    /// An instance from buffers (no optional columns recorded unless a buffer uses them).
    pub fn new(buffers: Vec<Buffer>) -> Self {
        let columns = Columns {
            alignment: buffers.iter().any(|b| b.align_log2 > 0),
            requested: buffers.iter().any(|b| b.requested > 0),
        };
        Instance { buffers, columns }
    }

    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.buffers.len()
    }

    /// Whether the instance has no buffers.
    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }

    /// Sum of all sizes plus worst-case alignment padding: an upper bound on any sensible
    /// makespan. Readers guarantee it fits in a `u64`.
    pub fn total_padded_size(&self) -> u64 {
        self.buffers.iter().map(|b| b.size + b.alignment() - 1).sum()
    }
}

/// An offset for every buffer of an instance, parallel to `Instance::buffers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// `offsets[i]` is where buffer `i` starts.
    pub offsets: Vec<u64>,
}

impl Placement {
    /// Makespan: the highest `offset + size` (0 for an empty instance).
    pub fn makespan(&self, inst: &Instance) -> u64 {
        inst.buffers
            .iter()
            .zip(&self.offsets)
            .map(|(b, &o)| o.saturating_add(b.size))
            .max()
            .unwrap_or(0)
    }
}

/// Lifetime conventions accepted on input. Inside heaplab every lifetime is `inex`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Semantics {
    /// `[lower, upper)`: minimalloc's convention, the default.
    #[default]
    Inex,
    /// `[lower, upper]`: both ends live; converted to `[lower, upper + 1)`.
    In,
    /// `(lower, upper)` in continuous time; conflicts exactly like `inex`, so kept as is.
    Ex,
}

impl Semantics {
    /// Parses `inex`, `in` or `ex`.
    pub fn parse(s: &str) -> Option<Semantics> {
        match s {
            "inex" => Some(Semantics::Inex),
            "in" => Some(Semantics::In),
            "ex" => Some(Semantics::Ex),
            _ => None,
        }
    }

    /// Converts a lifetime from this convention to `[lower, upper)`, or says why it cannot be.
    pub fn to_inex(self, lower: u64, upper: u64) -> Result<(u64, u64), &'static str> {
        match self {
            Semantics::Inex | Semantics::Ex => {
                if upper <= lower {
                    Err("upper must be greater than lower")
                } else {
                    Ok((lower, upper))
                }
            }
            Semantics::In => {
                if upper < lower {
                    Err("upper must not be less than lower")
                } else {
                    upper.checked_add(1).map(|u| (lower, u)).ok_or("upper + 1 overflows 64 bits")
                }
            }
        }
    }
}
