"""The minimalloc adapter on minimalloc's own benchmark CSVs (../shared/benchmarks/minimalloc):
read, solve within the capacity in the file name, write back, read again."""

from __future__ import annotations

import numpy as np
import pytest

import heaplab
from heaplab import minimalloc
from conftest import SHARED, assert_valid

BENCH = SHARED / "benchmarks" / "minimalloc"


def cases():
    if not BENCH.is_dir():
        return []
    return sorted(BENCH.glob("*.csv"))[:4]


@pytest.mark.skipif(not BENCH.is_dir(), reason="skipped: ../shared not found")
@pytest.mark.parametrize("path", cases(), ids=lambda p: p.name)
def test_round_trip_on_minimallocs_benchmarks(path, tmp_path):
    capacity = int(path.name.split(".")[1])
    problem = minimalloc.read_csv(path)
    sol = minimalloc.solve(problem, capacity=capacity, time_limit=2.0)
    assert sol.height <= capacity
    assert_valid(problem.sizes, problem.lower, problem.upper, sol.offsets)
    out = tmp_path / "solution.csv"
    minimalloc.write_csv(out, problem, sol)
    header = out.read_text().splitlines()[0]
    assert header.startswith("id,lower,upper,size") and header.endswith("offset")
    back, offsets = minimalloc.read_solution(out)
    assert back == problem and np.array_equal(offsets, sol.offsets)
    assert sol.as_dict(problem)[int(problem.ids[0])] == int(sol.offsets[0])


def test_no_solution_is_proven_below_the_max_load():
    problem = heaplab.Instance([4, 4], [0, 0], [1, 1])
    with pytest.raises(minimalloc.NoSolution) as e:
        minimalloc.solve(problem, capacity=7, time_limit=0.2)
    assert e.value.proven and e.value.best.makespan == 8
