"""Whether the embedded server repacks its weights on this machine: probed once, then remembered.

llama.cpp can repack the model's weights at load time into a layout its CPU kernels prefer
(``--repack``, the default of llama-server). Whether that is faster depends on the processor: on
the 2-core AVX-512 machines measured (``benchmarks/audit_cost``, ``--bench-repack``), without
repacking prompt evaluation ran about 1.5x as fast and generation about 0.85x; on an AVX2 machine
the two were the same within noise. So ``llm.repack: auto`` (the default) measures both layouts
once with llama-bench, in interleaved rounds, and keeps the one an audit's mix of tokens runs
faster with (``AUDIT_MIX``); repacking stays unless not repacking is clearly faster
(``MARGIN``). The result is kept beside the assembled model (``model_dir()``), keyed by the server
build and the model, so that every later run (and its response-cache identity) gets the same
answer without probing again. ``RAG_EVAL_REPACK`` (1 or 0) resolves ``auto`` without probing (the
test suite pins 1, the layout its expectations were written under).
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from rag_eval.progress import say

# Prompt tokens evaluated per token generated in an audit: the demo's 28,069 evaluated and 4,233
# generated (benchmarks/audit_cost/result.json, side_by_side, main 5d4b0e0's arm).
AUDIT_MIX = 6.6
# Not repacking must be this much faster for the audit's mix: within it, the build's default stays.
MARGIN = 0.95
ROUNDS = 3  # interleaved rounds of both layouts (six llama-bench runs of about 5 s each on 2 cores)
PROMPT_TOKENS, GENERATED_TOKENS = 512, 64
FILE = "weight-layout.json"
BENCH_TIMEOUT_S = 120  # one llama-bench run; about 4 s for the embedded model on 2 cores


@dataclass(frozen=True)
class LayoutProbe:
    """What the probe measured (tokens per second, means over the rounds) and chose."""

    repack: bool
    why: str
    prompt_tps: dict[str, float] | None = None  # {"repack": .., "no_repack": ..}
    generation_tps: dict[str, float] | None = None
    audit_time_ratio: float | None = None  # no repack over repack, for AUDIT_MIX
    probed: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def audit_seconds(prompt_tps: float, generation_tps: float, mix: float = AUDIT_MIX) -> float:
    """Seconds per generated token of an audit that evaluates ``mix`` prompt tokens per generated one."""
    return mix / prompt_tps + 1 / generation_tps


@dataclass(frozen=True)
class Pair:
    """One speed per layout, in tokens per second."""

    repack: float
    no_repack: float

    @classmethod
    def mean_of(cls, runs: dict[str, list[float]]) -> Pair:
        return cls(**{layout: sum(v) / len(v) for layout, v in runs.items()})


def choose(prompt_tps: dict[str, list[float]], generation_tps: dict[str, list[float]]) -> LayoutProbe:
    """The layout an audit runs faster with, from llama-bench's speeds per layout (``repack``,
    ``no_repack``): no repacking only where it takes at most ``MARGIN`` of repacking's time."""
    pp, tg = Pair.mean_of(prompt_tps), Pair.mean_of(generation_tps)
    ratio = audit_seconds(pp.no_repack, tg.no_repack) / audit_seconds(pp.repack, tg.repack)
    faster = ratio <= MARGIN
    why = (
        f"without repacking an audit's tokens take {ratio:.2f}x the time (prompt {pp.no_repack / pp.repack:.2f}x "
        f"as fast, generation {tg.no_repack / tg.repack:.2f}x)"
    )
    return LayoutProbe(
        repack=not faster,
        why=why,
        prompt_tps={k: round(v, 1) for k, v in asdict(pp).items()},
        generation_tps={k: round(v, 1) for k, v in asdict(tg).items()},
        audit_time_ratio=round(ratio, 3),
        probed=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


@dataclass(frozen=True)
class BenchLine:
    """The fields read from one line of llama-bench's jsonl output."""

    n_prompt: int
    n_gen: int
    avg_ts: float

    @classmethod
    def parse(cls, line: str) -> BenchLine:
        test = json.loads(line)
        return cls(**{f: test[f] for f in cls.__dataclass_fields__})


def bench(bench_binary: Path, model: Path, threads: int) -> LayoutProbe:
    """Both layouts measured with llama-bench in ``ROUNDS`` interleaved rounds, and the choice."""
    pp: dict[str, list[float]] = {"repack": [], "no_repack": []}
    tg: dict[str, list[float]] = {"repack": [], "no_repack": []}
    for r in range(ROUNDS):
        for layout in ("repack", "no_repack") if r % 2 == 0 else ("no_repack", "repack"):
            cmd = [str(bench_binary), "-m", str(model), "-t", str(threads), "-r", "1", "-o", "jsonl"]
            cmd += ["-p", str(PROMPT_TOKENS), "-n", str(GENERATED_TOKENS), "--repack", str(int(layout == "repack"))]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S, check=True)
            for line in proc.stdout.splitlines():
                test = BenchLine.parse(line)
                (pp if test.n_prompt else tg)[layout].append(float(test.avg_ts))
    return choose(pp, tg)


def _key(build: str, model: str) -> str:
    return f"{build}|{model}"


def _kept(path: Path, key: str) -> bool | None:
    """The kept choice for ``key`` in the file at ``path``, or None."""
    entry = _read(path).get(key)
    if not isinstance(entry, dict):
        return None
    return bool(LayoutProbe(**{f: v for f, v in entry.items() if f in LayoutProbe.__dataclass_fields__}).repack)


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keep(path: Path, key: str, probe: LayoutProbe) -> None:
    table = _read(path)
    table[key] = probe.to_dict()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@functools.cache
def repack_for(
    server: Path,
    build: str,
    model_id: str,
    model_path: Path | None,
    threads: int,
    folder: Path,
    assemble: Callable[[], Path] | None = None,
) -> bool:
    """Whether to repack the weights with this server build and model: the kept probe's choice,
    else probed now with ``threads`` (once per machine: llama-bench beside ``server``) and kept in
    ``folder`` (``model_path`` None: the model ``assemble`` makes, only when a probe runs). The thread count is not part of the key, so that changing ``llm.threads`` keeps the
    layout (and the response cache's identity). Without llama-bench, where it fails (not kept: the
    next run tries again) or where ``folder`` cannot be written, llama-server's own default (repack)."""
    path = folder / FILE
    key = _key(build, model_id)
    if (kept := _kept(path, key)) is not None:
        return kept
    bench_binary = server.resolve().parent / "llama-bench"
    if not bench_binary.is_file():
        say(f"weight layout: repacked (llama-server's default): no llama-bench beside {server} to probe the other")
        return True
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = (folder / (FILE + ".lock")).open("w")
    except OSError as exc:
        say(
            f"weight layout: repacked (llama-server's default): cannot keep a probe in {folder} ({exc.strerror or exc})"
        )
        return True
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("weight layout: waiting for another rag-eval process that is probing it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if (kept := _kept(path, key)) is not None:
            return kept
        if model_path is None:
            if assemble is None:
                return True
            model_path = assemble()
        say(
            "weight layout: probing whether this machine runs the model faster with its weights repacked (once, about 30 s on 2 cores)"
        )
        started = time.monotonic()
        try:
            probe = bench(bench_binary, model_path, threads)
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, ZeroDivisionError) as exc:
            detail = (getattr(exc, "stderr", None) or "").strip().splitlines()[-1:] or [str(exc)]
            say(
                f"weight layout: repacked (llama-server's default): llama-bench failed ({detail[0][:200]}); probed again next run"
            )
            return True
        try:
            _keep(path, key, probe)
            where = f"kept in {path}"
        except OSError as exc:
            where = f"not kept ({exc.strerror or exc}): probed again next run"
        say(
            f"weight layout: {'repacked' if probe.repack else 'not repacked (--no-repack)'}: {probe.why}; "
            f"probed in {time.monotonic() - started:.0f} s, {where} (llm.repack: true or false overrides)"
        )
    return probe.repack
