"""Shared fixtures of the Python tests: the CLI to compare with, and the validator every
placement a test produces goes through (heaplab.check and an independent numpy oracle)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import heaplab

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def find_cli() -> "str | None":
    """The heaplab CLI: $HEAPLAB, else the release build, else the one `cargo test` builds."""
    env = os.environ.get("HEAPLAB")
    if env:
        return env
    for p in (ROOT / "target" / "release" / "heaplab", ROOT / "target" / "debug" / "heaplab"):
        if p.exists():
            return str(p)
    return shutil.which("heaplab")


@pytest.fixture(scope="session")
def cli() -> str:
    """Path of the heaplab CLI; skips the test when there is none (`make test` builds it)."""
    path = find_cli()
    if path is None:
        pytest.skip("skipped: no heaplab CLI built (run `cargo build -p heaplab-cli` or `make test`)")
    return path


def overlaps_numpy(sizes, lower, upper, offsets) -> "tuple[int, int] | None":
    """An independent oracle: the first pair of buffers that live at the same time and overlap
    in memory, found by an O(n^2) numpy broadcast in blocks (no heaplab code involved)."""
    s, lo, up, off = (np.asarray(a).astype(np.uint64) for a in (sizes, lower, upper, offsets))
    end = off + s
    n = len(s)
    block = max(1, 4_000_000 // max(n, 1))
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        t = (lo[i0:i1, None] < up[None, :]) & (lo[None, :] < up[i0:i1, None])
        m = (off[i0:i1, None] < end[None, :]) & (off[None, :] < end[i0:i1, None])
        both = t & m
        both[np.arange(i1 - i0), np.arange(i0, i1)] = False
        if both.any():
            i, j = np.argwhere(both)[0]
            return int(i0 + i), int(j)
    return None


def assert_valid(sizes, lower, upper, offsets, alignment=None) -> None:
    """Checks a placement with heaplab.check and the numpy oracle (and alignment)."""
    heaplab.check(sizes, lower, upper, offsets, alignment=alignment)
    assert overlaps_numpy(sizes, lower, upper, offsets) is None
    if alignment is not None:
        assert (np.asarray(offsets, dtype=np.uint64) % np.asarray(alignment, dtype=np.uint64) == 0).all()
