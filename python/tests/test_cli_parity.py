"""The same plan as `heaplab plan` for the same instance and seed."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import heaplab
from conftest import assert_valid


def cli_plan(cli, path, *args):
    out = path.with_suffix(".placed.csv")
    r = subprocess.run([cli, "plan", str(path), "--json", "-o", str(out), *map(str, args)], capture_output=True, text=True, check=True)
    summary = json.loads(r.stdout)
    _, offsets = heaplab.read_placement(out)
    return summary, offsets


@pytest.mark.parametrize("kind", ["random", "nn", "malloc", "aligned", "tight"])
@pytest.mark.parametrize("algorithm", ["best-fit/size", "first-fit/lifetime", "heuristics"])
def test_deterministic_algorithms_give_the_clis_offsets(cli, tmp_path, kind, algorithm):
    path = tmp_path / f"{kind}.csv"
    subprocess.run([cli, "gen", "--kind", kind, "--buffers", "2000", "--seed", "3", "-o", str(path)], check=True, capture_output=True)
    # A long limit: these end when done, and a loaded machine must not cut a heuristic short.
    summary, offsets = cli_plan(cli, path, "--algorithm", algorithm, "--seed", 5, "--time-limit", 60)
    inst = heaplab.read(path)
    p = heaplab.plan(inst, seed=5, algorithm=algorithm, time_limit=60)
    assert np.array_equal(p.offsets, offsets)
    assert (p.makespan, p.max_load, p.lower_bound, p.algorithm) == (summary["makespan"], summary["max_load"], summary["lower_bound"], summary["algorithm"])
    assert_valid(inst.sizes, inst.lower, inst.upper, p.offsets, alignment=inst.alignment)


@pytest.mark.parametrize("kind", ["equal", "nested", "nn", "tight"])
def test_auto_plans_match_where_both_finish_early(cli, tmp_path, kind):
    # Proven optimal well inside the limit, the portfolio's path does not depend on timing.
    path = tmp_path / f"{kind}.csv"
    subprocess.run([cli, "gen", "--kind", kind, "--buffers", "300", "--seed", "2", "-o", str(path)], check=True, capture_output=True)
    summary, offsets = cli_plan(cli, path, "--seed", 9, "--time-limit", 30)
    p = heaplab.plan(heaplab.read(path), seed=9, time_limit=30)
    assert (p.makespan, p.lower_bound, p.optimal) == (summary["makespan"], summary["lower_bound"], summary["optimal"])
    if summary["optimal"] and summary["algorithm"] == p.algorithm:
        assert np.array_equal(p.offsets, offsets)
    inst = heaplab.read(path)
    assert_valid(inst.sizes, inst.lower, inst.upper, p.offsets, alignment=inst.alignment)


def test_capacity_that_cannot_fit(cli, tmp_path):
    path = tmp_path / "r.csv"
    subprocess.run([cli, "gen", "--kind", "random", "--buffers", "200", "--seed", "2", "-o", str(path)], check=True, capture_output=True)
    inst = heaplab.read(path)
    p = heaplab.plan(inst, capacity=inst.max_load() - 1, time_limit=0.3)
    assert not p.fits and p.makespan >= inst.max_load()
    r = subprocess.run([cli, "plan", str(path), "--capacity", str(inst.max_load() - 1)], capture_output=True, text=True)
    assert r.returncode == 1
