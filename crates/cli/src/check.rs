//! `heaplab check`: validates a placement written by any tool against an instance.
//!
//! The placement is matched to the instance by id; when it repeats lifetimes and sizes they must
//! agree with the instance. Then the sweep validator decides. A malformed file is bad input
//! (exit 2); a well-formed placement that is wrong — missing, unknown or repeated ids, clashes,
//! misalignment — is an invalid result (exit 1), reported buffer by buffer.

use crate::report::{bytes, grouped, pct};
use crate::Failure;
use clap::Args;
use heaplab_model::csv::Reader;
use heaplab_model::{binary, files, FileKind, Input, Instance, InputError, InputErrorKind, Semantics, Wanted};
use serde_json::json;

pub const CHECK_HELP: &str = "\
Validate a placement: no two buffers live at the same time may overlap in [offset, offset + size),
and every offset must honour its buffer's alignment. Works on any tool's output in the CSV format
(id,offset plus optionally lower,upper,size,...), matched to the instance by id; lifetimes and sizes
repeated in the placement must agree with the instance.

With one file, the placement is checked on its own (it must hold lower, upper, size and offset).

Exit status: 0 valid, 1 invalid (the clashing buffers are named), 2 unreadable input.

Examples:
  heaplab check model.csv placed.csv
  heaplab check placed.csv --json";

/// Arguments of `heaplab check`.
#[derive(Args)]
pub struct CheckArgs {
    /// The instance (CSV or .hlbin); or, alone, a self-contained placement.
    model: String,
    /// The placement to check (CSV with id and offset columns, or .hlbin with offsets).
    placement: Option<String>,
    /// Lifetime convention of both files.
    #[arg(long, default_value = "inex", value_parser = ["inex", "in", "ex"])]
    semantics: String,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
}

/// Reads offsets for `inst` from `path`, collecting mismatches as problems.
fn offsets_for(inst: &Instance, path: &str, sem: Semantics, problems: &mut Vec<String>) -> Result<Vec<Option<u64>>, InputError> {
    let mut by_id: Vec<(u64, u32)> = inst.buffers.iter().enumerate().map(|(i, b)| (b.id, i as u32)).collect();
    by_id.sort_unstable();
    let mut offsets: Vec<Option<u64>> = vec![None; inst.len()];
    let mut assign = |id: u64, where_: String, off: u64, life: Option<(u64, u64, u64)>, problems: &mut Vec<String>| {
        let Ok(k) = by_id.binary_search_by_key(&id, |&(x, _)| x) else {
            problems.push(format!("{where_}: id {id} is not in the instance"));
            return;
        };
        let i = by_id[k].1 as usize;
        let b = &inst.buffers[i];
        if offsets[i].is_some() {
            problems.push(format!("{where_}: id {id} is placed twice"));
            return;
        }
        if let Some((lo, up, size)) = life {
            if (lo, up, size) != (b.lower, b.upper, b.size) {
                problems.push(format!(
                    "{where_}: id {id} has lifetime [{lo}, {up}) size {size} here but [{}, {}) size {} in the instance",
                    b.lower, b.upper, b.size
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
            assign(b.id, format!("{path}: record {}", k + 1), o, Some((b.lower, b.upper, b.size)), problems);
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
        assign(id, format!("{path}:{}", row.line), off, life, problems);
    }
    Ok(offsets)
}

/// `heaplab check`.
pub fn check(a: CheckArgs) -> Result<(), Failure> {
    let sem = Semantics::parse(&a.semantics).unwrap_or_default();
    let mut problems = Vec::new();
    let (inst, offsets): (Instance, Vec<u64>) = match &a.placement {
        None => files::read_placement(&a.model, sem)?,
        Some(p) => {
            let inst = files::read_instance(&a.model, sem)?;
            let offs = offsets_for(&inst, p, sem, &mut problems)?;
            let missing: Vec<u64> = inst.buffers.iter().zip(&offs).filter(|(_, o)| o.is_none()).map(|(b, _)| b.id).collect();
            if !missing.is_empty() {
                let shown: Vec<String> = missing.iter().take(10).map(|x| x.to_string()).collect();
                problems.push(format!(
                    "{p}: {} buffers of the instance have no offset (ids {}{})",
                    missing.len(),
                    shown.join(", "),
                    if missing.len() > 10 { ", …" } else { "" }
                ));
            }
            (inst, offs.into_iter().map(|o| o.unwrap_or(0)).collect())
        }
    };
    let placement_name = a.placement.as_deref().unwrap_or(&a.model);
    let v = if problems.is_empty() { Some(heaplab_sweep::validate(&inst.buffers, &offsets)) } else { None };
    let valid = v.as_ref().is_some_and(|v| v.is_valid());
    let max_load = heaplab_sweep::max_load(&inst.buffers);
    if a.json {
        let ids = |xs: &[usize]| xs.iter().map(|&i| inst.buffers[i].id).collect::<Vec<_>>();
        let out = match &v {
            Some(v) => json!({
                "valid": valid, "n": inst.len(), "makespan": v.makespan, "max_load": max_load,
                "fragmentation_pct": pct(v.makespan.max(max_load), max_load),
                "clashing_buffers": v.clashing_buffers,
                "clashes": v.clashes.iter().map(|c| json!({"a": inst.buffers[c.a].id, "b": inst.buffers[c.b].id, "tick": c.tick})).collect::<Vec<_>>(),
                "misaligned": ids(&v.misaligned), "overflowing": ids(&v.overflowing), "problems": problems,
            }),
            None => json!({"valid": false, "n": inst.len(), "max_load": max_load, "problems": problems}),
        };
        println!("{}", serde_json::to_string_pretty(&out).expect("JSON of plain values"));
    } else if let Some(v) = &v {
        if valid {
            println!(
                "valid: {} buffers, makespan {} B ({}), max load {} B, fragmentation {:.3}%",
                grouped(inst.len() as u64),
                grouped(v.makespan),
                bytes(v.makespan),
                grouped(max_load),
                pct(v.makespan, max_load)
            );
        } else {
            println!("{placement_name}: {}", v.describe(&inst.buffers, &offsets));
        }
    } else {
        println!("{placement_name}: INVALID: the placement does not match the instance:");
        for p in problems.iter().take(20) {
            println!("  {p}");
        }
        if problems.len() > 20 {
            println!("  … {} problems in all", problems.len());
        }
    }
    if valid {
        Ok(())
    } else {
        Err(Failure::Work(format!("{placement_name}: invalid placement")))
    }
}
