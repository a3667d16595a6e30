"""PyTorch CUDA memory snapshots as planning instances.

Owns reading the snapshot that ``torch.cuda.memory._snapshot()`` returns (and that PyTorch's
memory viewer reads, pickled) into a :class:`heaplab.Instance`: one buffer per block the
caching allocator handed out, its lifetime in trace ticks, its size the allocator's rounded
block size. Also computes what the caching allocator itself used (peak allocated and peak
reserved bytes) from the same trace, so a user can put them beside heaplab's plan.

PyTorch is not needed: a snapshot is plain dicts and lists, and pickled snapshots are read
with an unpickler that refuses every class, so a file cannot run code when it is loaded.

Time: tick *i* is the *i*-th event of the device's trace. A block is live from its ``alloc``
event to its ``free_completed`` event (when the allocator may reuse the memory; with
``lifetime="free_requested"``, to the moment the program freed it, which is what PyTorch's
``allocated`` statistic counts). Blocks allocated before recording began have no ``alloc``
event: they are live from tick 0, and blocks never freed are live to the end.
"""

from __future__ import annotations

import io
import os
import pickle
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, List, Optional, Tuple, Union

import numpy as np

from ._errors import InputError

__all__ = ["instance", "peaks", "load", "Blocks", "Peaks", "SnapshotError"]

#: The CUDA caching allocator rounds every block to a multiple of 512 bytes and aligns it so.
CUDA_BLOCK_ALIGNMENT = 512


def block_size(requested: int) -> int:
    """The bytes the caching allocator gives a request: a multiple of 512, at least 512.

    Trace events carry the requested size; the allocator's statistics count this rounded one.
    (With ``roundup_power2_divisions`` configured the allocator rounds coarser; such snapshots
    are read with this rule too, so their block sizes may be a little under the allocator's.)
    """
    return max(CUDA_BLOCK_ALIGNMENT, -(-requested // CUDA_BLOCK_ALIGNMENT) * CUDA_BLOCK_ALIGNMENT)

Snapshot = Union[str, "os.PathLike[str]", bytes, BinaryIO, Dict[str, Any]]


class SnapshotError(InputError):
    """A file or object that is not a readable PyTorch CUDA memory snapshot."""


class _PlainUnpickler(pickle.Unpickler):
    """Loads only plain data (dicts, lists, tuples, strings, numbers): snapshots hold nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(
            f"refusing to load {module}.{name}: a memory snapshot holds only plain data"
        )


def load(snapshot: Snapshot) -> Dict[str, Any]:
    """Returns the snapshot as a dict, reading it from a path, bytes or a binary file if needed.

    Raises :class:`SnapshotError` naming the file when it is not a pickled snapshot.
    """
    if isinstance(snapshot, dict):
        data, where = snapshot, "the snapshot"
    else:
        if isinstance(snapshot, (str, os.PathLike)):
            where = os.fspath(snapshot)
            try:
                with open(where, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise SnapshotError(f"{where}: cannot read: {e.strerror or e}") from None
        elif isinstance(snapshot, (bytes, bytearray)):
            where, raw = "the snapshot bytes", bytes(snapshot)
        else:
            where, raw = getattr(snapshot, "name", "the snapshot stream"), snapshot.read()
        try:
            data = _PlainUnpickler(io.BytesIO(raw)).load()
        except Exception as e:  # any unpickling failure means "not a snapshot"
            raise SnapshotError(
                f"{where}: not a PyTorch memory snapshot (a pickle of "
                f"torch.cuda.memory._snapshot()): {e}"
            ) from None
    if not isinstance(data, dict) or "device_traces" not in data or "segments" not in data:
        raise SnapshotError(
            f"{where}: not a PyTorch memory snapshot: expected a dict with 'segments' and "
            "'device_traces' (record it with torch.cuda.memory._record_memory_history() "
            "before the work, then torch.cuda.memory._snapshot())"
        )
    return data


def _trace(data: Dict[str, Any], device: Optional[int], where: str) -> Tuple[int, List[dict]]:
    traces = data["device_traces"]
    if device is None:
        used = [i for i, t in enumerate(traces) if t]
        if not used:
            raise SnapshotError(
                f"{where}: the snapshot has no trace events: was "
                "torch.cuda.memory._record_memory_history() called before the work?"
            )
        if len(used) > 1:
            raise SnapshotError(
                f"{where}: the snapshot has traces for devices {used}: pass device=N"
            )
        device = used[0]
    if not 0 <= device < len(traces):
        raise SnapshotError(f"{where}: no device {device} in the snapshot ({len(traces)} devices)")
    return device, traces[device]


@dataclass
class Blocks:
    """The blocks of one device's trace, in the order they were allocated.

    Arrays are ``uint64``; ``lower``/``upper`` are half-open ``[lower, upper)`` ticks.
    ``preexisting`` marks blocks allocated before recording began; ``frames`` holds each
    block's recorded call stack (top frame first), empty when none was recorded.
    """

    device: int
    sizes: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    addresses: np.ndarray
    preexisting: np.ndarray
    frames: List[List[dict]]
    ticks: int

    def instance(self, alignment: int = CUDA_BLOCK_ALIGNMENT):
        """The blocks as a :class:`heaplab.Instance` (ids are allocation order)."""
        from ._instance import Instance

        n = len(self.sizes)
        return Instance(
            self.sizes,
            self.lower,
            self.upper,
            alignment=np.full(n, alignment, dtype=np.uint64),
            ids=np.arange(n, dtype=np.uint64),
        )


def blocks(snapshot: Snapshot, device: Optional[int] = None, lifetime: str = "free_completed") -> Blocks:
    """Reads the blocks of one device's trace with their lifetimes (see the module's notes).

    ``device=None`` takes the one device with trace events; ``lifetime`` is
    ``"free_completed"`` (default: until the allocator may reuse the memory) or
    ``"free_requested"`` (until the program freed it).
    """
    if lifetime not in ("free_completed", "free_requested"):
        raise ValueError(f"lifetime must be 'free_completed' or 'free_requested', not {lifetime!r}")
    where = os.fspath(snapshot) if isinstance(snapshot, (str, os.PathLike)) else "the snapshot"
    data = load(snapshot)
    device, trace = _trace(data, device, where)
    ends = {"free_completed"} if lifetime == "free_completed" else {"free_requested"}

    sizes: List[int] = []
    lower: List[int] = []
    upper: List[int] = []
    addrs: List[int] = []
    pre: List[bool] = []
    frames: List[List[dict]] = []
    open_at: Dict[int, int] = {}  # address -> index of its live block
    freed_before: Dict[int, bool] = {}  # address -> a free of a preexisting block seen
    end_tick = len(trace) + 1

    def close(addr: int, tick: int) -> None:
        i = open_at.pop(addr)
        upper[i] = max(tick, lower[i] + 1)

    for tick, event in enumerate(trace, start=1):
        try:
            action = event["action"]
        except (TypeError, KeyError):
            raise SnapshotError(f"{where}: trace event {tick - 1} of device {device} has no action") from None
        if action == "alloc":
            addr, size = int(event["addr"]), int(event["size"])
            if size <= 0:
                continue  # zero-byte tensors take no memory
            size = block_size(size)
            if addr in open_at:  # a lost free (ring buffer wrapped mid-pair): end the old block here
                close(addr, tick)
            open_at[addr] = len(sizes)
            sizes.append(size)
            lower.append(tick)
            upper.append(end_tick)
            addrs.append(addr)
            pre.append(False)
            frames.append(list(event.get("frames") or []))
        elif action in ends:
            addr, size = int(event["addr"]), int(event["size"])
            if addr in open_at:
                close(addr, tick)
            elif size > 0 and not freed_before.get(addr):
                # Allocated before recording began: live from the start.
                sizes.append(block_size(size))
                lower.append(0)
                upper.append(tick)
                addrs.append(addr)
                pre.append(True)
                frames.append(list(event.get("frames") or []))
                freed_before[addr] = True
    # Blocks live at the snapshot that the trace never saw allocated or freed.
    seen = set(addrs)
    for segment in data["segments"]:
        if segment.get("device", device) != device:
            continue
        for block in segment.get("blocks", []):
            if block.get("state") == "active_allocated" and int(block["address"]) not in seen:
                sizes.append(int(block["size"]))
                lower.append(0)
                upper.append(end_tick)
                addrs.append(int(block["address"]))
                pre.append(True)
                frames.append(list(block.get("frames") or []))
    u64 = np.uint64
    return Blocks(
        device=device,
        sizes=np.asarray(sizes, dtype=u64),
        lower=np.asarray(lower, dtype=u64),
        upper=np.asarray(upper, dtype=u64),
        addresses=np.asarray(addrs, dtype=u64),
        preexisting=np.asarray(pre, dtype=bool),
        frames=frames,
        ticks=end_tick,
    )


def instance(
    snapshot: Snapshot,
    device: Optional[int] = None,
    lifetime: str = "free_completed",
    alignment: int = CUDA_BLOCK_ALIGNMENT,
):
    """Reads a PyTorch CUDA memory snapshot into a :class:`heaplab.Instance`.

    ``snapshot`` is a path to a pickled snapshot, its bytes, a binary file, or the dict that
    ``torch.cuda.memory._snapshot()`` returned. One buffer per block the caching allocator
    handed out on ``device`` (default: the one device with trace events), sized as the
    allocator rounds it (:func:`block_size`), aligned to ``alignment`` (512 bytes, as the allocator aligns),
    live over trace ticks as the module's notes describe.

    >>> inst = heaplab.torch.instance("train_step.pickle")
    >>> plan = heaplab.plan(inst)   # the memory an ahead-of-time plan would need
    """
    return blocks(snapshot, device=device, lifetime=lifetime).instance(alignment=alignment)


@dataclass
class Peaks:
    """What the caching allocator used, computed from the trace (bytes).

    ``allocated``: the greatest sum of live blocks (PyTorch's ``max_memory_allocated`` when
    recording began before the work); ``reserved``: the greatest sum of segments obtained from
    cudaMalloc (``max_memory_reserved``); ``events``: trace length.
    """

    allocated: int
    reserved: int
    events: int


def peaks(snapshot: Snapshot, device: Optional[int] = None) -> Peaks:
    """Peak allocated and peak reserved bytes of the caching allocator, from the trace.

    Segments and blocks that existed before recording began count from the start.
    """
    where = os.fspath(snapshot) if isinstance(snapshot, (str, os.PathLike)) else "the snapshot"
    data = load(snapshot)
    device, trace = _trace(data, device, where)
    allocated = _allocated_peak(data, trace, device)

    # Reserved: the segments present before recording began (still there at the snapshot, or
    # released in the trace before any creation of theirs), then mapped and unmapped in order.
    grows, shrinks = ("segment_alloc", "segment_map"), ("segment_free", "segment_unmap")
    created = {int(e["addr"]) for e in trace if e.get("action") in grows}
    reserved = sum(
        int(s["total_size"])
        for s in data["segments"]
        if s.get("device", device) == device and int(s["address"]) not in created
    )
    seen: set = set()
    for e in trace:
        if e.get("action") in grows:
            seen.add(int(e["addr"]))
        elif e.get("action") in shrinks and int(e["addr"]) not in seen:
            reserved += int(e["size"])
    peak = reserved
    for e in trace:
        if e.get("action") in grows:
            reserved += int(e["size"])
            peak = max(peak, reserved)
        elif e.get("action") in shrinks:
            reserved -= int(e["size"])
    return Peaks(allocated=allocated, reserved=peak, events=len(trace))


#: Requests up to this size come from the small pool (PyTorch's ``kSmallSize``).
SMALL_SIZE = 1 << 20


def _allocated_peak(data: Dict[str, Any], trace: List[dict], device: int) -> int:
    """The allocator's peak of allocated bytes, replaying how it splits its free blocks.

    PyTorch counts a block's whole size, and when splitting a free block would leave too small
    a remainder (under 512 bytes in the small pool, at most 1 MiB in the large one) it hands
    out the whole free block. So the free blocks of every segment created in the trace are
    tracked (allocation takes the start of the free block at its address; a completed free
    merges with free neighbours in the same segment); blocks in segments from before recording
    count at their rounded size. Allocated bytes drop when the program frees (free_requested),
    as PyTorch's statistic does.
    """
    pre = blocks(data, device=device, lifetime="free_requested")
    allocated = int(pre.sizes[pre.preexisting].sum())
    peak = allocated
    free: Dict[int, int] = {}  # start -> length of each free block
    free_end: Dict[int, int] = {}  # end -> start of each free block
    segment_starts: set = set()
    used: Dict[int, int] = {}  # address -> size of each handed-out block

    def take_free(start: int) -> Optional[int]:
        length = free.pop(start, None)
        if length is not None:
            free_end.pop(start + length, None)
        return length

    def add_free(start: int, length: int) -> None:
        nxt = start + length
        if nxt in free and nxt not in segment_starts:
            length += take_free(nxt)
        if start in free_end and start not in segment_starts:
            prev = free_end.pop(start)
            start, length = prev, length + free.pop(prev)
        free[start] = length
        free_end[start + length] = start

    for e in trace:
        action = e.get("action")
        addr, size = int(e.get("addr", 0)), int(e.get("size", 0))
        if action == "segment_alloc":
            segment_starts.add(addr)
            add_free(addr, size)
        elif action == "segment_free":
            take_free(addr)
            segment_starts.discard(addr)
        elif action == "alloc" and size > 0:
            want = block_size(size)
            have = take_free(addr)
            if have is not None and have > want:
                rest = have - want
                small = want <= SMALL_SIZE
                if (small and rest >= CUDA_BLOCK_ALIGNMENT) or (not small and rest > SMALL_SIZE):
                    add_free(addr + want, rest)
                else:
                    want = have
            used[addr] = want
            allocated += want
            peak = max(peak, allocated)
        elif action == "free_requested" and size > 0:
            allocated -= used.get(addr, block_size(size))
        elif action == "free_completed" and size > 0:
            add_free(addr, used.pop(addr, block_size(size)))
    return peak
