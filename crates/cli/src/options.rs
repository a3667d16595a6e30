//! Raw flags turned into the libraries' own typed values, in one place: the lifetime
//! convention (`heaplab_model::Semantics`), the trace clock and size model
//! (`heaplab_trace::Clock`, `SizeModel`), the study's RSS method, and the trace-input options
//! shared by `plan`, `stats` and `convert` ([`TraceInputArgs`]). clap parses each flag with the
//! parsers here, so a command body only sees typed values. (Numeric ranges live in
//! [`crate::flag_ranges`].)

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use heaplab_model::Semantics;
use heaplab_trace::{Clock, ConvertOptions, SizeModel};

/// `--semantics`: the flag's names, with the values they stand for.
const SEMANTICS: [(&str, Semantics); 3] = [("inex", Semantics::Inex), ("in", Semantics::In), ("ex", Semantics::Ex)];
/// `--clock`.
const CLOCKS: [(&str, Clock); 3] = [("events", Clock::Events), ("bytes", Clock::Bytes), ("ns", Clock::Ns)];
/// `--size`.
const SIZES: [(&str, SizeModel); 2] = [("requested", SizeModel::Requested), ("usable", SizeModel::Usable)];

/// A clap parser over a table of names: the names are listed in `--help` and in the error for
/// any other word, exactly as a plain list of strings would be.
fn table<T: Copy + Send + Sync + 'static>(names: &'static [(&'static str, T)]) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(names.iter().map(|(n, _)| *n))
        .map(move |s| names.iter().find(|(n, _)| *n == s).map(|(_, v)| *v).expect("clap checked the name"))
}

/// The parser of `--semantics`.
pub fn semantics() -> impl TypedValueParser<Value = Semantics> {
    table(&SEMANTICS)
}

/// The parser of `--rss`.
pub fn rss_method() -> impl TypedValueParser<Value = heaplab_study::measure::RssMethod> {
    use heaplab_study::measure::RssMethod;
    const RSS: [(&str, RssMethod); 2] = [("rusage", RssMethod::Rusage), ("proc", RssMethod::Proc)];
    table(&RSS)
}

/// The name a value of `names` has on the command line.
fn name_of<T: PartialEq>(names: &[(&'static str, T)], v: T) -> &'static str {
    names.iter().find(|(_, x)| *x == v).map(|(n, _)| *n).unwrap_or("?")
}

/// Options for reading a trace where an instance is expected (`plan`, `stats`, `convert`).
#[derive(Args, Clone)]
pub struct TraceInputArgs {
    /// For trace input: the time axis. bytes = allocated-bytes clock (the thesis'), events =
    /// operation index, ns = nanoseconds made strictly increasing.
    #[arg(long, default_value = "bytes", value_parser = table(&CLOCKS), help_heading = "Trace input")]
    pub clock: Clock,
    /// For trace input: buffer sizes as requested by the program, or as the allocator gave them
    /// (usable; the requested size is kept in the 'requested' column).
    #[arg(long, default_value = "requested", value_parser = table(&SIZES), help_heading = "Trace input")]
    pub size: SizeModel,
    #[arg(long, value_name = "TID", help_heading = "Trace input", value_parser = crate::flag_ranges::THREAD.parser::<u32>(),
        help = crate::flag_ranges::THREAD.help("For trace input: only buffers allocated by this thread id, on its own clock."))]
    pub thread: Option<u32>,
    /// For trace input: use the usable part of a damaged (truncated) trace instead of failing.
    #[arg(long, help_heading = "Trace input")]
    pub allow_truncated: bool,
    /// For a run index (.hlrun): the process to read (a pid, or a program name such as
    /// python3); by default the one with the most events.
    #[arg(long, value_name = "PID|NAME", help_heading = "Trace input")]
    pub process: Option<String>,
}

impl TraceInputArgs {
    /// The conversion these options ask for.
    pub fn convert(&self) -> ConvertOptions {
        ConvertOptions { clock: self.clock, size: self.size, thread: self.thread }
    }

    /// The clock's name, as given.
    pub fn clock_name(&self) -> &'static str {
        name_of(&CLOCKS, self.clock)
    }

    /// The size model's name, as given.
    pub fn size_name(&self) -> &'static str {
        name_of(&SIZES, self.size)
    }

    /// The time axis a picture of the converted trace has.
    pub fn plot_clock(&self) -> heaplab_plot::Clock {
        match self.clock {
            Clock::Events => heaplab_plot::Clock::Events,
            Clock::Ns => heaplab_plot::Clock::Ns,
            Clock::Bytes => heaplab_plot::Clock::Bytes,
        }
    }
}
