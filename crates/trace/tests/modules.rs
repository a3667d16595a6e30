//! The runtimes' two module lists (`native/modules.c`): the dynamic loader's, read at start-up,
//! must name and place every executable file mapping exactly as `/proc/self/maps` does, through
//! symbolic links to the libraries and to the program, and the main thread's stack bounds
//! computed without the maps must end where the maps' stack mapping ends.

use std::path::{Path, PathBuf};
use std::process::Command;

fn cc(args: &[&str]) {
    let out = Command::new("cc").args(args).output().expect("cc (the Makefile's trace-deps install gcc)");
    assert!(out.status.success(), "cc {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn loaded_modules_and_main_stack_equal_the_maps() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("modules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (native, tests) = (manifest.join("native"), manifest.join("tests/native"));
    // The library the program links by its soname, a symbolic link to the real file (as
    // libstdc++.so.6 is), and a second one reached through a chain of relative links.
    let s = |p: &PathBuf| p.display().to_string();
    let lib_src = dir.join("modcheck_lib.c");
    std::fs::write(&lib_src, "int modcheck_lib(int x) { return x + 1; }\n").unwrap();
    let real = dir.join("libmodcheck.so.1.0.0");
    cc(&["-O2", "-shared", "-fPIC", "-Wl,-soname,libmodcheck.so.1", "-o", &s(&real), &s(&lib_src)]);
    std::os::unix::fs::symlink("libmodcheck.so.1.0.0", dir.join("libmodcheck.so.1")).unwrap();
    let other_src = dir.join("modcheck_other.c");
    std::fs::write(&other_src, "int modcheck_other(int x) { return x * 3; }\n").unwrap();
    cc(&["-O2", "-shared", "-fPIC", "-o", &s(&dir.join("libother.so.2.1")), &s(&other_src)]);
    std::os::unix::fs::symlink("libother.so.2.1", dir.join("libother.so.2")).unwrap();
    std::os::unix::fs::symlink("libother.so.2", dir.join("libother.so")).unwrap();
    let exe = dir.join("modules_check");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    cc(&[
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        &format!("-I{}", native.display()),
        "-o",
        &s(&exe),
        &s(&tests.join("modules_check.c")),
        &s(&native.join("modules.c")),
        &s(&dir.join("libmodcheck.so.1")),
        &rpath,
        "-ldl",
        "-lpthread",
    ]);
    let link = dir.join("through-a-link");
    std::os::unix::fs::symlink(&exe, &link).unwrap();
    for program in [&exe, &link] {
        let out = Command::new(program).arg(dir.join("libother.so")).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("at start: ok") && text.contains("after dlopen: ok"), "{}: {text}{}", program.display(), String::from_utf8_lossy(&out.stderr));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
