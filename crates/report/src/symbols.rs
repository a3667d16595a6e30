//! Symbolisation: a trace's call sites (absolute return addresses, innermost first) to
//! function, file and line, from the executable mappings the trace's trailer records.
//!
//! Each address is looked up once, at `address - 1` (a return address points after the call),
//! in the module holding it: its DWARF (line tables and inlined calls, through `addr2line`),
//! found in the file itself or beside it on disk (`/usr/lib/debug/.build-id/xx/yyyy.debug`, the
//! `.gnu_debuglink` name in the file's directory, its `.debug/` and `/usr/lib/debug`, with the
//! `.gnu_debugaltlink` supplementary file dwz leaves), else its symbol tables (`.symtab`,
//! `.dynsym`): function names only. Names are demangled (C++ and Rust). An inlined call becomes
//! several frames at one address, innermost first. Modules are loaded once, when first needed.
//! What could not be done (no debug info, a module gone or changed since the trace) becomes a
//! note for the report. Frames' module and offset are those of `heaplab_trace::context`, so
//! they name the same code in every run.

use crate::model::Frame;
use gimli::{EndianRcSlice, RunTimeEndian};
use heaplab_trace::context::{basename, ModuleMap};
use heaplab_trace::reader::Module;
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

type Reader = EndianRcSlice<RunTimeEndian>;

/// Where separate debug files are installed (Debian's -dbgsym packages, other distributions'
/// -debuginfo ones).
const DEBUG_ROOT: &str = "/usr/lib/debug";

/// A symbol of a module's tables: `[addr, addr + size)` in the file's address space.
struct Symbol {
    addr: u64,
    size: u64,
    name: String,
}

/// One module's symbols, loaded once.
struct Loaded {
    /// DWARF, when the file or a separate debug file has it.
    dwarf: Option<addr2line::Context<Reader>>,
    /// Function symbols, sorted by address.
    symbols: Vec<Symbol>,
    /// Loadable segments: (file offset, file size, address), to turn file offsets into the
    /// addresses DWARF and the symbol tables use.
    segments: Vec<(u64, u64, u64)>,
}

impl Loaded {
    /// The address in the file's own address space of the byte at `offset` in the file.
    fn address_of(&self, offset: u64) -> Option<u64> {
        self.segments.iter().find(|(o, n, _)| offset >= *o && offset < o + n).map(|(o, _, a)| offset - o + a)
    }

    fn symbol(&self, addr: u64) -> Option<&Symbol> {
        let i = self.symbols.partition_point(|s| s.addr <= addr);
        let s = self.symbols.get(i.checked_sub(1)?)?;
        (addr < s.addr + s.size.max(1)).then_some(s)
    }
}

/// What became of one module.
enum State {
    Ready(Box<Loaded>),
    /// It could not be read; the reason is in the notes.
    Missing,
}

/// Symbolises the addresses of one trace (see the module notes).
pub struct Symbolizer {
    map: ModuleMap,
    /// Modules by path, loaded when first needed.
    modules: HashMap<String, State>,
    /// Frames of each address looked up, as indices into `frames`.
    by_address: HashMap<u64, Vec<u32>>,
    frames: Vec<Frame>,
    frame_ids: HashMap<Frame, u32>,
    notes: Vec<String>,
    /// Modules whose functions came from symbol tables only.
    no_debug: Vec<String>,
    /// When the trace started (wall clock, ns since the epoch): a module modified later may
    /// not be the code that ran.
    trace_start_real_ns: u64,
}

impl Symbolizer {
    /// A symboliser for a trace with these modules (the trailer's), started at
    /// `trace_start_real_ns` (the header's wall clock; 0 when unknown).
    pub fn new(modules: &[Module], trace_start_real_ns: u64) -> Symbolizer {
        Symbolizer {
            map: ModuleMap::new(modules),
            modules: HashMap::new(),
            by_address: HashMap::new(),
            frames: Vec::new(),
            frame_ids: HashMap::new(),
            notes: Vec::new(),
            no_debug: Vec::new(),
            trace_start_real_ns,
        }
    }

    /// The module map (for stable keys).
    pub fn map(&self) -> &ModuleMap {
        &self.map
    }

    /// The frames of a stack (innermost first), as indices into [`Symbolizer::frames`]; each
    /// address is looked up once per symboliser.
    pub fn stack(&mut self, addresses: &[u64]) -> Vec<u32> {
        let mut out = Vec::with_capacity(addresses.len());
        for &a in addresses {
            if !self.by_address.contains_key(&a) {
                let frames: Vec<u32> = self.lookup(a).into_iter().map(|f| self.intern(f)).collect();
                self.by_address.insert(a, frames);
            }
            out.extend_from_slice(&self.by_address[&a]);
        }
        out
    }

    fn intern(&mut self, f: Frame) -> u32 {
        if let Some(&i) = self.frame_ids.get(&f) {
            return i;
        }
        let i = self.frames.len() as u32;
        self.frames.push(f.clone());
        self.frame_ids.insert(f, i);
        i
    }

    /// Every frame handed out so far, and the notes on what was missing.
    pub fn finish(mut self) -> (Vec<Frame>, Vec<String>) {
        if !self.no_debug.is_empty() {
            self.no_debug.sort();
            self.notes.push(format!(
                "no debug info for {}: function names from the symbol table only (no files or lines, no inlined calls); install the -dbgsym (Debian) or -debuginfo package, or build with -g",
                self.no_debug.join(", ")
            ));
        }
        (self.frames, self.notes)
    }

    /// The frames of one address, innermost first (one frame, unnamed, when nothing is known).
    fn lookup(&mut self, addr: u64) -> Vec<Frame> {
        let Some(m) = self.map.find(addr).cloned() else {
            return vec![Frame { module: String::new(), offset: addr, ..Frame::default() }];
        };
        let offset = addr - m.start + m.offset;
        let module = String::from_utf8_lossy(basename(&m.path)).into_owned();
        let base = Frame { module: module.clone(), offset, ..Frame::default() };
        if !self.modules.contains_key(&m.path) {
            let state = self.load(&m.path, &module);
            self.modules.insert(m.path.clone(), state);
        }
        let State::Ready(loaded) = &self.modules[&m.path] else { return vec![base] };
        // The call instruction ends just before the return address.
        let Some(probe) = loaded.address_of(offset).map(|a| a.saturating_sub(1)) else { return vec![base] };
        let mut out = Vec::new();
        if let Some(ctx) = &loaded.dwarf {
            if let Ok(mut it) = ctx.find_frames(probe).skip_all_loads() {
                while let Ok(Some(f)) = it.next() {
                    let function = f.function.as_ref().and_then(|n| n.demangle().ok()).map(Cow::into_owned).unwrap_or_default();
                    let (file, line) = f.location.as_ref().map_or((String::new(), 0), |l| (l.file.unwrap_or("").to_string(), l.line.unwrap_or(0)));
                    out.push(Frame { function, file, line, inlined: true, ..base.clone() });
                }
            }
        }
        if let Some(last) = out.last_mut() {
            last.inlined = false;
        }
        let symbol = || loaded.symbol(probe).map(|s| addr2line::demangle_auto(Cow::from(s.name.as_str()), None).into_owned());
        match out.first_mut() {
            None => out.push(Frame { function: symbol().unwrap_or_default(), ..base }),
            Some(f) if f.function.is_empty() => f.function = symbol().unwrap_or_default(),
            _ => {}
        }
        out
    }

    /// Loads a module's symbols; a problem becomes a note.
    fn load(&mut self, path: &str, module: &str) -> State {
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => {
                self.notes.push(format!("{module}: cannot read {path} ({e}): its frames are shown as offsets; it was removed or moved since the trace"));
                return State::Missing;
            }
        };
        if let Some(modified) = std::fs::metadata(path).ok().and_then(|m| m.modified().ok()) {
            let ns = modified.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            if self.trace_start_real_ns > 0 && ns > self.trace_start_real_ns {
                self.notes.push(format!("{module}: {path} changed after the trace was recorded: its names may not be those of the code that ran"));
            }
        }
        let Ok(file) = object::File::parse(&*data) else {
            self.notes.push(format!("{module}: {path} is not an object file this report reads: its frames are shown as offsets"));
            return State::Missing;
        };
        let segments = file.segments().map(|s| {
            let (o, n) = s.file_range();
            (o, n, s.address())
        });
        let mut loaded = Loaded { dwarf: None, symbols: Vec::new(), segments: segments.collect() };
        add_symbols(&file, &mut loaded.symbols);
        let has_dwarf = |f: &object::File| f.section_by_name(".debug_info").is_some_and(|s| s.size() > 0);
        if has_dwarf(&file) {
            loaded.dwarf = load_dwarf(&file, Path::new(path));
        } else if let Some((debug_path, debug)) = separate_debug(&file, Path::new(path)) {
            if let Ok(df) = object::File::parse(&*debug) {
                add_symbols(&df, &mut loaded.symbols);
                if has_dwarf(&df) {
                    loaded.dwarf = load_dwarf(&df, &debug_path);
                }
            }
        }
        if loaded.dwarf.is_none() {
            self.no_debug.push(module.to_string());
        }
        loaded.symbols.sort_by_key(|s| (s.addr, std::cmp::Reverse(s.size)));
        loaded.symbols.dedup_by_key(|s| s.addr);
        State::Ready(Box::new(loaded))
    }
}

/// The function symbols of a file's tables.
fn add_symbols(file: &object::File, out: &mut Vec<Symbol>) {
    for s in file.symbols().chain(file.dynamic_symbols()) {
        if s.kind() == object::SymbolKind::Text && s.address() != 0 {
            if let Ok(name) = s.name() {
                if !name.is_empty() {
                    out.push(Symbol { addr: s.address(), size: s.size(), name: name.to_string() });
                }
            }
        }
    }
}

/// The DWARF of `file` (at `path`, for its supplementary file), or `None` when it cannot be
/// read.
fn load_dwarf(file: &object::File, path: &Path) -> Option<addr2line::Context<Reader>> {
    let endian = if file.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
    let section = |f: &object::File, name: &str| -> Reader {
        let data = f.section_by_name(name).and_then(|s| s.uncompressed_data().ok()).unwrap_or(Cow::Borrowed(&[]));
        EndianRcSlice::new(Rc::from(&*data), endian)
    };
    let mut dwarf = gimli::Dwarf::load(|id| Ok::<_, gimli::Error>(section(file, id.name()))).ok()?;
    if let Ok(Some((name, _))) = file.gnu_debugaltlink() {
        let name = Path::new(std::str::from_utf8(name).ok()?);
        let sup = if name.is_absolute() { name.to_path_buf() } else { path.parent()?.join(name) };
        if let Ok(data) = std::fs::read(&sup) {
            if let Ok(sf) = object::File::parse(&*data) {
                let _ = dwarf.load_sup(|id| Ok::<_, gimli::Error>(section(&sf, id.name())));
            }
        }
    }
    addr2line::Context::from_dwarf(dwarf).ok()
}

/// A separate debug file for `file` at `path`: by build id under [`DEBUG_ROOT`], else by its
/// debug link.
fn separate_debug(file: &object::File, path: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let mut candidates = Vec::new();
    if let Ok(Some(id)) = file.build_id() {
        if id.len() > 1 {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            candidates.push(Path::new(DEBUG_ROOT).join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..])));
        }
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        if let (Ok(name), Some(dir)) = (std::str::from_utf8(name), path.parent()) {
            candidates.push(dir.join(name));
            candidates.push(dir.join(".debug").join(name));
            candidates.push(Path::new(DEBUG_ROOT).join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
        }
    }
    candidates.into_iter().filter(|c| c.as_path() != path).find_map(|c| std::fs::read(&c).ok().map(|d| (c, d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary's own code: it has DWARF (tests build with debug info).
    fn own_module() -> Vec<Module> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap().to_string_lossy().into_owned();
        maps.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() < 6 || !f[1].contains('x') || f[5] != exe {
                    return None;
                }
                let (a, b) = f[0].split_once('-')?;
                Some(Module { start: u64::from_str_radix(a, 16).ok()?, end: u64::from_str_radix(b, 16).ok()?, offset: u64::from_str_radix(f[2], 16).ok()?, path: exe.clone() })
            })
            .collect()
    }

    #[inline(never)]
    fn marker_function() -> u64 {
        // The return address of a call inside this function is inside it.
        let f: fn() -> u64 = marker_function;
        std::hint::black_box(f as usize as u64) + 1
    }

    #[test]
    fn an_address_in_this_binary_gets_its_function_and_file() {
        let modules = own_module();
        assert!(!modules.is_empty());
        let mut s = Symbolizer::new(&modules, 0);
        let addr = marker_function as fn() -> u64 as usize as u64 + 4 + 1;
        let one = s.stack(&[addr]);
        let stack = s.stack(&[addr, addr]);
        let (frames, _notes) = s.finish();
        assert_eq!(stack.len(), 2 * one.len(), "an address is looked up once, its frames reused");
        // Inlined calls (black_box) come first; the function itself is the outermost frame.
        let f = &frames[*one.last().unwrap() as usize];
        assert!(!f.inlined && one[..one.len() - 1].iter().all(|&k| frames[k as usize].inlined));
        assert!(f.function.contains("marker_function"), "{f:?}");
        assert!(f.file.ends_with("symbols.rs"), "{f:?}");
        assert!(f.line > 0);
        assert_eq!(f.offset, addr - modules.iter().find(|m| m.start <= addr && addr < m.end).map(|m| m.start - m.offset).unwrap());
    }

    #[test]
    fn unknown_and_missing_modules_are_offsets_and_a_note() {
        let modules = vec![Module { start: 0x1000, end: 0x2000, offset: 0, path: "/nonexistent/libgone.so.1".into() }];
        let mut s = Symbolizer::new(&modules, 0);
        let a = s.stack(&[0x1234]);
        let b = s.stack(&[0x9999]);
        let (frames, notes) = s.finish();
        assert_eq!(frames[a[0] as usize], Frame { module: "libgone.so.1".into(), offset: 0x234, ..Frame::default() });
        assert_eq!(frames[b[0] as usize].offset, 0x9999);
        assert!(notes.iter().any(|n| n.contains("libgone.so.1") && n.contains("removed or moved")), "{notes:?}");
    }
}
