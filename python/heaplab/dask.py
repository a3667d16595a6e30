"""Scale-out on a Dask cluster: many instances planned as tasks (:func:`plan_many`), and the
peak-RSS study with one workload per task (:func:`study`), its results gathered into one report
exactly as ``heaplab study`` writes it.

Needs the optional dependency ``distributed`` (``pip install distributed``). Every function
takes ``client``: ``None`` starts an embedded :class:`distributed.LocalCluster` for the call
(worker processes, one task at a time each) and closes it afterwards; a scheduler address
(``"tcp://host:8786"``) or a :class:`distributed.Client` runs the same tasks on that cluster,
whose workers must have the same ``heaplab`` installed.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shlex
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, Union

try:
    import distributed
except ImportError as e:  # pragma: no cover - exercised only without the optional dependency
    raise ImportError("heaplab.dask needs the optional dependency 'distributed': pip install distributed") from e


import heaplab
from heaplab import _native

__all__ = ["plan_many", "study", "local_cluster"]

PathLike = Union[str, "os.PathLike[str]"]
Item = Union[PathLike, "heaplab.Instance", tuple]
Client = Union[None, str, "distributed.Client"]

#: Batches at least this long show their progress on standard error unless told otherwise.
PROGRESS_FROM = 50


def local_cluster(n_workers: int | None = None, plan_threads: int | None = None) -> distributed.LocalCluster:
    """The embedded cluster :func:`plan_many` and :func:`study` start when ``client`` is None.

    ``n_workers`` worker processes (default: one per core) with one task at a time each: a
    plan runs its own thread pool, so Dask threads would only compete with it. Each worker's
    planner uses ``plan_threads`` threads (default: the cores divided among the workers, at
    least one), so the workers together use the machine's cores once, not ``n_workers`` times.
    The caller closes it (it is a context manager).
    """
    cores = os.cpu_count() or 1
    n = cores if n_workers is None else n_workers
    if n < 1:
        raise heaplab.InputError(f"n_workers: expected at least 1, not {n}")
    threads = max(1, cores // n) if plan_threads is None else plan_threads
    if threads < 1:
        raise heaplab.InputError(f"plan_threads: expected at least 1, not {threads}")
    # The planner's pool (rayon) reads RAYON_NUM_THREADS when a worker first plans.
    return distributed.LocalCluster(
        n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", env={"RAYON_NUM_THREADS": str(threads)}
    )


@contextlib.contextmanager
def _connect(client: Client, n_workers: int | None) -> Iterator[distributed.Client]:
    """A client for `client` (see the module notes); what it started is closed afterwards."""
    if client is None:
        with local_cluster(n_workers) as cluster, distributed.Client(cluster) as c:
            yield c
    elif isinstance(client, str):
        with distributed.Client(client) as c:
            yield c
    elif isinstance(client, distributed.Client):
        yield client
    else:
        raise TypeError(f"client: expected None, a scheduler address or a distributed.Client, not {type(client).__name__}")


class _Progress:
    """A count of finished tasks on standard error: rewritten in place on a terminal, a line
    per tenth of the batch otherwise, or (`each`) a line per task naming it."""

    def __init__(self, what: str, total: int, on: bool, each: bool = False) -> None:
        self.what, self.total, self.on, self.done, self.each = what, total, on, 0, each
        self.tty = sys.stderr.isatty()
        self.step = max(1, total // 10)
        self.t0 = time.monotonic()

    def tick(self, label: str) -> None:
        self.done += 1
        if not self.on:
            return
        line = f"heaplab: {self.what} {self.done}/{self.total} ({time.monotonic() - self.t0:.1f} s)"
        if self.each:
            # Few long tasks: a line each, naming it.
            print(f"{line}: {label}", file=sys.stderr, flush=True)
        elif self.tty:
            end = "\n" if self.done == self.total else ""
            print("\r" + line, end=end, file=sys.stderr, flush=True)
        elif self.done % self.step == 0 or self.done == self.total:
            print(line, file=sys.stderr, flush=True)


def _labelled(e: BaseException, label: str) -> Exception:
    """`e` with `label` in front of its message, of the same class where that class takes a
    message (the package's and Python's own), else a :class:`heaplab.HeaplabError`."""
    msg = f"{label}: {e}"
    if isinstance(e, heaplab.HeaplabError) or type(e).__module__ == "builtins":
        try:
            new = type(e)(msg)
            if isinstance(new, Exception):
                new.__cause__ = e
                return new
        except Exception:  # a class whose constructor wants more than a message
            pass
    new = heaplab.HeaplabError(msg)
    new.__cause__ = e
    return new


def _describe(item: Any) -> str:
    """How an item is named in errors: its path, or what it is."""
    if isinstance(item, (str, os.PathLike)):
        return repr(os.fspath(item))
    if isinstance(item, heaplab.Instance):
        return f"Instance of {len(item)} buffers"
    if isinstance(item, tuple) and item and hasattr(item[0], "__len__"):
        return f"arrays of {len(item[0])} buffers"
    return type(item).__name__


def _columns(item: Any) -> tuple:
    """An in-memory item as the columns of a checked Instance (checked here, on the client: a
    bad array is the caller's error, named before anything is sent). Columns, not the Instance
    itself, travel to the workers: plain arrays pickle everywhere."""
    if isinstance(item, tuple) and len(item) in (3, 4):
        item = heaplab.Instance(*item)
    if not isinstance(item, heaplab.Instance):
        raise TypeError(f"expected a path, a heaplab.Instance or a (sizes, lower, upper[, alignment]) tuple, not {type(item).__name__}")
    return (item.sizes, item.lower, item.upper, item.alignment, item.ids, item.requested)


def _plan_one(item: Any, read_kwargs: Mapping[str, Any], plan_kwargs: Mapping[str, Any]) -> heaplab.Plan:
    """One task: read the instance (a path is read on the worker) or rebuild it from its
    columns, and plan it."""
    if isinstance(item, str):
        inst = heaplab.read(item, **read_kwargs)
    else:
        sizes, lower, upper, alignment, ids, requested = item
        inst = heaplab.Instance(sizes, lower, upper, alignment, ids, requested=requested)
    return heaplab.plan(inst, **plan_kwargs)


def _gather(c: distributed.Client, futures: list, labels: list[str], errors: str, progress: _Progress) -> list:
    """The futures' results in order; a failure raises, labelled, at once (the others are
    cancelled), or with ``errors="return"`` takes its result's place."""
    out: list[Any] = [None] * len(futures)
    index = {f.key: k for k, f in enumerate(futures)}
    try:
        for f in distributed.as_completed(futures):
            k = index[f.key]
            if f.status == "error":
                err = _labelled(f.exception(), labels[k])
                if errors == "raise":
                    raise err
                out[k] = err
            else:
                out[k] = f.result()
            progress.tick(labels[k])
    finally:
        c.cancel([f for f in futures if not f.done()])
    return out


def plan_many(
    items: Sequence[Item],
    client: Client = None,
    time_limit: float = 3.0,
    seed: int = 1,
    *,
    errors: Literal["raise", "return"] = "raise",
    read_kwargs: Mapping[str, Any] | None = None,
    n_workers: int | None = None,
    progress: bool | None = None,
    **plan_kwargs: Any,
) -> list:
    """Plans every item as a Dask task; the plans in input order.

    An item is a path (read on the worker with :func:`heaplab.read`, ``read_kwargs`` passed
    on: the file must be readable there), a :class:`heaplab.Instance`, or a
    ``(sizes, lower, upper)`` or ``(sizes, lower, upper, alignment)`` tuple of arrays (sent to
    the workers once, with :meth:`distributed.Client.scatter`). Each is planned by
    :func:`heaplab.plan` with ``time_limit``, ``seed`` and ``plan_kwargs`` (``alignment``,
    ``capacity``): the plan a call of :func:`heaplab.plan` gives. (Where the planner's search
    runs into its time limit, the plan depends on the CPU it got, on a worker as anywhere.)

    ``client``: None (an embedded local cluster of ``n_workers`` processes, default one per
    core, closed afterwards; see :func:`local_cluster`), a scheduler address, or a
    :class:`distributed.Client`. A failing item raises its error with the item named
    (``item 3 ('b.csv'): ...``) and the rest cancelled; with ``errors="return"`` the
    exception takes the plan's place in the list instead. ``progress`` shows a count on
    standard error (default: for batches of at least :data:`PROGRESS_FROM` items).
    """
    if errors not in ("raise", "return"):
        raise heaplab.InputError(f"errors: expected 'raise' or 'return', not {errors!r}")
    items = list(items)
    if not items:
        return []
    read_kwargs = dict(read_kwargs or {})
    plan_kwargs = dict(plan_kwargs, time_limit=time_limit, seed=seed)
    # A misspelt option is the caller's error, not every task's.
    try:
        inspect.signature(heaplab.plan).bind(None, **plan_kwargs)
    except TypeError as e:
        raise TypeError(f"plan_many: {e} (the options are those of heaplab.plan)") from None
    labels = [f"item {k} ({_describe(x)})" for k, x in enumerate(items)]
    prepared: list[Any] = []
    for k, x in enumerate(items):
        if isinstance(x, (str, os.PathLike)):
            prepared.append(os.fspath(x))
            continue
        try:
            prepared.append(_columns(x))
        except Exception as e:
            raise _labelled(e, labels[k])  # noqa: B904 - _labelled sets the cause
    show = _Progress("planned", len(items), len(items) >= PROGRESS_FROM if progress is None else progress)
    batch = uuid.uuid4().hex[:8]
    with _connect(client, n_workers) as c:
        in_memory = [k for k, x in enumerate(prepared) if not isinstance(x, str)]
        if in_memory:
            for k, fut in zip(in_memory, c.scatter([prepared[k] for k in in_memory], hash=False)):
                prepared[k] = fut
        futures = [
            c.submit(_plan_one, x, read_kwargs, plan_kwargs, key=f"heaplab-plan-{batch}-{k}", pure=False, retries=0)
            for k, x in enumerate(prepared)
        ]
        return _gather(c, futures, labels, errors, show)


# The study --------------------------------------------------------------------------------


def _workload_specs(workloads: Any, only: Sequence[str] | None, suite_scale: int) -> list[dict[str, Any]]:
    """The workloads as keyword arguments of ``_native.study_workload``."""
    if isinstance(workloads, str) and workloads == "default":
        names = _native.study_suite_names(list(only) if only is not None else None)
        return [{"suite": n, "suite_scale": suite_scale} for n in names]
    if only is not None:
        raise heaplab.InputError("only selects workloads of the default suite (workloads='default')")
    if isinstance(workloads, (str, bytes)) or not isinstance(workloads, Sequence):
        raise heaplab.InputError("workloads: expected 'default' or a list of commands (each a list of arguments, a command line, or a dict)")
    specs: list[dict[str, Any]] = []
    for k, w in enumerate(workloads):
        spec: dict[str, Any] = dict(w) if isinstance(w, Mapping) else {"command": w}
        unknown = set(spec) - {"command", "name", "description", "env", "stdin"}
        if unknown:
            raise heaplab.InputError(f"workloads[{k}]: unknown keys {sorted(unknown)} (expected command, name, description, env, stdin)")
        cmd = spec.get("command")
        if isinstance(cmd, str):
            cmd = shlex.split(cmd)
        if not isinstance(cmd, (list, tuple)) or not cmd or not all(isinstance(a, str) for a in cmd):
            raise heaplab.InputError(f"workloads[{k}]: the command must be a non-empty list of strings or a command line")
        spec["command"] = list(cmd)
        if isinstance(spec.get("env"), Mapping):
            spec["env"] = list(spec["env"].items())
        if spec.get("stdin") is not None:
            spec["stdin"] = os.fspath(spec["stdin"])
        specs.append(spec)
    if not specs:
        raise heaplab.InputError("nothing to study: give commands or workloads='default'")
    return specs


def _label(k: int, spec: Mapping[str, Any]) -> str:
    """How a workload is named in progress lines and errors."""
    what = spec.get("name") or spec.get("suite") or shlex.join(spec["command"])
    return f"workload {k} ({what if len(what) <= 60 else what[:57] + '...'})"


def _study_one(spec: Mapping[str, Any], opts: Mapping[str, Any]) -> str:
    """One task: studies one workload on this worker; its results.json entry as JSON text. An
    error before the workload could start (a missing ``cwd`` here) is that workload's failure."""
    try:
        return _native.study_workload(**spec, **opts)
    except heaplab.InputError as e:
        return _failed(spec, f"{e} (on {os.uname().nodename})", opts["rss"])


def _failed(spec: Mapping[str, Any], error: str, rss: str) -> str:
    """The entry of a workload that failed before it could be studied."""
    return _native.study_failed(
        spec.get("command"), suite=spec.get("suite"), name=spec.get("name"), description=spec.get("description", ""), error=error, rss=rss
    )


def study(
    workloads: Union[Literal["default"], Sequence[Any]],
    client: Client = None,
    *,
    output: PathLike,
    allocators: str = "glibc,jemalloc,mimalloc,tcmalloc",
    runs: int = 10,
    rss: Literal["rusage", "proc"] = "rusage",
    timeout: float = 600.0,
    keep_outputs: bool = False,
    cwd: PathLike | None = None,
    only: Sequence[str] | None = None,
    suite_scale: int = 1,
    n_workers: int | None = None,
    errors: Literal["raise", "return"] = "raise",
    progress: bool = True,
) -> dict[str, Any]:
    """``heaplab study`` with one workload per Dask task; returns results.json as a dict.

    Each task traces its workload, replays the trace under every allocator and runs the real
    program ``runs`` times under each, the allocators taking turns, all on one worker: every
    comparison of peak RSS and time is between runs on the same machine. The results are
    gathered into ``output`` (index.html, report.md, results.json and plots), written by the
    same library code as ``heaplab study -o output``, so the files have the same form; each
    workload's entry names the machine it ran on.

    ``workloads``: ``"default"`` (the default suite, its inputs generated on the worker;
    ``only`` picks names, ``suite_scale`` divides the input sizes), or a list of commands, each
    a list of arguments, a command line (split as a shell would), or a dict with ``command``
    and optionally ``name``, ``description``, ``env`` (a mapping) and ``stdin`` (a path on
    the worker). A command runs in ``cwd`` (a directory on the worker), or when it is None in
    a fresh empty directory of its own; workloads sharing a ``cwd`` run at the same time, so
    with ``keep_outputs=False`` (files a run creates are removed after it) they must not write
    files there. Options are those of ``heaplab study`` and are checked, like ``output``,
    before anything runs (:class:`heaplab.InputError` with the CLI's message).

    A workload that fails is reported with its reason, as by the CLI; then, once the report is
    written, :class:`heaplab.HeaplabError` names the failed workloads, unless
    ``errors="return"``. ``progress`` prints a line on standard error as each workload ends.
    """
    if errors not in ("raise", "return"):
        raise heaplab.InputError(f"errors: expected 'raise' or 'return', not {errors!r}")
    _native.study_check(allocators=allocators, runs=runs, rss=rss, timeout=timeout)
    specs = _workload_specs(workloads, only, suite_scale)
    report = _native.StudyReport(os.fspath(output))
    opts = {"allocators": allocators, "runs": runs, "rss": rss, "timeout": float(timeout), "keep_outputs": keep_outputs}
    for s in specs:
        if "command" in s:
            s["cwd"] = os.fspath(cwd) if cwd is not None else None
    invocation = f"heaplab.dask.study({workloads!r}, allocators={allocators!r}, runs={runs}, rss={rss!r}, output={os.fspath(output)!r})"
    show = _Progress("studied", len(specs), progress, each=True)
    batch = uuid.uuid4().hex[:8]
    with _connect(client, n_workers) as c:
        futures = [c.submit(_study_one, s, opts, key=f"heaplab-study-{batch}-{k}", pure=False, retries=0) for k, s in enumerate(specs)]
        labels = [_label(k, s) for k, s in enumerate(specs)]
        done = _gather(c, futures, labels, "return", show)
    # A task that died (its worker lost) is that workload's failure, as in the CLI.
    entries = [d if isinstance(d, str) else _failed(s, str(d), rss) for d, s in zip(done, specs)]
    results = json.loads(report.write(entries, runs, rss, invocation))
    failed = [w for w in results["workloads"] if w["error"]]
    if failed and errors == "raise":
        what = "; ".join(f"{w['name']}: {w['error'].splitlines()[0]}" for w in failed)
        raise heaplab.HeaplabError(f"some workloads failed (see the report {report.target}): {what}")
    return results
