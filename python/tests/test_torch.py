"""heaplab.torch: PyTorch CUDA memory snapshots read into instances.

The fixtures under data/torch/ were recorded on an H100 by python/tools/record_torch_snapshots.py
(a few training steps of small real models); each has a .stats.json with what PyTorch's caching
allocator reported itself, the independent oracle for the peaks computed from the trace.
"""

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import heaplab
import heaplab.torch as ht

DATA = Path(__file__).parent / "data" / "torch"
FIXTURES = sorted(p.stem for p in DATA.glob("*.pickle"))


def overlaps(sizes, lower, upper, offsets):
    """An independent pairwise check: (i, j) of two live-together buffers whose ranges meet."""
    n = len(sizes)
    for i in range(n):
        live = (lower < upper[i]) & (lower[i] < upper)
        live[i] = False
        meet = live & (offsets < offsets[i] + sizes[i]) & (offsets[i] < offsets + sizes)
        if meet.any():
            return i, int(np.argmax(meet))
    return None


def test_fixtures_are_there():
    assert {"cnn", "transformer"} <= set(FIXTURES)


@pytest.mark.parametrize("name", FIXTURES)
def test_peaks_equal_what_pytorch_reported(name):
    stats = json.loads((DATA / f"{name}.stats.json").read_text())
    p = ht.peaks(DATA / f"{name}.pickle")
    assert p.allocated == stats["peak_allocated_bytes"]
    assert p.reserved == stats["peak_reserved_bytes"]
    assert p.events == stats["events"]


@pytest.mark.parametrize("name", FIXTURES)
def test_instance_plans_within_the_allocators_reservation(name):
    inst = ht.instance(DATA / f"{name}.pickle")
    peaks = ht.peaks(DATA / f"{name}.pickle")
    assert len(inst) > 100
    assert np.all(inst.sizes % ht.CUDA_BLOCK_ALIGNMENT == 0)
    assert np.all(inst.lower < inst.upper)
    plan = heaplab.plan(inst, time_limit=2.0, seed=1)
    heaplab.check(inst, offsets=plan.offsets)
    assert overlaps(inst.sizes, inst.lower, inst.upper, plan.offsets) is None
    assert np.all(plan.offsets % ht.CUDA_BLOCK_ALIGNMENT == 0)
    # The bound counts blocks as requested (rounded to 512); the allocator's peak also counts
    # the unsplit remainders it handed out with some blocks, so it can only be larger.
    assert plan.lower_bound <= peaks.allocated <= peaks.reserved
    assert plan.lower_bound <= plan.makespan


def test_dict_bytes_and_path_read_alike():
    path = DATA / "cnn.pickle"
    raw = path.read_bytes()
    a = ht.instance(path)
    b = ht.instance(pickle.loads(raw))
    c = ht.instance(raw)
    with open(path, "rb") as f:
        d = ht.instance(f)
    for other in (b, c, d):
        for field in ("sizes", "lower", "upper"):
            assert np.array_equal(getattr(a, field), getattr(other, field))


def event(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": []}


def synthetic():
    """Ticks count from 1: A and B overlap, C reuses A's place, D predates recording, E is never freed,
    F is live at the snapshot but never in the trace."""
    trace = [
        event("segment_alloc", 0x10000, 1 << 20),   # 1
        event("alloc", 0x10000, 1000),              # 2: A (rounded to 1024)
        event("alloc", 0x10400, 600),               # 3: B (1024)
        event("free_requested", 0x10000, 1000),     # 4
        event("free_completed", 0x10000, 1000),     # 5
        event("alloc", 0x10000, 100),               # 6: C (512)
        event("free_requested", 0x20000, 2048),     # 7: D, allocated before recording
        event("free_completed", 0x20000, 2048),     # 8
        event("free_requested", 0x10400, 600),      # 9
        event("free_completed", 0x10400, 600),      # 10
        event("alloc", 0x10800, 512),               # 11: E, never freed
    ]
    segments = [
        {"device": 0, "address": 0x10000, "total_size": 1 << 20, "blocks": [
            {"address": 0x10000, "size": 512, "state": "active_allocated"},
            {"address": 0x10800, "size": 512, "state": "active_allocated"},
        ]},
        {"device": 0, "address": 0x30000, "total_size": 2 << 20, "blocks": [
            {"address": 0x30000, "size": 4096, "state": "active_allocated"},   # F
        ]},
    ]
    return {"segments": segments, "device_traces": [trace]}


def test_synthetic_lifetimes_by_hand():
    b = ht.blocks(synthetic())
    got = sorted(zip(b.addresses.tolist(), b.sizes.tolist(), b.lower.tolist(), b.upper.tolist()))
    end = 12
    assert got == sorted([
        (0x10000, 1024, 2, 5),     # A until free_completed
        (0x10400, 1024, 3, 10),    # B
        (0x10000, 512, 6, end),    # C never freed
        (0x20000, 2048, 0, 8),     # D from the start
        (0x10800, 512, 11, end),   # E
        (0x30000, 4096, 0, end),   # F whole trace
    ])
    assert b.preexisting.sum() == 2
    r = ht.blocks(synthetic(), lifetime="free_requested")
    assert (0x10000, 1024, 2, 4) in zip(r.addresses.tolist(), r.sizes.tolist(), r.lower.tolist(), r.upper.tolist())


def test_synthetic_peaks():
    p = ht.peaks(synthetic())
    # Live at tick 3: A, B, D, F = 1024 + 1024 + 2048 + 4096.
    assert p.allocated == 8192
    # Segment 0x30000 predates the trace: 2 MiB, then 1 MiB more.
    assert p.reserved == 3 << 20


def test_two_devices_need_a_choice():
    s = synthetic()
    s["device_traces"].append(list(s["device_traces"][0]))
    with pytest.raises(ht.SnapshotError, match="device=N"):
        ht.blocks(s)
    assert len(ht.blocks(s, device=1).sizes) == 5  # F lives in a segment of device 0
    with pytest.raises(ht.SnapshotError, match="no device 5"):
        ht.blocks(s, device=5)


def test_bad_snapshots_are_clear_errors(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a pickle\n")
    with pytest.raises(ht.SnapshotError, match="notes.txt: not a PyTorch memory snapshot"):
        ht.instance(text)
    with pytest.raises(ht.SnapshotError, match="missing.pickle: cannot read"):
        ht.instance(tmp_path / "missing.pickle")
    wrong = tmp_path / "wrong.pickle"
    wrong.write_bytes(pickle.dumps({"hello": 1}))
    with pytest.raises(ht.SnapshotError, match="expected a dict with 'segments'"):
        ht.instance(wrong)
    with pytest.raises(ht.SnapshotError, match="_record_memory_history"):
        ht.instance({"segments": [], "device_traces": [[]]})
    with pytest.raises(ValueError, match="lifetime"):
        ht.instance(synthetic(), lifetime="sometime")
    assert issubclass(ht.SnapshotError, heaplab.InputError)


class Exploit:
    """Unpickling this would run a shell command: the reader must refuse before calling anything."""

    def __reduce__(self):
        return (os.system, ("touch /tmp/heaplab-pwned",))


def test_pickles_cannot_run_code(tmp_path):
    marker = Path("/tmp/heaplab-pwned")
    if marker.exists():
        marker.unlink()
    bad = tmp_path / "evil.pickle"
    bad.write_bytes(pickle.dumps({"segments": [], "device_traces": [[Exploit()]]}))
    with pytest.raises(ht.SnapshotError, match="refusing to load"):
        ht.instance(bad)
    assert not marker.exists()


def test_unsplit_remainders_count_as_pytorch_counts_them():
    """A large-pool block whose remainder would be at most 1 MiB is handed out whole; a small-pool
    one is split down to 512 bytes; a completed free merges back so the next request splits again."""
    seg = 20 << 20
    trace = [
        event("segment_alloc", 0, seg),
        event("alloc", 0, (19 << 20) + 100),            # remainder < 1 MiB: the whole 20 MiB
        event("free_requested", 0, (19 << 20) + 100),
        event("free_completed", 0, (19 << 20) + 100),
        event("alloc", 0, 8 << 20),                     # remainder 12 MiB: split
        event("alloc", 8 << 20, 11 << 20),              # remainder 1 MiB exactly: not split, 12 MiB
        event("segment_alloc", 1 << 30, 2 << 20),       # a small-pool segment
        event("alloc", 1 << 30, 1000),                  # 1024, split
    ]
    p = ht.peaks({"segments": [], "device_traces": [trace]})
    assert p.allocated == (8 << 20) + (12 << 20) + 1024
    assert p.reserved == seg + (2 << 20)
