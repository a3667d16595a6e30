//! The oracle: the trace's instance (its blocks on the allocated-bytes clock, requested sizes,
//! as `heaplab plan run.hltrace` converts it) planned by heaplab-plan under a short time limit,
//! against the lower bound and the real allocator's pages. Planning costs far more than the
//! report, so [`worth_planning`] says when it is done without being asked.

use crate::model::Oracle;
use heaplab_model::Input;
use heaplab_trace::instance::{read, InstanceError, ReadOptions};
use std::time::Duration;

/// Blocks up to which `--oracle auto` plans: the planner's first heuristics place them in well
/// under a few seconds.
pub const AUTO_MAX_BLOCKS: u64 = 200_000;

/// Whether `--oracle auto` plans a trace with this many allocations.
pub fn worth_planning(allocations: u64) -> bool {
    allocations <= AUTO_MAX_BLOCKS
}

/// Plans the trace `input` (its usable part, when damaged) within `time_limit`.
pub fn plan(input: Input, time_limit: Duration) -> Result<Oracle, InstanceError> {
    let t = read(input, &ReadOptions { allow_truncated: true, ..ReadOptions::default() }, None)?;
    let opts = heaplab_plan::PlanOptions { time_limit, ..heaplab_plan::PlanOptions::default() };
    let out = heaplab_plan::plan(&t.instance.buffers, &opts, None);
    Ok(Oracle {
        lower_bound: out.lower_bound,
        plan_bytes: out.makespan,
        proven_optimal: out.optimal || out.makespan == out.lower_bound,
        plan_seconds: out.seconds,
        allocator_pages_bytes: t.stats.peak_pages_bytes,
    })
}
