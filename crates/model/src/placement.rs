//! Matching a placement written by any tool to an instance by id: every buffer of the instance
//! gets the offset the placement gives its id, and lifetimes and sizes the placement repeats
//! must agree with the instance. Mismatches are collected as problems (the placement is wrong),
//! apart from unreadable files (the input is bad).

use crate::csv::Reader;
use crate::{binary, FileKind, Input, InputError, InputErrorKind, Instance, Semantics, Wanted};

/// A placement matched to an instance.
#[derive(Clone, Debug, Default)]
pub struct Matched {
    /// The offset of every buffer of the instance, in its order; `None` where the placement has
    /// none.
    pub offsets: Vec<Option<u64>>,
    /// What does not match, one line each, naming the file and the line or record: unknown,
    /// repeated or missing ids, lifetimes or sizes that differ.
    pub problems: Vec<String>,
}

/// Reads the placement at `path` (CSV with `id` and `offset` columns, optionally `lower`,
/// `upper`, `size`, ...; or `.hlbin` with offsets) and matches it to `inst` by id. Lifetimes are
/// read under `sem`.
pub fn match_by_id(inst: &Instance, path: &str, sem: Semantics) -> Result<Matched, InputError> {
    match_read(inst, path, sem, ReadAhead::default())
}

/// A placement file read before its instance is at hand, so that both can be read at once: a
/// `.hlbin` file whole; a CSV file is read while it is matched, row by row, as before.
#[derive(Default)]
pub struct ReadAhead(Option<(Instance, Vec<u64>)>);

/// Reads the placement at `path` ahead of matching it ([`match_read`]) where it is `.hlbin`.
pub fn read_ahead(path: &str, sem: Semantics) -> Result<ReadAhead, InputError> {
    let mut input = Input::open(path)?;
    if input.kind()? != FileKind::Hlbin {
        return Ok(ReadAhead(None));
    }
    let (pinst, offs) = binary::read_input(input, sem)?;
    let offs = offs.ok_or_else(|| InputError::file(path, InputErrorKind::Shape, "binary file holds no offsets"))?;
    Ok(ReadAhead(Some((pinst, offs))))
}

/// [`match_by_id`] of a placement perhaps read ahead ([`read_ahead`] of the same `path`).
pub fn match_read(inst: &Instance, path: &str, sem: Semantics, ahead: ReadAhead) -> Result<Matched, InputError> {
    let mut problems = Vec::new();
    let offsets = offsets_for(inst, path, sem, ahead, &mut problems)?;
    let missing: Vec<u64> = inst.buffers.iter().zip(&offsets).filter(|(_, o)| o.is_none()).map(|(b, _)| b.id).collect();
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(10).map(|x| x.to_string()).collect();
        problems.push(format!(
            "{path}: {} buffers of the instance have no offset (ids {}{})",
            missing.len(),
            shown.join(", "),
            if missing.len() > 10 { ", …" } else { "" }
        ));
    }
    Ok(Matched { offsets, problems })
}

/// Reads offsets for `inst` from `path`, collecting mismatches as problems.
fn offsets_for(inst: &Instance, path: &str, sem: Semantics, ahead: ReadAhead, problems: &mut Vec<String>) -> Result<Vec<Option<u64>>, InputError> {
    // Ids sorted for look-ups, made at the first record whose id is not the instance's at the
    // same position: a placement written in the instance's order (as heaplab writes them) needs
    // none, where a binary search a record took a second at 10^7 buffers.
    let mut by_id: Option<Vec<(u64, u32)>> = None;
    let mut offsets: Vec<Option<u64>> = vec![None; inst.len()];
    // `where_` names the record only when a problem is reported: formatting it for every
    // record would cost a tenth of checking a placement of 10^6 buffers.
    let mut assign = |k: usize, id: u64, where_: &dyn Fn() -> String, off: u64, life: Option<(u64, u64, u64)>, problems: &mut Vec<String>| {
        // An instance's ids are distinct, so the one at the record's own position is the match.
        let i = if inst.buffers.get(k).is_some_and(|b| b.id == id) {
            k
        } else {
            let by_id = by_id.get_or_insert_with(|| {
                let mut v: Vec<(u64, u32)> = inst.buffers.iter().enumerate().map(|(i, b)| (b.id, i as u32)).collect();
                v.sort_unstable();
                v
            });
            let Ok(p) = by_id.binary_search_by_key(&id, |&(x, _)| x) else {
                problems.push(format!("{}: id {id} is not in the instance", where_()));
                return;
            };
            by_id[p].1 as usize
        };
        let b = &inst.buffers[i];
        if offsets[i].is_some() {
            problems.push(format!("{}: id {id} is placed twice", where_()));
            return;
        }
        if let Some((lo, up, size)) = life {
            if (lo, up, size) != (b.lower, b.upper, b.size) {
                problems.push(format!(
                    "{}: id {id} has lifetime [{lo}, {up}) size {size} here but [{}, {}) size {} in the instance",
                    where_(),
                    b.lower,
                    b.upper,
                    b.size
                ));
            }
        }
        offsets[i] = Some(off);
    };
    let ahead = match ahead.0 {
        Some(read) => Some(read),
        None => read_ahead(path, sem)?.0,
    };
    if let Some((pinst, offs)) = ahead {
        for (k, (b, o)) in pinst.buffers.iter().zip(offs).enumerate() {
            assign(k, b.id, &|| format!("{path}: record {}", k + 1), o, Some((b.lower, b.upper, b.size)), problems);
        }
        return Ok(offsets);
    }
    let mut input = Input::open(path)?;
    if !matches!(input.kind()?, FileKind::Text | FileKind::Empty) {
        return Err(input.wrong_kind(Wanted::Instance));
    }
    let mut rd = Reader::new(input, path, &["id", "offset"], &["lower", "upper", "size", "alignment", "requested"])?;
    let mut k = 0;
    while let Some(row) = rd.next_row()? {
        let id = row.id().unwrap_or(0);
        let off = row.offset().unwrap_or(0);
        let life = match row.lifetime_and_size() {
            Some((lo, up, size)) => {
                let (lo, up) = sem.to_inex(lo, up).map_err(|why| {
                    InputError::at(path, row.line, Some("upper"), InputErrorKind::Consistency, why.to_string())
                })?;
                Some((lo, up, size))
            }
            None => None,
        };
        let line = row.line;
        assign(k, id, &|| format!("{path}:{line}"), off, life, problems);
        k += 1;
    }
    Ok(offsets)
}
