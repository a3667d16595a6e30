"""`Instance`: buffers with sizes and lifetimes as numpy columns, checked by the model's rules
when made (so an invalid instance never exists), with pandas and file conversions."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from . import _native
from ._arrays import as_u64

if TYPE_CHECKING:  # pandas is optional
    import pandas as pd

__all__ = ["Instance"]

PathLike = Union[str, "os.PathLike[str]"]


def _own(name: str, values: Any) -> np.ndarray:
    """``values`` as a uint64 array this instance owns: copied when it would share the
    caller's memory (the columns are made read-only, which must not change the caller's array)."""
    a = as_u64(name, values)
    base = values.to_numpy() if hasattr(values, "to_numpy") else values
    if isinstance(base, np.ndarray) and np.may_share_memory(a, base):
        a = a.copy()
    return a


class Instance:
    """Buffers to be placed: buffer ``i`` needs ``sizes[i]`` bytes during the half-open
    lifetime ``[lower[i], upper[i])``, at an offset that is a multiple of ``alignment[i]``.

    Args:
        sizes: bytes per buffer (> 0). Any integer dtype, whole floats, or a list.
        lower: first tick each buffer is live.
        upper: first tick each buffer is no longer live (> lower).
        alignment: required alignment of each offset in bytes, a power of two (1 or 0: none);
            ``None``: no alignment.
        ids: identifiers (unique); ``None``: 0, 1, 2, ...
        requested: bytes the program asked for (<= size; 0: unknown); ``None``: not known.

    Raises:
        InputError: arrays of different lengths, of a non-integer dtype, not 1-D, or values
            breaking the rules (a zero size, ``upper <= lower``, a duplicate id, an alignment
            that is not a power of two), named by index.

    All columns are ``np.ndarray[uint64]`` of one length (``len(inst)``), read-only.
    """

    __slots__ = ("sizes", "lower", "upper", "alignment", "ids", "requested")

    sizes: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    alignment: np.ndarray
    ids: np.ndarray
    requested: Optional[np.ndarray]

    def __init__(
        self,
        sizes: Any,
        lower: Any,
        upper: Any,
        alignment: Any = None,
        ids: Any = None,
        *,
        requested: Any = None,
    ) -> None:
        sizes_a = _own("sizes", sizes)
        n = len(sizes_a)
        lower_a = _own("lower", lower)
        upper_a = _own("upper", upper)
        ids_a = np.arange(n, dtype=np.uint64) if ids is None else _own("ids", ids)
        if alignment is None:
            align_a = np.ones(n, dtype=np.uint64)
        elif np.isscalar(alignment):
            align_a = np.full(n, as_u64("alignment", [alignment])[0], dtype=np.uint64)
        else:
            align_a = _own("alignment", alignment)
        req_a = None if requested is None else _own("requested", requested)
        _native.validate_instance(ids_a, lower_a, upper_a, sizes_a, align_a, req_a)
        # Alignment 0 means none, like 1: stored as 1 so the column is the alignment in bytes.
        if (align_a == 0).any():
            align_a = np.where(align_a == 0, np.uint64(1), align_a).astype(np.uint64)
        for name, a in (("sizes", sizes_a), ("lower", lower_a), ("upper", upper_a), ("alignment", align_a), ("ids", ids_a), ("requested", req_a)):
            if a is not None:
                a.flags.writeable = False
            object.__setattr__(self, name, a)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Instance is immutable: make a new one")

    def __reduce__(self) -> Any:
        # Pickled as its columns (for multiprocessing and Dask): rebuilt, and so checked, on load.
        return (
            _rebuild,
            (self.sizes, self.lower, self.upper, self.alignment, self.ids, self.requested),
        )

    def __len__(self) -> int:
        return int(self.sizes.shape[0])

    def __repr__(self) -> str:
        return f"heaplab.Instance({len(self)} buffers, max load {self.max_load()} B)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        cols = ("sizes", "lower", "upper", "alignment", "ids")
        return all(np.array_equal(getattr(self, c), getattr(other, c)) for c in cols)

    __hash__ = None  # type: ignore[assignment]

    @property
    def has_alignment(self) -> bool:
        """Whether any buffer needs an alignment above 1."""
        return bool((self.alignment > 1).any())

    def max_load(self) -> int:
        """The max load: the most bytes live at one tick, a lower bound on any makespan."""
        return int(_native.max_load(self.ids, self.lower, self.upper, self.sizes))

    def to_pandas(self) -> "pd.DataFrame":
        """The buffers as a DataFrame with columns ``id, lower, upper, size, alignment`` (and
        ``requested`` when known), one row per buffer in order. Needs pandas."""
        import pandas as pd

        cols = {"id": self.ids, "lower": self.lower, "upper": self.upper, "size": self.sizes, "alignment": self.alignment}
        if self.requested is not None:
            cols["requested"] = self.requested
        return pd.DataFrame(cols)

    @classmethod
    def from_pandas(cls, df: "pd.DataFrame") -> "Instance":
        """An instance from a DataFrame with columns ``lower, upper, size`` and optionally
        ``id``, ``alignment`` and ``requested`` (as :meth:`to_pandas` writes them)."""
        missing = [c for c in ("lower", "upper", "size") if c not in df.columns]
        if missing:
            from ._errors import InputError

            raise InputError(f"DataFrame: missing column(s) {', '.join(missing)}; expected lower, upper, size (and optionally id, alignment, requested)")
        col = lambda c: df[c].to_numpy() if c in df.columns else None  # noqa: E731
        return cls(col("size"), col("lower"), col("upper"), alignment=col("alignment"), ids=col("id"), requested=col("requested"))

    def to_csv(self, path: PathLike, offsets: Any = None) -> None:
        """Writes the instance as the CLI does: CSV (``id,lower,upper,size`` and
        ``alignment``/``requested`` when used), or heaplab's binary format when the name ends in
        ``.hlbin``; with ``offsets`` (or a :class:`Plan`) it writes a placement. The file is
        replaced atomically: nothing half-written is left on error."""
        offs = None
        if offsets is not None:
            offs = as_u64("offsets", getattr(offsets, "offsets", offsets))
        _native.write(
            os.fspath(path),
            self.ids,
            self.lower,
            self.upper,
            self.sizes,
            self.alignment if self.has_alignment else None,
            self.requested,
            offs,
        )


def _rebuild(sizes: Any, lower: Any, upper: Any, alignment: Any, ids: Any, requested: Any) -> "Instance":
    """Unpickles an :class:`Instance` from its columns."""
    return Instance(sizes, lower, upper, alignment=alignment, ids=ids, requested=requested)
