"""Files: :func:`read` (instances, placements, traces converted to instances), :class:`Trace`
(a heap trace's calls and summary) and :func:`frag` (the fragmentation of placed jobs), by the
same library code as ``heaplab plan``/``convert``, ``trace-info`` and ``frag``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _native
from ._instance import Instance

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read", "read_placement", "Trace", "Frag", "MappingFrag", "frag"]

PathLike = Union[str, "os.PathLike[str]"]


def _read(path: PathLike, semantics: str, clock: str, size: str, thread: Optional[int], allow_truncated: bool, process: Optional[str]) -> Dict[str, Any]:
    return _native.read(os.fspath(path), semantics, clock, size, thread, allow_truncated, process)


def _instance(d: Dict[str, Any]) -> Instance:
    return Instance(d["sizes"], d["lower"], d["upper"], alignment=d["alignment"], ids=d["ids"], requested=d["requested"])


def read(
    path: PathLike,
    semantics: str = "inex",
    *,
    clock: str = "bytes",
    size: str = "requested",
    thread: Optional[int] = None,
    allow_truncated: bool = False,
    process: Optional[str] = None,
) -> Instance:
    """Reads an instance as ``heaplab plan`` does: CSV (``id,lower,upper,size`` and optionally
    ``alignment``, ``requested``, ``offset``), heaplab's binary ``.hlbin``, compressed inputs, or
    a trace (``.hltrace``) converted on the way.

    Args:
        semantics: lifetime convention of the file: ``"inex"`` = [lower, upper), ``"in"`` =
            [lower, upper], ``"ex"`` = (lower, upper). The instance is always half-open.
        clock: for a trace, the time axis: ``"bytes"`` (allocated-bytes clock), ``"events"``
            (operation index) or ``"ns"`` (nanoseconds made strictly increasing).
        size: for a trace, ``"requested"`` sizes or the allocator's ``"usable"`` ones.
        thread: for a trace, only the buffers this thread allocated.
        allow_truncated: use the usable part of a damaged trace instead of failing.
        process: for a run index (``.hlrun``), the process (pid or program name).

    Raises:
        InputError: the file cannot be read or breaks the format (the message names the file,
            line and field, as the CLI's does).
    """
    return _instance(_read(path, semantics, clock, size, thread, allow_truncated, process))


def read_placement(path: PathLike, semantics: str = "inex") -> Tuple[Instance, np.ndarray]:
    """Reads a self-contained placement (an instance file with an ``offset`` column, as
    ``heaplab plan -o`` writes): the instance and its offsets."""
    d = _read(path, semantics, "bytes", "requested", None, False, None)
    if d["offsets"] is None:
        from ._errors import InputError

        raise InputError(f"{os.fspath(path)}: no offset column: not a placement")
    return _instance(d), d["offsets"]


class Trace:
    """A heap trace written by ``heaplab trace`` (``.hltrace``), or one process of a run index
    (``.hlrun``, chosen by ``process``).

    >>> t = heaplab.Trace("run.hltrace")          # doctest: +SKIP
    >>> t.events()[:3]; t.info()["peak_live_bytes"]  # doctest: +SKIP
    """

    #: numpy dtype of :meth:`events` (one row per call, in sequence order).
    EVENT_DTYPE = np.dtype(
        [
            ("seq", np.uint64),
            ("seq2", np.uint64),
            ("tid", np.uint32),
            ("ns", np.uint64),
            ("op", "U13"),
            ("ptr_in", np.uint64),
            ("ptr_out", np.uint64),
            ("size", np.uint64),
            ("extra", np.uint64),
            ("usable", np.uint64),
            ("requested", np.uint64),
            ("site", np.uint32),
        ]
    )

    def __init__(self, path: PathLike, *, process: Optional[str] = None, allow_truncated: bool = False) -> None:
        self.path: str = os.fspath(path)
        self.process = process
        self.allow_truncated = allow_truncated

    def __repr__(self) -> str:
        return f"heaplab.Trace({self.path!r})"

    def events(self) -> np.ndarray:
        """Every call (malloc, free, calloc, realloc, ...) as a numpy structured array of
        :attr:`EVENT_DTYPE`: sequence numbers (``seq2``: a realloc's allocation half), thread,
        nanoseconds since the start, the function's name, pointers in and out, the size
        argument, ``extra`` (count or alignment), usable and requested bytes, call site.

        Raises:
            InputError: unreadable or damaged (unless ``allow_truncated``).
        """
        d = _native.trace_events(self.path, self.allow_truncated, self.process)
        out = np.empty(len(d["seq"]), dtype=self.EVENT_DTYPE)
        for name in self.EVENT_DTYPE.names:
            if name == "op":
                codes = np.array(sorted(d["ops"]), dtype=np.uint8)
                names = np.array([d["ops"][int(c)] for c in codes], dtype="U13")
                out["op"] = names[np.searchsorted(codes, d["op"])] if len(out) else names[:0]
            else:
                out[name] = d[name]
        return out

    def to_pandas(self) -> "pd.DataFrame":
        """:meth:`events` as a DataFrame (``op`` categorical). Needs pandas."""
        import pandas as pd

        df = pd.DataFrame(self.events())
        df["op"] = df["op"].astype("category")
        return df

    def info(self) -> Dict[str, Any]:
        """What ``heaplab trace-info --json`` reports (same keys): calls per function, threads,
        peak live bytes, sizes histogram ``(lo, hi, count)``, duration, completeness, ..."""
        return _native.trace_info(self.path, True, self.process)

    def instance(self, clock: str = "bytes", size: str = "requested", thread: Optional[int] = None) -> Instance:
        """The trace as an instance to plan (see :func:`read`)."""
        return read(self.path, clock=clock, size=size, thread=thread, allow_truncated=self.allow_truncated, process=self.process)


@dataclass(frozen=True)
class MappingFrag:
    """Fragmentation of one mapping (memory region) of a placed file."""

    id: int
    name: str
    start: int
    end: int
    jobs: int
    external: float
    internal: float
    makespan: int
    max_load: int


@dataclass(frozen=True)
class Frag:
    """The 2-D fragmentation of placed jobs, as ``heaplab frag`` measures it: external =
    page-local gaps below live blocks over the job area, internal = (usable - requested) x
    lifetime over the same area; per mapping and over time (``series_*``, one value per
    bucket of the allocated-bytes clock)."""

    allocator: str
    trace: str
    jobs: int
    page_size: int
    end_time: int
    external: float
    internal: float
    job_area: float
    external_area: float
    internal_area: float
    mappings: List[MappingFrag] = field(repr=False)
    series_t0: np.ndarray = field(repr=False)
    series_t1: np.ndarray = field(repr=False)
    series_external: np.ndarray = field(repr=False)
    series_internal: np.ndarray = field(repr=False)


def frag(path: PathLike, page_size: Optional[int] = None, buckets: int = 100) -> Frag:
    """Measures the fragmentation of a placed file (``heaplab replay``'s output, or its CSV
    export). ``page_size``: default the file's (4096 for CSV); ``buckets``: length of the
    series over time.

    Raises:
        InputError: unreadable file, or jobs overlapping while both live (the CLI's message).
    """
    d = _native.frag(os.fspath(path), page_size, buckets)
    d["mappings"] = [MappingFrag(**m) for m in d["mappings"]]
    return Frag(**d)
