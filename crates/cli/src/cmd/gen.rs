//! `heaplab gen`: generate a reproducible instance.

use crate::flag_ranges::{GEN_BUFFERS, SEED};
use crate::outputs::check_outputs;
use crate::Failure;
use clap::Args;
use heaplab_model::files;
use heaplab_model::units::grouped;

pub const GEN_HELP: &str = "\
Generate a reproducible instance: the same kind, size and seed always give the same file.

Kinds are listed under --kind. 'tight' instances are cut from a full rectangle, so a packing with
makespan = max load exists: planners can be checked against a known optimum.";

/// Arguments of `heaplab gen`.
#[derive(Args)]
pub struct GenArgs {
    /// Kind of instance.
    #[arg(long, value_name = "KIND", value_parser = gen_kind_names())]
    kind: String,
    #[arg(long, value_name = "N", value_parser = GEN_BUFFERS.parser::<usize>(), help = GEN_BUFFERS.help("Number of buffers."))]
    buffers: usize,
    #[arg(long, default_value_t = 1, value_parser = SEED.parser::<u64>(), help = SEED.help("Seed."))]
    seed: u64,
    /// Output file (.csv, or .hlbin for the binary format); '-' for standard output.
    #[arg(short, long, value_name = "FILE")]
    output: String,
}

fn gen_kind_names() -> Vec<&'static str> {
    heaplab_gen::Kind::ALL.iter().map(|k| k.name()).collect()
}

/// `heaplab gen`.
pub fn gen(a: GenArgs) -> Result<(), Failure> {
    let kind = heaplab_gen::Kind::parse(&a.kind).ok_or_else(|| Failure::Input(format!("unknown kind {}", a.kind)))?;
    check_outputs(&[&a.output], &[])?;
    let inst = heaplab_gen::generate(kind, a.buffers, a.seed);
    files::write(&a.output, &inst, None).map_err(|e| crate::outputs::cannot_write(&a.output, e))?;
    if a.output != "-" {
        eprintln!("heaplab: wrote {} buffers of kind {} (seed {}) to {}", grouped(inst.len() as u64), kind.name(), a.seed, a.output);
    }
    Ok(())
}
