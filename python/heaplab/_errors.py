"""The exceptions of the heaplab package.

Every message is the one the ``heaplab`` command-line tool prints for the same problem, so a
message found in the CLI's documentation or an issue report reads the same here. The native
module raises these classes (it imports them from here).
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

__all__ = ["HeaplabError", "InputError", "InvalidPlacement"]


class HeaplabError(Exception):
    """Base class of every error heaplab raises; on its own, the work failed."""


class InputError(HeaplabError, ValueError):
    """Bad input: arrays of the wrong shape, dtype or values, an unreadable or malformed file,
    or an option out of range. The message names what is wrong and where (the file and line, or
    the array and index)."""


class InvalidPlacement(HeaplabError, ValueError):
    """A placement breaks the rules: two buffers live at the same time overlap, an offset is not
    a multiple of its buffer's alignment, or an offset plus size overflows 64 bits.

    Attributes:
        clashes: ``(id_a, id_b, tick)`` for the first clashing pairs found (at most 100).
        misaligned: ids of the buffers whose offset breaks their alignment.
        overflowing: ids of the buffers whose offset + size overflows.
    """

    clashes: List[Tuple[int, int, int]]
    misaligned: List[int]
    overflowing: List[int]

    def __init__(
        self,
        message: str,
        clashes: Sequence[Tuple[int, int, int]] = (),
        misaligned: Sequence[int] = (),
        overflowing: Sequence[int] = (),
    ) -> None:
        super().__init__(message)
        self.clashes = [tuple(c) for c in clashes]  # type: ignore[misc]
        self.misaligned = list(misaligned)
        self.overflowing = list(overflowing)
