//! A small seeded PRNG (xoshiro256**, seeded by splitmix64) so every stochastic algorithm is
//! reproducible from `--seed` without pulling in a dependency whose streams change by version.

/// xoshiro256** generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator from a 64-bit seed (any value, including 0).
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

    /// Next 64 random bits.
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

    /// Uniform in `[0, n)` (n > 0), without modulo bias worth mentioning for n ≪ 2^64.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Shuffles `v` uniformly in place (Fisher–Yates, drawing from the last position down).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for k in (1..v.len()).rev() {
            v.swap(k, self.below(k as u64 + 1) as usize);
        }
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
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

    /// The streams are part of what `--seed` promises: these values must never change.
    #[test]
    fn streams_are_pinned() {
        let mut r = Rng::new(0);
        assert_eq!([r.next_u64(), r.next_u64(), r.next_u64(), r.next_u64()], [0x99ec5f36cb75f2b4, 0xbf6e1f784956452a, 0x1a5f849d4933e6e0, 0x6aa594f1262d2d2c]);
        let mut r = Rng::new(1);
        assert_eq!([r.next_u64(), r.next_u64()], [0xb3f2af6d0fc710c5, 0x853b559647364cea]);
        let mut r = Rng::new(42);
        assert_eq!((0..6).map(|_| r.below(1000)).collect::<Vec<_>>(), [83, 378, 680, 924, 991, 769]);
        assert_eq!(r.unit(), 0.7192585778779156);
        let mut v: Vec<u32> = (0..10).collect();
        r.shuffle(&mut v);
        assert_eq!(v, [0, 3, 2, 5, 9, 1, 7, 4, 6, 8]);
        assert_eq!([mix(0, 0), mix(7, 3)], [0x6ae4947ecd406822, 0x08e54f6ee329ae60]);
    }
}
