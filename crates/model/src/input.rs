//! Opening the files heaplab reads. A path (or `-` for standard input) is opened once; its kind
//! is told from its first bytes (the magic of each heaplab binary format, else text) without
//! consuming them, and the same buffered reader is handed to whichever reader that kind needs.
//! So pipes, FIFOs and `<(…)` read like files. A reader that needs two passes asks for
//! [`Input::reread`], which only a regular file can give; a pipe gets a clear error, never a
//! hang. The magic of every heaplab format lives here, and the message for a file of the wrong
//! kind: what the file is, what was expected, and how to get from one to the other. A file
//! compressed with zstd (`heaplab trace --compress`, or by hand) is decompressed on the way and
//! told by what it holds.

use crate::error::{quoted, InputError, InputErrorKind as K};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// The first bytes of a heaplab binary instance or placement (`.hlbin`).
pub const HLBIN_MAGIC: &[u8; 6] = b"HLBIN\0";
/// The first bytes of a trace written by `heaplab trace` (`.hltrace`).
pub const TRACE_MAGIC: &[u8; 8] = b"HLTRACE\0";
/// The first bytes of a placed file written by `heaplab replay` (`.hlplaced`).
pub const PLACED_MAGIC: &[u8; 8] = b"HLPLACE\0";

/// The first bytes of a zstd frame.
pub const ZSTD_MAGIC: &[u8; 4] = &[0x28, 0xB5, 0x2F, 0xFD];
/// The first bytes of a run's index (`STEM.hlrun`, JSON written by `heaplab trace`).
pub const RUN_MAGIC: &[u8; 15] = b"{\"heaplab_run\":";

/// How many bytes are looked at to tell text from binary.
const SNIFF: usize = 512;

/// What a file is, as far as its first bytes tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A binary instance or placement (`HLBIN\0`).
    Hlbin,
    /// A trace (`HLTRACE\0`).
    Trace,
    /// A placed file (`HLPLACE\0`).
    Placed,
    /// The index of a traced run of several processes (`STEM.hlrun`).
    RunIndex,
    /// Text (no NUL bytes in its first bytes, and UTF-8 at its start): a CSV file of some kind.
    Text,
    /// Nothing at all.
    Empty,
    /// Binary data with no heaplab magic.
    Unknown,
}

impl FileKind {
    /// The kind in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Hlbin => "a heaplab binary instance (.hlbin)",
            FileKind::Trace => "a heaplab trace (.hltrace, from `heaplab trace`)",
            FileKind::Placed => "a heaplab placed file (.hlplaced, from `heaplab replay`)",
            FileKind::RunIndex => "the index of a traced run (.hlrun, from `heaplab trace`)",
            FileKind::Text => "text",
            FileKind::Empty => "empty",
            FileKind::Unknown => "binary data in no heaplab format",
        }
    }
}

/// What a command wanted, for the message when a file is of another kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// An instance or placement: CSV or `.hlbin`.
    Instance,
    /// An instance, or a trace to convert to one.
    InstanceOrTrace,
    /// A trace.
    Trace,
    /// A placed file: binary or its CSV export.
    Placed,
}

impl Wanted {
    fn describe(self) -> &'static str {
        match self {
            Wanted::Instance => "an instance or placement (CSV or .hlbin)",
            Wanted::InstanceOrTrace => "an instance (CSV or .hlbin) or a trace (.hltrace)",
            Wanted::Trace => "a heaplab trace (a file written by `heaplab trace`)",
            Wanted::Placed => "a placed file (from `heaplab replay`, or its CSV export)",
        }
    }

    /// The heading of the message: kept as the readers have always said it, so scripts that
    /// look for "not a heaplab trace" still find it.
    fn heading(self) -> &'static str {
        match self {
            Wanted::Instance | Wanted::InstanceOrTrace => "not an instance",
            Wanted::Trace => "not a heaplab trace",
            Wanted::Placed => "not a heaplab placed file",
        }
    }
}

/// Reads a regular file through positioned reads, so a second reader of the same file
/// ([`Input::reread`]) has its own position.
struct At {
    file: Arc<File>,
    pos: u64,
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

enum Source {
    /// A regular file: rereadable.
    Regular(At),
    /// A pipe, FIFO, terminal or character device: read once, in order.
    Stream(File),
    /// Nothing beyond the look-ahead ([`Input::from_bytes`]).
    Nothing,
    /// The decompressed bytes of a zstd-compressed source.
    Zstd(Box<dyn Read + Send>),
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::Regular(a) => a.read(buf),
            Source::Stream(f) => f.read(buf),
            Source::Nothing => Ok(0),
            Source::Zstd(z) => z.read(buf),
        }
    }
}

/// An opened input: a buffered reader (it implements [`BufRead`]) that remembers its name, and
/// what its first bytes say it is.
pub struct Input {
    name: String,
    /// Bytes read ahead by [`Input::kind`] and not yet handed out, from `at`.
    head: Vec<u8>,
    at: usize,
    inner: BufReader<Source>,
    /// The file and where reading started, for [`Input::reread`]; `None` for streams.
    regular: Option<(Arc<File>, u64)>,
    len: Option<u64>,
    /// Whether the stream ended while looking ahead.
    ended: bool,
    /// Whether the bytes are decompressed from zstd (`len` is then the compressed size).
    compressed: bool,
    kind: Option<FileKind>,
}

impl Input {
    /// Opens `path`, or standard input for `-`. Directories and missing files are errors that
    /// name the path.
    pub fn open(path: &str) -> Result<Input, InputError> {
        let file = if path == "-" {
            use std::os::fd::AsFd;
            // A descriptor of our own for fd 0, so a regular file given as `< file` can be
            // reread and everything else reads exactly like standard input.
            let fd = std::io::stdin().as_fd().try_clone_to_owned();
            File::from(fd.map_err(|e| InputError::file(path, K::Io, format!("cannot read standard input: {e}")))?)
        } else {
            File::open(path).map_err(|e| InputError::file(path, K::Io, format!("cannot open: {e}")))?
        };
        let meta = file.metadata().map_err(|e| InputError::file(path, K::Io, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            return Err(InputError::file(path, K::Io, "is a directory, expected a file"));
        }
        let (source, regular, len) = if meta.is_file() {
            let file = Arc::new(file);
            // Standard input may have been read from already: start where it stands.
            let start = if path == "-" {
                use std::io::Seek;
                (&*file).stream_position().unwrap_or(0)
            } else {
                0
            };
            (Source::Regular(At { file: file.clone(), pos: start }), Some((file, start)), Some(meta.len()))
        } else {
            (Source::Stream(file), None, None)
        };
        Ok(Input {
            name: path.to_string(),
            head: Vec::new(),
            at: 0,
            inner: BufReader::with_capacity(1 << 16, source),
            regular,
            len,
            ended: false,
            compressed: false,
            kind: None,
        })
    }

    /// A reader of in-memory bytes under `name` (tests, and readers of data already loaded).
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Input {
        let len = bytes.len() as u64;
        Input {
            name: name.to_string(),
            head: bytes,
            at: 0,
            inner: BufReader::new(Source::Nothing),
            regular: None,
            len: Some(len),
            ended: true,
            compressed: false,
            kind: None,
        }
    }

    /// Whether the file is zstd-compressed (its bytes are read decompressed).
    pub fn is_compressed(&self) -> bool {
        self.compressed
    }

    /// Replaces the source by a zstd decoder over the look-ahead and the rest of the source.
    fn decompress(&mut self) -> Result<(), InputError> {
        let ahead = std::io::Cursor::new(self.head.split_off(self.at));
        let rest = std::mem::replace(&mut self.inner, BufReader::new(Source::Nothing));
        let dec = zstd::stream::read::Decoder::new(ahead.chain(rest))
            .map_err(|e| InputError::file(&self.name, K::Io, format!("cannot decompress (zstd): {e}")))?;
        self.inner = BufReader::with_capacity(1 << 16, Source::Zstd(Box::new(dec)));
        (self.head, self.at, self.ended, self.compressed) = (Vec::new(), 0, false, true);
        Ok(())
    }

    /// The path as the user gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's size on disk when it is a regular file (compressed, when it is).
    pub fn len(&self) -> Option<u64> {
        self.len
    }

    /// Whether the file is a regular file known to be empty.
    pub fn is_empty(&self) -> bool {
        self.len == Some(0)
    }

    /// The first line of the look-ahead (without its line end), after [`Input::kind`]: `None`
    /// when the look-ahead holds no complete line. Nothing is consumed.
    pub fn first_line(&mut self) -> Result<Option<&[u8]>, InputError> {
        self.kind()?;
        let ahead = &self.head[self.at..];
        Ok(ahead.iter().position(|&b| b == b'\n').map(|n| &ahead[..n]))
    }

    /// What the file is, from its first bytes (read ahead, not consumed: the reader handed on
    /// still starts at the first byte). Only valid before anything was read.
    pub fn kind(&mut self) -> Result<FileKind, InputError> {
        if let Some(k) = self.kind {
            return Ok(k);
        }
        loop {
            while self.head.len() < SNIFF && !self.ended {
                let mut chunk = [0u8; SNIFF];
                match self.inner.read(&mut chunk[..SNIFF - self.head.len()]) {
                    Ok(0) => self.ended = true,
                    Ok(n) => self.head.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let what = if self.compressed { "cannot decompress (zstd)" } else { "cannot read" };
                        return Err(InputError::file(&self.name, K::Io, format!("{what}: {e}")));
                    }
                }
            }
            // Compressed once, by heaplab or by hand: what counts is what it holds.
            if self.compressed || !self.head[self.at..].starts_with(ZSTD_MAGIC) {
                break;
            }
            self.decompress()?;
        }
        let h = &self.head[self.at..];
        let k = if h.starts_with(HLBIN_MAGIC) {
            FileKind::Hlbin
        } else if h.starts_with(TRACE_MAGIC) {
            FileKind::Trace
        } else if h.starts_with(PLACED_MAGIC) {
            FileKind::Placed
        } else if h.starts_with(RUN_MAGIC) {
            FileKind::RunIndex
        } else if h.is_empty() {
            FileKind::Empty
        } else if looks_like_text(h) {
            FileKind::Text
        } else {
            FileKind::Unknown
        };
        self.kind = Some(k);
        Ok(k)
    }

    /// A second reader of the same file from the same start, for readers that need two passes.
    /// Only a regular file has one; for a pipe the error says so.
    pub fn reread(&self) -> Result<Input, InputError> {
        let Some((file, start)) = &self.regular else {
            return Err(InputError::file(
                &self.name,
                K::Io,
                "needs a regular (seekable) file, not a pipe: it is read twice; save it to a file first",
            ));
        };
        Ok(Input {
            name: self.name.clone(),
            head: Vec::new(),
            at: 0,
            inner: BufReader::with_capacity(1 << 16, Source::Regular(At { file: file.clone(), pos: *start })),
            regular: self.regular.clone(),
            len: self.len,
            ended: false,
            compressed: false,
            // Told again: a compressed file needs its decoder again.
            kind: None,
        })
    }

    /// The error for a file of the wrong kind: what it is, what was wanted, and the command
    /// that turns one into the other where there is one.
    pub fn wrong_kind(&mut self, wanted: Wanted) -> InputError {
        let found = self.kind().unwrap_or(FileKind::Unknown);
        let name = self.name.clone();
        let what = match found {
            FileKind::Text => {
                let first = self.head[self.at..].split(|&b| b == b'\n').next().unwrap_or(&[]);
                format!("it is text (first line {})", quoted(&String::from_utf8_lossy(first)))
            }
            FileKind::Empty => "the file is empty".to_string(),
            FileKind::Unknown => {
                let shown: Vec<String> = self.head[self.at..].iter().take(8).map(|b| format!("{b:02x}")).collect();
                let near = if self.head[self.at..].starts_with(b"HL") { "a damaged or unknown heaplab magic: " } else { "" };
                format!(
                    "it is binary data in no heaplab format ({near}it starts with bytes {}; heaplab files start with HLBIN, HLTRACE or HLPLACE)",
                    shown.join(" ")
                )
            }
            k => format!("it is {}", k.describe()),
        };
        let hint = match (found, wanted) {
            (FileKind::Trace, Wanted::Instance) => format!("; convert it first: heaplab convert {name} -o instance.csv"),
            (FileKind::Trace, Wanted::Placed) => format!("; replay it first: heaplab replay {name} -a glibc -o run.hlplaced"),
            (FileKind::Placed, Wanted::Instance | Wanted::InstanceOrTrace) => {
                format!("; `heaplab frag {name}` measures it, `heaplab convert {name} -o jobs.csv` exports its jobs")
            }
            (FileKind::Hlbin | FileKind::Text, Wanted::Trace) => {
                "; instances and placements cannot be replayed or described as traces".to_string()
            }
            (FileKind::Hlbin, Wanted::Placed) => "; make one with `heaplab replay` from a trace".to_string(),
            (FileKind::RunIndex, _) => format!("; `heaplab trace-info {name}` lists its processes, each with its own trace file"),
            _ => String::new(),
        };
        InputError::file(&name, K::Format, format!("{}: {what}; expected {}{hint}", wanted.heading(), wanted.describe()))
    }
}

/// Text has no NUL byte in the look-ahead and starts with UTF-8 text (no control characters
/// but tab and line ends in its first 8 bytes, where a magic would be). An invalid byte further
/// on is left to the text reader, which names its line.
fn looks_like_text(b: &[u8]) -> bool {
    if b.contains(&0) {
        return false;
    }
    let start = &b[..b.len().min(8)];
    let text = match std::str::from_utf8(start) {
        Ok(t) => t,
        // A character cut by the 8-byte window.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&start[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => return false,
    };
    !text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\r' | '\n'))
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at < self.head.len() {
            let n = buf.len().min(self.head.len() - self.at);
            buf[..n].copy_from_slice(&self.head[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

impl BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at < self.head.len() {
            return Ok(&self.head[self.at..]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if self.at < self.head.len() {
            self.at = (self.at + amt).min(self.head.len());
        } else {
            self.inner.consume(amt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_by_magic_and_the_bytes_stay_unread() {
        let cases: [(&[u8], FileKind); 7] = [
            (b"HLBIN\0\x01\0", FileKind::Hlbin),
            (b"HLTRACE\0rest", FileKind::Trace),
            (b"HLPLACE\0rest", FileKind::Placed),
            (b"id,lower,upper,size\n", FileKind::Text),
            (b"", FileKind::Empty),
            (b"HLBIX\0\x01\0", FileKind::Unknown),
            (b"\xff\xfe\x00", FileKind::Unknown),
        ];
        assert_eq!(Input::from_bytes("x", b"id,lower,\xff".to_vec()).kind().unwrap(), FileKind::Text);
        assert_eq!(Input::from_bytes("x", b"\x1f\x8b\x08".to_vec()).kind().unwrap(), FileKind::Unknown);
        for (bytes, kind) in cases {
            let mut i = Input::from_bytes("x", bytes.to_vec());
            assert_eq!(i.kind().unwrap(), kind, "{bytes:?}");
            let mut all = Vec::new();
            i.read_to_end(&mut all).unwrap();
            assert_eq!(all, bytes);
        }
        let e = Input::from_bytes("x.bin", b"HLBIX\0\x01\0".to_vec()).wrong_kind(Wanted::Trace).to_string();
        assert!(e.contains("not a heaplab trace") && e.contains("damaged or unknown heaplab magic"), "{e}");
    }

    #[test]
    fn a_pipe_is_read_once_and_cannot_be_reread() {
        let (r, mut w) = std::io::pipe().unwrap();
        use std::io::Write;
        let writer = std::thread::spawn(move || {
            // Dribbled bytes: the look-ahead must wait for the whole magic.
            for b in b"HLTRACE\0tail" {
                w.write_all(&[*b]).unwrap();
            }
        });
        use std::os::fd::OwnedFd;
        let fd: OwnedFd = r.into();
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        let mut i = Input::open(&path).unwrap();
        drop(fd);
        assert_eq!(i.kind().unwrap(), FileKind::Trace);
        writer.join().unwrap();
        assert!(i.reread().err().expect("a pipe cannot be reread").to_string().contains("needs a regular (seekable) file"));
        let mut all = Vec::new();
        i.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"HLTRACE\0tail");
    }
}
