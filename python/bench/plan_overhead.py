#!/usr/bin/env python3
"""Benchmark of the Python package's overhead: 10^6 generated buffers planned from numpy
arrays (heaplab.plan) against the CLI's planning time (`heaplab plan --json`: plan_seconds)
for the same instance, seed and time limit; end to end too (the CLI process against a Python
process that imports heaplab, reads the same file and plans it). Writes
bench/python-results.md and bench/python-results.json (machine, commit, table).

Run by `make bench-python`; `--heaplab` is the release CLI."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import heaplab

ROOT = Path(__file__).resolve().parents[2]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}, numpy {np.__version__}"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


E2E = "import sys, time, heaplab; i = heaplab.read(sys.argv[1]); heaplab.plan(i, time_limit=float(sys.argv[2]), seed=1, algorithm=sys.argv[3])"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heaplab", default=str(ROOT / "target" / "release" / "heaplab"))
    ap.add_argument("--buffers", type=int, default=1_000_000)
    ap.add_argument("--kinds", default="random,nn,malloc")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=3.0)
    # `auto` stops at the time limit, so its planning time varies with how far each search got;
    # a single greedy heuristic does the same work every run, which isolates the binding's cost.
    ap.add_argument("--algorithms", default="auto,best-fit/start")
    ap.add_argument("--out", default=str(ROOT / "bench" / "python-results"))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, algorithm in ((k, al) for al in a.algorithms.split(",") for k in a.kinds.split(",")):
            path = Path(tmp) / f"{kind}.hlbin"
            if not path.exists():
                subprocess.run([a.heaplab, "gen", "--kind", kind, "--buffers", str(a.buffers), "--seed", "1", "-o", str(path)], check=True, capture_output=True)
            inst = heaplab.read(path)
            # Plain int64 columns, as a user's numpy arrays would be: the conversion is measured.
            sizes, lower, upper = (np.asarray(x, dtype=np.int64) for x in (inst.sizes, inst.lower, inst.upper))
            cli_plan, cli_total, py_call, py_inner, py_e2e, makespans = [], [], [], [], [], set()
            for _ in range(a.runs):
                t = time.perf_counter()
                r = subprocess.run([a.heaplab, "plan", str(path), "--json", "--seed", "1", "--time-limit", str(a.time_limit), "--algorithm", algorithm], capture_output=True, text=True, check=True)
                cli_total.append(time.perf_counter() - t)
                s = json.loads(r.stdout)
                cli_plan.append(s["plan_seconds"])
                t = time.perf_counter()
                p = heaplab.plan(sizes, lower, upper, time_limit=a.time_limit, seed=1, algorithm=algorithm)
                py_call.append(time.perf_counter() - t)
                py_inner.append(p.seconds)
                makespans.add((s["makespan"], p.makespan))
                t = time.perf_counter()
                subprocess.run([sys.executable, "-c", E2E, str(path), str(a.time_limit), algorithm], check=True)
                py_e2e.append(time.perf_counter() - t)
            med = statistics.median
            row = {
                "kind": kind,
                "algorithm": algorithm,
                "buffers": len(inst),
                "runs": a.runs,
                "cli_plan_s": med(cli_plan),
                "python_plan_call_s": med(py_call),
                "python_planner_s": med(py_inner),
                "overhead_pct_vs_cli_plan": 100 * (med(py_call) - med(cli_plan)) / med(cli_plan),
                "binding_overhead_s": med([c - i for c, i in zip(py_call, py_inner)]),
                "cli_end_to_end_s": med(cli_total),
                "python_end_to_end_s": med(py_e2e),
                "end_to_end_overhead_pct": 100 * (med(py_e2e) - med(cli_total)) / med(cli_total),
                "makespans_cli_python": sorted(makespans),
            }
            rows.append(row)
            print(f"{kind:8} {algorithm:15} {row['buffers']:>9,}  CLI plan {row['cli_plan_s']:.3f} s  Python plan() {row['python_plan_call_s']:.3f} s "
                  f"({row['overhead_pct_vs_cli_plan']:+.2f}%, binding {row['binding_overhead_s'] * 1000:.1f} ms)  "
                  f"end to end {row['cli_end_to_end_s']:.2f} s vs {row['python_end_to_end_s']:.2f} s ({row['end_to_end_overhead_pct']:+.1f}%)", flush=True)
    result = {"machine": machine(), "commit": commit(), "time_limit": a.time_limit, "rows": rows}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Python package overhead: planning 10^6 buffers from numpy",
        "",
        f"Generated by `make bench-python` (python/bench/plan_overhead.py) on {result['machine']}, commit {result['commit']}.",
        f"Each figure is the median of {a.runs} runs; time limit {a.time_limit} s, seed 1, instances from `heaplab gen --seed 1`.",
        "",
        "- **CLI plan**: `heaplab plan --json`'s `plan_seconds` (the planner alone, no file I/O).",
        "- **Python plan()**: wall time of `heaplab.plan(sizes, lower, upper)` on int64 numpy arrays: conversion, checks, planning, offsets array.",
        "- **binding**: Python plan() minus the planner's own time in that call (`Plan.seconds`).",
        "- **end to end**: the CLI process (read, plan, summary) against a Python process that imports heaplab, reads the same .hlbin and plans it.",
        "",
        "| kind | algorithm | buffers | CLI plan (s) | Python plan() (s) | overhead | binding (ms) | CLI end to end (s) | Python end to end (s) | end-to-end overhead |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['algorithm']} | {r['buffers']:,} | {r['cli_plan_s']:.3f} | {r['python_plan_call_s']:.3f} | {r['overhead_pct_vs_cli_plan']:+.2f}% | "
            f"{r['binding_overhead_s'] * 1000:.1f} | {r['cli_end_to_end_s']:.2f} | {r['python_end_to_end_s']:.2f} | {r['end_to_end_overhead_pct']:+.1f}% |"
        )
    lines += ["", "Target: overhead over the CLI's planning time at most 5%. With `auto` both stop at the time",
              "limit, so their difference is mostly how far each search got; the single heuristic does the",
              "same work every run and shows the binding's own cost.", ""]
    out.with_suffix(".md").write_text("\n".join(lines))
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
