//! `heaplab`: the command-line front end. Each subcommand is one pipeline stage (see DESIGN.md);
//! this file owns argument parsing, human and JSON output, progress and exit codes
//! (0 success, 1 the work failed or a check found an invalid result, 2 bad usage or input).

mod check;
mod commands;
mod flag_ranges;
mod outputs;
mod replay;
mod report;
mod study;
mod trace;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// heaplab — understand and optimise how programs use heap memory.
///
/// Static memory planning: read buffers with sizes and lifetimes, assign offsets that minimise
/// peak memory (makespan), prove the result valid, and draw it.
#[derive(Parser)]
#[command(name = "heaplab", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan offsets for an instance: minimise makespan (peak memory) and write the placement.
    #[command(long_about = commands::PLAN_HELP)]
    Plan(commands::PlanArgs),
    /// Validate any tool's placement against an instance: exit 0 valid, 1 invalid.
    #[command(long_about = check::CHECK_HELP)]
    Check(check::CheckArgs),
    /// Describe an instance: size, max load, conflicts, components, histograms.
    Stats(commands::StatsArgs),
    /// Draw a placement as a time × address picture (SVG or PNG, by the output's extension).
    Plot(commands::PlotArgs),
    /// Generate an instance for tests and scale benchmarks.
    #[command(long_about = commands::GEN_HELP)]
    Gen(commands::GenArgs),
    /// Convert an instance or placement between CSV and the binary format (.hlbin), or a trace
    /// (.hltrace) to an instance.
    Convert(commands::ConvertArgs),
    /// Run a program and record every heap request it makes (LD_PRELOAD tracer).
    #[command(long_about = trace::TRACE_HELP)]
    Trace(trace::TraceArgs),
    /// Describe a trace: calls per function, threads, peak live bytes, sizes, duration.
    TraceInfo(trace::TraceInfoArgs),
    /// Replay a trace under an allocator and record where it puts every block (placed jobs).
    #[command(long_about = replay::REPLAY_HELP)]
    Replay(replay::ReplayArgs),
    /// Measure the 2-D fragmentation of placed jobs: external, internal, per mapping, over time.
    #[command(long_about = replay::FRAG_HELP)]
    Frag(replay::FragArgs),
    /// Correlate replayed fragmentation with real peak RSS across allocators; write a report.
    #[command(long_about = study::STUDY_HELP)]
    Study(study::StudyArgs),
}

/// How a command ended, mapped to the exit code.
pub enum Failure {
    /// Bad usage or input (exit 2).
    Input(String),
    /// The work failed or a check found an invalid result (exit 1).
    Work(String),
}

impl From<heaplab_model::InputError> for Failure {
    fn from(e: heaplab_model::InputError) -> Self {
        Failure::Input(e.to_string())
    }
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes away
    // (`heaplab trace-info x | head`): Rust ignores SIGPIPE and would panic on the write.
    // SAFETY: restoring a signal's default disposition at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(a) => commands::plan(a),
        Command::Check(a) => check::check(a),
        Command::Stats(a) => commands::stats(a),
        Command::Plot(a) => commands::plot(a),
        Command::Gen(a) => commands::gen(a),
        Command::Convert(a) => commands::convert(a),
        Command::Trace(a) => trace::trace(a),
        Command::TraceInfo(a) => trace::trace_info(a),
        Command::Replay(a) => replay::replay(a),
        Command::Frag(a) => replay::frag(a),
        Command::Study(a) => study::study(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(m)) => {
            eprintln!("heaplab: error: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Work(m)) => {
            eprintln!("heaplab: {m}");
            ExitCode::from(1)
        }
    }
}
