"""heaplab.baselines: the greedy planners of TFLite and ONNX Runtime.

Small instances with offsets worked out by hand, and random and adversarial ones; every
placement is checked by `heaplab.check` and by the numpy oracle of conftest.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import heaplab
from conftest import assert_valid
from heaplab import baselines


def max_load(sizes, lower, upper):
    """The most bytes live at one tick, by a prefix sum over the ticks."""
    s, lo, up = (np.asarray(a, dtype=np.int64) for a in (sizes, lower, upper))
    if len(s) == 0:
        return 0
    ev = np.zeros(int(up.max()) + 1, dtype=np.int64)
    np.add.at(ev, lo, s)
    np.add.at(ev, up, -s)
    return int(np.cumsum(ev).max())


def checked(inst, offsets):
    """Validate an instance's placement with heaplab.check and the numpy oracle."""
    assert_valid(inst.sizes, inst.lower, inst.upper, offsets, alignment=inst.alignment)
    heaplab.check(inst, offsets=offsets)


def test_greedy_by_size_by_hand():
    # By size: b1 (8) at 0; b0 (4) overlaps b1: above it at 8; b2 (2) overlaps only b1: at 8.
    g = baselines.greedy_by_size([4, 8, 2], [0, 1, 2], [2, 3, 4])
    assert list(g.offsets) == [8, 0, 8] and g.makespan == 12 and g.algorithm == "greedy-by-size"


def test_first_fit_and_best_fit_by_hand():
    # In execution order: gaps at tick 2 are [0, 8) and [12, 16); a 4-byte buffer goes to the
    # lowest under first fit and the tightest under best fit.
    sizes, lower, upper = [8, 4, 4, 4, 4], [0, 0, 0, 0, 2], [2, 10, 2, 10, 5]
    first = baselines.greedy(sizes, lower, upper, order="first-use", fit="first")
    best = baselines.ort_mem_pattern(sizes, lower, upper)
    assert list(first.offsets) == [0, 8, 12, 16, 0]
    assert list(best.offsets) == [0, 8, 12, 16, 12]
    assert first.makespan == best.makespan == 20


def test_alignment_by_hand():
    g = baselines.greedy_by_size([3, 3, 5], [0, 0, 0], [1, 1, 1], alignment=4)
    assert list(g.offsets) == [8, 12, 0] and g.makespan == 15


def test_tflite_order_puts_whole_run_buffers_first():
    # The small buffer alive for the whole run goes first, at 0, before the larger ones.
    g = baselines.tflite_arena([2, 8, 8], [0, 0, 1], [3, 1, 3])
    assert list(g.offsets) == [0, 2, 2]


def test_baselines_reject_bad_arrays():
    with pytest.raises(heaplab.InputError):
        baselines.greedy_by_size([1, 2], [0], [1, 2])
    with pytest.raises(heaplab.InputError):
        baselines.greedy_by_size([1], [3], [2])
    with pytest.raises(heaplab.InputError, match="order must"):
        baselines.greedy([1], [0], [1], order="random")
    assert baselines.greedy_by_size([], [], []).makespan == 0


@pytest.mark.parametrize("seed", range(12))
def test_baselines_on_random_and_adversarial_instances(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    kind = seed % 4
    if kind == 0:  # random
        sizes = rng.integers(1, 1 << 20, n)
        lower = rng.integers(0, 100, n)
        upper = lower + rng.integers(1, 30, n)
    elif kind == 1:  # all live at once, equal sizes
        sizes, lower, upper = np.full(n, 64), np.zeros(n, int), np.ones(n, int)
    elif kind == 2:  # staircase: each overlaps the next only, sizes growing
        sizes, lower = np.arange(1, n + 1) * 7, np.arange(n)
        upper = lower + 2
    else:  # odd sizes with mixed alignments
        sizes = rng.integers(1, 100, n) * 2 + 1
        lower = rng.integers(0, 20, n)
        upper = lower + rng.integers(1, 20, n)
    align = rng.choice([1, 2, 8, 64, 4096], n) if kind == 3 else 16
    inst = heaplab.Instance(sizes, lower, upper, alignment=align)
    load = max_load(sizes, lower, upper)
    for planner in (baselines.greedy_by_size, baselines.tflite_arena, baselines.ort_mem_pattern):
        g = planner(inst)
        checked(inst, g.offsets)
        assert g.makespan == int((g.offsets + inst.sizes).max()) >= load
    if kind == 1:
        assert baselines.greedy_by_size(inst).makespan == 64 * n
