//! Running a program under the heaplab valgrind tool: finding valgrind and the program,
//! installing the tool, passing the options, and bringing the profile into place once the
//! program has ended (read back first, so a bad or missing profile is an error, never a file).
//!
//! The program's standard streams are its own; valgrind's messages (a crash's stack, its own
//! errors) go to standard error.

use crate::format::{read, FormatError};
use crate::AccessProfile;
use heaplab_trace::launch::{describe_status, find_program};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// HALO's affinity distance (bytes of distinct accesses), the one its evaluation settled on.
pub const DEFAULT_AFFINITY: u64 = 128;
/// The largest affinity distance the tool accepts (its queue holds one entry per byte).
pub const MAX_AFFINITY: u64 = 1 << 20;
/// The most frames a context can have.
pub const MAX_STACK_DEPTH: u32 = 64;
/// Edges each graph holds at most (the memory bound; see `docs`): about 100 MiB per graph.
pub const DEFAULT_MAX_EDGES: u64 = 1 << 22;
/// HALO's maximum grouped object size: larger blocks form no context edges.
pub const DEFAULT_MAX_GROUPED: u64 = 4096;
/// The largest maximum grouped size the tool takes.
pub const MAX_GROUPED_LIMIT: u64 = 1 << 40;
/// The most context modules (the executable included).
pub const MAX_CONTEXT_MODULES: usize = 32;

/// Which affinity graphs the tool builds from its queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Graph {
    /// The co-access graph between blocks (for layouts).
    Blocks,
    /// HALO's affinity graph between full contexts (for grouping); needs full contexts.
    Contexts,
    /// Both.
    Both,
    /// Neither (blocks, counts and friends only).
    None,
}

impl Graph {
    /// The name the tool takes (`--hl-graph`).
    pub fn name(self) -> &'static str {
        match self {
            Graph::Blocks => "blocks",
            Graph::Contexts => "contexts",
            Graph::Both => "both",
            Graph::None => "none",
        }
    }

    /// Whether the context graph is built.
    pub fn contexts(self) -> bool {
        matches!(self, Graph::Contexts | Graph::Both)
    }
}

/// How to profile a run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Frames per allocation context (1 = the return address into the program).
    pub stack_depth: u32,
    /// The co-access window, bytes of distinct accesses.
    pub affinity_distance: u64,
    /// Edges each graph holds at most before its lightest are dropped.
    pub max_edges: u64,
    /// Whether full contexts (HALO's reduced call stacks) are recorded.
    pub full_contexts: bool,
    /// File names of modules whose frames count in full contexts besides the executable's.
    pub context_modules: Vec<String>,
    /// The graphs built.
    pub graph: Graph,
    /// Blocks larger than this form no context edges.
    pub max_grouped_size: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            stack_depth: 1,
            affinity_distance: DEFAULT_AFFINITY,
            max_edges: DEFAULT_MAX_EDGES,
            full_contexts: false,
            context_modules: Vec::new(),
            graph: Graph::Blocks,
            max_grouped_size: DEFAULT_MAX_GROUPED,
        }
    }
}

/// The context modules of a run of `program` (its path as found): the executable's file name
/// as valgrind maps it (symbolic links resolved), then `extra` without repeats.
fn context_modules(program: &Path, extra: &[String]) -> Result<Vec<String>, RunError> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let exe = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut out = vec![exe];
    for m in extra {
        if m.is_empty() || m.contains('/') || m.contains('\0') {
            return Err(RunError::Usage(format!("context module {m:?}: expected a file name such as libfoo.so.1 (no folder)")));
        }
        if !out.contains(m) {
            out.push(m.clone());
        }
    }
    if out.len() > MAX_CONTEXT_MODULES {
        return Err(RunError::Usage(format!("{} context modules: at most {MAX_CONTEXT_MODULES}, the executable included", out.len())));
    }
    Ok(out)
}

/// A profiled run.
#[derive(Debug)]
pub struct Profiled {
    /// How the program ended (valgrind passes on its exit status or its fatal signal).
    pub status: ExitStatus,
    /// Wall time of the run under valgrind.
    pub wall: Duration,
    /// The profile, as written to the output.
    pub profile: AccessProfile,
    /// The program's `#!` line (without `#!`) when it is a script: the profile is then its
    /// interpreter's, and a program the script starts is not in it.
    pub script: Option<String>,
}

/// The `#!` line of `path` (what follows `#!`, trimmed, at most 120 characters) when it is a
/// script; `None` for anything else, or a file that cannot be read.
pub fn script_interpreter(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&c| c == b'\n').next().unwrap_or_default();
    Some(String::from_utf8_lossy(line).trim().chars().take(120).collect())
}

/// Why a run could not be profiled.
#[derive(Debug)]
pub enum RunError {
    /// Valgrind (or its tool libraries at build time) is missing: what to install.
    NoValgrind(String),
    /// The program is neither an executable file nor in PATH.
    NotFound(String),
    /// Bad options or an output that cannot be written.
    Usage(String),
    /// The tool could not be installed in the cache folder.
    Install(std::io::Error),
    /// Valgrind could not be started.
    Start(std::io::Error),
    /// The run ended without a profile (the message says how it ended and why that may be).
    NoProfile(String),
    /// The tool wrote a profile that does not read back (a bug).
    Profile(FormatError),
}

impl RunError {
    /// Whose fault it is: a tool that cannot be installed or writes a bad profile is the work
    /// failing; the rest is the program, the options or the system the caller named.
    pub fn class(&self) -> heaplab_model::ErrorClass {
        match self {
            RunError::Install(_) | RunError::Profile(_) => heaplab_model::ErrorClass::WorkFailed,
            _ => heaplab_model::ErrorClass::BadInput,
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::NoValgrind(m) | RunError::Usage(m) | RunError::NoProfile(m) => f.write_str(m),
            RunError::NotFound(p) => write!(f, "{p}: program not found (not an executable file, nor in PATH)"),
            RunError::Install(e) => write!(f, "cannot install the valgrind tool: {e}"),
            RunError::Start(e) => write!(f, "cannot start valgrind: {e}"),
            RunError::Profile(e) => write!(f, "the tool wrote a profile heaplab cannot read: {e}"),
        }
    }
}

/// Whether profiling can work here: `Err` says what to install.
pub fn available() -> Result<PathBuf, RunError> {
    if !crate::tool::built() {
        return Err(RunError::NoValgrind(
            "this heaplab was built without valgrind's tool libraries: apt-get install valgrind, then rebuild heaplab".into(),
        ));
    }
    let valgrind = find_program("valgrind").ok_or_else(|| RunError::NoValgrind("valgrind not found in PATH: apt-get install valgrind".into()))?;
    if !Path::new(crate::tool::SYSTEM_LIB).is_dir() {
        return Err(RunError::NoValgrind(format!("{} not found (valgrind's core files): apt-get install valgrind", crate::tool::SYSTEM_LIB)));
    }
    Ok(valgrind)
}

/// Runs `command` under the tool and writes its profile to `output` (absolute): the tool writes
/// a temporary file beside it, renamed into place once it reads back, so an existing `output`
/// is left alone by a run that fails. A program that crashes still has its profile (valgrind
/// ends the tool before it dies); one that replaces itself with exec has none.
pub fn run(command: &[String], output: &Path, opts: &RunOptions) -> Result<Profiled, RunError> {
    if !(1..=MAX_STACK_DEPTH).contains(&opts.stack_depth) {
        return Err(RunError::Usage(format!("stack depth {}: expected 1 to {MAX_STACK_DEPTH}", opts.stack_depth)));
    }
    if !(1..=MAX_AFFINITY).contains(&opts.affinity_distance) {
        return Err(RunError::Usage(format!("affinity distance {}: expected 1 to {MAX_AFFINITY} bytes", opts.affinity_distance)));
    }
    if !(1..=MAX_GROUPED_LIMIT).contains(&opts.max_grouped_size) {
        return Err(RunError::Usage(format!("maximum grouped size {}: expected 1 to {MAX_GROUPED_LIMIT} bytes", opts.max_grouped_size)));
    }
    if opts.graph.contexts() && !opts.full_contexts {
        return Err(RunError::Usage("a context graph needs full contexts (--contexts)".into()));
    }
    let valgrind = available()?;
    let program = command.first().ok_or_else(|| RunError::Usage("no program to profile".into()))?;
    let resolved = find_program(program).ok_or_else(|| RunError::NotFound(program.clone()))?;
    let modules = if opts.full_contexts { context_modules(&resolved, &opts.context_modules)? } else { Vec::new() };
    let lib = crate::tool::install(Path::new(crate::tool::SYSTEM_LIB)).map_err(RunError::Install)?;
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = output.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut cmd = Command::new(valgrind);
    cmd.env("VALGRIND_LIB", &lib)
        .arg(format!("--tool={}", crate::tool::NAME))
        .arg("-q")
        .arg(format!("--hl-out={}", tmp.display()))
        .arg(format!("--hl-depth={}", opts.stack_depth))
        .arg(format!("--hl-affinity={}", opts.affinity_distance))
        .arg(format!("--hl-max-edges={}", opts.max_edges))
        .arg(format!("--hl-graph={}", opts.graph.name()))
        .arg(format!("--hl-max-grouped={}", opts.max_grouped_size))
        .args(modules.iter().map(|m| format!("--hl-module={m}")))
        .arg(&resolved)
        .args(&command[1..]);
    // SAFETY: the closure runs in the child between fork and exec and only makes a raw syscall.
    unsafe {
        cmd.pre_exec(|| {
            // Not outlived unnoticed: if heaplab dies, the profiled program is ended.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let t0 = Instant::now();
    let status = cmd.status().map_err(RunError::Start)?;
    let wall = t0.elapsed();
    let written = std::fs::metadata(&tmp).map(|m| m.len() > 0).unwrap_or(false);
    let script = script_interpreter(&resolved);
    if !written {
        let _ = std::fs::remove_file(&tmp);
        // A wrapper script that ends by exec'ing the program it wraps (a pyenv shim, a
        // launcher) is the common case: say so, and what to give instead.
        let why = match &script {
            Some(line) => format!(
                "{program} is a script ({} starts with #!{line}) and most likely ended by exec'ing the program it wraps; \
                 heaplab access profiles the first program image only (here the script's interpreter): give the program itself \
                 (for a pyenv shim, the path `pyenv which {}` prints)",
                resolved.display(),
                Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ),
            None => "valgrind could not run it (see its messages above), or it replaced itself with exec \
                     (heaplab access profiles the first program image only)"
                .to_string(),
        };
        return Err(RunError::NoProfile(format!("{program} {} under valgrind, but no profile was written: {why}", describe_status(&status))));
    }
    let profile = match read(&tmp) {
        Ok(p) => p,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(RunError::Profile(e));
        }
    };
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        RunError::Usage(format!("{}: cannot move the profile into place: {e}", output.display()))
    })?;
    Ok(Profiled { status, wall, profile, script })
}
