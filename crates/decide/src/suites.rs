//! Named configuration sets and workload suites for `heaplab compare`: `--configs cpython-dsa`
//! (the thesis' six CPython allocator configuration points) and `--configs allocators` (the
//! allocators heaplab knows by name), and `--suite default`, the programs of `heaplab study
//! --suite default` turned into the runner's shell-command workloads. The suite itself (its
//! programs and inputs) is defined once, in the study crate.

use crate::runner::{ConfigSpec, WorkloadSpec};
use crate::DecideError;
use std::path::Path;

/// The named configuration sets: name, what it is.
pub const CONFIG_SETS: [(&str, &str); 2] = [
    (
        "cpython-dsa",
        "CPython's allocator configuration points: pymalloc on/off (PYTHONMALLOC=malloc) x glibc/jemalloc/mimalloc (preloaded); reference pymalloc_glibc, the default",
    ),
    ("allocators", "glibc (reference), jemalloc, mimalloc, tcmalloc, preloaded"),
];

/// The `--config` specifications of each set, in the thesis' table order after the reference.
/// "malloc" is the thesis' name for glibc without pymalloc.
fn set_specs(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "cpython-dsa" => Some(&[
            "pymalloc_glibc=glibc",
            "pymalloc_mimalloc=mimalloc",
            "pymalloc_jemalloc=jemalloc",
            "mimalloc=mimalloc,PYTHONMALLOC=malloc",
            "jemalloc=jemalloc,PYTHONMALLOC=malloc",
            "malloc=glibc,PYTHONMALLOC=malloc",
        ]),
        "allocators" => Some(&["glibc", "jemalloc", "mimalloc", "tcmalloc"]),
        _ => None,
    }
}

/// The configurations of the named set, the reference first; allocators are resolved as
/// `--config` resolves them (an allocator missing here is an error naming it).
pub fn config_set(name: &str) -> Result<Vec<ConfigSpec>, DecideError> {
    let specs = set_specs(name).ok_or_else(|| {
        DecideError::Input(format!(
            "--configs {name}: no such configuration set (known: {})",
            CONFIG_SETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ))
    })?;
    specs.iter().map(|s| ConfigSpec::parse(s).map_err(|e| DecideError::Input(format!("--configs {name}: {e}")))).collect()
}

/// The names of the workload suites `--suite` accepts.
pub const SUITES: [&str; 2] = ["default", "pyperformance"];

/// Quotes `s` for `sh` (single quotes, `'` written as `'\''`) unless it is plainly safe.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+%@".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The shell command running a study workload as the study's launcher runs it: its environment
/// settings, the program and arguments quoted, standard input redirected from its file (names
/// relative to the suite's input directory, the runner's working directory).
pub fn shell_command(w: &heaplab_study::suite::Workload) -> String {
    let mut parts: Vec<String> = w.env.iter().map(|(k, v)| format!("{k}={}", sh_quote(v))).collect();
    parts.extend(w.command.iter().map(|a| sh_quote(a)));
    let mut cmd = parts.join(" ");
    if let Some(input) = &w.stdin {
        let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| input.display().to_string());
        cmd.push_str(&format!(" < {}", sh_quote(&name)));
    }
    cmd
}

/// Writes the default suite's inputs into `dir` (the runner's working directory) and returns
/// its workloads (only those named in `only`, when given; an unknown name is an error listing
/// the suite's names).
pub fn default_suite(dir: &Path, only: Option<&[&str]>) -> Result<Vec<WorkloadSpec>, DecideError> {
    let mut suite = heaplab_study::suite::default_suite(dir, 1)
        .map_err(|e| DecideError::Input(format!("{}: cannot write the default suite's inputs: {e}", dir.display())))?;
    if let Some(names) = only {
        heaplab_study::suite::select(&mut suite, names)
            .map_err(|e| DecideError::Input(format!("--benchmarks {}: no such workload in the default suite ({})", e.name, e.known.join(", "))))?;
    }
    Ok(suite.iter().map(|w| WorkloadSpec { name: w.name.clone(), command: shell_command(w) }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpython_dsa_is_the_six_points_with_their_environment() {
        let set = match config_set("cpython-dsa") {
            Ok(s) => s,
            // jemalloc or mimalloc not installed here: the error names it.
            Err(e) => return assert!(e.to_string().contains("--configs cpython-dsa"), "{e}"),
        };
        let names: Vec<&str> = set.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["pymalloc_glibc", "pymalloc_mimalloc", "pymalloc_jemalloc", "mimalloc", "jemalloc", "malloc"]);
        for c in &set {
            let pymalloc_off = c.env.iter().any(|(k, v)| k == "PYTHONMALLOC" && v == "malloc");
            assert_eq!(pymalloc_off, !c.name.starts_with("pymalloc_"), "{}", c.name);
            assert_eq!(c.env.len(), usize::from(pymalloc_off), "{}: {:?}", c.name, c.env);
            let alloc = c.name.trim_start_matches("pymalloc_");
            let expect = if alloc == "malloc" { "glibc" } else { alloc };
            assert_eq!(c.allocator.name, expect, "{}", c.name);
            assert_eq!(c.allocator.library.is_none(), expect == "glibc", "{}", c.name);
        }
    }

    #[test]
    fn unknown_set_is_named() {
        let e = config_set("nope").unwrap_err().to_string();
        assert!(e.contains("--configs nope") && e.contains("cpython-dsa") && e.contains("allocators"), "{e}");
    }

    #[test]
    fn quoting_survives_sh() {
        for s in ["plain", "with space", "it's", "a'b'c", "$HOME `x` \"q\"", "", "print(\"x\")\n"] {
            let out = std::process::Command::new("sh").arg("-c").arg(format!("printf %s {}", sh_quote(s))).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s, "{s:?}");
        }
    }

    #[test]
    fn default_suite_is_the_study_suite() {
        let dir = std::env::temp_dir().join(format!("heaplab-suites-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let study = heaplab_study::suite::default_suite(&dir, 1).unwrap();
        let ours = default_suite(&dir, None).unwrap();
        assert_eq!(ours.iter().map(|w| &w.name).collect::<Vec<_>>(), study.iter().map(|w| &w.name).collect::<Vec<_>>());
        for (w, s) in ours.iter().zip(&study) {
            // Every argument appears quoted, every setting in front, stdin redirected.
            for a in &s.command {
                assert!(w.command.contains(&sh_quote(a)), "{}: {}", w.name, w.command);
            }
            for (k, v) in &s.env {
                assert!(w.command.starts_with(&format!("{k}=")) || w.command.contains(&format!(" {k}={}", sh_quote(v))), "{}", w.command);
            }
            if let Some(f) = s.stdin.as_ref().and_then(|f| f.file_name()) {
                assert!(w.command.ends_with(&format!(" < {}", f.to_string_lossy())), "{}", w.command);
            }
        }
        let sqlite = ours.iter().find(|w| w.name == "sqlite3").unwrap();
        assert!(sqlite.command.ends_with("sqlite3 :memory: < script.sql"), "{}", sqlite.command);
        let some = default_suite(&dir, Some(&["jq", "perl"])).unwrap();
        assert_eq!(some.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["perl", "jq"]);
        let e = default_suite(&dir, Some(&["nope"])).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("xmllint"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
