//! Groups the fallback allocator would lay out as the grouped allocator does. A size-class
//! allocator (jemalloc) serves each small size class from slabs of its own, one object after
//! another in allocation order while nothing is freed: a group whose objects all take one class,
//! exactly the class's size, with nothing else of the program in that class and nothing freed,
//! is placed object for object as the group's bump allocation would place it. Serving such
//! groups changes no line the program touches and costs the runtime's start-up and its
//! allocation path on every object (perimeter: one 48-byte class, 2–6% slower than jemalloc
//! alone). When every group of a file is one, `heaplab run` runs the program on the fallback
//! alone. One such group among others is served all the same: once the runtime is loaded,
//! identifying its objects and handing them to the fallback costs about what bumping them
//! does (health's villages, 192 bytes each: 4.6 M more instructions left to jemalloc, the same
//! misses).
//!
//! Everything is judged from the profile's contexts: their smallest and largest requests and
//! their frees ([`crate::ObjectSizes`]), and where the run-time identification sends each
//! context ([`crate::table::destinations`]). A context whose sizes are unknown (a file written before
//! heaplab recorded them) could share any class, so nothing is declined then. HALO serves every
//! group; this is heaplab's addition.

use crate::table::destinations;
use crate::{Groups, ObjectSizes};

/// The size classes of a fallback allocator heaplab knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeClasses {
    /// jemalloc 5 on x86-64 (16-byte quantum): 8, then multiples of 16 up to 128, then four
    /// classes per doubling (160, 192, 224, 256, 320, …), as its manual's size-class table gives.
    Jemalloc,
}

impl SizeClasses {
    /// The classes of the fallback named `name` (as `heaplab run --fallback` names it), when
    /// heaplab knows them: jemalloc's. glibc keeps a header beside each object (a group always
    /// packs tighter); tcmalloc's and mimalloc's classes differ by version and are not modelled.
    pub fn of(name: &str) -> Option<SizeClasses> {
        (name == "jemalloc").then_some(SizeClasses::Jemalloc)
    }

    /// The largest class served from slabs in allocation order (jemalloc's small classes with
    /// 4 KiB pages); larger requests get extents of their own, page-aligned.
    pub fn slab_max(self) -> u64 {
        match self {
            SizeClasses::Jemalloc => 14336,
        }
    }

    /// The class serving a request of `size` bytes: (the largest size in it, the largest size
    /// of the class below, 0 for the first).
    pub fn class(self, size: u64) -> (u64, u64) {
        match self {
            SizeClasses::Jemalloc => {
                if size <= 8 {
                    return (8, 0);
                }
                if size <= 128 {
                    let c = size.div_ceil(16) * 16;
                    return (c, if c == 16 { 8 } else { c - 16 });
                }
                // size in (2^n, 2^(n+1)], n ≥ 7: spacing 2^(n-2).
                let n = 63 - (size - 1).leading_zeros() as u64;
                let spacing = 1u64 << (n - 2);
                let c = size.div_ceil(spacing) * spacing;
                (c, c - spacing)
            }
        }
    }
}

/// A group the fallback would lay out as the grouped allocator does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Declined {
    /// Index into [`Groups::groups`].
    pub group: u32,
    /// The one size class of its objects (its largest size, bytes).
    pub class: u64,
}

/// The sizes of group `k`'s member contexts' objects, and how many were freed (`None` when a
/// member's are unknown or it has no objects).
pub fn group_sizes(g: &Groups, k: usize) -> Option<ObjectSizes> {
    let members = &g.groups.get(k)?.members;
    let sizes: Option<Vec<ObjectSizes>> = members.iter().map(|&m| g.contexts.get(m as usize)?.sizes).collect();
    let sizes = sizes?;
    Some(ObjectSizes { min: sizes.iter().map(|z| z.min).min()?, max: sizes.iter().map(|z| z.max).max()?, freed: sizes.iter().map(|z| z.freed).sum() })
}

/// The groups of `g` that the fallback with `classes` lays out as their group would: every
/// object the group would serve in one class and exactly that class's size in the group (what
/// bump allocation gives it: its size rounded up to 8 bytes), none of them freed, and no other
/// object of the profile in that class.
pub fn declined(g: &Groups, classes: SizeClasses) -> Vec<Declined> {
    if g.groups.is_empty() || g.contexts.iter().any(|c| c.objects > 0 && c.sizes.is_none()) {
        return Vec::new();
    }
    let dest = destinations(g);
    let mut out = Vec::new();
    for k in 0..g.groups.len() as u32 {
        let mine = || g.contexts.iter().zip(&dest).filter(|(c, d)| **d == Some(k) && c.objects > 0).map(|(c, _)| c.sizes.unwrap());
        let (Some(lo), Some(hi)) = (mine().map(|z| z.min).min(), mine().map(|z| z.max).max()) else { continue };
        if mine().any(|z| z.freed > 0) || hi > g.params.max_object_size {
            continue;
        }
        let (class, below) = classes.class(hi);
        if class > classes.slab_max() {
            continue;
        }
        // Every size from lo to hi rounds (to 8) to the class's size.
        if classes.class(lo).0 != class || lo.max(1).next_multiple_of(8) != class {
            continue;
        }
        let shared = g.contexts.iter().zip(&dest).any(|(c, d)| *d != Some(k) && c.objects > 0 && c.sizes.is_some_and(|z| z.min <= class && z.max > below));
        if !shared {
            out.push(Declined { group: k, class });
        }
    }
    out
}

#[cfg(test)]
mod tests;
