//! `heaplab convert`: instances and placements between CSV and binary, a trace to an instance,
//! and placed jobs to their CSV export.

use crate::outputs::check_outputs;
use crate::Failure;
use clap::Args;
use heaplab_model::units::grouped;
use heaplab_model::{files, FileKind, Input, Semantics};

/// Arguments of `heaplab convert`.
#[derive(Args)]
pub struct ConvertArgs {
    /// Instance or placement (CSV or .hlbin), a trace (.hltrace) to convert to an instance, or a
    /// placed file from `heaplab replay` (to its CSV export).
    input: String,
    /// Output: .hlbin for binary, anything else CSV. Lifetimes are written as [lower, upper).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Lifetime convention of the input.
    #[arg(long, default_value = "inex", value_parser = crate::options::semantics())]
    semantics: Semantics,
    #[command(flatten)]
    trace: crate::options::TraceInputArgs,
}

/// `heaplab convert`.
pub fn convert(a: ConvertArgs) -> Result<(), Failure> {
    check_outputs(&[&a.output], &[&a.input])?;
    // Opened once and told apart by magic: a pipe is read like a file.
    let mut input = Input::open(&a.input)?;
    if input.kind()? == FileKind::Placed {
        let p = heaplab_replay::placed::read_input(input, 4096)?;
        heaplab_replay::placed::write(&a.output, &p).map_err(|e| crate::outputs::cannot_write(&a.output, e))?;
        eprintln!("heaplab: wrote {} jobs to {}", grouped(p.jobs.len() as u64), a.output);
        return Ok(());
    }
    let (inst, offsets, _) = crate::trace_input::read_input(input, a.semantics, true, &a.trace)?;
    files::write(&a.output, &inst, offsets.as_deref()).map_err(|e| crate::outputs::cannot_write(&a.output, e))?;
    eprintln!("heaplab: wrote {} buffers to {}", grouped(inst.len() as u64), a.output);
    Ok(())
}
