//! The report's directory: checked before any workload runs (so a bad output directory costs
//! nothing), built as a temporary sibling, and renamed into place only when complete. An
//! existing directory is replaced only if it holds a previous report (or nothing). The study's
//! scratch directory (traces, standard error, the suite's inputs) lives here too: both are
//! removed when dropped unless the report was installed. Several studies may run at once in
//! one process (one workload per task on a threaded worker): each gets its own directories.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers the directories one process creates, so that concurrent studies never share one.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// "PID-K", unique within this process and, with the process id, on this machine.
fn unique() -> String {
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Why the report cannot go where it was asked to.
#[derive(Debug)]
pub enum OutDirError {
    /// The directory name is empty.
    EmptyName,
    /// It exists and is neither a previous report nor an empty directory.
    NotAReport(PathBuf),
    /// Its parent does not exist (`exists: false`) or is not a directory.
    BadParent {
        /// The parent directory.
        parent: PathBuf,
        /// Whether something of that name exists.
        exists: bool,
    },
    /// The temporary sibling cannot be created in the parent.
    CannotWrite {
        /// The parent directory.
        parent: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl OutDirError {
    /// The message for a front end that took the directory `output` from its option `flag`
    /// (the CLI's `-o`, the Python binding's `output`).
    pub fn message(&self, flag: &str, output: &str) -> String {
        match self {
            OutDirError::EmptyName => format!("{flag}: empty directory name"),
            OutDirError::NotAReport(t) => format!("{}: exists and is not a previous heaplab report; choose another directory", t.display()),
            OutDirError::BadParent { parent, exists } => {
                format!("{flag} {output}: {} {}", parent.display(), if *exists { "is not a directory" } else { "does not exist" })
            }
            OutDirError::CannotWrite { parent, source } => format!("{flag} {output}: cannot write the report in {}: {source}", parent.display()),
        }
    }
}

/// A report directory being built: files go into [`Staging::dir`], and [`Staging::install`]
/// puts it at the target. Dropped without being installed, the temporary directory is removed.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    target: PathBuf,
    installed: bool,
}

impl Staging {
    /// Checks `output` (trailing slashes ignored) and creates the temporary directory beside it.
    /// Creating it is the writability check: a read-only parent is found before any work.
    pub fn create(output: &str) -> Result<Staging, OutDirError> {
        let target = PathBuf::from(output.trim_end_matches('/'));
        if target.as_os_str().is_empty() {
            return Err(OutDirError::EmptyName);
        }
        // A previous report: a study's or compare's (results.json) or a heap report (report.json).
        let previous = target.join("results.json").is_file() || target.join("report.json").is_file();
        if target.exists() && !(target.is_dir() && (previous || std::fs::read_dir(&target).is_ok_and(|mut d| d.next().is_none()))) {
            return Err(OutDirError::NotAReport(target));
        }
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        if !parent.is_dir() {
            return Err(OutDirError::BadParent { exists: parent.exists(), parent });
        }
        let dir = parent.join(format!(".{}.tmp{}", file_name(&target), unique()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|source| OutDirError::CannotWrite { parent, source })?;
        Ok(Staging { dir, target, installed: false })
    }

    /// The temporary directory the report is written into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the subdirectory `name` of the report (e.g. `placed`).
    pub fn subdir(&self, name: &str) -> Result<PathBuf, CreateDirError> {
        create_dir_all(self.dir.join(name))
    }

    /// Where the report will be.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Puts the report at the target, replacing a previous one: the old directory is moved
    /// aside first and restored if the rename fails, so the target never holds half a report.
    pub fn install(mut self) -> std::io::Result<()> {
        let (tmp, target) = (&self.dir, &self.target);
        if target.exists() {
            let old = target.with_file_name(format!(".{}.old{}", file_name(target), std::process::id()));
            std::fs::rename(target, &old)?;
            if let Err(e) = std::fs::rename(tmp, target) {
                let _ = std::fs::rename(&old, target);
                return Err(e);
            }
            let _ = std::fs::remove_dir_all(&old);
        } else {
            std::fs::rename(tmp, target)?;
        }
        self.installed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.installed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A directory that could not be created.
#[derive(Debug)]
pub struct CreateDirError {
    /// The directory.
    pub dir: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

impl std::fmt::Display for CreateDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: cannot create: {}", self.dir.display(), self.source)
    }
}

impl std::error::Error for CreateDirError {}

fn create_dir_all(dir: PathBuf) -> Result<PathBuf, CreateDirError> {
    match std::fs::create_dir_all(&dir) {
        Ok(()) => Ok(dir),
        Err(source) => Err(CreateDirError { dir, source }),
    }
}

/// The study's scratch directory (`heaplab-study-PID-K` in the temporary directory), removed
/// when dropped: the traces are large and only the report is kept.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// Creates it, emptied of anything a previous process with the same id left.
    pub fn create() -> Result<Scratch, CreateDirError> {
        let dir = std::env::temp_dir().join(format!("heaplab-study-{}", unique()));
        let _ = std::fs::remove_dir_all(&dir);
        Ok(Scratch { dir: create_dir_all(dir)? })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates its subdirectory `name` (e.g. `inputs`).
    pub fn subdir(&self, name: &str) -> Result<PathBuf, CreateDirError> {
        create_dir_all(self.dir.join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The last component of `p`, or "" for none.
fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
