"""Benchmark: activation memory of the nine model graphs the `onnx` wheel ships, planned by the
runtimes' greedy planners and by heaplab, against the lower bound.

For each graph at batch 1 and 32 (`heaplab.onnx.tensors`, 64-byte alignment; the activations,
and again with the weights unfolded):
the naive total (every tensor its own aligned slot, no reuse), greedy by size (TFLite Micro),
TFLite's arena planner, ONNX Runtime's memory pattern (`heaplab.baselines`), `heaplab.plan`
with a stated time limit, and heaplab's lower bound. Every placement is checked with
`heaplab.check`. Writes bench/onnx-results.md and bench/onnx-results.json.

Run: ``make bench-onnx`` (or ``.venv/bin/python python/bench/onnx_models.py [--time-limit S]``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone

import numpy as np

import heaplab
import heaplab.onnx as hx
from heaplab import baselines
from provenance import commit, machine

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BATCHES = (1, 32)
ALIGNMENT = 64
GREEDY = (("greedy_by_size", baselines.greedy_by_size), ("tflite_arena", baselines.tflite_arena),
          ("ort_mem_pattern", baselines.ort_mem_pattern))


def naive(sizes: np.ndarray) -> int:
    """No reuse: every tensor in its own slot, slots aligned."""
    return int((-(-sizes.astype(np.int64) // ALIGNMENT) * ALIGNMENT).sum())


# The two sets of buffers per graph: the activations, and the activations with the weights
# unfolded (each ConstantOfShape output alive from its node to its last reader, as a runtime
# without constant folding holds them).
SETS = (("activations", {}), ("unfolded weights", {"fold_constants": False}))


def run(path: str, batch: int, time_limit: float, which: str, options: dict) -> dict:
    t0 = time.perf_counter()
    t = hx.tensors(path, batch=batch, alignment=ALIGNMENT, **options)
    read_s = time.perf_counter() - t0
    inst = t.instance()
    row = {"set": which, "model": os.path.basename(path)[len("light_"):-len(".onnx")], "batch": batch,
           "nodes": t.steps, "buffers": len(t), "read_s": round(read_s, 3),
           "naive": naive(t.sizes), "max_load": inst.max_load()}
    for name, planner in GREEDY:
        t0 = time.perf_counter()
        g = planner(inst)
        row[name + "_s"] = round(time.perf_counter() - t0, 3)
        heaplab.check(inst, offsets=g.offsets)
        row[name] = g.makespan
    t0 = time.perf_counter()
    p = heaplab.plan(inst, time_limit=time_limit, seed=1)
    row["heaplab_s"] = round(time.perf_counter() - t0, 3)
    heaplab.check(inst, offsets=p.offsets)
    row.update(heaplab=int(p.makespan), lower_bound=int(p.lower_bound), optimal=bool(p.optimal),
               algorithm=str(p.algorithm))
    return row


def mib(b: int) -> str:
    return f"{b / 2**20:,.2f}"


def over(a: int, lb: int) -> str:
    """The excess over the lower bound: exact bytes while under 0.1 %, else a percentage."""
    d = a - lb
    if d == 0 or not lb:
        return "±0"
    return f"+{d:,} B" if 1000 * d < lb else f"+{100 * d / lb:.1f}%"


def summary(rows, which: str) -> list:
    """One line per greedy planner: where heaplab needs less, and by how much at most."""
    out = []
    mine = [r for r in rows if r["set"] == which]
    optimal = sum(r["optimal"] for r in mine)
    gap = max(r["heaplab"] - r["lower_bound"] for r in mine)
    out.append(f"heaplab proved {optimal} of {len(mine)} plans optimal"
               + (f"; the largest gap to the lower bound is {gap:,} B." if gap else ", all at the lower bound."))
    for key, label in (("greedy_by_size", "greedy by size"), ("tflite_arena", "the TFLite arena order"),
                       ("ort_mem_pattern", "the ORT pattern")):
        better = [r for r in mine if r["heaplab"] < r[key]]
        if not better:
            out.append(f"Against {label}: equal on all {len(mine)}.")
            continue
        worst = max(better, key=lambda r: (r[key] - r["heaplab"]) / r[key])
        out.append(f"Against {label}: heaplab needs less on {len(better)} of {len(mine)}, at most "
                   f"{100 * (worst[key] - worst['heaplab']) / worst[key]:.1f}% less "
                   f"({worst['model']}, batch {worst['batch']}: {mib(worst[key])} → {mib(worst['heaplab'])} MiB).")
    return out


def table(rows) -> str:
    head = ("| model | batch | buffers | naive MiB | greedy by size | TFLite arena | ORT pattern "
            "| heaplab | lower bound | heaplab time s |")
    out = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lb = r["lower_bound"]
        cell = lambda k: f"{mib(r[k])} ({over(r[k], lb)})"  # noqa: E731
        star = " ✓" if r["optimal"] else ""
        out.append(f"| {r['model']} | {r['batch']} | {r['buffers']} | {mib(r['naive'])} | {cell('greedy_by_size')} "
                   f"| {cell('tflite_arena')} | {cell('ort_mem_pattern')} | {cell('heaplab')}{star} "
                   f"| {mib(lb)} | {r['heaplab_s']:.2f} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=3.0, help="heaplab.plan's time limit per instance (s)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "onnx-results"),
                    help="output path without extension (.md and .json are written)")
    args = ap.parse_args()
    import onnx

    models = hx.bundled_models()
    if len(models) != 9:
        print(f"expected the nine graphs under onnx/backend/test/data/light, found {len(models)}", file=sys.stderr)
        return 2
    rows = []
    for which, options in SETS:
        for path in models:
            for b in BATCHES:
                r = run(path, b, args.time_limit, which, options)
                rows.append(r)
                print(f"{which:>16} {r['model']:>14} batch {b:>2}: {r['buffers']:>4} buffers, "
                      f"naive {mib(r['naive']):>10} MiB, greedy {mib(r['greedy_by_size']):>9}, "
                      f"tflite {mib(r['tflite_arena']):>9}, ort {mib(r['ort_mem_pattern']):>9}, "
                      f"heaplab {mib(r['heaplab']):>9} ({r['heaplab_s']:.2f} s), "
                      f"bound {mib(r['lower_bound']):>9} MiB", flush=True)
    meta = {
        "machine": machine(), "commit": commit(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(), "onnx": onnx.__version__, "numpy": np.__version__,
        "heaplab": getattr(heaplab, "__version__", "?"), "time_limit_s": args.time_limit,
        "alignment": ALIGNMENT,
    }
    with open(args.out + ".json.tmp", "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    os.replace(args.out + ".json.tmp", args.out + ".json")

    def total(which: str, k: str, b: int) -> int:
        return sum(r[k] for r in rows if r["batch"] == b and r["set"] == which)

    md = [
        "# ONNX model graphs: activation memory",
        "",
        f"Machine: {meta['machine']}. Commit {meta['commit']}, {meta['date']}; Python {meta['python']}, "
        f"onnx {meta['onnx']}, numpy {meta['numpy']}. Made by `make bench-onnx` "
        "(python/bench/onnx_models.py).",
        "",
        "The graphs are the nine that the `onnx` wheel ships under `onnx/backend/test/data/light/`: "
        "the ONNX model zoo's Caffe2-exported models (opset 9) with every weight replaced by a "
        "`ConstantOfShape` node that fills it at run time, so operators, node order and tensor shapes "
        "are the real models' while the files stay small. Each is read by `heaplab.onnx.tensors` at "
        "batch 1 and 32 (the batch hard-coded in their `Reshape` targets follows), 64-byte offset "
        "alignment, lifetimes from node order (`[producer, last reader + 1)`), graph input and "
        "output left out. Two sets of buffers: *activations* (the weights are constants, folded "
        "away as a runtime does) and *unfolded weights* (`fold_constants=False`: each "
        "`ConstantOfShape` weight is a buffer from its node, all at the start of the graph, to "
        "its last reader, as a runtime without constant folding holds them).",
        "",
        "Columns are the arena size in MiB (2^20 bytes) and, in brackets, the excess over heaplab's "
        "lower bound (in bytes while under 0.1 %). *naive*: no reuse, every tensor its own aligned slot. *greedy by size*: largest "
        "first, lowest gap (TFLite Micro's `GreedyMemoryPlanner`, the GPU delegate's greedy by size). "
        "*TFLite arena*: TFLite's `ArenaPlanner` order (whole-run tensors, then largest first) with "
        "best fit. *ORT pattern*: ONNX Runtime's memory pattern, execution order with best fit. "
        f"*heaplab*: `heaplab.plan(time_limit={args.time_limit:g}, seed=1)`, ✓ where it proved the "
        "plan optimal; its wall time in the last column. *lower bound*: `Plan.lower_bound`. The "
        "three greedy planners are `heaplab.baselines` (its docstring says where they differ from "
        "the runtimes). Every placement was checked by `heaplab.check`.",
    ]
    for which, _ in SETS:
        md += ["", f"## {which[0].upper() + which[1:]}", "", table([r for r in rows if r["set"] == which]), ""]
        md += [f"- {line}" for line in summary(rows, which)]
        md += ["",
               "Totals over the nine graphs (MiB):", "",
               "| batch | naive | greedy by size | TFLite arena | ORT pattern | heaplab | lower bound |",
               "|---:|---:|---:|---:|---:|---:|---:|"]
        for b in BATCHES:
            md.append(f"| {b} | " + " | ".join(mib(total(which, k, b)) for k in (
                "naive", "greedy_by_size", "tflite_arena", "ort_mem_pattern", "heaplab", "lower_bound")) + " |")
    md.append("")
    with open(args.out + ".md.tmp", "w") as f:
        f.write("\n".join(md))
    os.replace(args.out + ".md.tmp", args.out + ".md")
    print(f"wrote {args.out}.md and {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
