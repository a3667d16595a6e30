"""Conversion of user arrays (numpy arrays of any integer dtype, lists, pandas columns) to the
contiguous ``uint64`` arrays the native module reads, once and without per-element Python
work, with an :class:`InputError` naming the array and index for anything that is not a
non-negative integer. The model's own rules (size > 0, upper > lower, ...) are checked by the
native module, with the CLI's messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import InputError

__all__ = ["as_u64"]

_TWO_64 = float(2**64)


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def as_u64(name: str, values: Any) -> np.ndarray:
    """``values`` as a contiguous 1-D ``uint64`` array (a view when it already is one).

    Accepts any integer dtype, floats holding whole numbers, lists and pandas Series. Raises
    :class:`InputError` for other dtypes, NaN or infinite values, fractions, negative values,
    values of 2**64 or more, and anything that is not one-dimensional.
    """
    if values is None:
        raise InputError(f"{name}: missing (an array with one value per buffer is needed)")
    try:
        a = np.asarray(values)
    except (ValueError, TypeError) as e:  # ragged lists and the like
        raise InputError(f"{name}: not an array of integers ({e})") from None
    if a.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array, got {a.ndim} dimensions (shape {a.shape})")
    if a.size == 0:
        return np.zeros(0, dtype=np.uint64)
    kind = a.dtype.kind
    if kind == "u":
        return np.ascontiguousarray(a, dtype=np.uint64)
    if kind == "i":
        neg = a < 0
        if neg.any():
            k = _first(neg)
            raise InputError(f"{name}: value {a[k]} at index {k} is negative")
        return np.ascontiguousarray(a, dtype=np.uint64)
    if kind == "f":
        bad = np.isnan(a)
        if bad.any():
            raise InputError(f"{name}: NaN at index {_first(bad)}")
        bad = np.isinf(a)
        if bad.any():
            k = _first(bad)
            raise InputError(f"{name}: value {a[k]} at index {k} is not finite")
        bad = a != np.floor(a)
        if bad.any():
            k = _first(bad)
            raise InputError(f"{name}: value {a[k]} at index {k} is not an integer")
        bad = a < 0
        if bad.any():
            k = _first(bad)
            raise InputError(f"{name}: value {a[k]} at index {k} is negative")
        bad = a >= _TWO_64
        if bad.any():
            k = _first(bad)
            raise InputError(f"{name}: value {a[k]} at index {k} does not fit in 64 bits")
        return np.ascontiguousarray(a, dtype=np.uint64)
    if kind == "O":
        # Python ints beyond int64 (or mixed objects): numpy checks each while converting.
        try:
            return np.ascontiguousarray(np.array(a.tolist(), dtype=np.uint64))
        except (OverflowError, TypeError, ValueError) as e:
            raise InputError(f"{name}: expected integers from 0 to 2**64-1 ({e})") from None
    raise InputError(f"{name}: expected integers, got an array of dtype {a.dtype}")
