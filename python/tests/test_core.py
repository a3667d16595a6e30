"""plan, check and Instance: placements valid by an independent oracle, bad arrays rejected
with clear exceptions."""

from __future__ import annotations

import numpy as np
import pytest

import heaplab
from conftest import assert_valid, overlaps_numpy


def random_instance(n: int, seed: int):
    rng = np.random.default_rng(seed)
    lower = rng.integers(0, 200, n)
    upper = lower + rng.integers(1, 50, n)
    sizes = rng.integers(1, 1 << 12, n)
    return sizes, lower, upper


@pytest.mark.parametrize("seed", range(5))
def test_random_plans_are_valid(seed):
    sizes, lower, upper = random_instance(300, seed)
    p = heaplab.plan(sizes, lower, upper, time_limit=0.5, seed=seed)
    assert p.offsets.dtype == np.uint64 and p.offsets.shape == (300,)
    assert_valid(sizes, lower, upper, p.offsets)
    assert p.makespan == int((p.offsets + sizes.astype(np.uint64)).max())
    assert p.lower_bound >= p.max_load
    assert p.makespan >= p.lower_bound
    assert p.optimal == (p.makespan == p.lower_bound)


def test_small_example_is_optimal():
    p = heaplab.plan([4, 4, 8], lower=[0, 1, 2], upper=[2, 3, 4])
    assert (p.makespan, p.optimal, p.fits) == (12, True, True)
    assert_valid([4, 4, 8], [0, 1, 2], [2, 3, 4], p.offsets)


def test_check_names_the_clashing_buffers():
    with pytest.raises(heaplab.InvalidPlacement) as e:
        heaplab.check([4, 4], [0, 1], [2, 3], [0, 2], )
    assert "buffers 0 and 1 clash at tick 1" in str(e.value)
    assert e.value.clashes == [(0, 1, 1)]
    assert isinstance(e.value, ValueError) and isinstance(e.value, heaplab.HeaplabError)
    assert overlaps_numpy([4, 4], [0, 1], [2, 3], [0, 2]) == (0, 1)


def test_check_uses_ids_and_alignment():
    inst = heaplab.Instance([8, 8], [0, 0], [1, 1], alignment=[8, 8], ids=[10, 20])
    heaplab.check(inst, [0, 8])
    with pytest.raises(heaplab.InvalidPlacement, match="buffer 20: offset 9 is not a multiple of its alignment 8") as e:
        heaplab.check(inst, [0, 9])
    assert e.value.misaligned == [20]


def test_alignment_is_honoured():
    sizes, lower, upper = random_instance(200, 9)
    align = np.where(np.arange(200) % 3 == 0, 64, 1)
    p = heaplab.plan(sizes, lower, upper, alignment=align, time_limit=0.3)
    assert_valid(sizes, lower, upper, p.offsets, alignment=align)


@pytest.mark.parametrize(
    "sizes, lower, upper, message",
    [
        ([1, 2], [0], [1, 2], "lower has 1 values but sizes has 2"),
        ([1, 0], [0, 0], [1, 1], "buffer at index 1: field 'size': size 0"),
        ([1, -2], [0, 0], [1, 1], "sizes: value -2 at index 1 is negative"),
        ([1, 2], [0, 5], [1, 5], "buffer at index 1: field 'upper': upper must be greater than lower (lower 5, upper 5)"),
        ([1.0, float("nan")], [0, 0], [1, 1], "sizes: NaN at index 1"),
        ([1.5, 2], [0, 0], [1, 1], "sizes: value 1.5 at index 0 is not an integer"),
        (np.ones((2, 2)), [0, 0], [1, 1], "sizes: expected a 1-D array, got 2 dimensions"),
        (["a", "b"], [0, 0], [1, 1], "sizes: expected integers, got an array of dtype <U1"),
        ([True, False], [0, 0], [1, 1], "expected integers, got an array of dtype bool"),
    ],
)
def test_bad_arrays_raise_clear_input_errors(sizes, lower, upper, message):
    with pytest.raises(heaplab.InputError) as e:
        heaplab.plan(sizes, lower, upper)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)


def test_any_integer_dtype_and_lists_are_accepted():
    base = heaplab.plan([4, 4, 8], [0, 1, 2], [2, 3, 4])
    for dt in (np.int8, np.uint16, np.int32, np.uint64, np.float64):
        p = heaplab.plan(np.array([4, 4, 8], dtype=dt), np.array([0, 1, 2], dtype=dt), np.array([2, 3, 4], dtype=dt))
        assert np.array_equal(p.offsets, base.offsets)


def test_instance_is_immutable_and_does_not_freeze_the_callers_arrays():
    sizes = np.array([1, 2, 3], dtype=np.uint64)
    inst = heaplab.Instance(sizes, [0, 0, 0], [1, 1, 1])
    assert sizes.flags.writeable
    assert not inst.sizes.flags.writeable
    with pytest.raises(AttributeError):
        inst.sizes = sizes  # type: ignore[misc]
    assert len(inst) == 3 and inst.max_load() == 6


def test_pandas_round_trip(tmp_path):
    sizes, lower, upper = random_instance(50, 3)
    inst = heaplab.Instance(sizes, lower, upper, ids=np.arange(100, 150))
    df = inst.to_pandas()
    assert list(df.columns) == ["id", "lower", "upper", "size", "alignment"]
    assert heaplab.Instance.from_pandas(df) == inst


def test_duplicate_ids_are_rejected():
    with pytest.raises(heaplab.InputError, match=r"^buffer at index 2: field 'id': duplicate id 7 \(first at index 0\)$"):
        heaplab.Instance([1, 1, 1], [0, 0, 0], [1, 1, 1], ids=[7, 8, 7])


def test_capacity():
    sizes, lower, upper = random_instance(100, 4)
    roomy = heaplab.plan(sizes, lower, upper, capacity="1GiB", time_limit=0.5)
    assert roomy.fits and roomy.capacity == 1 << 30
    assert_valid(sizes, lower, upper, roomy.offsets)
    tight = heaplab.plan(sizes, lower, upper, capacity=int(heaplab.Instance(sizes, lower, upper).max_load()) - 1, time_limit=0.3)
    assert not tight.fits


def test_empty_instance():
    p = heaplab.plan([], [], [])
    assert p.makespan == 0 and p.offsets.shape == (0,)


def test_an_instance_pickles_as_its_columns():
    import pickle

    inst = heaplab.Instance([4, 8], [0, 1], [2, 3], alignment=[1, 8], ids=[7, 9])
    back = pickle.loads(pickle.dumps(inst))
    assert back == inst and back.ids.tolist() == [7, 9] and not back.sizes.flags.writeable
