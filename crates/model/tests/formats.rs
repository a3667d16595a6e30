//! Round-trip and rejection tests of the formats this crate owns, through its public API: the
//! instance and placement CSV, `.hlbin`, and the input layer that opens them (kinds told by
//! magic, zstd-compressed inputs, the run index as a kind of its own).
//!
//! Written as properties over generated instances: every instance the model allows survives a
//! write and a read in every format, compressed or not; every strict prefix of a binary file
//! and every malformed field of a CSV file is refused with its place named, never a panic.

use heaplab_model::input::{RUN_MAGIC, ZSTD_MAGIC};
use heaplab_model::{binary, csv, files, Buffer, Columns, FileKind, Input, InputErrorKind, Instance, Semantics, Wanted};
use proptest::prelude::*;
use std::collections::HashSet;
use std::io::Read;

/// An instance the model allows (unique ids, non-empty lifetimes, sizes > 0, power-of-two
/// alignments, requested ≤ size, sizes summing within 64 bits) with the optional columns
/// chosen at random, and offsets for about half of them (a placement).
fn instances() -> impl Strategy<Value = (Instance, Option<Vec<u64>>)> {
    let row = (any::<u64>(), 0u64..1 << 63, 1u64..1 << 62, 1u64..=1 << 56, 0u8..=56, any::<u64>(), any::<u64>());
    (any::<bool>(), any::<bool>(), any::<bool>(), prop::collection::vec(row, 0..40)).prop_map(|(align, req, placed, rows)| {
        let mut ids = HashSet::new();
        let mut buffers = Vec::new();
        let mut offsets = Vec::new();
        for (id, lower, len, size, log2, r, off) in rows {
            if !ids.insert(id) {
                continue;
            }
            let requested = if req { r % (size + 1) } else { 0 };
            let align_log2 = if align { log2 } else { 0 };
            buffers.push(Buffer { id, lower, upper: lower + len, size, requested, align_log2 });
            offsets.push(off % (u64::MAX - size + 1));
        }
        let inst = Instance { buffers, columns: Columns { alignment: align, requested: req } };
        (inst, placed.then_some(offsets))
    })
}

fn csv_bytes(inst: &Instance, offsets: Option<&[u64]>) -> Vec<u8> {
    let mut out = Vec::new();
    files::write_csv(&mut out, inst, offsets).unwrap();
    out
}

fn hlbin_bytes(inst: &Instance, offsets: Option<&[u64]>) -> Vec<u8> {
    let mut out = Vec::new();
    binary::write(&mut out, inst, offsets).unwrap();
    out
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(bytes, 3).unwrap()
}

/// Reads `bytes` named `name` as the commands do: through the input layer, offsets allowed.
fn read(name: &str, bytes: Vec<u8>) -> Result<(Instance, Option<Vec<u64>>), heaplab_model::InputError> {
    files::read_input(Input::from_bytes(name, bytes), Semantics::Inex, true)
}

proptest! {
    #[test]
    fn instances_and_placements_survive_csv(case in instances()) {
        let (inst, offs) = case;
        let text = csv_bytes(&inst, offs.as_deref());
        let back = csv::read_instance_from(&text[..], "t.csv", Semantics::Inex, true).unwrap();
        prop_assert_eq!(&back, &(inst.clone(), offs.clone()));
        // Written again, byte for byte the same: the writer is canonical.
        prop_assert_eq!(csv_bytes(&back.0, back.1.as_deref()), text);
    }

    #[test]
    fn instances_and_placements_survive_hlbin_and_csv_conversion(case in instances()) {
        let (inst, offs) = case;
        let bin = hlbin_bytes(&inst, offs.as_deref());
        let back = binary::read(&bin[..], "t.hlbin", Semantics::Inex).unwrap();
        prop_assert_eq!(&back, &(inst.clone(), offs.clone()));
        // CSV → .hlbin → CSV gives the same text.
        let text = csv_bytes(&inst, offs.as_deref());
        let (i2, o2) = read("t.csv", text.clone()).unwrap();
        prop_assert_eq!(csv_bytes(&i2, o2.as_deref()), text);
    }

    #[test]
    fn compressed_inputs_read_like_plain_ones(case in instances(), binary in any::<bool>()) {
        let (inst, offs) = case;
        let plain = if binary { hlbin_bytes(&inst, offs.as_deref()) } else { csv_bytes(&inst, offs.as_deref()) };
        let mut input = Input::from_bytes("t.zst", zstd(&plain));
        let kind = input.kind().unwrap();
        prop_assert_eq!(kind, if binary { FileKind::Hlbin } else if plain.is_empty() { FileKind::Empty } else { FileKind::Text });
        prop_assert!(input.is_compressed());
        let mut all = Vec::new();
        input.read_to_end(&mut all).unwrap();
        prop_assert_eq!(&all, &plain, "the look-ahead gives back every decompressed byte");
        prop_assert_eq!(read("t.zst", zstd(&plain)).unwrap(), (inst, offs));
    }

    /// A binary file cut anywhere is refused, by both readers, with the file named.
    #[test]
    fn every_strict_prefix_of_an_hlbin_file_is_refused(case in instances(), at in any::<prop::sample::Index>()) {
        let (inst, offs) = case;
        let bin = hlbin_bytes(&inst, offs.as_deref());
        let cut = at.index(bin.len());
        let e = binary::read(&bin[..cut], "cut.hlbin", Semantics::Inex).unwrap_err();
        prop_assert!(e.to_string().starts_with("cut.hlbin"), "{}", e);
        prop_assert_eq!(e.kind, InputErrorKind::Format);
        let e = binary::read_input(Input::from_bytes("cut.hlbin", bin[..cut].to_vec()), Semantics::Inex).unwrap_err();
        prop_assert_eq!(e.kind, InputErrorKind::Format);
    }

    /// Damage anywhere in a binary file gives a result or an error, never a panic.
    #[test]
    fn damaged_hlbin_files_never_panic(case in instances(), flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..6)) {
        let (inst, offs) = case;
        let mut bin = hlbin_bytes(&inst, offs.as_deref());
        for (i, bit) in flips {
            let i = i.index(bin.len());
            bin[i] ^= 1 << bit;
        }
        let _ = read("d.hlbin", bin);
    }

    /// A malformed field is refused with its line and column named.
    #[test]
    fn a_bad_field_is_named_by_line_and_column(
        case in instances(),
        row in any::<prop::sample::Index>(),
        col in any::<prop::sample::Index>(),
        bad in prop::sample::select(vec!["", "-1", "1.5", "x", "+5", "0x10", "18446744073709551616", "1 2"]),
    ) {
        let (inst, offs) = case;
        prop_assume!(!inst.is_empty());
        let text = String::from_utf8(csv_bytes(&inst, offs.as_deref())).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let header: Vec<String> = lines[0].split(',').map(str::to_string).collect();
        let (r, c) = (1 + row.index(inst.len()), col.index(header.len()));
        let mut fields: Vec<&str> = lines[r].split(',').collect();
        fields[c] = bad;
        lines[r] = fields.join(",");
        let e = csv::read_instance_from(lines.join("\n").as_bytes(), "b.csv", Semantics::Inex, true).unwrap_err();
        prop_assert_eq!(e.line, Some(r as u64 + 1), "{}", e);
        prop_assert_eq!(e.field.as_deref(), Some(header[c].as_str()), "{}", e);
        prop_assert_eq!(e.kind, InputErrorKind::Value);
    }

    /// Whatever the bytes, telling their kind consumes none of them.
    #[test]
    fn the_input_layer_hands_on_every_byte(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        prop_assume!(!bytes.starts_with(ZSTD_MAGIC));
        let mut input = Input::from_bytes("x", bytes.clone());
        let _ = input.kind().unwrap();
        let mut all = Vec::new();
        input.read_to_end(&mut all).unwrap();
        prop_assert_eq!(all, bytes);
    }
}

/// Unit-level twins of the CLI's bad-input table: each file is refused with the kind, line and
/// field that the message is built from.
#[test]
fn malformed_instance_csv_is_refused_with_kind_line_and_field() {
    use InputErrorKind::*;
    let cases: &[(&str, InputErrorKind, Option<u64>, Option<&str>)] = &[
        ("id,lower,size\n0,0,4\n", Shape, Some(1), Some("upper")),
        ("id,lower,upper,size,colour\n0,0,1,4,3\n", Shape, Some(1), Some("colour")),
        ("id,lower,upper,size,size\n0,0,1,4,4\n", Shape, Some(1), Some("size")),
        ("id,lower,upper,size\n0,0,1,4,9\n", Shape, Some(2), None),
        ("id,lower,upper,size\n0,0,1\n", Shape, Some(2), None),
        ("id,lower,upper,size\n0,0,1,0\n", Value, Some(2), Some("size")),
        ("id,lower,upper,size\n0,0,1,4\n1,7,7,4\n", Consistency, Some(3), Some("upper")),
        ("id,lower,upper,size\n5,0,1,4\n5,1,2,4\n", Consistency, Some(3), Some("id")),
        ("id,lower,upper,size,alignment\n0,0,1,4,12\n", Value, Some(2), Some("alignment")),
        ("id,lower,upper,size,requested\n0,0,1,4,5\n", Consistency, Some(2), Some("requested")),
        ("id,lower,upper,size\n0,0,1,18446744073709551615\n1,0,1,2\n", Overflow, Some(3), Some("size")),
        ("id,lower,upper,size,offset\n0,0,1,4,18446744073709551614\n", Overflow, Some(2), Some("offset")),
        ("", Shape, None, None),
    ];
    for (text, kind, line, field) in cases {
        let e = read("m.csv", text.as_bytes().to_vec()).unwrap_err();
        assert_eq!((e.kind, e.line, e.field.as_deref()), (*kind, *line, *field), "{text:?}: {e}");
        assert!(e.to_string().starts_with("m.csv"), "{e}");
    }
    // An instance reader refuses a placement: a CSV one at its header, a binary one as a whole.
    let placed = "id,lower,upper,size,offset\n0,0,1,4,0\n";
    let e = files::read_input(Input::from_bytes("p.csv", placed.into()), Semantics::Inex, false).unwrap_err();
    assert_eq!((e.kind, e.line, e.field.as_deref()), (Shape, Some(1), Some("offset")), "{e}");
    let inst = Instance::new(vec![Buffer::new(0, 0, 1, 4)]);
    let bin = hlbin_bytes(&inst, Some(&[0]));
    let e = files::read_input(Input::from_bytes("p.hlbin", bin), Semantics::Inex, false).unwrap_err();
    assert!(e.to_string().contains("holds a placement"), "{e}");
}

#[test]
fn hlbin_headers_are_checked_before_the_records() {
    let inst = Instance::new(vec![Buffer::new(7, 3, 10, 4), Buffer::new(2, 0, 20, 16)]);
    let good = hlbin_bytes(&inst, None);
    let damage = |at: usize, byte: u8| {
        let mut b = good.clone();
        b[at] = byte;
        read("h.hlbin", b).unwrap_err().to_string()
    };
    assert!(damage(6, 99).contains("version 99"));
    assert!(damage(8, 0x80).contains("unknown flags"));
    assert!(damage(10, 200).contains("cannot fit in the file's"));
    let mut junk = good.clone();
    junk.push(0);
    assert!(read("h.hlbin", junk).unwrap_err().to_string().contains("after the end marker"));
    let mut cut = good.clone();
    cut.truncate(good.len() - 9);
    assert!(read("h.hlbin", cut).unwrap_err().to_string().contains("truncated"));
}

#[test]
fn inclusive_lifetimes_are_read_as_half_open() {
    let text = "id,lower,upper,size\n0,0,5,10\n1,5,5,10\n";
    let (inst, _) = csv::read_instance_from(text.as_bytes(), "s.csv", Semantics::In, false).unwrap();
    assert_eq!(inst.buffers.iter().map(|b| (b.lower, b.upper)).collect::<Vec<_>>(), [(0, 6), (5, 6)]);
    let max = format!("id,lower,upper,size\n0,0,{},1\n", u64::MAX);
    let e = csv::read_instance_from(max.as_bytes(), "s.csv", Semantics::In, false).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
}

/// The run index is a kind of its own, compressed or not; the instance readers name it and
/// point at `trace-info`.
#[test]
fn the_run_index_is_told_by_its_magic_and_refused_by_instance_readers() {
    let index = [&RUN_MAGIC[..], b" 1, \"processes\": []}\n"].concat();
    for bytes in [index.clone(), zstd(&index)] {
        let mut input = Input::from_bytes("run.hlrun", bytes.clone());
        assert_eq!(input.kind().unwrap(), FileKind::RunIndex);
        let e = read("run.hlrun", bytes).unwrap_err().to_string();
        assert!(e.contains("the index of a traced run") && e.contains("heaplab trace-info run.hlrun"), "{e}");
    }
    // Other heaplab files are named too, with the command that takes them.
    let e = read("t.hltrace", zstd(b"HLTRACE\0rest")).unwrap_err().to_string();
    assert!(e.contains("it is a heaplab trace") && e.contains("heaplab convert t.hltrace"), "{e}");
    let e = Input::from_bytes("p.hlplaced", b"HLPLACE\0".to_vec()).wrong_kind(Wanted::Instance).to_string();
    assert!(e.contains("heaplab frag p.hlplaced"), "{e}");
}

#[test]
fn damaged_compressed_inputs_are_errors() {
    let frame = zstd(b"id,lower,upper,size\n0,0,1,4\n");
    // Junk after the magic, and a frame cut short.
    for bytes in [[&ZSTD_MAGIC[..], b"\xff\xff\xff\xff junk"].concat(), frame[..frame.len() - 4].to_vec()] {
        let r = read("z.csv", bytes);
        let e = r.expect_err("a damaged frame is refused");
        assert!(e.to_string().starts_with("z.csv"), "{e}");
    }
}

/// A compressed regular file can be read twice ([`Input::reread`]), each time decompressed.
#[test]
fn a_compressed_file_on_disk_rereads_decompressed() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("model-formats-reread");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let inst = Instance::new(vec![Buffer::new(1, 0, 4, 8), Buffer::new(2, 2, 6, 16)]);
    let path = dir.join("i.hlbin");
    std::fs::write(&path, zstd(&hlbin_bytes(&inst, None))).unwrap();
    let path = path.to_str().unwrap();
    let mut first = Input::open(path).unwrap();
    assert_eq!(first.kind().unwrap(), FileKind::Hlbin);
    let second = first.reread().unwrap();
    assert_eq!(files::read_input(first, Semantics::Inex, false).unwrap().0, inst);
    assert_eq!(files::read_input(second, Semantics::Inex, false).unwrap().0, inst);
    assert_eq!(files::read_instance(path, Semantics::Inex).unwrap(), inst);
    std::fs::remove_dir_all(&dir).unwrap();
}
