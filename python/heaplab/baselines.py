"""Greedy offline planners as ML runtimes ship them, for comparison with `heaplab.plan`.

This module owns the reference baselines of the ONNX benchmark: one greedy engine
(`greedy`) that takes the buffers in a chosen order and puts each into a gap left by the
already-placed buffers whose lifetimes overlap it, and three named settings of it:

- `greedy_by_size`: largest first, lowest gap that fits (first fit). This is TFLite Micro's
  `GreedyMemoryPlanner` and the "greedy by size" strategy of TFLite's GPU delegate.
- `tflite_arena`: TFLite's `ArenaPlanner` over its `SimpleMemoryArena`: buffers alive for the
  whole run first, then largest first (ties: earlier first use), smallest gap that fits
  (best fit).
- `ort_mem_pattern`: ONNX Runtime's memory pattern (`MemPatternPlanner`): buffers in
  execution order (by first use), smallest gap among the live buffers that fits (best fit).
  Taken in that order, the already-placed buffers that overlap a new one are exactly the
  ones still alive when it is allocated, so the offline engine reproduces the online trace.

Where these differ from the runtimes:

- Offsets are aligned up to the buffer's alignment inside every gap (TFLite's arena does
  this; ORT and TFLite Micro instead round sizes up, which makes sizes larger rather than
  offsets sparser). Sizes are never rounded here.
- Best fit measures the gap from the aligned candidate offset (TFLite measures the test from
  the aligned offset but the fit from the unaligned one); ties go to the lowest offset.
- Lifetimes are half-open `[lower, upper)`; the runtimes' closed `[first, last]` node
  intervals are `[first, last + 1)` here, the convention `heaplab.onnx` produces.
- ORT also lets a node's output take over a dead input's buffer of the same size before the
  memory pattern runs (its allocation planner's "reuse"), and TFLite keeps graph inputs and
  outputs alive by reference counts; here those decisions are in the instance's lifetimes.

Every function returns a `GreedyPlan` whose offsets follow the input order; placements are
valid by construction and the tests still check each one with `heaplab.check`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from heaplab import InputError, Instance

__all__ = ["GreedyPlan", "greedy", "greedy_by_size", "tflite_arena", "ort_mem_pattern"]

ArrayLike = Union[Sequence[int], np.ndarray]


@dataclass(frozen=True)
class GreedyPlan:
    """A baseline planner's placement.

    Attributes:
        offsets: byte offset of each buffer, in the input order (uint64).
        makespan: the arena size the placement needs, ``max(offset + size)`` (0 when empty).
        algorithm: the planner's name (``greedy-by-size``, ``tflite-arena``, ``ort-mem-pattern``).
    """

    offsets: np.ndarray
    makespan: int
    algorithm: str


def _columns(sizes: object, lower: object, upper: object, alignment: object):
    """The buffers' columns, validated by `heaplab.Instance` (its errors, its messages)."""
    if isinstance(sizes, Instance):
        if lower is not None or upper is not None:
            raise InputError("give an Instance alone, or sizes with lower and upper")
        inst = sizes
    else:
        if lower is None or upper is None:
            raise InputError("lower and upper are required unless an Instance is given")
        inst = Instance(sizes, lower, upper, alignment=alignment)
    return inst.sizes, inst.lower, inst.upper, inst.alignment


def greedy(
    sizes: object,
    lower: Optional[ArrayLike] = None,
    upper: Optional[ArrayLike] = None,
    alignment: Optional[Union[int, ArrayLike]] = None,
    order: str = "size",
    fit: str = "first",
) -> GreedyPlan:
    """Place buffers one by one into the gaps among placed buffers that overlap them in time.

    Args:
        sizes: byte sizes, or a `heaplab.Instance` (then leave `lower`/`upper` out).
        lower, upper: half-open lifetimes ``[lower, upper)``.
        alignment: offset alignment (a power of two), one for all or one per buffer; with an
            Instance, its own alignment column is used.
        order: ``"size"`` (largest first, ties by input order), ``"size-first-use"`` (buffers
            spanning the whole run first, then largest first, ties by earlier ``lower``: TFLite's
            arena order) or ``"first-use"`` (by ``lower``, ties by input order: execution order).
        fit: ``"first"`` (lowest gap that holds the buffer) or ``"best"`` (smallest such gap;
            ties to the lowest). A buffer that fits no gap goes above the overlapping ones.

    Returns:
        A `GreedyPlan`; offsets in the input order.

    Raises:
        heaplab.InputError: bad arrays (as `heaplab.Instance` reports them), or an unknown
            ``order`` or ``fit``.
    """
    s, lo, up, al = _columns(sizes, lower, upper, alignment)
    n = len(s)
    idx = np.arange(n)
    if order == "size":
        seq = np.lexsort((idx, ~s))  # ~s: descending sizes; ties keep input order
    elif order == "size-first-use":
        if n:
            whole = (lo == lo.min()) & (up == up.max())
        else:
            whole = np.zeros(0, dtype=bool)
        seq = np.lexsort((idx, lo, ~s, ~whole))
    elif order == "first-use":
        seq = np.lexsort((idx, lo))
    else:
        raise InputError(f"order must be 'size', 'size-first-use' or 'first-use' (got {order!r})")
    if fit not in ("first", "best"):
        raise InputError(f"fit must be 'first' or 'best' (got {fit!r})")

    offsets = np.zeros(n, dtype=np.uint64)
    placed = np.zeros(n, dtype=bool)
    for b in seq:
        size, a = int(s[b]), int(al[b])
        # Placed buffers alive at some tick of [lo[b], up[b]), by offset.
        live = np.flatnonzero(placed & (lo < up[b]) & (up > lo[b]))
        live = live[np.argsort(offsets[live], kind="stable")]
        best: Optional[int] = None
        best_gap = 0
        current = 0
        for j in live:
            start = -(-current // a) * a
            o = int(offsets[j])
            if start + size <= o:
                if fit == "first":
                    best = start
                    break
                if best is None or o - start < best_gap:
                    best, best_gap = start, o - start
            current = max(current, o + int(s[j]))
        if best is None:
            best = -(-current // a) * a
        offsets[b] = best
        placed[b] = True
    makespan = int((offsets + s).max()) if n else 0
    name = {("size", "first"): "greedy-by-size", ("size-first-use", "best"): "tflite-arena",
            ("first-use", "best"): "ort-mem-pattern"}.get((order, fit), f"greedy({order},{fit})")
    return GreedyPlan(offsets=offsets, makespan=makespan, algorithm=name)


def greedy_by_size(sizes: object, lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None,
                   alignment: Optional[Union[int, ArrayLike]] = None) -> GreedyPlan:
    """Greedy by size, first fit: TFLite Micro's `GreedyMemoryPlanner` (see `greedy`)."""
    return greedy(sizes, lower, upper, alignment, order="size", fit="first")


def tflite_arena(sizes: object, lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None,
                 alignment: Optional[Union[int, ArrayLike]] = None) -> GreedyPlan:
    """TFLite's `ArenaPlanner`: whole-run buffers first, then by size, best fit (see `greedy`)."""
    return greedy(sizes, lower, upper, alignment, order="size-first-use", fit="best")


def ort_mem_pattern(sizes: object, lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None,
                    alignment: Optional[Union[int, ArrayLike]] = None) -> GreedyPlan:
    """ONNX Runtime's memory pattern: execution order, best fit among live buffers (see `greedy`)."""
    return greedy(sizes, lower, upper, alignment, order="first-use", fit="best")
