//! Stable call-site keys: a call site's frames as (module file, offset in that file) hashed into
//! one number, so that the same call site has the same key in every run of a program whatever
//! address-space randomisation does. The tracer's site ids are numbered per process and its
//! frames are absolute addresses; layouts, access profiles and the runtime library name
//! allocation contexts by this key instead.
//!
//! The rule (the C runtime library and the valgrind access tool compute it too, and must agree):
//! - a frame inside a file mapping `[start, end)` at file offset `off`, of the file whose last
//!   path component is `base`: `fnv1a64(base) ^ ((addr - start + off) * 0x9E3779B97F4A7C15)`
//!   (wrapping);
//! - a frame in no file mapping (JIT code, unknown): the address itself (it will not match
//!   across runs, which is the honest answer);
//! - the key of frames `f0, f1, …` (innermost first): `h = KEY_SEED; h = mix(h, key(fi))` for
//!   each, then `h | 1` (0 means "no context").

use crate::reader::Module;

/// Start value of the fold over frame keys.
pub const KEY_SEED: u64 = 0x6a09_e667_f3bc_c909;
/// Multiplier of a frame's file offset.
pub const OFFSET_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of the fold (the same mixer as the tracer's site hash, `native/sites.c`).
pub fn mix(h: u64, v: u64) -> u64 {
    let mut h = h ^ v.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_add(h << 6).wrapping_add(h >> 2);
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The key of a frame at `file_offset` in the file whose last path component is `base`.
pub fn frame_key(base: &[u8], file_offset: u64) -> u64 {
    fnv1a(base) ^ file_offset.wrapping_mul(OFFSET_MUL)
}

/// Folds frame keys (innermost first) into a context key (never 0).
pub fn context_key(frame_keys: impl IntoIterator<Item = u64>) -> u64 {
    frame_keys.into_iter().fold(KEY_SEED, mix) | 1
}

/// The last component of a path.
pub fn basename(path: &str) -> &[u8] {
    let b = path.as_bytes();
    match b.iter().rposition(|&c| c == b'/') {
        Some(i) => &b[i + 1..],
        None => b,
    }
}

/// A process's file mappings, for turning absolute frames into stable keys.
#[derive(Clone, Debug, Default)]
pub struct ModuleMap {
    /// Mappings sorted by start, non-overlapping (a later one wins where they overlap).
    modules: Vec<Module>,
}

impl ModuleMap {
    /// Builds the map from a trace trailer's modules (any order).
    pub fn new(modules: &[Module]) -> ModuleMap {
        let mut modules: Vec<Module> = modules.iter().filter(|m| m.end > m.start).cloned().collect();
        modules.sort_by_key(|m| m.start);
        ModuleMap { modules }
    }

    /// The mapping holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&Module> {
        let i = self.modules.partition_point(|m| m.start <= addr);
        let m = self.modules.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// The stable key of one frame.
    pub fn frame_key(&self, addr: u64) -> u64 {
        match self.find(addr) {
            Some(m) => frame_key(basename(&m.path), addr - m.start + m.offset),
            None => addr,
        }
    }

    /// The stable key of a call site's frames (innermost first).
    pub fn context_key(&self, frames: &[u64]) -> u64 {
        context_key(frames.iter().map(|&a| self.frame_key(a)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(start: u64, end: u64, offset: u64, path: &str) -> Module {
        Module { start, end, offset, path: path.into() }
    }

    #[test]
    fn same_site_same_key_whatever_the_load_address() {
        let a = ModuleMap::new(&[module(0x5555_0000_0000, 0x5555_0001_0000, 0x1000, "/usr/bin/prog"), module(0x7f00_0000_0000, 0x7f00_0010_0000, 0, "/lib/libc.so.6")]);
        let b = ModuleMap::new(&[module(0x7f11_0000_0000, 0x7f11_0010_0000, 0, "/lib/libc.so.6"), module(0x5600_0000_0000, 0x5600_0001_0000, 0x1000, "/opt/prog")]);
        let ka = a.context_key(&[0x5555_0000_0123, 0x7f00_0000_4567]);
        let kb = b.context_key(&[0x5600_0000_0123, 0x7f11_0000_4567]);
        assert_eq!(ka, kb);
        assert_ne!(ka, a.context_key(&[0x5555_0000_0124, 0x7f00_0000_4567]));
        assert_ne!(ka, a.context_key(&[0x5555_0000_0123]));
        assert_eq!(ka & 1, 1);
    }

    #[test]
    fn unmapped_frames_keep_their_address() {
        let m = ModuleMap::new(&[module(0x1000, 0x2000, 0, "/x")]);
        assert_eq!(m.frame_key(0x3000), 0x3000);
        assert_eq!(m.frame_key(0x1fff), frame_key(b"x", 0xfff));
        assert!(m.find(0x2000).is_none());
    }

    #[test]
    fn fnv_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
