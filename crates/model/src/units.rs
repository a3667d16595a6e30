//! Human-readable numbers, written and read the same way by every front end (the CLI, the bench
//! harness, and the coming Python bindings): grouped integers, byte sizes with units, and
//! percentages. Kept here, in the foundation crate, so no front end grows its own variant.

/// `1234567` → `1,234,567`.
pub fn grouped(v: u64) -> String {
    grouped_wide(v as u128)
}

/// [`grouped`] for sums that may pass 2^64 (areas over time).
pub fn grouped_wide(v: u128) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes with a binary unit: `1.50 MiB`.
pub fn bytes(v: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = v as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v} B")
    } else {
        format!("{x:.2} {}", UNITS[u])
    }
}

/// Reads a byte size as a user types it: `1048576`, `1,048,576`, `1_048_576`, `16GiB`, `1.5 MiB`,
/// `512K`. K, M, G, T and the -iB forms are powers of 1024; KB, MB, GB and TB powers of 1000; a
/// trailing `B` is optional. Separators go between groups of three digits only (so `1,5GiB` is
/// an error, not 15 GiB). A fraction is exact (`1.001KB` is 1,001 bytes) and rounded down to
/// whole bytes. The error says what was expected.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | ',' | '_'))).unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim());
    let scale: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(format!("{text:?}: unknown unit {unit:?}; expected B, K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)")),
    };
    let expected = || format!("{text:?}: expected a number of bytes, such as 1048576, 1,048,576, 16GiB or 1.5MiB");
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    // Separators only between groups of three: the first group 1-3 digits, the others 3.
    let groups: Vec<&str> = whole.split([',', '_']).collect();
    let grouped_ok = groups.len() == 1
        || (!groups[0].is_empty() && groups[0].len() <= 3 && groups[1..].iter().all(|g| g.len() == 3));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !grouped_ok || !groups.iter().all(|g| digits(g)) || !digits(frac) || (number.contains('.') && frac.is_empty()) {
        return Err(expected());
    }
    let too_large = || format!("{text:?}: too large (2^64 bytes or more)");
    let mut value: u128 = 0;
    for g in &groups {
        for b in g.bytes() {
            value = value.checked_mul(10).and_then(|v| v.checked_add((b - b'0') as u128)).ok_or_else(too_large)?;
        }
    }
    value = value.checked_mul(scale).ok_or_else(too_large)?;
    // The fraction times the scale, exactly; 24 digits are kept (the largest scale is 2^40, so
    // digits past the 13th cannot move a byte) and the product stays within u128.
    let (mut num, mut den) = (0u128, 1u128);
    for b in frac.bytes().take(24) {
        num = num * 10 + (b - b'0') as u128;
        den *= 10;
    }
    value += num * scale / den;
    u64::try_from(value).map_err(|_| too_large())
}

/// Exact bytes, with the size in a binary unit beside them when that says more:
/// `986,112 B (963.00 KiB)`, `7 B`.
pub fn exact_bytes(v: u64) -> String {
    if v < 1024 {
        format!("{v} B")
    } else {
        format!("{} B ({})", grouped(v), bytes(v))
    }
}

/// Fragmentation in percent of the lower bound (0 when the bound is 0).
pub fn pct(makespan: u64, lower: u64) -> f64 {
    if lower == 0 {
        0.0
    } else {
        (makespan - lower) as f64 * 100.0 / lower as f64
    }
}

/// A percentage figure for tables: two decimals, or two significant digits below 0.01 so that
/// small nonzero figures (common on traced programs) can be told from 0 and from each other.
/// `12.345` → `12.35`, `0.0012117` → `0.0012`.
pub fn percent_figure(f: f64) -> String {
    if f == 0.0 || f.abs() >= 0.01 {
        format!("{f:.2}")
    } else {
        // Digits after the point for two significant ones: 0.0012 → 4.
        let d = (-f.abs().log10().floor()) as usize + 1;
        format!("{f:.d$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(123), "123");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(pct(110, 100), 10.0);
        assert_eq!(exact_bytes(7), "7 B");
        assert_eq!(exact_bytes(986_112), "986,112 B (963.00 KiB)");
    }

    #[test]
    fn percent_figures_keep_two_significant_digits() {
        assert_eq!(percent_figure(0.0), "0.00");
        assert_eq!(percent_figure(12.345), "12.35");
        assert_eq!(percent_figure(0.01), "0.01");
        assert_eq!(percent_figure(0.0012117), "0.0012");
        assert_eq!(percent_figure(0.000059342), "0.000059");
    }

    #[test]
    fn byte_sizes_read_as_typed() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("1,048,576"), Ok(1 << 20));
        assert_eq!(parse_bytes("1_048_576 B"), Ok(1 << 20));
        assert_eq!(parse_bytes("16GiB"), Ok(16 << 30));
        assert_eq!(parse_bytes("16 g"), Ok(16 << 30));
        assert_eq!(parse_bytes("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_bytes("2MB"), Ok(2_000_000));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes("1.001KB"), Ok(1001));
        assert_eq!(parse_bytes("2.01MB"), Ok(2_010_000));
        assert_eq!(parse_bytes("0.5"), Ok(0));
        assert_eq!(parse_bytes("18446744073709551615"), Ok(u64::MAX));
        for bad in [
            "", "GiB", "12 parsecs", "-5", "1.2.3", "1.", ".5", "1,5GiB", "1,0485,76", ",123", "1__000",
            "99999999999999999999", "20000000TiB", "18446744073709551616",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} accepted");
        }
    }
}
