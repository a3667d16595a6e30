"""Type stubs of the extension module heaplab._native (crates/py). Arrays are contiguous
1-D uint64 unless said otherwise; the public API is the `heaplab` package, which converts
user arrays before calling these."""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]

ALGORITHMS: str
__version__: str

def plan(
    ids: U64,
    lower: U64,
    upper: U64,
    sizes: U64,
    alignment: Optional[U64],
    capacity: Optional[int],
    time_limit: float,
    seed: int,
    algorithm: str,
) -> Dict[str, Any]: ...
def check(ids: U64, lower: U64, upper: U64, sizes: U64, alignment: Optional[U64], offsets: U64) -> int: ...
def max_load(ids: U64, lower: U64, upper: U64, sizes: U64) -> int: ...
def parse_bytes(text: str) -> int: ...
def validate_instance(
    ids: U64, lower: U64, upper: U64, sizes: U64, alignment: Optional[U64] = None, requested: Optional[U64] = None
) -> None: ...
def read(
    path: str,
    semantics: str = "inex",
    clock: str = "bytes",
    size: str = "requested",
    thread: Optional[int] = None,
    allow_truncated: bool = False,
    process: Optional[str] = None,
) -> Dict[str, Any]: ...
def write(
    path: str,
    ids: U64,
    lower: U64,
    upper: U64,
    sizes: U64,
    alignment: Optional[U64] = None,
    requested: Optional[U64] = None,
    offsets: Optional[U64] = None,
) -> None: ...
def trace_events(path: str, allow_truncated: bool = False, process: Optional[str] = None) -> Dict[str, Any]: ...
def trace_info(path: str, allow_truncated: bool = True, process: Optional[str] = None) -> Dict[str, Any]: ...
def frag(path: str, page_size: Optional[int] = None, buckets: int = 100) -> Dict[str, Any]: ...

# The study split into tasks (crates/py/src/study.rs; used by heaplab.dask.study).
import pathlib
def study_check(*, allocators: str = ..., runs: int = 10, rss: str = "rusage", timeout: float = 600.0) -> None: ...
def study_suite_names(only: Optional[List[str]] = None) -> List[str]: ...
def study_workload(
    command: Optional[List[str]] = None,
    *,
    suite: Optional[str] = None,
    suite_scale: int = 1,
    name: Optional[str] = None,
    description: str = "",
    env: List[Tuple[str, str]] = ...,
    stdin: Optional[str] = None,
    cwd: Optional[str] = None,
    allocators: str = ...,
    runs: int = 10,
    rss: str = "rusage",
    timeout: float = 600.0,
    keep_outputs: bool = False,
) -> str: ...
def study_failed(
    command: Optional[List[str]] = None,
    *,
    suite: Optional[str] = None,
    name: Optional[str] = None,
    description: str = "",
    error: str,
    rss: str = "rusage",
) -> str: ...

class StudyReport:
    def __init__(self, output: str) -> None: ...
    @property
    def target(self) -> pathlib.Path: ...
    def write(self, workloads: List[str], runs: int, rss: str, invocation: str) -> str: ...
