//! `files::write_atomic` on paths that are not regular files: written in place, never replaced
//! by a renamed file (`--summary /dev/null` once turned /dev/null into a file).

use heaplab_model::files::write_atomic;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;

#[test]
fn a_fifo_is_written_in_place_and_stays_a_fifo() {
    let dir = std::env::temp_dir().join(format!("heaplab-write-atomic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("pipe");
    let ok = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        eprintln!("skipped: mkfifo not available");
        return;
    }
    let path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::fs::File::open(&path).unwrap().read_to_string(&mut s).unwrap();
        s
    });
    write_atomic(fifo.to_str().unwrap(), |w| w.write_all(b"summary\n")).unwrap();
    assert_eq!(reader.join().unwrap(), "summary\n");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // Regular files still go through a temporary file and a rename.
    let file = dir.join("out.txt");
    write_atomic(file.to_str().unwrap(), |w| w.write_all(b"a")).unwrap();
    write_atomic(file.to_str().unwrap(), |w| w.write_all(b"b")).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "b");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
