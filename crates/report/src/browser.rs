//! Test support, not part of the report: the page opened in headless Chromium, shared by this
//! crate's tests of synthetic pages and the command's tests of real programs' pages. Its checks
//! panic, as tests do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium's command, when installed (`make test` installs it).
pub fn chromium() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|c| d.join(c)))
            .find(|c| c.is_file())
    })
}

/// Runs headless Chromium on `url` with `args`, its output into files beside `file` (a pipe
/// would fill and stall it); returns (stdout, stderr). Killed after a minute.
pub fn browse(chrome: &Path, file: &Path, url: &str, args: &[&str]) -> (String, String) {
    let (out, err) = (file.with_extension("out"), file.with_extension("err"));
    let mut child = Command::new(chrome)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .args(["--virtual-time-budget=5000", "--no-first-run", "--disable-extensions"])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("chromium's output file"))
        .stderr(std::fs::File::create(&err).expect("chromium's log file"))
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("chromium's status").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium ran for over a minute on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (read(&out), read(&err))
}

/// Opens the page `page` with its script and its self-test (`#selftest`): no console message,
/// no error, the ready marker set, and each of `want` in the DOM afterwards.
pub fn check_scripted(chrome: &Path, page: &Path, want: &[&str]) {
    let url = format!("file://{}#selftest", page.display());
    let (dom, log) = browse(chrome, page, &url, &["--dump-dom"]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "{}: console messages: {console:#?}", page.display());
    assert!(dom.contains("data-ready=\"yes\""), "{}: the script did not finish; stderr: {log}", page.display());
    let errors = dom.find("id=\"js-errors\"").map(|i| &dom[i..(i + 400).min(dom.len())]).unwrap_or("no error box");
    assert!(dom.contains("<pre id=\"js-errors\" hidden=\"\"></pre>"), "{}: {errors}", page.display());
    for w in want {
        assert!(dom.contains(w), "{}: no {w} after the script ran", page.display());
    }
}

/// Saves a screenshot of `page` beside it, as `page`.png, for people to look at.
pub fn screenshot(chrome: &Path, page: &Path) {
    let png = page.with_extension("png");
    let (_, log) = browse(chrome, page, &format!("file://{}", page.display()), &[&format!("--screenshot={}", png.display()), "--window-size=1400,1800"]);
    assert!(png.is_file(), "no screenshot of {}: {log}", page.display());
}
