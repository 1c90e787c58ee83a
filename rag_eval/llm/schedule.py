"""Prefix-aware scheduling of model requests.

A model server keeps the prompt it last processed in its KV cache (llama-server: per slot), and
re-evaluates only what comes after the longest shared prefix. So when a place frees and several
requests wait, the one whose prompt shares the longest prefix with the last prompt sent goes next
(ties: first come). Judges of one template then run back to back, and their fixed part
(instructions, examples) is evaluated once per run of them instead of once per request.
"""

from __future__ import annotations

import asyncio
import itertools
import json


def prompt_text(body: bytes) -> str:
    """The text a chat request's prompt is made of (its messages' contents, in order)."""
    try:
        messages = json.loads(body).get("messages") or []
    except (ValueError, AttributeError):
        return ""
    parts = []
    for m in messages:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, list):  # content parts
            c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
        parts.append(f"{m.get('role', '') if isinstance(m, dict) else ''}\0{c or ''}\0")
    return "".join(parts)


def shared_prefix(a: str, b: str) -> int:
    """Characters at the start that ``a`` and ``b`` have in common."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    # Bisection on slice equality (compared in C): os.path.commonprefix walks characters in Python.
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class PrefixScheduler:
    """At most ``limit`` requests at once; the next to go is the waiting one that best continues
    the last prompt sent."""

    def __init__(self, limit: int):
        self.free, self.last = limit, ""
        self.waiting: list[tuple[int, str, asyncio.Future]] = []
        self._seq = itertools.count()

    async def acquire(self, text: str) -> None:
        if self.free > 0 and not self.waiting:
            self.free -= 1
            self.last = text
            return
        fut = asyncio.get_running_loop().create_future()
        entry = (next(self._seq), text, fut)
        self.waiting.append(entry)
        try:
            await fut
        except BaseException:
            if entry in self.waiting:
                self.waiting.remove(entry)
            elif not fut.cancelled():
                self.release()  # it was handed the place just as it was cancelled: pass it on
            raise

    def release(self) -> None:
        while self.waiting:
            best = max(self.waiting, key=lambda w: (shared_prefix(w[1], self.last), -w[0]))
            self.waiting.remove(best)
            if best[2].done():
                continue
            self.last = best[1]
            best[2].set_result(None)
            return
        self.free += 1

    async def __call__(self, text: str):
        """``async with scheduler(text):``"""
        await self.acquire(text)
        return _Release(self)


class _Release:
    def __init__(self, scheduler: PrefixScheduler):
        self.scheduler = scheduler

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        self.scheduler.release()
