//! `heaplab`: the command-line front end. Each subcommand is one pipeline stage (see DESIGN.md)
//! in its own module under [`cmd`]; the libraries do the work. This file owns the command list
//! and the exit codes (0 success, 1 the work failed or a check found an invalid result, 2 bad
//! usage or input), mapped from typed library errors in [`failure`].

mod cmd;
mod failure;
mod flag_ranges;
mod interrupt;
mod options;
mod outputs;
mod picture;
mod progress;
mod trace_input;

use cmd::{access, check, compare, convert, frag, gen, group, group_info, layout, layout_info, plan, plot, rank, replay, report, run, stats, study, trace, trace_info};
pub use failure::Failure;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// heaplab — understand and optimise how programs use heap memory.
///
/// Trace a program's heap, plan memory-optimal layouts (static memory planning: offsets that
/// minimise peak memory, proved valid), measure real allocators against them, run unmodified
/// programs with a layout applied, and compare configurations with stated confidence.
#[derive(Parser)]
#[command(name = "heaplab", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan offsets for an instance: minimise makespan (peak memory) and write the placement.
    #[command(long_about = plan::PLAN_HELP)]
    Plan(plan::PlanArgs),
    /// Validate any tool's placement against an instance: exit 0 valid, 1 invalid.
    #[command(long_about = check::CHECK_HELP)]
    Check(check::CheckArgs),
    /// Describe an instance: size, max load, conflicts, components, histograms.
    Stats(stats::StatsArgs),
    /// Draw a placement as a time × address picture (SVG or PNG, by the output's extension).
    Plot(plot::PlotArgs),
    /// Generate an instance for tests and scale benchmarks.
    #[command(long_about = gen::GEN_HELP)]
    Gen(gen::GenArgs),
    /// Convert an instance or placement between CSV and the binary format (.hlbin), or a trace
    /// (.hltrace) to an instance.
    Convert(convert::ConvertArgs),
    /// Run a program and record every heap request it makes (LD_PRELOAD tracer).
    #[command(long_about = trace::TRACE_HELP)]
    Trace(trace::TraceArgs),
    /// Describe a trace: calls per function, threads, peak live bytes, sizes, duration.
    TraceInfo(trace_info::TraceInfoArgs),
    /// Replay a trace under an allocator and record where it puts every block (placed jobs).
    #[command(long_about = replay::REPLAY_HELP)]
    Replay(replay::ReplayArgs),
    /// The heap report of a trace: peak and where it comes from, top sites, temporaries, leaks,
    /// the oracle gap; as text, JSON or a self-contained HTML page; diffs; CI limits.
    #[command(long_about = report::REPORT_HELP)]
    Report(report::ReportArgs),
    /// Measure the 2-D fragmentation of placed jobs: external, internal, per mapping, over time.
    #[command(long_about = frag::FRAG_HELP)]
    Frag(frag::FragArgs),
    /// Correlate replayed fragmentation with real peak RSS across allocators; write a report.
    #[command(long_about = study::STUDY_HELP)]
    Study(study::StudyArgs),
    /// Profile a program's heap accesses under valgrind: per-block reads and writes, contexts,
    /// the co-access graph and pointer relations (.hlaccess).
    #[command(long_about = access::ACCESS_HELP)]
    Access(access::AccessArgs),
    /// Compute a layout (.hllayout) from a trace and an optional access profile: where each
    /// allocation goes in one region, by a strategy.
    #[command(long_about = layout::LAYOUT_HELP)]
    Layout(layout::LayoutArgs),
    /// Describe and draw a layout (.hllayout).
    #[command(long_about = layout_info::LAYOUT_INFO_HELP)]
    LayoutInfo(layout_info::LayoutInfoArgs),
    /// Group allocation contexts whose objects are used together (HALO): from a profile
    /// recorded with --contexts to a .hlgroups file of groups and their selectors.
    #[command(long_about = group::GROUP_HELP)]
    Group(group::GroupArgs),
    /// Describe and draw groups (.hlgroups): contexts, edges, groups, selectors.
    #[command(long_about = group_info::GROUP_INFO_HELP)]
    GroupInfo(group_info::GroupInfoArgs),
    /// Run a program with a layout applied (planned allocations at their offsets in one region)
    /// or grouped (objects of related contexts in their group's chunks); the rest to a fallback
    /// allocator; report how it fared.
    #[command(long_about = run::RUN_HELP)]
    Run(run::RunArgs),
    /// Compare configurations against a reference with stated confidence (HPT): per workload
    /// and across applications.
    #[command(long_about = compare::COMPARE_HELP)]
    Compare(compare::CompareArgs),
    /// Rank alternatives by your preferences between criteria (best-worst method, fuzzy BWM,
    /// TOPSIS) and show the Pareto front.
    #[command(long_about = rank::RANK_HELP)]
    Rank(rank::RankArgs),
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
        Command::Plan(a) => plan::plan(a),
        Command::Check(a) => check::check(a),
        Command::Stats(a) => stats::stats(a),
        Command::Plot(a) => plot::plot(a),
        Command::Gen(a) => gen::gen(a),
        Command::Convert(a) => convert::convert(a),
        Command::Trace(a) => trace::trace(a),
        Command::TraceInfo(a) => trace_info::trace_info(a),
        Command::Run(a) => run::run(a),
        Command::Access(a) => access::access(a),
        Command::Replay(a) => replay::replay(a),
        Command::Report(a) => report::report(a),
        Command::Frag(a) => frag::frag(a),
        Command::Study(a) => study::study(a),
        Command::Compare(a) => compare::compare(a),
        Command::Rank(a) => rank::rank(a),
        Command::Layout(a) => layout::layout(a),
        Command::LayoutInfo(a) => layout_info::layout_info(a),
        Command::Group(a) => group::group(a),
        Command::GroupInfo(a) => group_info::group_info(a),
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
