//! The planner's policy: which stages of the portfolio [`driver`](crate::driver) run, what share
//! of the time each gets, and the component sizes that decide between them, in one place with
//! their defaults and the reasons for them. The driver reads nothing else, so a stage's
//! contribution can be measured by switching it off (`heaplab plan --no-stage NAME`) and a
//! threshold can be tried without editing code (`--policy KEY=VALUE`).
//!
//! Budget shares are fractions of the time left when the stage starts, unless a field says
//! otherwise. [`Policy::default`] is the tuned portfolio; the searches it runs are listed in
//! [`Stage`].

/// A stage of the portfolio that can be switched off. The greedy heuristics are not one: every
/// other stage starts from (or is measured against) their placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Components with no two buffers live together, or with all sizes equal, solved in closed
    /// form (all at offset 0; interval colouring) before anything else.
    Trivial,
    /// The large buffers of the largest component planned as an instance of their own and the
    /// rest placed around them ([`crate::split`]), where a few of its buffers hold nearly all
    /// its bytes (see [`Policy::split_max_share`]), beside the early windows above
    /// [`Policy::early_windows_max_buffers`].
    Split,
    /// The critical windows started beside the heuristics on the largest component, when its size
    /// is within [`Policy::early_windows_min_buffers`]..=[`Policy::early_windows_max_buffers`].
    EarlyWindows,
    /// Flat components (equal load at every tick) merged into blocks ([`crate::flat`]) and the
    /// blocks planned as an instance of their own.
    Flat,
    /// The critical windows ([`crate::windows`]) on components above [`Policy::small_buffers`].
    Windows,
    /// The exact branch-and-bound search ([`crate::exact`]).
    Exact,
    /// The improvement search ([`crate::improve`]) before boxing.
    Improve,
    /// The boxing algorithm ([`crate::boxing`]).
    Boxing,
    /// The improvement search run again on what boxing found.
    Polish,
}

impl Stage {
    /// Every stage, in the order the driver runs them.
    pub const ALL: [Stage; 9] =
        [Stage::Trivial, Stage::Split, Stage::EarlyWindows, Stage::Flat, Stage::Windows, Stage::Exact, Stage::Improve, Stage::Boxing, Stage::Polish];

    /// The name `--no-stage` takes.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Trivial => "trivial",
            Stage::Split => "split",
            Stage::EarlyWindows => "early-windows",
            Stage::Flat => "flat",
            Stage::Windows => "windows",
            Stage::Exact => "exact",
            Stage::Improve => "improve",
            Stage::Boxing => "boxing",
            Stage::Polish => "polish",
        }
    }

    /// The stage called `name` (see [`Stage::name`]).
    pub fn parse(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Every switch, share and threshold of the portfolio driver. Under a restricted
/// [`Algorithm`](crate::Algorithm) only the stages it names run, whatever the switches say, and
/// the shares that divide the budget between stages do not apply (the one stage gets it all).
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Run [`Stage::Trivial`]. Default on: it costs one sweep and ends the work on such
    /// components.
    pub trivial: bool,
    /// Run [`Stage::EarlyWindows`]. Default on: on 10^5 buffers one first-fit placement can take
    /// a third of a 3 s budget, and the windows are what usually reaches the max load there.
    pub early_windows: bool,
    /// Run [`Stage::Split`]. Default on: on random 10^6 buffers at `--time-limit 30` it is what
    /// comes nearest the max load (docs/planning.md, step 5).
    pub split: bool,
    /// Run [`Stage::Flat`]. Default on: the other stages rarely gain a byte on a flat component.
    pub flat: bool,
    /// Run [`Stage::Windows`]. Default on: on large components it is the stage that reaches the
    /// max load.
    pub windows: bool,
    /// Run [`Stage::Exact`]. Default on: on small components it proves optimality.
    pub exact: bool,
    /// Run [`Stage::Improve`]. Default on.
    pub improve: bool,
    /// Run [`Stage::Boxing`]. Default on.
    pub boxing: bool,
    /// Run [`Stage::Polish`]. Default on: boxing's placements have slack the improvement search
    /// removes.
    pub polish: bool,

    /// Share of the whole time limit after which no further heuristic starts (the first always
    /// runs). Default 0.25: the rest belongs to the searches that improve on them (on 10^5
    /// buffers the best-fit variants alone can take the whole limit, and rarely beat first-fit
    /// by size there).
    pub heuristics_share: f64,
    /// Share of the whole time limit after which a running heuristic is abandoned, its cost
    /// having been predicted wrongly. Default 0.4.
    pub heuristics_cutoff_share: f64,
    /// Component size above which the heuristics start with the cheapest one, the critical
    /// windows run only in their local form (windows of up to [`Policy::huge_window_max_buffers`]),
    /// boxing does not run, and the improvement search runs to its deadline from the best
    /// placement alone instead of returning when stuck (there, nothing after it uses the time),
    /// taking turns with the local windows ([`Policy::huge_windows_patience`]).
    /// Default 2,000,000: first-fit by size grows superlinearly there (10^7 random buffers:
    /// 500 s and 5.5 GB, the start-order sweep 3-6 s and 1.2 GB), and at 10^7 random buffers
    /// the windows' fills and boxing found nothing in 80 s each while adding 1.2-1.8 GB.
    pub huge_buffers: usize,
    /// Largest component above [`Policy::huge_buffers`] on which first fit by size still runs
    /// first, beside the start-order sweep (on the other core), and is abandoned as soon as the
    /// sweep is done and its progress says it would not finish by the deadline; above it only
    /// the sweeps and first fit around the rocks run, whatever the time limit. Default
    /// 4,000,000: its index holds about 240 bytes a buffer (833 MB at 3.5·10^6), which above
    /// that would take the planner past 1.5 GiB. On traced python3 heaps of that size (most
    /// objects live all run) it is the one heuristic that reaches the max load, where the sweep
    /// ends 3.4–3.7% above it and nothing local lowers the peak: at 2.45·10^6 buffers in 20 s
    /// of a 30 s limit; at 3.5·10^6 it needs 27.5 s alone and gives up.
    pub huge_first_fit_max_buffers: usize,
    /// What first fit around the rocks is expected to cost at least, in seconds per buffer,
    /// where it runs beside a start-order sweep that goes first (above
    /// [`Policy::huge_first_fit_max_buffers`], and on components the early windows fill): it
    /// starts only if its half of the time left gives it that much. Where the sweep ran before
    /// it, on its core, the sweep's measured time is the bound instead. The rocks are a sweep
    /// and more, so with less time they can only give up (10^7 random buffers at the default
    /// limit: 1.5 CPU seconds and 50 MB of peak memory spent for nothing). Default 10^-6: a sweep took 0.25 µs a
    /// buffer on 10^7 random buffers and 0.75 µs on a traced python3 heap of 3.5·10^6 (2-core
    /// AMD EPYC).
    pub rocks_min_seconds_per_buffer: f64,
    /// Runners-up (next best placements) kept per component as further starting points for the
    /// improvement search, which gets stuck in different places from each. Default 2.
    pub runners_up: usize,
    /// Component size up to which runners-up are kept (each is a copy of the offsets). Default
    /// 200,000.
    pub runners_up_max_buffers: usize,
    /// Components of at most this many buffers are *small*: the exact search gets most of the
    /// time and no critical windows are opened (a window would be most of the component).
    /// Default 2,000. In a nested plan the bound is higher ([`Policy::is_small`]).
    pub small_buffers: usize,
    /// Smallest component on which [`Stage::EarlyWindows`] runs. Default 50,000: from where one
    /// first-fit placement takes a sizeable part of a short budget.
    pub early_windows_min_buffers: usize,
    /// Largest component on which [`Stage::EarlyWindows`] runs. Default 400,000: above, a
    /// second copy of the component and its occupancy index cost more memory than they save
    /// time (and a fill alone takes most of a 3 s budget).
    pub early_windows_max_buffers: usize,
    /// Share of the time the critical windows may take ([`Stage::Windows`] of the time left;
    /// [`Stage::EarlyWindows`] of the whole limit). Default 0.8: on large components the windows
    /// reach the max load (10^5 random buffers: 0% where the improvement search and boxing, given
    /// the same time, end 2.4-2.7% above), and on a slow machine the first heuristic alone takes
    /// a third of a 3 s budget, so 60% of the rest did not hold the fill and window plan needed.
    pub windows_share: f64,
    /// [`Stage::Windows`] fills around its windows only if its share of the time holds this
    /// many first-fit placements (one fill, the rest to plan the windows); otherwise it runs
    /// their local form ([`crate::windows::improve_windows`]) from the best placement, where a
    /// round costs in proportion to the window. Default 1.2.
    pub windows_min_fills: f64,
    /// Seconds of time limit per buffer from which [`Stage::EarlyWindows`] also runs on a
    /// component above [`Policy::early_windows_max_buffers`] (up to [`Policy::huge_buffers`]).
    /// Default 2·10^-5 (20 s for 10^6 buffers): one first-fit placement there takes 15–30 s on
    /// 10^6 random buffers, so the heuristics leave no time for a fill after them, while
    /// beside them on the other core the windows and their fill fit in the limit.
    pub early_windows_seconds_per_buffer: f64,
    /// How far below the max load (a share of it) a stretch of time may peak and still get a
    /// critical window in the first round ([`crate::windows::WindowParams::depth`]), on the
    /// components above [`Policy::early_windows_max_buffers`], where one fill costs seconds and
    /// only one fits. Default 0.05: on 10^6 random buffers the stretches within 5% of the max
    /// load make three windows of 6,800 buffers, and the fill around them ends 1.4% above the
    /// max load where first fit by size ends 4.0% above it. (Below, 0: one window at the
    /// maximum, then one per round.)
    pub windows_depth: f64,
    /// On the same components, the largest max load (a share of the instance's) of the
    /// smallest buffers that the fill stacks above the rest instead of placing them by first
    /// fit ([`crate::windows::WindowParams::tail_load`]). Default 0.002: on 10^6 random buffers
    /// the smaller half weighs 0.07% of the load, and placing it took two thirds of first fit's
    /// time.
    pub windows_tail_load: f64,
    /// The local form runs only if the windows' share of the time is at least this many
    /// seconds. Default 2: a round takes up to half a second, and with less the improvement
    /// search gains more (traced heaps of 10^6 blocks at 3 s, where the share is below 2 s).
    /// From 2 s on, the windows gain more where first fit by size could not finish: random
    /// 10^6 at 4 and 6 s, 5.5–6.5% with the search alone, 2.5–3.2% with the windows first
    /// (generator seeds 2 and 3 the same or lower, malloc and nn 10^6 unchanged).
    pub local_windows_min_seconds: f64,
    /// Largest window, in buffers, of the local form above [`Policy::huge_buffers`] (a window
    /// holds at most twice the buffers live at its centre in any case). Default 16,000: on
    /// 10^7 random buffers, whose lifetimes span thousands of ticks, windows of 4,000 buffers
    /// were narrower than their buffers' lifetimes and left them colliding with most of their
    /// surroundings (one window kept in 37 s, 8.9%; at twice the column, seven, 7.3%).
    pub huge_window_max_buffers: usize,
    /// Above [`Policy::huge_buffers`], rounds in a row without a kept move after which the local
    /// windows hand over to the improvement search, the two then taking turns until the
    /// deadline (each gets stuck where the other still moves). Default 8: the windows' kept
    /// moves come within their first rounds, and later rounds fail on the same buffer.
    pub huge_windows_patience: usize,

    /// Buffers at or below which a flat component is left to the exact search. Default 64.
    pub flat_min_buffers: usize,
    /// Share of the time left [`Stage::Flat`] may take. Default 0.8: the other stages rarely
    /// gain a byte on a flat component (every instant is a peak, no slack anywhere).
    pub flat_share: f64,
    /// Buffers, in all the flat components in line, up to which [`Stage::Flat`] merges them side
    /// by side, one per core; above, one at a time. Default 4,000,000: a merge holds about 250
    /// bytes a buffer, and side by side the two components of tight 10^7 took 4.3 GB of peak
    /// memory against 2.9 GB one at a time.
    pub flat_side_by_side_max_buffers: usize,
    /// Seconds per buffer a flat component's time must hold for a merge to start. Default 5e-7,
    /// about a third of what one takes (1.3–1.5 µs a buffer at 5·10^5 on a 2-core AMD EPYC): a
    /// merge that cannot finish gives nothing, and its first sort cannot stop (at 10^7 buffers
    /// it ran 0.9 s past the stage's end).
    pub flat_min_seconds_per_buffer: f64,
    /// Conflicting pairs above which a component is left out of the exact search, which keeps
    /// per-buffer conflict lists (8 bytes a pair). Default 10,000,000.
    pub exact_max_conflicts: u64,
    /// Buffers above which a component is left out of the exact search: its nodes cost O(n), and
    /// each level of its recursion keeps its own list of the unplaced buffers, 2n² bytes a
    /// thread at full depth (10^4 random buffers: 368 MB on two threads). Default 6,000.
    pub exact_max_buffers: usize,
    /// Threads the exact search runs on at most (its strategies race). Default 2.
    pub exact_threads: usize,
    /// Share of the time left [`Stage::Exact`] gets when every component is small. Default 0.9:
    /// small components are where it shines and boxing rarely helps.
    pub exact_share_small: f64,
    /// Share of the time left [`Stage::Exact`] gets otherwise. Default 0.1: on large components
    /// it is a long shot, and boxing, then improving its result, pays most.
    pub exact_share_large: f64,
    /// Share of the exact stage's time left one component gets when others after it tie with
    /// its makespan (a component that decides the makespan alone gets all of it). Default 0.6.
    pub exact_tie_share: f64,
    /// Share of the time left [`Stage::Improve`] gets when every component is small. Default
    /// 0.5.
    pub improve_share_small: f64,
    /// Share of the time left [`Stage::Improve`] gets otherwise. Default 0.33: boxing passes are
    /// long there, and [`Stage::Polish`] improves boxing's result anyway.
    pub improve_share_large: f64,
    /// [`Stage::Improve`] (and [`Stage::Polish`]) start on a component only with more time
    /// left than this many times its start-order sweep took: a search first builds its index
    /// of the component, about as costly as the sweep and not interruptible. Default 2: at
    /// least as long to search as to build.
    pub improve_min_sweeps: f64,
    /// [`Stage::Split`]'s large part: at most this share of the component's buffers (the
    /// largest, never part of a size class). Default 0.2: on log-uniform sizes the largest
    /// fifth holds 94% of the bytes, with about a fifth as many buffers live at an instant.
    pub split_max_share: f64,
    /// [`Stage::Split`] runs only where the buffers outside its large part hold at most this
    /// share of the area (size × lifetime). Default 0.2: what they hold is placed by a sweep
    /// and tends to end on top of the large part's plan. Measured at 30 s: `aligned` 10^6
    /// (the rest 13% of the area) 7.95 / 7.19 / 3.70% without the split and 5.13 / 5.10 /
    /// 0.27% with it (generator seeds 1–3), 3·10^6 5.44% → 1.66%; `nn` 10^6 (the rest 29% on
    /// generator seed 1) ends 1.81% by the split against 0.21% by the chases; its seed 3 (13%)
    /// now splits, and the peak's chase still wins there (0.08% either way).
    pub split_max_rest_area: f64,
    /// ... and at least this share. Default 0.001: where the rest holds next to nothing (a
    /// malloc-like heap whose many tiny objects hold 0.01–0.03% of the area), the chases of
    /// the whole component fill it as cheaply (their fills stack the smallest buffers by a
    /// sweep, [`Policy::windows_tail_load`]) and planned better there (malloc 10^6 at 30 s:
    /// 0.02% against 0.1–0.15% with the split). Sizes spread over 40 binary orders (`ratio`,
    /// the rest 0.34%) are not such a heap: at 10^6 and 30 s the chases ended 0.04–2.72%
    /// above the max load, the split 0–0.02% (generator seeds 1–3).
    pub split_min_rest_area: f64,
    /// Smallest component on which [`Stage::Split`] runs after the heuristics (where the
    /// deep chase does not run it, see [`Policy::early_windows_seconds_per_buffer`]), in
    /// place of the early windows. Default 50,000 (as [`Policy::early_windows_min_buffers`]):
    /// random 10^5 at 3 s, generator seeds 1–8, the early windows 0–4.1% above the max load,
    /// the split 0–0.28%; random 3·10^5 5.38% → 0.012%, random 10^6 at 10 s 2.5–10.5% →
    /// 0.017–5.0%.
    pub split_min_buffers: usize,
    /// [`Stage::Split`] runs after the heuristics only where the time limit gives it at least
    /// this many seconds a buffer. Default 4·10^-6 (40 s at 10^7 buffers, 12 s at 3·10^6,
    /// 0.4 s at 10^5), where it still finishes and wins: random 10^7 at 40 s 2.81% against
    /// 6.02%, 3·10^6 at 12 s 5.91% against 9.16%, 2.2·10^6 at 9 s 4.42% against 7.12%; at
    /// 2·10^-6 its sweep did not finish in time (10^7 at 20 s, 3·10^6 at 6 s).
    pub split_seconds_per_buffer: f64,
    /// [`Stage::Split`] after the heuristics: the time kept for the sweep around the
    /// large part, in start-order sweeps of the component (its measured `sweep_seconds`); the
    /// large part is planned until then at the latest, and the split does not start where this
    /// leaves it less than a third of the time left. Default 8: with 16 choices the sweep took
    /// 5.5–7 start-order sweeps on random and `ratio` 10^7 (11–14 s against 2.0–2.2 s).
    pub split_rest_sweeps: f64,
    /// [`Stage::Split`]: the share of the time left when it starts that its large part is planned
    /// in (after the heuristics, no later than [`Policy::split_rest_sweeps`] leaves);
    /// the rest is for the sweep around it and the stages after. Default 0.7.
    pub split_share: f64,
    /// [`Stage::Split`]: each buffer outside the large part goes to the place, of its first
    /// this many where it fits, whose hole closes soonest after its end
    /// ([`crate::free_until::LabelMap::tightest`]); 1 is first fit. Default 16: the holes
    /// that stay free longer are left to longer buffers.
    pub split_rest_choices: usize,
    /// Share of the time left [`Stage::Boxing`] gets; the rest is kept for [`Stage::Polish`].
    /// Default 0.8.
    pub boxing_share: f64,
    /// Share of the boxing time left each component gets in boxing's first round (the last in
    /// line gets all of it). Default 0.6.
    pub boxing_component_share: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            trivial: true,
            early_windows: true,
            split: true,
            flat: true,
            windows: true,
            exact: true,
            improve: true,
            boxing: true,
            polish: true,
            heuristics_share: 0.25,
            heuristics_cutoff_share: 0.4,
            huge_buffers: 2_000_000,
            huge_first_fit_max_buffers: 4_000_000,
            rocks_min_seconds_per_buffer: 1e-6,
            runners_up: 2,
            runners_up_max_buffers: 200_000,
            small_buffers: 2_000,
            early_windows_min_buffers: 50_000,
            early_windows_max_buffers: 400_000,
            windows_share: 0.8,
            windows_min_fills: 1.2,
            early_windows_seconds_per_buffer: 2e-5,
            windows_depth: 0.05,
            windows_tail_load: 0.002,
            local_windows_min_seconds: 2.0,
            huge_window_max_buffers: 16_000,
            huge_windows_patience: 8,
            flat_min_buffers: 64,
            flat_share: 0.8,
            flat_side_by_side_max_buffers: 4_000_000,
            flat_min_seconds_per_buffer: 5e-7,
            exact_max_conflicts: 10_000_000,
            exact_max_buffers: 6_000,
            exact_threads: 2,
            exact_share_small: 0.9,
            exact_share_large: 0.1,
            exact_tie_share: 0.6,
            improve_share_small: 0.5,
            improve_share_large: 0.33,
            improve_min_sweeps: 2.0,
            split_max_share: 0.2,
            split_max_rest_area: 0.2,
            split_min_rest_area: 0.001,
            split_share: 0.7,
            split_rest_choices: 16,
            split_rest_sweeps: 8.0,
            split_min_buffers: 50_000,
            split_seconds_per_buffer: 4e-6,
            boxing_share: 0.8,
            boxing_component_share: 0.6,
        }
    }
}

impl Policy {
    /// Whether a component of `n` buffers is above [`Policy::huge_buffers`], where the
    /// driver's cheaper paths take over.
    pub fn is_huge(&self, n: usize) -> bool {
        n > self.huge_buffers
    }

    /// Whether a plan whose largest component has `n` buffers is *small*: the exact search gets
    /// [`Policy::exact_share_small`] of the time and no critical windows open. At the top level
    /// that is up to [`Policy::small_buffers`]; in a nested plan (a critical window's buffers, a
    /// flat component's blocks) up to what the exact search takes ([`Policy::exact_max_buffers`]),
    /// since no windows open there anyway and a window's buffers, clipped to it, are dense
    /// (every instant near the load), which the exact search packs and the greedy stages do not:
    /// the peak window of random 10^6 (2,085 buffers), planned in its 2.8 s, ended 0.69% above
    /// the max load with the exact search's large share and at it with the small one.
    pub fn is_small(&self, n: usize, nested: bool) -> bool {
        n <= if nested { self.small_buffers.max(self.exact_max_buffers) } else { self.small_buffers }
    }

    /// Whether `stage` is switched on.
    pub fn runs(&self, stage: Stage) -> bool {
        *self.switch(stage)
    }

    /// Switches `stage` on or off.
    pub fn set_stage(&mut self, stage: Stage, on: bool) {
        *self.switch_mut(stage) = on;
    }

    fn switch(&self, stage: Stage) -> &bool {
        match stage {
            Stage::Trivial => &self.trivial,
            Stage::Split => &self.split,
            Stage::EarlyWindows => &self.early_windows,
            Stage::Flat => &self.flat,
            Stage::Windows => &self.windows,
            Stage::Exact => &self.exact,
            Stage::Improve => &self.improve,
            Stage::Boxing => &self.boxing,
            Stage::Polish => &self.polish,
        }
    }

    fn switch_mut(&mut self, stage: Stage) -> &mut bool {
        match stage {
            Stage::Trivial => &mut self.trivial,
            Stage::Split => &mut self.split,
            Stage::EarlyWindows => &mut self.early_windows,
            Stage::Flat => &mut self.flat,
            Stage::Windows => &mut self.windows,
            Stage::Exact => &mut self.exact,
            Stage::Improve => &mut self.improve,
            Stage::Boxing => &mut self.boxing,
            Stage::Polish => &mut self.polish,
        }
    }

    /// The names [`Policy::set`] takes (the numeric fields, as named in the code).
    pub const KEYS: &'static str = "heuristics_share, heuristics_cutoff_share, huge_buffers, huge_first_fit_max_buffers, rocks_min_seconds_per_buffer, runners_up, \
runners_up_max_buffers, small_buffers, early_windows_min_buffers, early_windows_max_buffers, windows_share, \
windows_min_fills, early_windows_seconds_per_buffer, windows_depth, windows_tail_load, local_windows_min_seconds, huge_window_max_buffers, huge_windows_patience, flat_min_buffers, flat_share, flat_side_by_side_max_buffers, flat_min_seconds_per_buffer, exact_max_conflicts, exact_max_buffers, exact_threads, \
exact_share_small, exact_share_large, exact_tie_share, improve_share_small, improve_share_large, improve_min_sweeps, split_max_share, split_max_rest_area, split_min_rest_area, split_share, split_rest_choices, split_rest_sweeps, split_min_buffers, split_seconds_per_buffer, \
boxing_share, boxing_component_share";

    /// Sets the numeric field `key` (see [`Policy::KEYS`]) from `value`; a share must lie in
    /// `[0, 1]`. The error says what was wrong.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn share(v: &str) -> Result<f64, String> {
            match v.parse::<f64>() {
                Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
                _ => Err(format!("{v}: expected a share between 0 and 1")),
            }
        }
        fn non_negative(v: &str) -> Result<f64, String> {
            v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| format!("{v}: expected a non-negative number"))
        }
        fn count<T: std::str::FromStr>(v: &str) -> Result<T, String> {
            v.replace('_', "").parse().map_err(|_| format!("{v}: expected a whole number"))
        }
        match key {
            "heuristics_share" => self.heuristics_share = share(value)?,
            "heuristics_cutoff_share" => self.heuristics_cutoff_share = share(value)?,
            "huge_buffers" => self.huge_buffers = count(value)?,
            "huge_first_fit_max_buffers" => self.huge_first_fit_max_buffers = count(value)?,
            "rocks_min_seconds_per_buffer" => self.rocks_min_seconds_per_buffer = non_negative(value)?,
            "runners_up" => self.runners_up = count(value)?,
            "runners_up_max_buffers" => self.runners_up_max_buffers = count(value)?,
            "small_buffers" => self.small_buffers = count(value)?,
            "early_windows_min_buffers" => self.early_windows_min_buffers = count(value)?,
            "early_windows_max_buffers" => self.early_windows_max_buffers = count(value)?,
            "windows_share" => self.windows_share = share(value)?,
            "windows_min_fills" => self.windows_min_fills = non_negative(value)?,
            "early_windows_seconds_per_buffer" => self.early_windows_seconds_per_buffer = non_negative(value)?,
            "windows_depth" => self.windows_depth = share(value)?,
            "windows_tail_load" => self.windows_tail_load = share(value)?,
            "local_windows_min_seconds" => self.local_windows_min_seconds = non_negative(value)?,
            "huge_window_max_buffers" => self.huge_window_max_buffers = count(value)?,
            "huge_windows_patience" => self.huge_windows_patience = count(value)?,
            "flat_min_buffers" => self.flat_min_buffers = count(value)?,
            "flat_side_by_side_max_buffers" => self.flat_side_by_side_max_buffers = count(value)?,
            "flat_min_seconds_per_buffer" => self.flat_min_seconds_per_buffer = non_negative(value)?,
            "flat_share" => self.flat_share = share(value)?,
            "exact_max_conflicts" => self.exact_max_conflicts = count(value)?,
            "exact_max_buffers" => self.exact_max_buffers = count(value)?,
            "exact_threads" => {
                self.exact_threads = count(value)?;
                if self.exact_threads == 0 {
                    return Err("0: expected at least 1 thread".into());
                }
            }
            "exact_share_small" => self.exact_share_small = share(value)?,
            "exact_share_large" => self.exact_share_large = share(value)?,
            "exact_tie_share" => self.exact_tie_share = share(value)?,
            "improve_share_small" => self.improve_share_small = share(value)?,
            "improve_share_large" => self.improve_share_large = share(value)?,
            "improve_min_sweeps" => self.improve_min_sweeps = non_negative(value)?,
            "split_max_share" => self.split_max_share = share(value)?,
            "split_max_rest_area" => self.split_max_rest_area = share(value)?,
            "split_min_rest_area" => self.split_min_rest_area = share(value)?,
            "split_share" => self.split_share = share(value)?,
            "split_rest_choices" => {
                self.split_rest_choices = count(value)?;
                if self.split_rest_choices == 0 {
                    return Err("0: expected at least 1 place".into());
                }
            }
            "split_min_buffers" => self.split_min_buffers = count(value)?,
            "split_seconds_per_buffer" => self.split_seconds_per_buffer = non_negative(value)?,
            "split_rest_sweeps" => self.split_rest_sweeps = non_negative(value)?,
            "boxing_share" => self.boxing_share = share(value)?,
            "boxing_component_share" => self.boxing_component_share = share(value)?,
            _ => return Err(format!("unknown key {key}; expected one of {}", Policy::KEYS)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default is the portfolio as tuned before the policy was pulled out of the driver:
    /// these are the figures that were inline there, so a changed default shows up here first.
    #[test]
    fn default_policy_is_the_tuned_portfolio() {
        let p = Policy::default();
        assert!(Stage::ALL.iter().all(|&s| p.runs(s)), "every stage on");
        assert_eq!((p.heuristics_share, p.heuristics_cutoff_share), (0.25, 0.4)); // time_limit / 4, * 2 / 5
        assert_eq!((p.huge_buffers, p.small_buffers), (2_000_000, 2_000));
        assert!(p.is_small(2_000, false) && !p.is_small(2_001, false));
        assert!(p.is_small(6_000, true) && !p.is_small(6_001, true)); // nested: what the exact search takes
        assert_eq!((p.huge_first_fit_max_buffers, p.rocks_min_seconds_per_buffer), (4_000_000, 1e-6));
        assert_eq!((p.runners_up, p.runners_up_max_buffers), (2, 200_000));
        assert_eq!((p.early_windows_min_buffers, p.early_windows_max_buffers), (50_000, 400_000));
        assert_eq!((p.windows_share, p.windows_min_fills, p.local_windows_min_seconds), (0.8, 1.2, 2.0));
        assert_eq!((p.early_windows_seconds_per_buffer, p.windows_depth, p.windows_tail_load), (2e-5, 0.05, 0.002));
        assert_eq!((p.huge_window_max_buffers, p.huge_windows_patience), (16_000, 8));
        assert_eq!((p.flat_min_buffers, p.flat_share), (64, 0.8));
        assert_eq!((p.flat_side_by_side_max_buffers, p.flat_min_seconds_per_buffer), (4_000_000, 5e-7));
        assert_eq!((p.exact_max_conflicts, p.exact_max_buffers, p.exact_threads), (10_000_000, 6_000, 2));
        assert_eq!((p.exact_share_small, p.exact_share_large, p.exact_tie_share), (0.9, 0.1, 0.6));
        assert_eq!((p.improve_share_small, p.improve_share_large, p.improve_min_sweeps), (0.5, 0.33, 2.0));
        assert_eq!((p.boxing_share, p.boxing_component_share), (0.8, 0.6));
        assert_eq!((p.split_max_share, p.split_min_rest_area, p.split_max_rest_area, p.split_share, p.split_seconds_per_buffer), (0.2, 0.001, 0.2, 0.7, 4e-6));
        assert_eq!((p.split_rest_choices, p.split_rest_sweeps, p.split_min_buffers), (16, 8.0, 50_000));
    }

    #[test]
    fn stages_round_trip_by_name_and_switch_alone() {
        for s in Stage::ALL {
            assert_eq!(Stage::parse(s.name()), Some(s));
            let mut p = Policy::default();
            p.set_stage(s, false);
            assert!(!p.runs(s));
            assert!(Stage::ALL.iter().filter(|&&t| t != s).all(|&t| p.runs(t)), "{} switches only itself", s.name());
        }
        assert_eq!(Stage::parse("heuristics"), None);
    }

    #[test]
    fn every_key_is_settable_and_bad_values_are_refused() {
        let mut p = Policy::default();
        for key in Policy::KEYS.split(", ") {
            assert_eq!(p.set(key, "1"), Ok(()), "{key}");
        }
        assert_eq!(p.small_buffers, 1);
        assert_eq!(p.exact_share_small, 1.0);
        p.set("huge_buffers", "3_000_000").unwrap();
        assert_eq!(p.huge_buffers, 3_000_000);
        assert!(p.set("boxing_share", "1.5").is_err());
        assert!(p.set("small_buffers", "-3").is_err());
        assert!(p.set("exact_threads", "0").is_err());
        assert!(p.set("no_such_key", "1").unwrap_err().contains("unknown key"));
    }
}
