"""An adapter for users of minimalloc (its CSV files and its Python bindings' call shape).

minimalloc's CSV has the columns ``id,lower,upper,size`` and, in a solution, ``offset``; its
lifetimes are half-open ``[lower, upper)``, as heaplab's. Its solver is given a capacity (the
memory there is) and returns offsets that fit, or fails. Here:

>>> from heaplab import minimalloc
>>> problem = minimalloc.read_csv("input.csv")                        # doctest: +SKIP
>>> solution = minimalloc.solve(problem, capacity=1 << 20)            # doctest: +SKIP
>>> minimalloc.write_csv("output.csv", problem, solution)             # doctest: +SKIP

``solve`` plans with heaplab's portfolio (the exact search included), stops at the first plan
within the capacity, and raises :class:`NoSolution` when none fits (proven, or not found in the
time limit: the exception says which).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

import numpy as np

from ._errors import HeaplabError
from ._files import read, read_placement
from ._instance import Instance
from ._plan import Plan, check, plan

__all__ = ["Problem", "Solution", "NoSolution", "read_csv", "solve", "write_csv"]

PathLike = Union[str, "os.PathLike[str]"]

Problem = Instance
"""A minimalloc problem is a heaplab :class:`~heaplab.Instance` (ids, lower, upper, size)."""


@dataclass(frozen=True)
class Solution:
    """Offsets (``np.ndarray[uint64]``, in the problem's order) with their ids and height
    (minimalloc's makespan), and the :class:`~heaplab.Plan` behind them."""

    offsets: np.ndarray
    height: int
    plan: Plan

    def as_dict(self, problem: Instance) -> Dict[int, int]:
        """``{id: offset}``, as minimalloc's solution maps buffer ids to offsets."""
        return dict(zip(problem.ids.tolist(), self.offsets.tolist()))


class NoSolution(HeaplabError):
    """No placement within the capacity: ``proven`` when the lower bound is above it (nothing
    can fit), else none was found in the time limit."""

    def __init__(self, message: str, proven: bool, best: Plan) -> None:
        super().__init__(message)
        self.proven = proven
        self.best = best


def read_csv(path: PathLike) -> Instance:
    """Reads a minimalloc problem CSV (``id,lower,upper,size``; an ``offset`` column of a
    solution is accepted and ignored; use :func:`read_solution` for it)."""
    return read(path)


def read_solution(path: PathLike) -> "tuple[Instance, np.ndarray]":
    """Reads a minimalloc solution CSV (with ``offset``): the problem and its offsets."""
    return read_placement(path)


def solve(problem: Instance, capacity: Optional[int] = None, time_limit: float = 3.0, seed: int = 1, **options: Any) -> Solution:
    """Solves like minimalloc: offsets for every buffer within ``capacity`` bytes (``None``:
    the smallest heaplab finds in ``time_limit``). Other keywords go to :func:`heaplab.plan`.

    Raises:
        NoSolution: nothing within the capacity (``.proven`` says whether that is proven).
    """
    p = plan(problem, capacity=capacity, time_limit=time_limit, seed=seed, **options)
    if not p.fits:
        proven = p.lower_bound > (capacity or 0)
        why = "proven: the lower bound is above it" if proven else "none found in the time limit"
        raise NoSolution(f"no plan fits in capacity {capacity} B ({why}; best {p.makespan} B, lower bound {p.lower_bound} B)", proven, p)
    check(problem, p.offsets)
    return Solution(offsets=p.offsets, height=p.makespan, plan=p)


def write_csv(path: PathLike, problem: Instance, solution: Union[Solution, Plan, np.ndarray, None] = None) -> None:
    """Writes the problem as minimalloc's CSV (``id,lower,upper,size``), with an ``offset``
    column when a solution is given (validated first)."""
    offsets = None if solution is None else getattr(solution, "offsets", solution)
    if offsets is not None:
        check(problem, offsets)
    problem.to_csv(path, offsets)
