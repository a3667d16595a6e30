"""heaplab.dask on a LocalCluster of 2 workers: plan_many gives exactly the plans of sequential
heaplab.plan calls (every placement validated), reads paths on the workers, names a bad item;
the study with one workload per task writes the report a local ``heaplab study`` writes (the
same results.json shape, checked against the CLI's own output)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import heaplab  # noqa: E402
import heaplab.dask as hd  # noqa: E402
from conftest import ROOT  # noqa: E402

# A Perl script that allocates a few thousand blocks (the CLI's study tests use the same kind).
PERL_HASH = "my %h; for my $i (1..3000) { $h{\"k$i\"} = [$i, 'v' x ($i % 30)]; } print scalar(keys %h), \"\\n\";"
PERL_LIST = "my @a; for my $i (1..2000) { push @a, 'x' x ($i % 50 + 1); } print scalar(@a), \"\\n\";"


@pytest.fixture(scope="module")
def client():
    # Threads, not processes: two workers start in a second on a 2-core machine. The
    # planner releases the GIL, so the two still plan at once.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as c:
            yield c


def instances(seed: int = 7) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Random instances with adversarial members: one buffer, equal sizes, all lifetimes the
    same, nested lifetimes, huge sizes beside tiny ones."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(24):
        n = int(rng.integers(1, 120))
        lower = rng.integers(0, 200, n).astype(np.uint64)
        upper = lower + rng.integers(1, 60, n).astype(np.uint64)
        sizes = rng.integers(1, 1 << 12, n).astype(np.uint64)
        if k % 6 == 1:
            sizes[:] = 64
        elif k % 6 == 2:
            lower[:], upper[:] = 5, 9
        elif k % 6 == 3:
            lower = np.arange(n, dtype=np.uint64)
            upper = (2 * n - lower).astype(np.uint64)
        elif k % 6 == 4:
            sizes[::2] = 1 << 40
        out.append((sizes, lower, upper))
    out.append((np.array([10], dtype=np.uint64), np.array([0], dtype=np.uint64), np.array([1], dtype=np.uint64)))
    return out


def same_plan(a: heaplab.Plan, b: heaplab.Plan) -> None:
    assert np.array_equal(a.offsets, b.offsets)
    assert (a.makespan, a.lower_bound, a.optimal, a.fits, a.algorithm) == (b.makespan, b.lower_bound, b.optimal, b.fits, b.algorithm)


def test_plan_many_equals_sequential_plans_and_every_placement_is_valid(client):
    items = instances()
    for seed in (1, 5):
        # Each plan ends on its own (optimal): its result does not depend on the time it got.
        want = [heaplab.plan(s, lo, up, seed=seed, time_limit=30.0) for s, lo, up in items]
        got = hd.plan_many(items, client=client, seed=seed, time_limit=30.0)
        assert len(got) == len(items)
        for (s, lo, up), p, q in zip(items, got, want):
            heaplab.check(s, lo, up, p.offsets)
            same_plan(p, q)
            assert p.offsets.dtype == np.uint64 and len(p.offsets) == len(s)


def test_instances_alignment_and_capacity_pass_through(client):
    s, lo, up = instances(3)[0]
    inst = heaplab.Instance(s, lo, up)
    align = np.full(len(s), 256, dtype=np.uint64)
    got = hd.plan_many([inst, (s, lo, up, align)], client=client, capacity=1 << 60)
    same_plan(got[0], heaplab.plan(inst, capacity=1 << 60))
    same_plan(got[1], heaplab.plan(s, lo, up, alignment=align, capacity=1 << 60))
    assert np.all(got[1].offsets % 256 == 0)
    heaplab.check(s, lo, up, got[1].offsets, alignment=align)


def write_csvs(tmp_path: Path, items) -> list[str]:
    paths = []
    for k, (s, lo, up) in enumerate(items):
        p = tmp_path / f"inst{k}.csv"
        heaplab.Instance(s, lo, up).to_csv(p)
        paths.append(str(p))
    return paths


def test_paths_are_read_on_the_workers(client, tmp_path):
    items = instances(11)[:8]
    paths = write_csvs(tmp_path, items)
    # A long limit on both sides: these end when proven, and a loaded machine must not cut one short.
    got = hd.plan_many(paths + [Path(paths[0])], client=client, time_limit=30.0)
    for path, p in zip(paths + [paths[0]], got):
        inst = heaplab.read(path)
        heaplab.check(inst, offsets=p.offsets)
        same_plan(p, heaplab.plan(inst, time_limit=30.0))
    # The reading happens in the task: the worker reports the file it could not read.
    with pytest.raises(heaplab.HeaplabError) as e:
        hd.plan_many([paths[0], str(tmp_path / "missing.csv")], client=client)
    assert "item 1 (" in str(e.value) and "missing.csv" in str(e.value)


def test_a_bad_item_is_named(client, tmp_path):
    good = instances(2)[:3]
    bad = tmp_path / "bad.csv"
    bad.write_text("this is not,an instance\n1,2\n")
    items = [good[0], good[1], str(bad), good[2]]
    with pytest.raises(heaplab.HeaplabError) as e:
        hd.plan_many(items, client=client)
    assert str(e.value).startswith(f"item 2 ('{bad}'): "), str(e.value)
    # In place: the other plans are there, the failure is the exception.
    out = hd.plan_many(items, client=client, errors="return")
    assert isinstance(out[2], heaplab.HeaplabError) and str(out[2]).startswith("item 2 (")
    for k in (0, 1, 3):
        s, lo, up = items[k]
        heaplab.check(s, lo, up, out[k].offsets)
    # Bad arrays are refused on the client, before anything is sent, with the item named.
    s, lo, up = good[0]
    with pytest.raises(heaplab.InputError, match=r"^item 1 \(arrays of \d+ buffers\): "):
        hd.plan_many([good[0], (s, lo[:-1], up)], client=client)
    with pytest.raises(heaplab.InputError, match="errors"):
        hd.plan_many([good[0]], client=client, errors="ignore")
    with pytest.raises(TypeError, match="item 0"):
        hd.plan_many([42], client=client)
    assert hd.plan_many([], client=client) == []


def test_a_scheduler_address_runs_the_same(client):
    items = instances(5)[:4]
    got = hd.plan_many(items, client=client.scheduler.address, time_limit=30.0)
    for (s, lo, up), p in zip(items, got):
        same_plan(p, heaplab.plan(s, lo, up, time_limit=30.0))


def test_the_embedded_cluster_uses_worker_processes(tmp_path, monkeypatch):
    items = instances(13)[:6]
    paths = write_csvs(tmp_path, items)
    want = [heaplab.plan(heaplab.read(p), time_limit=30.0) for p in paths]

    # Reading here would fail: the paths can only have been read in the worker processes.
    def refuse(*a, **k):
        raise AssertionError("read on the client")

    monkeypatch.setattr(heaplab, "read", refuse)
    got = hd.plan_many(paths + items[:2], n_workers=2, time_limit=30.0)
    for p, q in zip(got, want + want[:2]):
        same_plan(p, q)


# The study -------------------------------------------------------------------------------


def shape(v):
    """The form of a JSON value: keys and the forms under them, the form of list elements."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        forms = {json.dumps(shape(x), sort_keys=True) for x in v}
        return ["list", sorted(forms)]
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="perl not installed (make test installs it)")


@needs_perl
def test_study_gathers_one_report_shaped_like_the_cli(client, cli, tmp_path):
    out = tmp_path / "rep"
    res = hd.study(
        [["perl", "-e", PERL_HASH], {"command": ["perl", "-e", PERL_LIST], "name": "perl-list", "description": "a list of strings"}],
        client=client,
        allocators="glibc,jemalloc",
        runs=2,
        output=out,
    )
    for f in ("index.html", "report.md", "results.json", "perl-scatter.png", "perl-list-frag-time.png"):
        assert (out / f).is_file(), f
    assert json.loads((out / "results.json").read_text()) == res
    assert [w["name"] for w in res["workloads"]] == ["perl", "perl-list"]
    assert res["runs_per_allocator"] == 2
    for w in res["workloads"]:
        assert w["error"] is None, w["error"]
        assert [a["name"] for a in w["allocators"]] == ["glibc", "jemalloc"]
        assert all(len(a["runs"]) == 2 and a["jobs"] > 1000 for a in w["allocators"])
        assert w["machine"]["host"] == os.uname().nodename
    assert "a list of strings" in (out / "report.md").read_text()

    local = tmp_path / "local"
    r = subprocess.run(
        [cli, "study", "--allocators", "glibc,jemalloc", "--runs", "2", "-o", str(local), "--json", "--", "perl", "-e", PERL_HASH],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    mine = json.loads(r.stdout)
    assert json.loads((local / "results.json").read_text()) == mine
    assert shape(mine) == shape({**res, "workloads": res["workloads"][:1]})
    # The same program's heap: about the same jobs (Perl seeds its hashes anew each run, so
    # the count moves by a few).
    for a, b in zip(mine["workloads"][0]["allocators"], res["workloads"][0]["allocators"]):
        assert abs(a["jobs"] - b["jobs"]) <= 0.02 * b["jobs"], (a["jobs"], b["jobs"])


@needs_perl
def test_a_failing_workload_is_reported_and_raised(client, tmp_path):
    out = tmp_path / "rep"
    work = [["perl", "-e", PERL_LIST], ["sh", "-c", "echo 'boom: out of luck' >&2; exit 3"]]
    with pytest.raises(heaplab.HeaplabError, match=r"some workloads failed .*sh: the traced run exited with status 3"):
        hd.study(work, client=client, allocators="glibc", runs=1, output=out)
    res = json.loads((out / "results.json").read_text())
    assert res["workloads"][0]["error"] is None
    assert "boom: out of luck" in res["workloads"][1]["error"]
    res = hd.study(work, client=client, allocators="glibc", runs=1, output=out, errors="return")
    assert "boom: out of luck" in res["workloads"][1]["error"]
    # A cwd the worker does not have fails that workload, saying where.
    res = hd.study([["perl", "-e", PERL_LIST]], client=client, allocators="glibc", runs=1, output=out, cwd=tmp_path / "nowhere", errors="return")
    assert "not a directory" in res["workloads"][0]["error"] and os.uname().nodename in res["workloads"][0]["error"]


def test_study_checks_its_options_before_anything_runs(client, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "precious.txt").write_text("x")
    work = [["sleep", "30"]]
    cases = [
        (dict(output=tmp_path / "taken"), "exists and is not a previous heaplab report"),
        (dict(output=tmp_path / "no" / "such"), "does not exist"),
        (dict(output=tmp_path / "o", allocators="glibc,nosuch"), "nosuch"),
        (dict(output=tmp_path / "o", runs=0), "runs"),
        (dict(output=tmp_path / "o", rss="max"), "rss"),
        (dict(output=tmp_path / "o", only=["perl"]), "only selects"),
    ]
    for kw, msg in cases:
        with pytest.raises(heaplab.InputError, match=msg):
            hd.study(work, client=client, **kw)
    with pytest.raises(heaplab.InputError, match="no such workload in the suite"):
        hd.study("default", client=client, only=["perl", "nosuch"], output=tmp_path / "o")
    with pytest.raises(heaplab.InputError, match="nothing to study"):
        hd.study([], client=client, output=tmp_path / "o")
    assert not (tmp_path / "o").exists() and (tmp_path / "taken" / "precious.txt").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_without_distributed_the_import_says_what_to_install():
    import sys

    code = "import sys; sys.modules['distributed'] = None\ntry:\n    import heaplab.dask\nexcept ImportError as e:\n    print(e)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "heaplab.dask needs the optional dependency 'distributed': pip install distributed" in r.stdout, r.stdout + r.stderr
