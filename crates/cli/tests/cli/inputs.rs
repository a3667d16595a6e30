//! How inputs and outputs are handled whatever the command: inputs read once (FIFOs, `<(…)`,
//! standard input), numeric flags held to their ranges, an output that is an input refused,
//! long fields quoted short in messages, and files told by their magic with errors that say
//! what a file is and which command takes it.

use crate::common::{heaplab, heaplab_within, write, GOOD};
use std::path::Path;
use std::process::Command;

/// A small trace (of `ls`) and its replay under glibc, in `dir`: t.hltrace, t.hlplaced.
fn trace_and_placed(dir: &Path) {
    let r = heaplab_within(dir, 60, &["trace", "-o", "t.hltrace", "--", "ls", "-la", "/"], false);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_within(dir, 60, &["replay", "t.hltrace", "-a", "glibc", "-o", "t.hlplaced"], false);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Writes `bytes` into the FIFO `name` in `dir` from a thread (opening it blocks until heaplab
/// opens it for reading); the thread ends when the reader goes away.
fn feed_fifo(dir: &Path, name: &str, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let st = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(st.success(), "mkfifo");
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(&bytes);
        }
    })
}

#[test]
fn fifos_and_process_substitution_are_read_once() {
    let d = scratch!("fifo");
    write(&d, "a.csv", GOOD);
    trace_and_placed(&d);
    // <(…): opened once, so no bytes are lost to sniffing (a lost "s" reads as "field 'ize': unknown column").
    let r = heaplab_within(&d, 30, &["$HEAPLAB", "convert", "<(cat a.csv)", "-o", "b.hlbin"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["$HEAPLAB", "plan", "<(cat b.hlbin)", "--time-limit", "0"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("4 buffers"), "{}", r.stdout);
    // A placement and a placed file's CSV export, for plot.
    assert_eq!(heaplab_within(&d, 30, &["plan", "a.csv", "--time-limit", "0", "-o", "placed.csv"], false).code, 0);
    assert_eq!(heaplab_within(&d, 30, &["check", "a.csv", "placed.csv"], false).code, 0, "the placement is valid");
    assert_eq!(heaplab_within(&d, 30, &["convert", "t.hlplaced", "-o", "jobs.csv"], false).code, 0);
    // FIFOs: every reader command, each format; none may hang.
    let read = |name: &str| std::fs::read(d.join(name)).unwrap();
    let cases: [(&str, &[&str], i32); 11] = [
        ("a.csv", &["plan", "F", "--time-limit", "0"], 0),
        ("a.csv", &["stats", "F"], 0),
        ("b.hlbin", &["convert", "F", "-o", "c.csv"], 0),
        ("t.hltrace", &["convert", "F", "-o", "t.csv"], 0),
        ("t.hltrace", &["plan", "F", "--time-limit", "0"], 0),
        ("t.hltrace", &["trace-info", "F"], 0),
        ("t.hlplaced", &["frag", "F"], 0),
        ("t.hlplaced", &["plot", "F", "-o", "t.png"], 0),
        ("jobs.csv", &["plot", "F", "-o", "jobs.svg"], 0),
        ("placed.csv", &["plot", "F", "-o", "placed.png"], 0),
        // replay reads its trace twice: a pipe is refused, clearly and at once.
        ("t.hltrace", &["replay", "F", "-a", "glibc", "-o", "r.hlplaced"], 2),
    ];
    for (src, args, code) in cases {
        let feeder = feed_fifo(&d, "F", read(src));
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, code, "{args:?} on a FIFO of {src}: {}", r.stderr);
        if code == 2 {
            assert!(r.stderr.contains("needs a regular (seekable) file, not a pipe"), "{}", r.stderr);
        }
        // Should heaplab not have opened it, the feeder waits for a reader: open it once to free it.
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(d.join("F"));
        feeder.join().unwrap();
    }
    assert_eq!(std::fs::read_to_string(d.join("c.csv")).unwrap(), GOOD);
    assert!(!d.join("r.hlplaced").exists());
    // Standard input, from a pipe and redirected from a file.
    let r = heaplab_within(&d, 30, &["cat t.hltrace | $HEAPLAB stats -"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_within(&d, 60, &["$HEAPLAB replay - -a glibc -o s.hlplaced < t.hltrace"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn numeric_flags_beyond_their_range_exit_2_and_help_shows_the_range() {
    let d = scratch!("ranges");
    let m = write(&d, "m.csv", GOOD);
    let cases: &[&[&str]] = &[
        &["plan", &m, "--time-limit", "1e308"],
        &["plan", &m, "--time-limit", "18446744073709551616"],
        &["plan", &m, "--time-limit", "inf"],
        &["plan", &m, "--time-limit", "NaN"],
        &["plan", &m, "--iterations", "0"],
        &["plan", &m, "--seed", "18446744073709551616"],
        &["frag", "x.hlplaced", "--buckets", "18446744073709551615"],
        &["frag", "x.hlplaced", "--buckets", "1000000000"],
        &["frag", "x.hlplaced", "--buckets", "100000000"],
        &["frag", "x.hlplaced", "--page-size", "3000"],
        &["gen", "--kind", "random", "--buffers", "18446744073709551615", "-o", "g.csv"],
        &["gen", "--kind", "random", "--buffers", "1000000000000", "-o", "g.csv"],
        &["trace", "--stack-depth", "65", "-o", "t.hltrace", "--", "true"],
        &["study", "--runs", "0", "-o", "r", "--", "true"],
        &["study", "--timeout", "0", "-o", "r", "--", "true"],
        &["convert", &m, "-o", "c.csv", "--thread", "4294967296"],
    ];
    for args in cases {
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("expected") && !r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
    assert!(!d.join("g.csv").exists() && !d.join("c.csv").exists() && !d.join("r").exists());
    for (cmd, flag) in [("plan", "--time-limit"), ("frag", "--buckets"), ("gen", "--buffers"), ("trace", "--stack-depth"), ("study", "--runs")] {
        let help = heaplab(&[cmd, "--help"]).stdout;
        // The option's own paragraph (the usage line names some flags too).
        let at = help.find(&format!("\n      {flag} <")).unwrap_or_else(|| panic!("{cmd} --help lacks {flag}"));
        assert!(help[at..].split("\n\n").next().unwrap().contains("[range:"), "{cmd} {flag}: {help}");
    }
    // The largest values in range work (quickly).
    let r = heaplab_within(&d, 60, &["plan", &m, "--time-limit", "604800", "--algorithm", "heuristics"], false);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = scratch!("same");
    write(&d, "a.csv", GOOD);
    std::fs::hard_link(d.join("a.csv"), d.join("hard.csv")).unwrap();
    std::os::unix::fs::symlink("a.csv", d.join("sym.csv")).unwrap();
    let cases: &[&[&str]] = &[
        &["convert", "a.csv", "-o", "a.csv"],
        &["convert", "a.csv", "-o", "./a.csv"],
        &["convert", "a.csv", "-o", "hard.csv"],
        &["convert", "sym.csv", "-o", "a.csv"],
        &["convert", "a.csv", "-o", "sym.csv"],
        &["plan", "a.csv", "-o", "a.csv"],
        &["plan", "a.csv", "-o", "p.svg", "--plot", "p.svg"],
    ];
    for args in cases {
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("choose"), "{args:?}: {}", r.stderr);
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), GOOD, "{args:?} changed the input");
    }
    let r = heaplab_within(&d, 30, &["$HEAPLAB convert - -o a.csv < a.csv"], true);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("standard input"), "{}", r.stderr);
    trace_and_placed(&d);
    let before = std::fs::read(d.join("t.hltrace")).unwrap();
    for args in [&["replay", "t.hltrace", "-a", "glibc", "-o", "t.hltrace"][..], &["convert", "t.hltrace", "-o", "t.hltrace"]] {
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    }
    assert_eq!(std::fs::read(d.join("t.hltrace")).unwrap(), before, "the trace was replaced");
    assert!(std::fs::read_dir(&d).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().starts_with('.')), "temporary file left");
}

#[test]
fn long_fields_are_quoted_short() {
    let d = scratch!("long");
    let big = "7".repeat(8 << 20);
    for text in [
        format!("id,lower,upper,size\n0,0,1,{big}x\n"),
        format!("id,lower,upper,size,{big}\n0,0,1,4,5\n"),
        format!("id,lower,upper,size\n{big}\n"),
    ] {
        let m = write(&d, "m.csv", &text);
        for cmd in ["stats", "plan", "check"] {
            let r = heaplab_within(&d, 30, &[cmd, &m], false);
            assert_eq!(r.code, 2, "{cmd}: {}", &r.stderr[..r.stderr.len().min(300)]);
            assert!(r.stderr.len() < 500, "{cmd}: {} bytes of stderr: {}…", r.stderr.len(), &r.stderr[..300]);
            assert!(r.stderr.contains("bytes)"), "{cmd}: {}", r.stderr);
        }
    }
    let p = write(&d, "p.csv", &format!("job,mapping,start,end,requested,usable,address\n0,1,0,4,8,8,{big}x\n"));
    let r = heaplab_within(&d, 30, &["frag", &p], false);
    assert_eq!(r.code, 2);
    assert!(r.stderr.len() < 500 && r.stderr.contains(":2: field 'address'"), "{}", &r.stderr[..r.stderr.len().min(300)]);
}

#[test]
fn files_are_told_by_their_magic_and_errors_say_what_they_are() {
    let d = scratch!("magic");
    std::fs::write(d.join("bad.hlbin"), b"HLBIX\0\x01\0\0\0\x02\0\0\0\0\0\0\0").unwrap();
    for cmd in ["convert", "plan", "stats", "frag", "check", "trace-info", "replay"] {
        let mut args = vec![cmd, "bad.hlbin"];
        if cmd == "convert" {
            args.extend(["-o", "out.csv"]);
        }
        if cmd == "replay" {
            args.extend(["-a", "glibc", "-o", "out.hlplaced"]);
        }
        let r = heaplab_within(&d, 30, &args, false);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(r.stderr.contains("damaged or unknown heaplab magic") && !r.stderr.contains("UTF-8"), "{cmd}: {}", r.stderr);
    }
    trace_and_placed(&d);
    // A trace is converted where an instance makes sense, and named where it does not.
    for cmd in ["stats", "plan"] {
        let r = heaplab_within(&d, 30, &[cmd, "t.hltrace"], false);
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
    }
    let r = heaplab_within(&d, 30, &["check", "t.hltrace"], false);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("it is a heaplab trace") && r.stderr.contains("heaplab convert t.hltrace"), "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["frag", "t.hltrace"], false);
    assert!(r.code == 2 && r.stderr.contains("heaplab replay t.hltrace"), "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["stats", "t.hlplaced"], false);
    assert!(r.code == 2 && r.stderr.contains("it is a heaplab placed file") && r.stderr.contains("heaplab frag t.hlplaced"), "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["trace-info", "t.hlplaced"], false);
    assert!(r.code == 2 && r.stderr.contains("not a heaplab trace: it is a heaplab placed file"), "{}", r.stderr);
    // UTF-8 errors name the line.
    std::fs::write(d.join("u.csv"), b"id,lower,upper,size\n1,0,1,4\n2,0,\xff,3\n").unwrap();
    let r = heaplab_within(&d, 30, &["stats", "u.csv"], false);
    assert!(r.code == 2 && r.stderr.contains("u.csv:3: not UTF-8"), "{}", r.stderr);
    std::fs::write(d.join("u2.csv"), b"job,mapping,start,end,requested,usable,address\n0,1,0,4,8,8,\xff\n").unwrap();
    let r = heaplab_within(&d, 30, &["frag", "u2.csv"], false);
    assert!(r.code == 2 && r.stderr.contains("u2.csv:2: not UTF-8"), "{}", r.stderr);
}
