//! `heaplab check`: validates a placement written by any tool against an instance.
//!
//! The placement is matched to the instance by id (`heaplab_model::placement`); when it repeats
//! lifetimes and sizes they must agree with the instance. Then the sweep validator decides. A malformed file is bad input
//! (exit 2); a well-formed placement that is wrong — missing, unknown or repeated ids, clashes,
//! misalignment — is an invalid result (exit 1), reported buffer by buffer.

use heaplab_model::units::{bytes, grouped, pct};
use crate::Failure;
use clap::Args;
use heaplab_model::{files, placement, Instance, Semantics};
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
    #[arg(long, default_value = "inex", value_parser = crate::options::semantics())]
    semantics: Semantics,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
}

/// `heaplab check`.
pub fn check(a: CheckArgs) -> Result<(), Failure> {
    let sem = a.semantics;
    let mut problems = Vec::new();
    let (inst, offsets): (Instance, Vec<u64>) = match &a.placement {
        None => files::read_placement(&a.model, sem)?,
        Some(p) => {
            // Both files read at once (a second each at 10^7 buffers), the instance's error
            // first where both are bad.
            let (inst, ahead) = std::thread::scope(|s| {
                let ahead = s.spawn(|| placement::read_ahead(p, sem));
                let inst = files::read_instance(&a.model, sem);
                (inst, ahead.join().expect("reading a placement does not panic"))
            });
            let inst = inst?;
            let m = placement::match_read(&inst, p, sem, ahead?)?;
            problems = m.problems;
            (inst, m.offsets.into_iter().map(|o| o.unwrap_or(0)).collect())
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
