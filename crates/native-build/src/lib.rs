//! The one way heaplab's build scripts compile C: the LD_PRELOAD tracer (heaplab-trace), the
//! replay child (heaplab-replay) and the run launcher (heaplab-study) are all built by
//! [`CBuild`] into OUT_DIR and embedded with `include_bytes!`, so the `heaplab` binary carries
//! them and works from any directory on a fresh clone. [`CHeader`] writes headers generated
//! from Rust constants, so C and Rust share one source of truth.
//!
//! It calls the system C compiler (`$CC`, else `cc`) directly instead of using the `cc` crate:
//! the outputs are whole programs and shared libraries, not static archives linked into Rust.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Flags every heaplab C artefact is compiled with: optimised, no debug info (the bytes are
/// embedded in the binary), and warnings on.
const COMMON_FLAGS: [&str; 4] = ["-O2", "-g0", "-Wall", "-Wextra"];

/// Cargo's OUT_DIR of the running build script.
pub fn out_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"))
}

/// What a [`CBuild`] produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Artefact {
    /// A position-independent shared library whose symbols are hidden unless exported
    /// explicitly (an LD_PRELOAD library must export only what it interposes).
    SharedLibrary,
    /// An executable.
    Program,
}

/// One C library or program: its sources, include directories, extra flags and libraries.
#[derive(Clone, Debug)]
pub struct CBuild {
    file_name: String,
    artefact: Artefact,
    sources: Vec<PathBuf>,
    watch: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    flags: Vec<String>,
    libs: Vec<String>,
}

impl CBuild {
    /// A shared library written to `OUT_DIR/file_name`.
    pub fn shared_library(file_name: &str) -> CBuild {
        CBuild::new(file_name, Artefact::SharedLibrary)
    }

    /// An executable written to `OUT_DIR/file_name`.
    pub fn program(file_name: &str) -> CBuild {
        CBuild::new(file_name, Artefact::Program)
    }

    fn new(file_name: &str, artefact: Artefact) -> CBuild {
        CBuild { file_name: file_name.to_string(), artefact, sources: Vec::new(), watch: Vec::new(), includes: Vec::new(), flags: Vec::new(), libs: Vec::new() }
    }

    /// Adds a C source file (relative to the crate's directory).
    pub fn source(mut self, path: impl AsRef<Path>) -> CBuild {
        self.sources.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds an include directory; a directory inside the crate is also watched, so editing a
    /// header there rebuilds the artefact.
    pub fn include(mut self, dir: impl AsRef<Path>) -> CBuild {
        let dir = dir.as_ref().to_path_buf();
        if dir.is_relative() {
            self.watch.push(dir.clone());
        }
        self.includes.push(dir);
        self
    }

    /// Adds compiler flags (after the common ones).
    pub fn flags<S: AsRef<str>>(mut self, flags: impl IntoIterator<Item = S>) -> CBuild {
        self.flags.extend(flags.into_iter().map(|f| f.as_ref().to_string()));
        self
    }

    /// Links a system library (`"dl"` → `-ldl`), after the sources.
    pub fn lib(mut self, name: &str) -> CBuild {
        self.libs.push(format!("-l{name}"));
        self
    }

    /// Adds a raw link input after the sources and libraries: an archive path or a linker flag
    /// (`-Wl,--whole-archive`), in the order given.
    pub fn link(mut self, arg: impl AsRef<str>) -> CBuild {
        self.libs.push(arg.as_ref().to_string());
        self
    }

    /// Compiles the artefact and returns its path. Panics with what to install when no C
    /// compiler can be run or the compilation fails: a build script has no better way to fail.
    pub fn compile(self) -> PathBuf {
        for p in self.sources.iter().chain(&self.watch) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        println!("cargo:rerun-if-env-changed=CC");
        let out = out_dir().join(&self.file_name);
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let mut cmd = Command::new(&cc);
        cmd.args(COMMON_FLAGS);
        if self.artefact == Artefact::SharedLibrary {
            cmd.args(["-fPIC", "-shared", "-fvisibility=hidden"]);
        }
        cmd.args(&self.flags);
        for dir in &self.includes {
            cmd.arg("-I").arg(dir);
        }
        cmd.arg("-o").arg(&out).args(&self.sources).args(&self.libs);
        let what = self.sources.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
        match cmd.status() {
            Ok(s) if s.success() => out,
            Ok(s) => panic!("{cc} failed to compile {what} ({s}); a C compiler (gcc or clang) is required"),
            Err(e) => panic!("cannot run the C compiler '{cc}' ({e}); install gcc (apt-get install -y gcc) or set CC"),
        }
    }

    /// Compiles the artefact and passes its path to the crate as the compile-time environment
    /// variable `var`, for `include_bytes!(env!("VAR"))`.
    pub fn embed(self, var: &str) {
        let out = self.compile();
        println!("cargo:rustc-env={var}={}", out.display());
    }
}

/// A C header generated by a build script: `#define`s written from Rust values, so a constant
/// has one definition and the C side cannot fall out of step with it.
#[derive(Clone, Debug)]
pub struct CHeader {
    file_name: String,
    text: String,
}

impl CHeader {
    /// A header named `file_name` (written to OUT_DIR); `what` becomes its opening comment.
    pub fn new(file_name: &str, what: &str) -> CHeader {
        let guard: String = file_name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
        let text = format!("/* {file_name}: GENERATED by a build script; do not edit.\n * {what}\n */\n#ifndef {guard}\n#define {guard}\n\n");
        CHeader { file_name: file_name.to_string(), text }
    }

    /// `#define name value`, with an optional comment.
    pub fn define(mut self, name: &str, value: impl Display, comment: &str) -> CHeader {
        if comment.is_empty() {
            self.text += &format!("#define {name} {value}\n");
        } else {
            self.text += &format!("#define {name} {value} /* {comment} */\n");
        }
        self
    }

    /// `#define name "bytes"` for an ASCII string constant (a magic number). A trailing NUL in
    /// `bytes` is left to C's own terminator.
    pub fn define_str(self, name: &str, bytes: &[u8], comment: &str) -> CHeader {
        let s = bytes.strip_suffix(&[0]).unwrap_or(bytes);
        assert!(s.iter().all(|b| b.is_ascii_graphic()), "{name}: only printable ASCII strings can be written as C literals");
        let value = format!("\"{}\"", String::from_utf8_lossy(s));
        self.define(name, value, comment)
    }

    /// A blank line, to group definitions.
    pub fn gap(mut self) -> CHeader {
        self.text.push('\n');
        self
    }

    /// Writes the header to OUT_DIR (only when its text changed, so C sources including it are
    /// not rebuilt for nothing) and returns the directory to pass to [`CBuild::include`].
    pub fn write(mut self) -> PathBuf {
        self.text += "\n#endif\n";
        let dir = out_dir();
        let path = dir.join(&self.file_name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(self.text.as_str()) {
            std::fs::write(&path, &self.text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        dir
    }
}

/// The value of `const NAME: T = VALUE;` in a Rust source (a build script cannot import the
/// crate it builds, so it reads the definitions as text): the C of a crate takes its numbers from
/// the Rust definitions, which stay the only ones. Panics naming the file when there is none.
pub fn rust_const(path: &str, name: &str) -> String {
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let key = format!("const {name}:");
    let line = text.lines().map(str::trim).find(|l| l.starts_with(&key) || l.starts_with(&format!("pub {key}")));
    let line = line.unwrap_or_else(|| panic!("{path}: no `const {name}` (the runtime's header reads it)"));
    let value = line.split_once('=').and_then(|(_, v)| v.trim().strip_suffix(';')).unwrap_or_else(|| panic!("{path}: cannot read `{line}`"));
    value.trim().to_string()
}
