"""heaplab: static memory planning and heap analysis from Python.

Give buffers with sizes and lifetimes as numpy arrays and get offsets back (:func:`plan`),
validated by the same code as the ``heaplab`` CLI (:func:`check`); read instance files and heap
traces (:func:`read`, :class:`Trace`) and measure fragmentation (:func:`frag`). Everything runs
in the Rust libraries behind the CLI, so results and error messages are the CLI's.

>>> import heaplab, numpy as np
>>> p = heaplab.plan([4, 4, 8], lower=[0, 1, 2], upper=[2, 3, 4])
>>> p.makespan, p.optimal
(12, True)
"""

from __future__ import annotations

from . import _native
from ._errors import HeaplabError, InputError, InvalidPlacement
from ._files import Frag, MappingFrag, Trace, frag, read, read_placement
from ._instance import Instance
from ._plan import Plan, check, plan

__version__: str = _native.__version__

__all__ = [
    "HeaplabError",
    "InputError",
    "InvalidPlacement",
    "Instance",
    "Plan",
    "Trace",
    "Frag",
    "MappingFrag",
    "check",
    "frag",
    "plan",
    "read",
    "read_placement",
]
