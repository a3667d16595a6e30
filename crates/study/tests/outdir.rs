//! The report directory and the suite selection, as the CLI uses them: a bad output directory is
//! refused before anything runs, an unfinished report leaves nothing behind, and a finished one
//! replaces a previous report whole.

use heaplab_study::outdir::{OutDirError, Staging};
use heaplab_study::suite::{select, Workload};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("study-outdir").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn bad_output_directories_are_refused_first() {
    let d = scratch("refused");
    std::fs::write(d.join("file"), "x").unwrap();
    let s = |p: &str| Staging::create(&format!("{}/{p}", d.display()));
    assert!(matches!(Staging::create("/"), Err(OutDirError::EmptyName)));
    assert!(matches!(s("file"), Err(OutDirError::NotAReport(_))));
    assert!(matches!(s("file/r"), Err(OutDirError::BadParent { exists: true, .. })));
    assert!(matches!(s("none/r"), Err(OutDirError::BadParent { exists: false, .. })));
    assert_eq!(names(&d), ["file"], "nothing created");
}

#[test]
fn a_report_is_installed_whole_or_not_at_all() {
    let d = scratch("install");
    let out = format!("{}/r/", d.display());
    // Dropped before install: the temporary directory goes.
    let st = Staging::create(&out).unwrap();
    std::fs::write(st.dir().join("results.json"), "{}").unwrap();
    drop(st);
    assert!(names(&d).is_empty());
    // Installed, then replaced by the next report.
    for text in ["first", "second"] {
        let st = Staging::create(&out).unwrap();
        assert_eq!(st.target(), d.join("r"));
        std::fs::write(st.dir().join("results.json"), text).unwrap();
        st.subdir("placed").unwrap();
        st.install().unwrap();
        assert_eq!(names(&d), ["r"]);
        assert_eq!(std::fs::read_to_string(d.join("r/results.json")).unwrap(), text);
    }
}

#[test]
fn select_keeps_the_named_workloads_in_suite_order() {
    let w = |n: &str| Workload { name: n.into(), description: String::new(), command: vec![n.into()], env: vec![], stdin: None };
    let mut suite = vec![w("a"), w("b"), w("c")];
    let e = select(&mut suite.clone(), &["b", "z"]).unwrap_err();
    assert_eq!((e.name.as_str(), e.known), ("z", vec!["a".to_string(), "b".into(), "c".into()]));
    select(&mut suite, &["c", "a"]).unwrap();
    assert_eq!(suite.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["a", "c"]);
}
