"""Where and when a benchmark's figures were measured: the machine and the commit, written beside
the figures into each study's result.json."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _proc(path: str, key: str) -> str:
    """The value of one ``key: value`` line of a /proc file ('' where there is none)."""
    file = Path(path)
    lines = file.read_text().splitlines() if file.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(key)), "")


def machine() -> dict:
    """What the figures were measured on: cores, memory, processor, and how busy it was."""
    memory_kb = _proc("/proc/meminfo", "MemTotal").split()
    return {
        "cores": os.cpu_count(),
        "memory_gb": round(int(memory_kb[0]) / 2**20, 1) if memory_kb else None,
        "processor": _proc("/proc/cpuinfo", "model name") or platform.machine(),
        "python": platform.python_version(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def commit(folder: Path = ROOT) -> str:
    """The commit of a checkout ('' outside a git checkout)."""
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, capture_output=True, text=True)
    return proc.stdout.strip()
