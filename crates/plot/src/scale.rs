//! Axis ticks and human-readable numbers: addresses step by powers of two and print in
//! B/KiB/MiB/…, time steps by 1-2-5 × 10^k and prints with K/M/G suffixes.

/// Trims a fixed-point rendering ("1.50" → "1.5", "2.00" → "2").
fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// At most `decimals` decimals, fewer when they are zeros.
pub(crate) fn short(x: f64, decimals: usize) -> String {
    trim(format!("{x:.decimals$}"))
}

/// Bytes with a binary unit: `1536` → "1.5 KiB". Up to two decimals (three significant digits
/// are enough to read a picture).
pub fn bytes(v: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut x = v;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    let dec = if u == 0 || x >= 100.0 { 0 } else { 2 };
    format!("{} {}", short(x, dec), UNITS[u])
}

/// A tick count with a decimal suffix: `1500` → "1.5K", `2000000` → "2M".
pub fn ticks(v: f64) -> String {
    const UNITS: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let mut x = v;
    let mut u = 0;
    while x.abs() >= 1000.0 && u + 1 < UNITS.len() {
        x /= 1000.0;
        u += 1;
    }
    format!("{}{}", short(x, 2), UNITS[u])
}

/// An integer with thousands separators: `1234567` → "1,234,567".
pub fn thousands(n: u128) -> String {
    heaplab_model::units::grouped_wide(n)
}

/// Address ticks on `[0, top]`: multiples of the smallest power of two giving at most `target`
/// intervals, so labels come out as round binary sizes (256 KiB, 512 KiB, …).
pub fn address_ticks(top: f64, target: usize) -> Vec<f64> {
    let target = target.max(1) as f64;
    let mut step = 1.0f64;
    while top / step > target {
        step *= 2.0;
    }
    (0..)
        .map(|k| k as f64 * step)
        .take_while(|&v| v <= top)
        .collect()
}

/// Time ticks on `[lo, hi]`: multiples of the smallest 1-2-5 × 10^k step (at least one tick)
/// giving at most `target` intervals.
pub fn time_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let target = target.max(1) as f64;
    let range = (hi - lo).max(1.0);
    let mut mag = 1.0f64;
    let step = 'found: loop {
        for m in [1.0, 2.0, 5.0] {
            if range / (m * mag) <= target {
                break 'found m * mag;
            }
        }
        mag *= 10.0;
    };
    let first = (lo / step).ceil();
    (0..)
        .map(|k| (first + k as f64) * step)
        .take_while(|&v| v <= hi)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_well() {
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(bytes(768.0 * 1024.0), "768 KiB");
        assert_eq!(bytes(1.25 * 1048576.0), "1.25 MiB");
        assert_eq!(bytes(u64::MAX as f64), "16 EiB");
        assert_eq!(ticks(0.0), "0");
        assert_eq!(ticks(1500.0), "1.5K");
        assert_eq!(ticks(2e6), "2M");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }

    #[test]
    fn tick_counts_are_bounded() {
        let t = address_ticks(1_000_000.0, 8);
        assert!(t.len() >= 4 && t.len() <= 9, "{t:?}");
        assert_eq!(t[1], 131072.0);
        let t = time_ticks(3.0, 97.0, 10);
        assert_eq!(
            t,
            vec![10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]
        );
        assert_eq!(time_ticks(0.0, 1.0, 10), vec![0.0, 1.0]);
        assert!(address_ticks(u64::MAX as f64 * 1.1, 8).len() <= 9);
        assert!(time_ticks(0.0, u64::MAX as f64, 8).len() <= 9);
    }
}
