//! The one seeded PRNG of heaplab: xoshiro256** seeded by splitmix64, and [`mix`] to derive
//! per-subproblem seeds. The instance generators and the planner's stochastic searches both
//! draw from it, so a `--seed` means the same streams everywhere.
//!
//! It is written out here rather than taken from a dependency because the streams are part of
//! what `--seed` promises: a dependency's streams may change between versions. The tests pin
//! outputs; a change that moves them changes every seeded result.

/// xoshiro256** generator: small, fast, and stable forever.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator from any 64-bit seed (0 included: splitmix64 never yields an all-zero state).
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in `[0, n)` for `n > 0` (Lemire's multiply-shift; the bias, below n / 2^64, does
    /// not matter here and the method needs no loop).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[lo, hi]` (inclusive, `lo <= hi`).
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `num / den`.
    #[inline]
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// Shuffles `v` uniformly in place (Fisher–Yates, drawing from the last position down).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for k in (1..v.len()).rev() {
            v.swap(k, self.below(k as u64 + 1) as usize);
        }
    }
}

/// A seed derived from `seed` and a tag (an iteration number, a subproblem index, …): the
/// splitmix64 finaliser of their combination. Subproblems seeded this way draw the same numbers
/// whichever thread runs them and in whatever order, which keeps parallel stochastic algorithms
/// reproducible from one `--seed`.
pub fn mix(seed: u64, tag: u64) -> u64 {
    let mut z = seed ^ tag.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_mul(0xd6e8_feb8_6659_fd93);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values taken from the two copies this crate replaced (the planner's and the
    /// generators'): they must never change.
    #[test]
    fn streams_are_pinned() {
        let mut r = Rng::new(0);
        assert_eq!([r.next_u64(), r.next_u64(), r.next_u64(), r.next_u64()], [0x99ec5f36cb75f2b4, 0xbf6e1f784956452a, 0x1a5f849d4933e6e0, 0x6aa594f1262d2d2c]);
        let mut r = Rng::new(1);
        assert_eq!([r.next_u64(), r.next_u64()], [0xb3f2af6d0fc710c5, 0x853b559647364cea]);
        let mut r = Rng::new(0x5eed_f00d);
        assert_eq!(r.next_u64(), 0x7c873a5e096e5982);
        let mut r = Rng::new(42);
        assert_eq!((0..6).map(|_| r.below(1000)).collect::<Vec<_>>(), [83, 378, 680, 924, 991, 769]);
        assert_eq!(r.unit(), 0.7192585778779156);
        let mut v: Vec<u32> = (0..10).collect();
        r.shuffle(&mut v);
        assert_eq!(v, [0, 3, 2, 5, 9, 1, 7, 4, 6, 8]);
        let mut r = Rng::new(42);
        assert_eq!((0..6).map(|_| r.range(10, 1009)).collect::<Vec<_>>(), [93, 388, 690, 934, 1001, 779]);
        let mut r = Rng::new(42);
        assert_eq!((0..6).map(|_| r.chance(1, 2)).collect::<Vec<_>>(), [true, true, false, false, false, false]);
        assert_eq!([mix(0, 0), mix(7, 3)], [0x6ae4947ecd406822, 0x08e54f6ee329ae60]);
    }
}
