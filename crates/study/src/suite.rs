//! The ready-made workload list (`heaplab study --suite default`): real programs from Debian
//! packages, each with an input generated here, deterministically (no network, nothing
//! bundled but this code). The papers used libxml2 parsing, espeak-ng, gzip, libjpeg-turbo's
//! tjbench, PHP, Ruby and others; this list picks what installs on Debian 12 and allocates
//! (Debian's gzip makes no heap calls at all, so Perl takes its place).

use std::io::Write;
use std::path::{Path, PathBuf};

/// A program run as a study workload.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Short name (used in file names).
    pub name: String,
    /// What it does, for the report.
    pub description: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Standard input (`None`: /dev/null).
    pub stdin: Option<PathBuf>,
}

impl Workload {
    /// A command given by a user: named after its program, run with nothing else set (no
    /// description: a report shows the command itself).
    pub fn command(command: Vec<String>) -> Workload {
        let first = command.first().cloned().unwrap_or_default();
        let name = Path::new(&first).file_name().map_or(first.clone(), |n| n.to_string_lossy().into_owned());
        Workload { name, description: String::new(), command, env: vec![], stdin: None }
    }
}

/// The Debian packages the default suite runs (the Makefile installs them).
pub const PACKAGES: [&str; 11] = ["perl", "xz-utils", "libxml2-utils", "espeak-ng", "libjpeg-turbo-progs", "sqlite3", "python3", "jq", "php-cli", "ruby", "lua5.4"];

/// A small xorshift generator: the inputs are the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 40] = [
    "memory", "allocator", "page", "block", "free", "list", "arena", "heap", "size", "class", "thread", "cache", "time", "the", "a", "of", "and",
    "to", "in", "is", "that", "program", "request", "pointer", "fragment", "gap", "span", "job", "placement", "policy", "virtual", "physical",
    "resident", "set", "peak", "load", "offset", "bin", "packing", "interval",
];

fn sentence(r: &mut Rng, words: u64) -> String {
    let mut s = String::new();
    for k in 0..words {
        if k > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[r.below(WORDS.len() as u64) as usize]);
    }
    s
}

fn write(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<PathBuf> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    f(&mut w)?;
    w.flush()?;
    Ok(path.to_path_buf())
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Writes the inputs into `dir` and returns the default suite; `scale` (1 = full size) divides
/// the input sizes, for smoke tests.
pub fn default_suite(dir: &Path, scale: u64) -> std::io::Result<Vec<Workload>> {
    let scale = scale.max(1);
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let text = write(&dir.join("text.txt"), |w| {
        for i in 0..(60_000 / scale) {
            let n = 3 + r.below(12);
            writeln!(w, "{i} {}", sentence(&mut r, n))?;
        }
        Ok(())
    })?;
    let xml = write(&dir.join("data.xml"), |w| {
        writeln!(w, "<?xml version=\"1.0\"?>\n<catalog>")?;
        for i in 0..(25_000 / scale) {
            let kind = r.below(17);
            let name = sentence(&mut r, 2);
            let ntags = r.below(4);
            let tags: String = (0..ntags).map(|k| format!("<tag n=\"{k}\">{}</tag>", sentence(&mut r, 1))).collect();
            let (euros, cents) = (r.below(1000), r.below(100));
            writeln!(w, "  <item id=\"{i}\" kind=\"k{kind}\"><name>{name}</name><tags>{tags}</tags><price cur=\"EUR\">{euros}.{cents:02}</price></item>")?;
        }
        writeln!(w, "</catalog>")
    })?;
    let json = write(&dir.join("records.json"), |w| {
        for i in 0..(30_000 / scale) {
            let name = sentence(&mut r, 2);
            let score = r.below(1000);
            writeln!(w, "{{\"id\":{i},\"name\":\"{name}\",\"tags\":[\"t{}\",\"t{}\"],\"score\":{score}.5}}", i % 17, i % 5)?;
        }
        Ok(())
    })?;
    let speech = write(&dir.join("speech.txt"), |w| {
        for _ in 0..(12 / scale).max(1) {
            writeln!(w, "{}.", sentence(&mut r, 12))?;
        }
        Ok(())
    })?;
    // A 384 x 256 picture: gradients and noise, so the encoder has work of every kind.
    let (iw, ih) = (384u32, 256u32);
    let image = write(&dir.join("image.ppm"), |w| {
        write!(w, "P6\n{iw} {ih}\n255\n")?;
        for y in 0..ih {
            for x in 0..iw {
                let n = r.below(32) as u32;
                w.write_all(&[((x * 255 / iw + n) & 255) as u8, ((y * 255 / ih + n) & 255) as u8, (((x ^ y) + n) & 255) as u8])?;
            }
        }
        Ok(())
    })?;
    let rows = 60_000 / scale;
    let sql = write(&dir.join("script.sql"), |w| {
        write!(
            w,
            "create table t(a, b);\nwith recursive c(x) as (select 1 union all select x + 1 from c where x < {rows})\n\
             insert into t select x, hex(randomblob(16)) from c;\ncreate index i on t(b);\nselect count(*), sum(length(b)) from t;\n"
        )
    })?;
    let n = 60_000 / scale;
    let python = format!("import json\nd = [{{'k': i, 'v': str(i) * 3, 'l': [i, i + 1]}} for i in range({n})]\ns = json.dumps(d)\nprint(len(json.loads(s)))");
    let php = format!(
        "$a = []; for ($i = 0; $i < {n}; $i++) {{ $a[] = ['k' => $i, 'v' => str_repeat('x', $i % 50), 'l' => [$i, $i + 1]]; }}\n\
         $s = json_encode($a); $b = json_decode($s, true); usort($b, fn($x, $y) => strcmp($x['v'], $y['v'])); echo count($b), \"\\n\";"
    );
    let ruby = format!("a = (0...{n}).map {{ |i| {{ k: i, v: i.to_s * 3, l: [i, i + 1] }} }}\nh = a.group_by {{ |x| x[:v].size }}\ns = a.map {{ |x| x[:v] }}.sort.join(',')\nputs h.size, s.size");
    let lua = format!("local t = {{}}\nfor i = 1, {n} do t[i] = {{ k = i, v = string.rep('x', i % 40), l = {{ i, i + 1 }} }} end\ntable.sort(t, function(a, b) return a.v < b.v end)\nlocal parts = {{}}\nfor i = 1, #t do parts[#parts + 1] = t[i].v end\nprint(#table.concat(parts, ','))");
    let perl = format!("my %h; for my $i (1..{n}) {{ $h{{\"k$i\"}} = [$i, 'v' x ($i % 30)]; }} my @k = sort keys %h; my $t = 0; $t += length($h{{$_}}[1]) for @k; print \"$t\\n\";");
    let python3 = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    let p = |x: &PathBuf| x.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let w = |name: &str, description: String, command: Vec<String>| Workload { name: name.into(), description, command, env: vec![], stdin: None };
    let mut out = vec![
        w("perl", format!("Perl hashes of {n} records, sorted keys"), vec!["perl".into(), "-e".into(), perl]),
        w("xz", format!("xz -3 compressing {}", p(&text)), s(&["xz", "-3", "-T1", "-c", &p(&text)])),
        w("xmllint", format!("libxml2 parsing {} into a tree", p(&xml)), s(&["xmllint", "--noout", &p(&xml)])),
        w("espeak-ng", format!("espeak-ng speaking {} to a WAV file", p(&speech)), s(&["espeak-ng", "-w", "speech.wav", "-f", &p(&speech)])),
        w("tjbench", format!("libjpeg-turbo tjbench, tiled compression and decompression of {iw}x{ih} {}", p(&image)), s(&["tjbench", &p(&image), "90", "-tile", "-benchtime", "0.01", "-warmup", "0", "-nowrite", "-quiet"])),
        Workload { name: "sqlite3".into(), description: format!("sqlite3: {rows}-row table and index in memory"), command: s(&["sqlite3", ":memory:"]), env: vec![], stdin: Some(sql) },
        Workload {
            name: "python3".into(),
            description: format!("CPython JSON round trip of {n} dicts (PYTHONMALLOC=malloc)"),
            command: vec![python3.into(), "-c".into(), python],
            env: vec![("PYTHONMALLOC".into(), "malloc".into()), ("PYTHONHASHSEED".into(), "0".into())],
            stdin: None,
        },
        w("jq", format!("jq filtering {}", p(&json)), s(&["jq", "-c", "select(.id % 3 == 0) | {id, tags}", &p(&json)])),
        Workload {
            name: "php".into(),
            description: format!("PHP arrays, JSON and sort over {n} records (USE_ZEND_ALLOC=0: the system allocator)"),
            command: vec!["php".into(), "-n".into(), "-r".into(), php],
            env: vec![("USE_ZEND_ALLOC".into(), "0".into())],
            stdin: None,
        },
        w("ruby", format!("Ruby hashes, group_by and sort over {n} records"), vec!["ruby".into(), "--disable-gems".into(), "-e".into(), ruby]),
        w("lua5.4", format!("Lua tables, sort and concat over {n} records"), vec!["lua5.4".into(), "-e".into(), lua]),
    ];
    for wl in &mut out {
        wl.env.push(("LC_ALL".into(), "C".into()));
    }
    Ok(out)
}

/// A workload name that is not in the suite.
#[derive(Clone, Debug)]
pub struct NotInSuite {
    /// The name asked for.
    pub name: String,
    /// The suite's names, in order.
    pub known: Vec<String>,
}

/// Keeps only the workloads of `suite` named in `names` (in the suite's order); every name
/// must be in the suite.
pub fn select(suite: &mut Vec<Workload>, names: &[&str]) -> Result<(), NotInSuite> {
    if let Some(bad) = names.iter().find(|n| !suite.iter().any(|w| w.name == **n)) {
        return Err(NotInSuite { name: bad.to_string(), known: suite.iter().map(|w| w.name.clone()).collect() });
    }
    suite.retain(|w| names.contains(&w.name.as_str()));
    Ok(())
}
