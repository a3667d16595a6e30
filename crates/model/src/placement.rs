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
    let mut problems = Vec::new();
    let offsets = offsets_for(inst, path, sem, &mut problems)?;
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
fn offsets_for(inst: &Instance, path: &str, sem: Semantics, problems: &mut Vec<String>) -> Result<Vec<Option<u64>>, InputError> {
    let mut by_id: Vec<(u64, u32)> = inst.buffers.iter().enumerate().map(|(i, b)| (b.id, i as u32)).collect();
    by_id.sort_unstable();
    let mut offsets: Vec<Option<u64>> = vec![None; inst.len()];
    // `where_` names the record only when a problem is reported: formatting it for every
    // record would cost a tenth of checking a placement of 10^6 buffers.
    let mut assign = |id: u64, where_: &dyn Fn() -> String, off: u64, life: Option<(u64, u64, u64)>, problems: &mut Vec<String>| {
        let Ok(k) = by_id.binary_search_by_key(&id, |&(x, _)| x) else {
            problems.push(format!("{}: id {id} is not in the instance", where_()));
            return;
        };
        let i = by_id[k].1 as usize;
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
    let mut input = Input::open(path)?;
    let kind = input.kind()?;
    if !matches!(kind, FileKind::Hlbin | FileKind::Text | FileKind::Empty) {
        return Err(input.wrong_kind(Wanted::Instance));
    }
    if kind == FileKind::Hlbin {
        let (pinst, offs) = binary::read_input(input, sem)?;
        let offs = offs.ok_or_else(|| InputError::file(path, InputErrorKind::Shape, "binary file holds no offsets"))?;
        for (k, (b, o)) in pinst.buffers.iter().zip(offs).enumerate() {
            assign(b.id, &|| format!("{path}: record {}", k + 1), o, Some((b.lower, b.upper, b.size)), problems);
        }
        return Ok(offsets);
    }
    let mut rd = Reader::new(input, path, &["id", "offset"], &["lower", "upper", "size", "alignment", "requested"])?;
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
        assign(id, &|| format!("{path}:{line}"), off, life, problems);
    }
    Ok(offsets)
}
