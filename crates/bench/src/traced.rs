//! The "traced" group: real programs installed on the machine, run under `heaplab trace` on
//! small generated inputs, their traces converted to instances and planned like any other row.
//!
//! Every input is generated here, deterministically (no randomness, fixed hash seeds), so two
//! runs of the benchmark plan the same heaps as long as the programs' versions do not change.
//! Two more things keep the traces the same from run to run, both found on python3: each
//! program runs in a folder of its own that holds only its input, named relatively (Python lists
//! its script's folder when it imports a module, and keeps the names), and the harness starts
//! `heaplab trace` with address-space randomisation off (objects hashed by address are
//! otherwise visited, and freed at exit, in a different order each run). The environment is
//! fixed as well ([`base_env`]): Python copies every variable into `os.environ`, so one more
//! exported variable changed its heap.
//! Each workload makes roughly 4·10^4–10^5 heap allocations, inside the 10^4–10^5 range the boxing comparison is about,
//! and again at [`Scale::Large`] (0.3–3 million), the size of the real traces in the anchors,
//! and python3 and sqlite3 at [`Scale::Huge`] (above 2 million, the planner's huge size) and
//! [`Scale::Giant`] (about 7 million, near the 10^7 end of the planner's range).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One program run to trace.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The program's name (`python3`, `sqlite3`, ...).
    pub program: &'static str,
    /// The workload's name: the program's, or more where one program runs two (`jq-sort`);
    /// the row is `traced/NAME`.
    pub name: &'static str,
    /// The real binary that runs (never a shell wrapper: see `heaplab_trace::launch::find_binary`).
    pub exe: PathBuf,
    /// Its arguments (input files named relative to `cwd`).
    pub args: Vec<String>,
    /// The folder it runs in: its own, holding only its input file.
    pub cwd: PathBuf,
    /// Environment set for the program (fixed hash seeds, Python on plain malloc).
    pub env: Vec<(&'static str, &'static str)>,
    /// What it does, for the results.
    pub what: String,
}

/// The whole environment of a traced program besides its workload's own variables (and what
/// `heaplab trace` adds): a fixed `PATH`, the C locale, and `HOME` (where heaplab keeps its
/// tracer library) and `HEAPLAB_PRELOAD` (a tracer override) passed on when set.
pub fn base_env() -> Vec<(String, String)> {
    let mut env = vec![("PATH".to_string(), "/usr/local/bin:/usr/bin:/bin".to_string()), ("LC_ALL".to_string(), "C".to_string())];
    for k in ["HOME", "HEAPLAB_PRELOAD"] {
        if let Some(v) = std::env::var_os(k) {
            env.push((k.to_string(), v.to_string_lossy().into_owned()));
        }
    }
    env
}

impl Workload {
    /// The command line as recorded in the results (`env -i`, the environment, the program,
    /// shell-quoted), run in a folder holding only the input.
    pub fn command_line(&self) -> String {
        let mut s = String::from("env -i ");
        for (k, v) in base_env().iter().filter(|(k, _)| k != "HEAPLAB_PRELOAD") {
            let _ = write!(s, "{k}={} ", crate::host::shell_quote(v));
        }
        for (k, v) in &self.env {
            let _ = write!(s, "{k}={v} ");
        }
        s.push_str(&crate::host::shell_quote(&self.exe.to_string_lossy()));
        for a in &self.args {
            s.push(' ');
            s.push_str(&crate::host::shell_quote(a));
        }
        s
    }
}

/// The workloads of the group, in table order: a program's name, or `PROGRAM-what` for a
/// second workload of one program.
pub const PROGRAMS: [&str; 6] = ["python3", "sqlite3", "perl", "jq", "jq-sort", "ruby"];

/// Python: a dict of `n` records (strings, lists), a third deleted, the rest formatted, joined,
/// sent through JSON and split into a sorted word set. Run with `PYTHONMALLOC=malloc` so every
/// object comes from malloc (by default small objects come from Python's own arenas).
pub fn python_script(n: usize) -> String {
    "\
import json
N = @N@
d = {}
for i in range(N):
    d['key%05d' % i] = {'n': i, 's': 'v' * (i % 40), 'l': [j * i for j in range(i % 9)]}
for i in range(0, N, 3):
    del d['key%05d' % i]
parts = []
for k in sorted(d):
    v = d[k]
    parts.append('%s=%d:%s' % (k, v['n'], ','.join(str(x) for x in v['l'])))
text = '\\n'.join(parts)
back = json.loads(json.dumps(d, sort_keys=True))
words = sorted(set(text.replace('=', ' ').replace(':', ' ').split()))
print(len(back), len(text), len(words))
"
    .replace("@N@", &n.to_string())
}

/// SQLite: `rows` inserts in one transaction, an index, grouped and joined queries, then a
/// delete and an update (values derived from the row number, no `random()`).
pub fn sql_script(rows: usize) -> String {
    let mut s = String::from("create table t(id integer primary key, name text, grp integer, val real);\nbegin;\n");
    for i in 0..rows {
        let _ = writeln!(s, "insert into t(name, grp, val) values('name{i}-{}', {}, {}.25);", "x".repeat(i % 23), i % 97, i * 7919 % 10007);
    }
    s.push_str(
        "commit;\n\
         create index ig on t(grp, name);\n\
         select grp, count(*), sum(val) from t group by grp order by 3 desc limit 5;\n\
         select count(*) from t where name like 'name1%';\n\
         select a.id, b.id from t a join t b on a.grp = b.grp and a.id < b.id where a.id < 50 limit 5;\n\
         delete from t where id % 3 = 0;\n\
         update t set name = name || '-upd' where grp < 20;\n\
         select count(*), max(length(name)) from t;\n",
    );
    s
}

/// Perl: a hash of `keys` keys to small arrays, a third deleted, the rest sorted and joined.
pub fn perl_script(keys: usize) -> String {
    "\
my %h;
for my $i (1..@N@) { $h{\"k$i\"} = [$i, 'v' x ($i % 30)]; }
delete $h{\"k$_\"} for grep { $_ % 3 == 0 } 1..@N@;
my @k = sort keys %h;
my $s = join(',', map { \"$_=\" . scalar(@{$h{$_}}) } @k);
print scalar(@k), ' ', length($s), \"\\n\";
"
    .replace("@N@", &keys.to_string())
}

/// Ruby: `strings` strings through a queue of at most `strings / 20`, then a hash of
/// `strings * 3 / 8` keys to small arrays, kept to the exit, whose keys are sorted and joined at
/// the end: the heap's peak holds the whole hash (a shape the outward sweep from the peak packs).
pub fn ruby_script(strings: usize) -> String {
    "\
a = []
@N@.times { |i| a << ('x' * (i % 300)); a.shift if a.size > @Q@ }
h = {}
@M@.times { |i| h[i.to_s] = [i] * (i % 7 + 1) }
puts h.keys.sort.join(',').size
"
    .replace("@N@", &strings.to_string())
    .replace("@Q@", &(strings / 20).to_string())
    .replace("@M@", &(strings * 3 / 8).to_string())
}

/// jq: `records` JSON records, one per line.
pub fn jq_records(records: usize) -> String {
    let mut s = String::new();
    for i in 0..records {
        let _ = writeln!(s, "{{\"id\":{i},\"name\":\"user{i}\",\"tags\":[\"t{}\",\"t{}\"],\"score\":{}.5}}", i % 17, i % 5, i % 1000);
    }
    s
}

/// The jq filter run over [`jq_records`].
pub const JQ_FILTER: &str = "select(.id % 3 == 0) | {id, tags, name: (.name | ascii_upcase)}";

/// jq: one JSON array of `records` records, for [`JQ_SORT_FILTER`].
pub fn jq_array(records: usize) -> String {
    let mut s = String::from("[");
    for i in 0..records {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"a\":{},\"b\":{}.{:03},\"name\":\"{}\",\"tags\":[{},{},{}]}}",
            i * 13 % 21,
            i * 7919 % 10007,
            i * 31 % 1000,
            "x".repeat(1 + i % 20),
            i % 10,
            i * 3 % 10,
            i * 7 % 10
        );
    }
    s.push_str("]\n");
    s
}

/// The jq filter run over [`jq_array`]: the whole array parsed and held while a filtered copy
/// is sorted, so that most blocks live long above a churn of short ones (the shape that costs a
/// greedy placer most).
pub const JQ_SORT_FILTER: &str = "map(select(.a > 10)) | sort_by(.b) | length";

/// xmllint: a catalogue of `records` records (attributes, nested elements, text of varying
/// length), one per line.
#[allow(dead_code)] // the apply bench's input; the traced group does not run xmllint
pub fn xml_records(records: usize) -> String {
    let mut s = String::from("<?xml version=\"1.0\"?>\n<catalog>\n");
    for i in 0..records {
        let _ = writeln!(
            s,
            "<rec id=\"{i}\" grp=\"{}\"><name>item{i}</name><tags><t>a{}</t><t>b{}</t></tags><price>{}.{:02}</price><note>{}</note></rec>",
            i % 13,
            i % 7,
            i % 3,
            i * 37 % 1000,
            i % 100,
            "x".repeat(i % 31)
        );
    }
    s.push_str("</catalog>\n");
    s
}

/// How much work each program is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// 4·10^4–10^5 heap blocks each, with the boxing baseline.
    Small,
    /// 0.3–3 million blocks each, the size of the traces in `../shared/ANCHORS.md` on which
    /// idealloc ran out of memory or failed (rows `traced/NAME-large`, not in `--quick`).
    Large,
    /// Above the planner's huge size (2·10^6 buffers), python3 and sqlite3 only: real heaps
    /// where the planner's local stages meet 10^5–10^6 buffers live at every instant (rows
    /// `traced/NAME-huge`, not in `--quick`).
    Huge,
    /// About 7 million buffers, python3 and sqlite3 only: above the size up to which first fit
    /// by size may run (rows `traced/NAME-giant`, not in `--quick`).
    Giant,
}

impl Scale {
    /// (python3 records, sqlite3 rows, perl keys, jq records, ruby strings; the jq sort's
    /// records are the same number as jq's).
    fn counts(self) -> (usize, usize, usize, usize, usize) {
        match self {
            Scale::Small => (800, 2000, 8000, 3000, 40_000),
            Scale::Large => (20_000, 60_000, 100_000, 30_000, 400_000),
            Scale::Huge => (42_000, 100_000, 0, 0, 0),
            Scale::Giant => (120_000, 280_000, 0, 0, 0),
        }
    }

    /// The programs traced at this scale.
    fn programs(self) -> &'static [&'static str] {
        match self {
            Scale::Small | Scale::Large => &PROGRAMS,
            Scale::Huge | Scale::Giant => &PROGRAMS[..2],
        }
    }

    /// The row name's suffix.
    pub fn suffix(self) -> &'static str {
        match self {
            Scale::Small => "",
            Scale::Large => "-large",
            Scale::Huge => "-huge",
            Scale::Giant => "-giant",
        }
    }
}

/// Writes each program's input into a folder of its own under `dir` and returns the workloads
/// of the installed programs, plus the names of the programs not found.
pub fn workloads(dir: &Path, scale: Scale) -> std::io::Result<(Vec<Workload>, Vec<&'static str>)> {
    let (py_n, sql_rows, perl_keys, jq_n, ruby_n) = scale.counts();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for &program in scale.programs() {
        let binary = program.split('-').next().unwrap_or(program);
        let Some(exe) = heaplab_trace::launch::find_binary(binary) else {
            if !missing.contains(&binary) {
                missing.push(binary);
            }
            continue;
        };
        let cwd = dir.join(format!("traced-{program}{}", scale.suffix()));
        std::fs::create_dir_all(&cwd)?;
        let w = match program {
            "python3" => {
                std::fs::write(cwd.join("script.py"), python_script(py_n))?;
                Workload {
                    program,
                    name: program,
                    exe,
                    cwd,
                    args: vec!["-s".into(), "script.py".into()],
                    env: vec![("PYTHONMALLOC", "malloc"), ("PYTHONHASHSEED", "0"), ("PYTHONDONTWRITEBYTECODE", "1")],
                    what: format!("{py_n} dicts of strings and lists, a third deleted, formatted, JSON round trip, sorted word set; PYTHONMALLOC=malloc"),
                }
            }
            "sqlite3" => {
                std::fs::write(cwd.join("script.sql"), sql_script(sql_rows))?;
                Workload {
                    program,
                    name: program,
                    exe,
                    cwd,
                    args: vec![":memory:".into(), ".read script.sql".into()],
                    env: vec![],
                    what: format!("{sql_rows} inserts in one transaction, an index, group-by and join queries, a delete and an update, in memory"),
                }
            }
            "perl" => {
                std::fs::write(cwd.join("script.pl"), perl_script(perl_keys))?;
                Workload {
                    program,
                    name: program,
                    exe,
                    cwd,
                    args: vec!["script.pl".into()],
                    env: vec![("PERL_HASH_SEED", "0"), ("PERL_PERTURB_KEYS", "0")],
                    what: format!("hash of {perl_keys} keys to arrays, a third deleted, sorted and joined"),
                }
            }
            "jq" => {
                std::fs::write(cwd.join("records.json"), jq_records(jq_n))?;
                Workload {
                    program,
                    name: program,
                    exe,
                    cwd,
                    args: vec!["-c".into(), JQ_FILTER.into(), "records.json".into()],
                    env: vec![],
                    what: format!("filter and reshape {jq_n} JSON records"),
                }
            }
            "jq-sort" => {
                std::fs::write(cwd.join("array.json"), jq_array(jq_n))?;
                Workload {
                    program: "jq",
                    name: program,
                    exe,
                    cwd,
                    args: vec![JQ_SORT_FILTER.into(), "array.json".into()],
                    env: vec![],
                    what: format!("filter and sort an array of {jq_n} JSON records (most blocks long-lived under a churn of short ones)"),
                }
            }
            "ruby" => {
                std::fs::write(cwd.join("script.rb"), ruby_script(ruby_n))?;
                Workload {
                    program,
                    name: program,
                    exe,
                    cwd,
                    args: vec!["script.rb".into()],
                    env: vec![],
                    what: format!("{ruby_n} strings through a queue, then a hash of {} keys to arrays kept to the exit, its keys sorted and joined", ruby_n * 3 / 8),
                }
            }
            _ => unreachable!("every program of PROGRAMS has a workload"),
        };
        found.push(w);
    }
    Ok((found, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_deterministic() {
        assert_eq!(python_script(800), python_script(800));
        assert_eq!(sql_script(2000), sql_script(2000));
        assert_eq!(perl_script(8000), perl_script(8000));
        assert_eq!(jq_records(3000), jq_records(3000));
        assert_eq!(sql_script(2000).matches("insert into").count(), 2000);
        assert_eq!(jq_records(3000).lines().count(), 3000);
        assert_eq!(jq_array(300), jq_array(300));
        assert_eq!(jq_array(300).matches("\"a\":").count(), 300);
        assert_eq!(xml_records(50), xml_records(50));
        assert_eq!(xml_records(50).matches("<rec ").count(), 50);
        assert!(!sql_script(2000).contains("random"));
        assert!(python_script(20_000).contains("N = 20000\n") && perl_script(7).contains("(1..7)"));
        assert!(ruby_script(400_000).contains("400000.times") && ruby_script(400_000).contains("150000.times"));
    }

    #[test]
    fn workloads_write_their_inputs() {
        let dir = std::env::temp_dir().join(format!("heaplab-bench-test-w-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (found, missing) = workloads(&dir, Scale::Small).unwrap();
        for p in PROGRAMS {
            assert!(found.iter().any(|w| w.name == p) || missing.iter().any(|m| p.starts_with(m)), "{p}");
        }
        let (large, _) = workloads(&dir, Scale::Large).unwrap();
        assert_eq!(large.len(), found.len());
        let (huge, _) = workloads(&dir, Scale::Huge).unwrap();
        assert!(huge.len() <= 2 && huge.iter().all(|w| ["python3", "sqlite3"].contains(&w.name)));
        let (giant, _) = workloads(&dir, Scale::Giant).unwrap();
        assert_eq!(giant.len(), huge.len());
        for w in found.iter().chain(&large).chain(&huge).chain(&giant) {
            assert!(w.exe.is_absolute());
            // Only the input in the program's folder.
            assert_eq!(std::fs::read_dir(&w.cwd).unwrap().count(), 1);
            assert!(w.command_line().contains(&*w.exe.to_string_lossy()));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
