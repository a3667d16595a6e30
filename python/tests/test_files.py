"""read(), Trace and frag() on files the CLI makes: CSV, .hlbin, a trace of a real program and
its replay."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import heaplab
from conftest import assert_valid


def run(cli, *args, cwd=None):
    return subprocess.run([cli, *map(str, args)], check=True, capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def traced(cli, tmp_path_factory):
    """A trace of `ls /` and its replay under glibc, recorded by the CLI."""
    d = tmp_path_factory.mktemp("trace")
    run(cli, "trace", "-o", d / "ls.hltrace", "--", "/bin/ls", "/")
    run(cli, "replay", "-a", "glibc", "-o", d / "ls.hlplaced", d / "ls.hltrace")
    return d


def test_read_csv_and_hlbin_made_by_the_cli(cli, tmp_path):
    run(cli, "gen", "--kind", "aligned", "--buffers", "300", "--seed", "4", "-o", tmp_path / "a.csv")
    run(cli, "convert", tmp_path / "a.csv", "-o", tmp_path / "a.hlbin")
    a, b = heaplab.read(tmp_path / "a.csv"), heaplab.read(tmp_path / "a.hlbin")
    assert a == b and len(a) == 300 and a.has_alignment
    p = heaplab.plan(a, time_limit=0.5)
    assert_valid(a.sizes, a.lower, a.upper, p.offsets, alignment=a.alignment)


def test_to_csv_round_trips_and_the_cli_checks_the_placement(cli, tmp_path):
    rng = np.random.default_rng(1)
    lower = rng.integers(0, 100, 500)
    inst = heaplab.Instance(rng.integers(1, 999, 500), lower, lower + rng.integers(1, 30, 500))
    p = heaplab.plan(inst, time_limit=0.5)
    for name in ("x.csv", "x.hlbin"):
        inst.to_csv(tmp_path / name)
        assert heaplab.read(tmp_path / name) == inst
    inst.to_csv(tmp_path / "placed.csv", p)
    back, offsets = heaplab.read_placement(tmp_path / "placed.csv")
    assert back == inst and np.array_equal(offsets, p.offsets)
    assert "valid" in run(cli, "check", tmp_path / "placed.csv").stdout


def test_semantics_inclusive(tmp_path):
    (tmp_path / "in.csv").write_text("id,lower,upper,size\n1,0,0,4\n2,1,3,8\n")
    inst = heaplab.read(tmp_path / "in.csv", semantics="in")
    assert inst.upper.tolist() == [1, 4]


def test_read_errors_carry_the_clis_messages(cli, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\n1,0,5,4\n2,3,2,8\n")
    with pytest.raises(heaplab.InputError) as e:
        heaplab.read(bad)
    cli_err = subprocess.run([cli, "plan", str(bad)], capture_output=True, text=True).stderr.strip()
    assert cli_err == f"heaplab: error: {e.value}"
    with pytest.raises(heaplab.InputError, match="No such file"):
        heaplab.read(tmp_path / "missing.csv")
    with pytest.raises(heaplab.InputError, match='clock "hours"'):
        heaplab.read(bad, clock="hours")


def test_trace_events_and_info(traced, cli):
    t = heaplab.Trace(traced / "ls.hltrace")
    ev = t.events()
    assert ev.dtype == heaplab.Trace.EVENT_DTYPE and len(ev) > 10
    assert (np.diff(ev["seq"].astype(np.int64)) > 0).all()
    assert set(np.unique(ev["op"])) <= {"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc"}
    info = t.info()
    assert info["events"] == int(sum(info["calls"].values())) and info["complete"]
    # The CLI's own summary says the same.
    import json

    cli_info = json.loads(run(cli, "trace-info", "--json", traced / "ls.hltrace").stdout)
    for k in ("events", "peak_live_bytes", "threads", "free_null", "duration_ns", "calls"):
        assert info[k] == cli_info[k], k
    df = t.to_pandas()
    assert len(df) == len(ev) and str(df["op"].dtype) == "category"


def test_trace_as_instance_with_clock_and_size(traced):
    for clock in ("bytes", "events", "ns"):
        for size in ("requested", "usable"):
            inst = heaplab.read(traced / "ls.hltrace", clock=clock, size=size)
            p = heaplab.plan(inst, time_limit=0.3)
            assert_valid(inst.sizes, inst.lower, inst.upper, p.offsets, alignment=inst.alignment)
    assert heaplab.Trace(traced / "ls.hltrace").instance() == heaplab.read(traced / "ls.hltrace")


def test_frag_equals_the_cli(traced, cli):
    import json

    f = heaplab.frag(traced / "ls.hlplaced")
    c = json.loads(run(cli, "frag", "--json", traced / "ls.hlplaced").stdout)
    assert (f.jobs, f.page_size, f.allocator) == (c["jobs"], c["page_size"], c["allocator"])
    assert f.external == pytest.approx(c["external"]) and f.internal == pytest.approx(c["internal"])
    assert len(f.mappings) == len(c["mappings"]) and len(f.series_external) == len(c["series"])


def test_damaged_trace_is_an_input_error(traced, tmp_path):
    data = (traced / "ls.hltrace").read_bytes()
    cut = tmp_path / "cut.hltrace"
    # A cut exactly between two windows reads as the trace of a killed process (no trailer,
    # every committed event there), as it should: of two neighbouring cuts at most one is.
    for end in (len(data) * 2 // 3, len(data) * 2 // 3 - 1):
        cut.write_bytes(data[:end])
        try:
            heaplab.read(cut)
        except heaplab.InputError as e:
            assert "allow_truncated=True" in str(e)
            break
    else:
        pytest.fail("neither cut was refused")
    with pytest.raises(heaplab.InputError):
        heaplab.Trace(cut).events()
    # Its usable part (small here: the trace is one window of events) reads without error.
    assert heaplab.Trace(cut, allow_truncated=True).events().dtype == heaplab.Trace.EVENT_DTYPE
