"""Where a benchmark ran: the machine and the commit, as every results file under bench/ states them."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cpu() -> str:
    """The processor's model name (from /proc/cpuinfo), or what the platform says."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def memory_gib() -> float:
    """Installed memory in GiB (0 when unknown)."""
    try:
        with open("/proc/meminfo") as f:
            return int(next(line.split()[1] for line in f if line.startswith("MemTotal"))) / 2**20
    except (OSError, StopIteration, ValueError):
        return 0.0


def machine() -> str:
    """One line: CPU, cores, memory."""
    return f"{cpu()}, {os.cpu_count()} cores, {memory_gib():.0f} GiB"


def commit() -> str:
    """The short commit of the checkout, marked when tracked files have uncommitted changes."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
