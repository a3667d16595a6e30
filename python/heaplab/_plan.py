"""`plan` and `check`: offsets for buffers from numpy arrays or an :class:`Instance`, by the
same planner and validator as ``heaplab plan`` and ``heaplab check``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple, Union

import numpy as np

from . import _native
from ._arrays import as_u64
from ._errors import InputError
from ._instance import Instance

__all__ = ["Plan", "plan", "check"]


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` returns.

    Attributes:
        offsets: ``np.ndarray[uint64]``, one offset per buffer in input order; validated.
        makespan: the peak memory: the highest ``offset + size``.
        lower_bound: the best proven lower bound on any makespan (the max load, or more where
            the exact search refuted smaller ones).
        max_load: the most bytes live at one tick.
        optimal: ``makespan == lower_bound``, which proves the plan optimal.
        fits: within ``capacity`` (always ``True`` without one).
        algorithm: the algorithm that produced the component deciding the makespan.
        stages: ``(stage, seconds)`` in the order they ran.
        attempts: ``(algorithm, makespan, seconds)`` of each algorithm on that component.
        components: independent components (time ranges no buffer crosses).
        seconds: wall time the planner took.
        capacity: the capacity asked for, if any.
    """

    offsets: np.ndarray = field(repr=False)
    makespan: int
    lower_bound: int
    max_load: int
    optimal: bool
    fits: bool
    algorithm: str
    stages: Tuple[Tuple[str, float], ...] = field(repr=False)
    attempts: Tuple[Tuple[str, int, float], ...] = field(repr=False)
    components: int = field(repr=False)
    seconds: float
    capacity: Optional[int] = None

    @property
    def fragmentation(self) -> int:
        """``makespan - max_load`` in bytes."""
        return self.makespan - self.max_load


def _instance(what: str, sizes_or_instance: Any, lower: Any, upper: Any, alignment: Any) -> Instance:
    if isinstance(sizes_or_instance, Instance):
        if lower is not None or upper is not None or alignment is not None:
            raise InputError(f"{what}: lower, upper and alignment come from the Instance; pass them only with a sizes array")
        return sizes_or_instance
    if lower is None or upper is None:
        raise InputError(f"{what}: lower and upper are needed with a sizes array (or pass an Instance)")
    return Instance(sizes_or_instance, lower, upper, alignment=alignment)


def _columns(what: str, sizes_or_instance: Any, lower: Any, upper: Any, alignment: Any) -> Tuple[Any, ...]:
    """``(ids, lower, upper, sizes, alignment or None)`` for the native module. Arrays are only
    converted: the native call checks them by the instance rules, once (an Instance would check
    them a second time)."""
    if isinstance(sizes_or_instance, Instance) or alignment is not None and np.isscalar(alignment):
        inst = _instance(what, sizes_or_instance, lower, upper, alignment)
        return (inst.ids, inst.lower, inst.upper, inst.sizes, inst.alignment if inst.has_alignment else None)
    if lower is None or upper is None:
        raise InputError(f"{what}: lower and upper are needed with a sizes array (or pass an Instance)")
    sizes = as_u64("sizes", sizes_or_instance)
    ids = np.arange(len(sizes), dtype=np.uint64)
    align = None if alignment is None else as_u64("alignment", alignment)
    return (ids, as_u64("lower", lower), as_u64("upper", upper), sizes, align)


def _capacity(capacity: Union[int, str, None]) -> Optional[int]:
    if capacity is None:
        return None
    if isinstance(capacity, str):
        return int(_native.parse_bytes(capacity))
    if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (int, np.integer)):
        raise InputError(f"capacity {capacity!r}: expected bytes as an int, or a string such as '16GiB'")
    if not 0 <= int(capacity) < 2**64:
        raise InputError(f"capacity {capacity}: expected bytes from 0 to 2**64-1")
    return int(capacity)


def plan(
    sizes_or_instance: Any,
    lower: Any = None,
    upper: Any = None,
    alignment: Any = None,
    capacity: Union[int, str, None] = None,
    time_limit: float = 3.0,
    seed: int = 1,
    *,
    algorithm: str = "auto",
) -> Plan:
    """Offsets for every buffer so that buffers live at the same time never overlap, minimising
    the makespan (peak memory), exactly as ``heaplab plan`` does (same seed, same plan).

    Args:
        sizes_or_instance: an :class:`Instance`, or the sizes (then ``lower`` and ``upper``
            too; lifetimes are half-open ``[lower, upper)``).
        alignment: per-buffer alignment in bytes (powers of two), or one for all.
        capacity: memory available (bytes, or a string such as ``"16GiB"``): stop at the first
            plan within it instead of minimising; ``Plan.fits`` says whether one was found.
        time_limit: wall-clock budget in seconds; the best plan found by then is returned.
        seed: seed of the stochastic stages.
        algorithm: ``"auto"`` or one of ``heaplab plan --algorithm``'s names.

    The GIL is released while planning; Ctrl-C stops the planner and raises
    ``KeyboardInterrupt``.

    Raises:
        InputError: bad arrays or options (see :class:`Instance`).
    """
    cols = _columns("plan", sizes_or_instance, lower, upper, alignment)
    cap = _capacity(capacity)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise InputError(f"seed {seed!r}: expected an integer from 0 to 2**64-1")
    try:
        limit = float(time_limit)
    except (TypeError, ValueError):
        raise InputError(f"time_limit {time_limit!r}: expected seconds") from None
    d = _native.plan(*cols, cap, limit, int(seed), str(algorithm))
    offsets = d["offsets"]
    offsets.flags.writeable = False
    return Plan(
        offsets=offsets,
        makespan=d["makespan"],
        lower_bound=d["lower_bound"],
        max_load=d["max_load"],
        optimal=d["optimal"],
        fits=d["fits"],
        algorithm=d["algorithm"],
        stages=tuple(d["stages"]),
        attempts=tuple(d["attempts"]),
        components=d["components"],
        seconds=d["seconds"],
        capacity=cap,
    )


def check(
    sizes_or_instance: Any,
    lower: Any = None,
    upper: Any = None,
    offsets: Any = None,
    alignment: Any = None,
) -> None:
    """Validates a placement as ``heaplab check`` does: no two buffers live at the same time
    overlap in ``[offset, offset + size)``, every offset honours its alignment, nothing
    overflows. ``check(instance, offsets)`` works too; ``offsets`` may be a :class:`Plan`.

    Raises:
        InvalidPlacement: naming the clashing (or misaligned, overflowing) buffers by id.
        InputError: bad arrays, or not one offset per buffer.
    """
    if isinstance(sizes_or_instance, Instance) and offsets is None and lower is not None and upper is None:
        lower, offsets = None, lower
    cols = _columns("check", sizes_or_instance, lower, upper, alignment)
    if offsets is None:
        raise InputError("check: offsets are needed (one per buffer)")
    offs = as_u64("offsets", getattr(offsets, "offsets", offsets))
    _native.check(*cols, offs)
