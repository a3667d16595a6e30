"""Benchmark of heaplab.dask.plan_many: 200 generated instances of 10^4 buffers planned on an
embedded LocalCluster of 1 and of 2 worker processes (wall time, speedup), beside the same
plans made one after another in this process. Writes bench/dask-results.md and .json.

Two batches of 200, because a plan either ends on its own (proved optimal) or runs to its time
limit, which no number of workers shortens:
- kinds ratio, aligned, nested and equal (50 seeds each, limit 2 s), which the planner mostly
  proves optimal in well under a second: the wall time is mostly planning work. An optimal plan
  must have the sequential plan's makespan; the table counts the plans whose offsets are
  identical too (a long search may return another placement of the same makespan);
- kinds random and nn (100 seeds each, limit 1 s), harder: more plans use up the limit, and
  what 2 workers change for those is how much search each gets (one core instead of two); the
  table gives the mean gap to the lower bound.
The table gives, per configuration, the seconds the plans spent planning, split into those that
ended on their own and those that ran to the limit.

Every placement is validated with heaplab.check (outside the timed part). The instances are
files made by `heaplab gen` and read on the workers.

    python python/bench/dask_plan_many.py [--heaplab target/release/heaplab] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import distributed
import numpy as np

import heaplab
import heaplab.dask as hd
from provenance import commit, cpu, memory_gib

ROOT = Path(__file__).resolve().parents[2]


def generate(heaplab_bin: str, kinds: list[str], per_kind: int, buffers: int, into: Path) -> list[str]:
    paths = []
    for kind in kinds:
        for seed in range(1, per_kind + 1):
            p = into / f"{kind}-{seed}.hlbin"
            subprocess.run([heaplab_bin, "gen", "--kind", kind, "--buffers", str(buffers), "--seed", str(seed), "-o", str(p)], check=True, capture_output=True)
            paths.append(str(p))
    return paths


def run_batch(name: str, paths: list[str], time_limit: float, workers: list[int], sequential: bool, compare: bool) -> dict:
    row: dict = {"batch": name, "instances": len(paths), "time_limit_s": time_limit, "configs": []}
    reference = None
    if sequential:
        t0 = time.perf_counter()
        reference = [heaplab.plan(heaplab.read(p), time_limit=time_limit) for p in paths]
        row["configs"].append(summary("sequential, in process", time.perf_counter() - t0, 0.0, reference, paths, reference))
    for n in workers:
        t0 = time.perf_counter()
        with hd.local_cluster(n_workers=n) as cluster, distributed.Client(cluster) as c:
            c.wait_for_workers(n)
            # Workers import heaplab on their first task: warm them, so the timing is planning.
            c.run(lambda: __import__("heaplab") and None)
            start = time.perf_counter() - t0
            t1 = time.perf_counter()
            plans = hd.plan_many(paths, client=c, time_limit=time_limit, progress=False)
            wall = time.perf_counter() - t1
        row["configs"].append(summary(f"{n} worker{'s' if n > 1 else ''}", wall, start, plans, paths, reference if compare else None))
        print(f"  {name}: {n} worker(s): {wall:.1f} s", file=sys.stderr, flush=True)
    base = next((c["wall_s"] for c in row["configs"] if c["config"] == "1 worker"), None)
    for c in row["configs"]:
        c["speedup_vs_1_worker"] = round(base / c["wall_s"], 2) if base else None
    return row


def summary(config: str, wall: float, start: float, plans: list, paths: list[str], reference: list | None) -> dict:
    for path, p in zip(paths, plans):
        heaplab.check(heaplab.read(path), offsets=p.offsets)
    same = None
    if reference is not None:
        for p, q in zip(plans, reference):
            if p.optimal and q.optimal:
                assert p.makespan == q.makespan, "two optimal plans of one instance differ in makespan"
        same = sum(bool(np.array_equal(p.offsets, q.offsets)) for p, q in zip(plans, reference))
    ended = [p.seconds for p in plans if p.optimal]
    limited = [p.seconds for p in plans if not p.optimal]
    gaps = [(p.makespan - p.lower_bound) / p.lower_bound for p in plans if p.lower_bound]
    return {
        "config": config,
        "wall_s": round(wall, 2),
        "cluster_start_s": round(start, 2),
        "plans_per_s": round(len(plans) / wall, 2),
        "optimal": sum(bool(p.optimal) for p in plans),
        "planning_s_ended_on_their_own": round(sum(ended), 1),
        "planning_s_ran_to_the_limit": round(sum(limited), 1),
        "mean_gap_to_lower_bound_pct": round(100 * float(np.mean(gaps)), 4) if gaps else 0.0,
        "validated": len(plans),
        "offsets_identical_to_sequential": same,
        # Other work on the machine shows here (a 1-minute average above the cores in use).
        "load_1min_after": round(os.getloadavg()[0], 2),
    }


def markdown(res: dict) -> str:
    m = res["machine"]
    o = [
        "# heaplab.dask.plan_many: 1 vs 2 workers",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; Python {m['python']}, distributed {m['distributed']}. "
        f"Commit {res['commit']}, {res['date']}. Load average before/after: {res['load_before']} / {res['load_after']}.",
        "",
        f"{res['buffers']:,} buffers per instance, files made by `heaplab gen` and read on the workers; an embedded LocalCluster of worker "
        "processes, one task at a time each, each worker's planner given the cores divided among the workers (`RAYON_NUM_THREADS`). "
        "Wall time of `plan_many` once the workers are up (their start is the next column); every placement validated. "
        "Planning seconds are the plans' own times summed, split into plans proved optimal and plans that ran to the limit "
        "(no number of workers shortens those; on 2 workers two plans run at once, so the sum can exceed the wall time).",
        "",
        "| batch | config | wall (s) | cluster start (s) | plans/s | speedup vs 1 worker | optimal | planning s: ended / ran to limit | mean gap to lower bound | offsets as sequential | load after |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in res["batches"]:
        for c in b["configs"]:
            sp = f"{c['speedup_vs_1_worker']:.2f}x" if c["speedup_vs_1_worker"] else ""
            o.append(
                f"| {b['batch']} ({b['instances']}, limit {b['time_limit_s']} s) | {c['config']} | {c['wall_s']:.1f} | {c['cluster_start_s']:.1f} | "
                f"{c['plans_per_s']:.2f} | {sp} | {c['optimal']}/{b['instances']} | {c['planning_s_ended_on_their_own']} / {c['planning_s_ran_to_the_limit']} | "
                f"{c['mean_gap_to_lower_bound_pct']:.3f}% | "
                + ("" if c["offsets_identical_to_sequential"] is None else f"{c['offsets_identical_to_sequential']}/{b['instances']}")
                + f" | {c['load_1min_after']} |"
            )
    o += ["", res["note"], ""]
    return "\n".join(o)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heaplab", default=str(ROOT / "target" / "release" / "heaplab"), help="the heaplab binary (for `heaplab gen`)")
    ap.add_argument("--buffers", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="20 instances per batch, written under out/ instead of bench/")
    ap.add_argument("--out", default=None, help="results file stem (default bench/dask-results)")
    a = ap.parse_args()
    per = 5 if a.quick else 50
    stem = Path(a.out) if a.out else (ROOT / "out" / "dask-results" if a.quick else ROOT / "bench" / "dask-results")
    stem.parent.mkdir(parents=True, exist_ok=True)
    res = {
        "machine": {"cpu": cpu(), "cores": os.cpu_count(), "memory_gib": round(memory_gib(), 1),
                    "python": platform.python_version(), "distributed": distributed.__version__},
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "buffers": a.buffers,
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "batches": [],
    }
    with tempfile.TemporaryDirectory(prefix="heaplab-dask-bench-") as d:
        own = generate(a.heaplab, ["ratio", "aligned", "nested", "equal"], per, a.buffers, Path(d))
        limited = generate(a.heaplab, ["random", "nn"], 2 * per, a.buffers, Path(d))
        print(f"generated {len(own) + len(limited)} instances", file=sys.stderr)
        res["batches"].append(run_batch("ratio, aligned, nested, equal", own, 2.0, [1, 2], sequential=True, compare=True))
        res["batches"].append(run_batch("random, nn", limited, 1.0, [1, 2], sequential=False, compare=False))
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    res["note"] = (
        "A load average well above the core count means other work shared the machine during the run: the wall times are then "
        "noisy; compare the speedup column, measured back to back, rather than the absolute times."
    )
    stem.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    md = markdown(res)
    stem.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
