"""Progress on standard error (standard output stays for results).

Three modes: on a terminal, a live bar per stage (done/total, seconds each, elapsed, eta); without
one (a CI log, ``| tee``, a pipe), plain lines: one when a stage starts, one every
``RAG_EVAL_PROGRESS_INTERVAL`` seconds (30 by default) with done/total, elapsed time and an
estimate of the time left, and one when a stage that printed such a line ends; with ``-q``
(``set_enabled(False)``), nothing, status lines included.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Sequence
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

T = TypeVar("T")
console = Console(stderr=True, highlight=False)
_enabled = True
INTERVAL_ENV = "RAG_EVAL_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 30.0


def set_enabled(on: bool) -> None:
    """Turn progress and status lines off (tests, -q) or on."""
    global _enabled
    _enabled = on


def shown() -> bool:
    """Progress is shown (not silenced by -q): as a live bar on a terminal, else as plain lines."""
    return _enabled


def enabled() -> bool:
    """Progress is shown as a live bar: not silenced, and standard error is a terminal (what a
    library's own bar, e.g. an embedding model's, may draw on)."""
    return _enabled and console.is_terminal


def interval_s() -> float:
    """Seconds between progress lines when there is no terminal (``RAG_EVAL_PROGRESS_INTERVAL``)."""
    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def duration(seconds: float) -> str:
    """``42 s``, ``2 min 47 s``, ``1 h 05 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


class SecondsEach(ProgressColumn):
    """The rate, as seconds per item (model calls take seconds, so items/s would read 0.1)."""

    def render(self, task) -> Text:
        if not task.completed or not task.elapsed:
            return Text("")
        return Text(f"{task.elapsed / task.completed:.1f} s each")


def _bar() -> Progress:
    """Description, bar, done/total, rate, elapsed time and ETA, cleared when finished."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        SecondsEach(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=console, transient=True)


class Lines:
    """Progress of one stage as plain lines: a line when it starts, a line every ``interval``
    seconds (from a timer thread, so a slow item does not hold it back) and a closing line when
    the stage took long enough to print one. A context manager; ``advance`` counts done items."""

    def __init__(self, description: str, total: int | None, interval: float | None = None):
        self.description = description
        self.total = total
        self.interval = interval_s() if interval is None else interval
        self.done = 0
        self.ticks = 0
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="rag-eval-progress", daemon=True)

    def __enter__(self) -> Lines:
        of = f" ({self.total} items)" if self.total is not None else ""
        _line(f"{self.description}{of}: started")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.ticks and exc[0] is None:
            _line(f"{self.description}: {self._count()} done in {duration(time.monotonic() - self.start)}")

    def advance(self, n: int = 1) -> None:
        self.done += n

    def _count(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else str(self.done)

    def status(self) -> str:
        """``judging answers: 12/40 done, 1 min 02 s elapsed, about 2 min 25 s left``."""
        elapsed = time.monotonic() - self.start
        line = f"{self.description}: {self._count()} done, {duration(elapsed)} elapsed"
        if self.total and self.done:
            line += f", about {duration(elapsed / self.done * (self.total - self.done))} left"
        elif self.total:
            line += ", no estimate yet (none done)"
        return line

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.ticks += 1
            _line(self.status())


def _line(message: str) -> None:
    """One plain line on standard error, never wrapped or styled (a log reads it as written)."""
    console.print(message, markup=False, highlight=False, soft_wrap=True)


def _total(items: Sequence[T] | Iterable[T], total: int | None) -> int | None:
    if total is not None:
        return total
    try:
        return len(items)  # type: ignore[arg-type]
    except TypeError:
        return None


def track(items: Sequence[T] | Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with progress: a live bar (with ETA) on a terminal, plain lines without one."""
    if not _enabled:
        yield from items
        return
    if not console.is_terminal:
        with Lines(description, _total(items, total)) as lines:
            for item in items:
                yield item
                lines.advance()
        return
    with _bar() as progress:
        yield from progress.track(items, total=total, description=description)


def say(message: str) -> None:
    """A status line on standard error (without a terminal, plain: not wrapped at 80 columns)."""
    if not _enabled:
        return
    if console.is_terminal:
        console.print(message)
    else:
        _line(message)


async def track_async(awaitables: Sequence[Awaitable[T]], description: str) -> AsyncIterator[T]:
    """Run awaitables concurrently and yield their results as they complete, with progress (a live
    bar on a terminal, plain lines without one)."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        if not _enabled:
            for fut in asyncio.as_completed(tasks):
                yield await fut
            return
        if not console.is_terminal:
            with Lines(description, len(tasks)) as lines:
                for fut in asyncio.as_completed(tasks):
                    result = await fut
                    lines.advance()
                    yield result
            return
        with _bar() as progress:
            task = progress.add_task(description, total=len(tasks))
            for fut in asyncio.as_completed(tasks):
                result = await fut
                progress.advance(task)
                yield result
    finally:
        for t in tasks:
            t.cancel()
