use super::*;
use crate::tests::lists;

fn sample() -> Groups {
    crate::group(&lists(), &Params::default()).unwrap()
}

fn reread(bytes: &[u8]) -> Result<Groups, InputError> {
    from_bytes("g.hlgroups", bytes)
}

/// `bytes` with the checksum made right again after an edit.
fn resum(mut bytes: Vec<u8>) -> Vec<u8> {
    let body = bytes.len() - 8;
    let sum = fnv1a(&bytes[..body]);
    bytes[body..].copy_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn round_trip() {
    let g = sample();
    assert_eq!(reread(&to_bytes(&g).unwrap()).unwrap(), g);
    let empty = Groups { groups: Vec::new(), walk_depth: 0, ..g.clone() };
    let mut empty = empty;
    for c in &mut empty.contexts {
        c.group = None;
    }
    assert_eq!(reread(&to_bytes(&empty).unwrap()).unwrap(), empty);
    let whole = Groups { params: Params { whole_call_sites: true, ..g.params.clone() }, ..g.clone() };
    let bytes = to_bytes(&whole).unwrap();
    assert_eq!(reread(&bytes).unwrap(), whole);
    for recursion in [Recursion::CallSite, Recursion::Function] {
        let r = Groups { params: Params { recursion, ..whole.params.clone() }, ..g.clone() };
        assert_eq!(reread(&to_bytes(&r).unwrap()).unwrap(), r);
    }
    let apart = Groups { params: Params { absorb: false, ..g.params.clone() }, ..g.clone() };
    assert_eq!(reread(&to_bytes(&apart).unwrap()).unwrap(), apart);
    for cold_group in [ColdGroup::Never, ColdGroup::Diluting, ColdGroup::All] {
        let cold = Groups { params: Params { cold_group, ..g.params.clone() }, ..g.clone() };
        assert_eq!(reread(&to_bytes(&cold).unwrap()).unwrap(), cold);
    }
    let mut unknown = bytes.clone();
    unknown[84] = 32;
    assert!(reread(&resum(unknown)).unwrap_err().to_string().contains("unknown flags 0x20 at byte 84"));
    let mut dropped = bytes.clone();
    dropped[84] |= 4;
    assert!(reread(&resum(dropped)).unwrap_err().to_string().contains("marked as dropped"));
    let mut churned = empty.clone();
    churned.contexts[2].kept = false;
    churned.contexts[2].churns = true;
    churned.identification = Identification { walk_per_object: 99.5, dropped: true };
    churned.params.max_turnover = 2.5;
    churned.params.max_walk_per_object = 10.0;
    assert_eq!(reread(&to_bytes(&churned).unwrap()).unwrap(), churned);
    let dir = std::env::temp_dir().join(format!("hlgroups-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("g.hlgroups").to_string_lossy().into_owned();
    write(&path, &g).unwrap();
    assert_eq!(read(&path).unwrap(), g);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Versions 4 and 3: version 5 without the contexts' small-object figures (taken from their
/// sizes); in version 3 the cold group flag alone means a cold group of every context it can
/// take (`ColdGroup::All`), and there is no diluting mode.
#[test]
fn version_3_files_read_their_cold_group_as_all() {
    let mut g = sample();
    for (cold_group, read_as) in [(ColdGroup::Never, ColdGroup::Never), (ColdGroup::All, ColdGroup::All)] {
        g.params.cold_group = cold_group;
        let mut v3 = to_bytes_as(&g, false).unwrap();
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        let old = reread(&resum(v3)).unwrap();
        assert_eq!(old.params.cold_group, read_as);
        for (c, was) in old.contexts.iter().zip(&g.contexts) {
            let z = c.sizes.unwrap();
            let want = if z.min > g.params.max_object_size { (0, 0) } else { (was.accesses, was.bytes) };
            assert_eq!((c.small_accesses, c.small_bytes), want);
        }
    }
    assert!(g.contexts.iter().any(|c| c.sizes.unwrap().min > g.params.max_object_size), "the sample has a large object");
    g.params.cold_group = ColdGroup::Diluting;
    let mut v4 = to_bytes_as(&g, false).unwrap();
    v4[8..12].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(reread(&resum(v4)).unwrap().params.cold_group, ColdGroup::Diluting);
    g.params.cold_group = ColdGroup::Diluting;
    let mut v3 = to_bytes_as(&g, false).unwrap();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    assert!(reread(&resum(v3)).unwrap_err().to_string().contains("unknown flags 0x"));
    // Version 5 knows bits 0 to 5 and no other.
    let mut v5 = to_bytes(&g).unwrap();
    v5[84] |= 64;
    assert!(reread(&resum(v5)).unwrap_err().to_string().contains("unknown flags 0x"));
}

/// Version 2: version 3 without the contexts' sizes.
#[test]
fn version_2_files_are_read_with_sizes_unknown() {
    let mut g = sample();
    g.params.cold_group = ColdGroup::Never;
    assert!(g.contexts.iter().all(|c| c.sizes.is_some()));
    let v3 = to_bytes_as(&g, false).unwrap();
    let mut v2 = v3.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    // Version 2 knows no sizes flag: a file carrying one is refused.
    assert!(reread(&resum(v2)).unwrap_err().to_string().contains("unknown flags 0x"));
    g.contexts.iter_mut().for_each(|c| {
        c.sizes = None;
        (c.small_accesses, c.small_bytes) = (c.accesses, c.bytes);
    });
    let mut v2 = to_bytes_as(&g, false).unwrap();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(reread(&resum(v2)).unwrap(), g);
}

/// Version 1: version 2 without the header's last three numbers, the churn flag and absorbing.
#[test]
fn version_1_files_are_read_with_no_limits() {
    let mut g = sample();
    g.params.absorb = false;
    g.params.cold_group = ColdGroup::Never;
    g.contexts.iter_mut().for_each(|c| {
        c.sizes = None;
        (c.small_accesses, c.small_bytes) = (c.accesses, c.bytes);
    });
    let v2 = to_bytes_as(&g, false).unwrap();
    let mut v1 = v2[..128].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&v2[HEADER..]);
    let old = reread(&resum(v1)).unwrap();
    let params = Params { max_turnover: 0.0, max_walk_per_object: 0.0, ..g.params.clone() };
    assert_eq!(old, Groups { params, identification: Identification::default(), ..g });
}

#[test]
fn damage_anywhere_is_refused_naming_the_file() {
    let bytes = to_bytes(&sample()).unwrap();
    for cut in 0..bytes.len() {
        let e = reread(&bytes[..cut]).unwrap_err();
        assert!(e.to_string().starts_with("g.hlgroups: "), "{e}");
    }
    for at in 0..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 0x41;
        assert!(reread(&b).is_err(), "flipped byte {at} accepted");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(reread(&longer).is_err());
}

#[test]
fn messages_say_what_is_wrong() {
    let bytes = to_bytes(&sample()).unwrap();
    let msg = |b: Vec<u8>| reread(&b).unwrap_err().to_string();
    assert!(msg(b"HLLAYOUT and more".to_vec()).contains("no HLGROUPS magic"));
    let mut v = bytes.clone();
    v[8] = 9;
    assert!(msg(resum(v)).contains("version 9"));
    let mut v = bytes.clone();
    v[12] = 7;
    assert!(msg(resum(v)).contains("walk depth 7"));
    let mut v = bytes.clone();
    v[72..80].copy_from_slice(&1000u64.to_le_bytes());
    assert!(msg(resum(v)).contains("chunk size 1000"));
    let mut v = bytes.clone();
    v[104..112].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(msg(resum(v)).contains("more than the file can hold"));
    assert!(msg(bytes[..bytes.len() - 3].to_vec()).contains("checksum"));
    assert!(read("/nonexistent/g.hlgroups").unwrap_err().to_string().contains("cannot read"));
}

#[test]
fn inconsistent_groups_are_not_written() {
    let g = sample();
    let mut bad = g.clone();
    bad.contexts[2].group = Some(0);
    assert!(to_bytes(&bad).unwrap_err().to_string().contains("context 2"));
    let mut bad = g.clone();
    bad.contexts[0].sizes = Some(ObjectSizes { min: 9, max: 8, freed: 0 });
    assert!(to_bytes(&bad).unwrap_err().to_string().contains("sizes 9..8"));
    let mut bad = g.clone();
    bad.contexts[0].sizes = Some(ObjectSizes { min: 8, max: 8, freed: bad.contexts[0].objects + 1 });
    assert!(to_bytes(&bad).unwrap_err().to_string().contains("objects freed"));
    let mut bad = g.clone();
    bad.contexts[0].small_bytes = bad.contexts[0].bytes + 1;
    assert!(to_bytes(&bad).unwrap_err().to_string().contains("beyond all its objects'"));
    let mut bad = g.clone();
    bad.groups[0].selector.push(Vec::new());
    assert!(to_bytes(&bad).unwrap_err().to_string().contains("empty conjunction"));
    let mut bad = g.clone();
    bad.edges.swap(0, 1);
    assert!(to_bytes(&bad).is_err());
    let mut bad = g;
    bad.params.coverage = 2.0;
    assert!(to_bytes(&bad).is_err());
}
