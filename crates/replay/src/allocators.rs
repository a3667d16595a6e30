//! Allocators by name: the Debian-packaged ones heaplab knows (glibc, jemalloc, mimalloc,
//! tcmalloc) and any other given as a path to a shared library that defines malloc. Selecting
//! one yields what to put in `LD_PRELOAD` (nothing for glibc, the system's own).

use std::path::{Path, PathBuf};

/// A known allocator: its name, the library file Debian installs, and the package.
pub struct Known {
    /// The name users select it by.
    pub name: &'static str,
    /// The library's file name in the multiarch directory (empty for glibc).
    pub file: &'static str,
    /// The Debian package that installs it.
    pub package: &'static str,
}

/// Allocators selectable by name.
pub const KNOWN: [Known; 4] = [
    Known { name: "glibc", file: "", package: "libc6" },
    Known { name: "jemalloc", file: "libjemalloc.so.2", package: "libjemalloc2" },
    Known { name: "mimalloc", file: "libmimalloc.so.2", package: "libmimalloc2.0" },
    Known { name: "tcmalloc", file: "libtcmalloc_minimal.so.4", package: "libtcmalloc-minimal4" },
];

/// Directories searched for the known allocators' libraries.
const LIB_DIRS: [&str; 5] = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"];

/// An allocator ready to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocator {
    /// The name shown in reports: the known name, or the library's file name.
    pub name: String,
    /// The library to preload; `None` for glibc.
    pub library: Option<PathBuf>,
}

impl Allocator {
    /// The value for `LD_PRELOAD` (empty for glibc).
    pub fn preload(&self) -> String {
        self.library.as_ref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// Why an allocator cannot be used; every one is a usage error (exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocatorError(pub String);

impl std::fmt::Display for AllocatorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The names of the known allocators, comma-separated, for messages and help.
pub fn known_names() -> String {
    KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

/// Checks that `path` is a readable ELF shared object.
fn check_library(path: &Path, shown: &str) -> Result<(), AllocatorError> {
    use std::io::Read;
    let mut head = [0u8; 18];
    let mut f = std::fs::File::open(path).map_err(|e| AllocatorError(format!("{shown}: cannot open the allocator library: {e}")))?;
    if f.read_exact(&mut head).is_err() || &head[..4] != b"\x7fELF" {
        return Err(AllocatorError(format!("{shown}: not a shared library (no ELF header)")));
    }
    let e_type = if head[5] == 2 { u16::from_be_bytes([head[16], head[17]]) } else { u16::from_le_bytes([head[16], head[17]]) };
    if e_type != 3 {
        return Err(AllocatorError(format!("{shown}: an ELF file but not a shared library (type {e_type})")));
    }
    Ok(())
}

/// Resolves an allocator by name (`glibc`, `jemalloc`, `mimalloc`, `tcmalloc`) or by a path to
/// a shared library (anything containing a `/` or ending in `.so…`).
pub fn resolve(spec: &str) -> Result<Allocator, AllocatorError> {
    let spec = spec.trim();
    if spec.contains('/') || spec.contains(".so") {
        let path = PathBuf::from(spec);
        if !path.is_file() {
            return Err(AllocatorError(format!("{spec}: no such allocator library (give a path to a .so, or one of {})", known_names())));
        }
        check_library(&path, spec)?;
        let abs = std::fs::canonicalize(&path).map_err(|e| AllocatorError(format!("{spec}: {e}")))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| spec.to_string());
        return Ok(Allocator { name, library: Some(abs) });
    }
    let known = KNOWN
        .iter()
        .find(|k| k.name.eq_ignore_ascii_case(spec))
        .ok_or_else(|| AllocatorError(format!("unknown allocator '{spec}': expected one of {} or a path to a shared library", known_names())))?;
    if known.file.is_empty() {
        return Ok(Allocator { name: known.name.to_string(), library: None });
    }
    let found = LIB_DIRS.iter().map(|d| Path::new(d).join(known.file)).find(|p| p.is_file()).ok_or_else(|| {
        AllocatorError(format!("{}: {} is not installed (apt-get install -y {})", known.name, known.file, known.package))
    })?;
    check_library(&found, &found.to_string_lossy())?;
    Ok(Allocator { name: known.name.to_string(), library: Some(found) })
}

/// Resolves a comma-separated list, rejecting duplicates.
pub fn resolve_list(list: &str) -> Result<Vec<Allocator>, AllocatorError> {
    let mut out: Vec<Allocator> = Vec::new();
    for spec in list.split(',').filter(|s| !s.trim().is_empty()) {
        let a = resolve(spec)?;
        if out.iter().any(|o| o.name == a.name) {
            return Err(AllocatorError(format!("allocator '{}' is listed twice", a.name)));
        }
        out.push(a);
    }
    if out.is_empty() {
        return Err(AllocatorError(format!("no allocator given: expected a comma-separated list of {} or library paths", known_names())));
    }
    Ok(out)
}
