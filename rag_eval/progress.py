"""Progress on standard error (standard output stays for results).

Three modes: on a terminal, a live bar per stage (done/total, the stage's model calls and
decisions, seconds each, elapsed, eta); without one (a CI log, ``| tee``, a pipe), plain lines: one
when a stage starts, one every ``RAG_EVAL_PROGRESS_INTERVAL`` seconds (30 by default) with
done/total, the model calls and decisions completed, elapsed time and an estimate of the time
left, and one when the stage ends; with ``-q`` (``set_enabled(False)``), nothing, status lines
included.

Model calls are counted where they complete, in the client layer (``call_done``), and decisions
where a judge's verdict is recorded (``decided``); a stage counts those completed since it
started, so a line moves with every call even while no answer is finished. ``plan`` tells the
stages started inside it how many calls and decisions to expect.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class Work:
    """Model calls and decisions completed in this process: ``calls`` answered (sent and answered,
    or from the response cache: ``cached``), ``failed`` attempts (an error or a refused request;
    the client may retry them), ``decisions`` recorded by the judges."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    decisions: int = 0
    reused: int = 0  # of the decisions: those reused from a resumed run's records (no work)

    def __sub__(self, other: Work) -> Work:
        return Work(
            self.calls - other.calls,
            self.cached - other.cached,
            self.failed - other.failed,
            self.decisions - other.decisions,
            self.reused - other.reused,
        )


@dataclass(frozen=True)
class Plan:
    """What a stage expects to do: model calls at most (cached ones included), decisions."""

    calls: int | None = None
    decisions: int | None = None


_work = Work()
_work_lock = threading.Lock()
_plan = Plan()


def call_done(*, cached: bool = False, failed: bool = False) -> None:
    """One model call completed (the client layer calls it): answered, from the cache, or failed."""
    global _work
    with _work_lock:
        if failed:
            _work = replace(_work, failed=_work.failed + 1)
        else:
            _work = replace(_work, calls=_work.calls + 1, cached=_work.cached + int(cached))


def decided(n: int = 1, reused: bool = False) -> None:
    """``n`` judge decisions recorded (``reused``: reused from a resumed run's records)."""
    global _work
    with _work_lock:
        _work = replace(_work, decisions=_work.decisions + n, reused=_work.reused + (n if reused else 0))


def work() -> Work:
    """The calls and decisions completed so far in this process."""
    return _work


@contextmanager
def plan(calls: int | None = None, decisions: int | None = None) -> Iterator[None]:
    """The stages started inside expect ``calls`` model calls at most and ``decisions`` decisions."""
    global _plan
    before, _plan = _plan, Plan(calls, decisions)
    try:
        yield
    finally:
        _plan = before


class Stage:
    """One stage's progress: items done of a total, the model calls and decisions completed since
    it started (against its plan), and the time; what the lines and the live bar show."""

    def __init__(self, description: str, total: int | None):
        self.description, self.total = description, total
        self.plan = _plan
        self.done = 0
        self.start = time.monotonic()
        self.began = work()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def work(self) -> Work:
        """Calls and decisions completed since the stage started."""
        return work() - self.began

    def count(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else str(self.done)

    def calls_text(self) -> str:
        """``37 of ~101 calls (12 from the cache, 2 attempts failed), 12 of 48 decisions``; empty for a
        stage that calls no model."""
        w, p = self.work(), self.plan
        parts = []
        if p.calls or w.calls or w.failed:
            extra = [f"{w.cached} from the cache"] if w.cached else []
            extra += [f"{w.failed} attempt{'s' if w.failed != 1 else ''} failed"] if w.failed else []
            of = f" of ~{p.calls}" if p.calls is not None else ""
            parts.append(f"{w.calls}{of} calls" + (f" ({', '.join(extra)})" if extra else ""))
        if p.decisions or w.decisions:
            of = f" of {p.decisions}" if p.decisions is not None else ""
            parts.append(f"{w.decisions}{of} decisions")
        return ", ".join(parts)

    def fraction(self) -> float | None:
        """How much of the stage's work is done: the furthest of items, decisions and calls (an upper
        bound of the calls, so never past 0.99 by them alone), or None before anything is done. A
        resumed run's reused decisions are no work: then only the decisions made and calls sent
        count, against what was left to do (items done by reuse alone would say it is nearly over).
        As counted now: where the first reused decision changes what counts it may step back, since
        an estimate held at the most it once said would understate the time left (review 53 L9)."""
        w, p = self.work(), self.plan
        shares = []
        if self.total and not w.reused:
            shares.append(self.done / self.total)
        if p.decisions and w.reused:
            left = p.decisions - w.reused
            shares.append(min((w.decisions - w.reused) / left, 1.0) if left > 0 else 1.0)
        elif p.decisions:
            shares.append(min(w.decisions / p.decisions, 1.0))
        if p.calls:
            shares.append(min(w.calls / p.calls, 0.99))
        return max(shares) if shares and max(shares) > 0 else None

    def status(self) -> str:
        """``judging answers: 3/8 done, 37 of ~101 calls, 12 of 48 decisions, 4 min 10 s elapsed,
        about 9 min 5 s left``."""
        elapsed = self.elapsed()
        calls = self.calls_text()
        line = f"{self.description}: {self.count()} done" + (f", {calls}" if calls else "")
        line += f", {duration(elapsed)} elapsed"
        f = self.fraction()
        if f is not None and f < 1:
            line += f", about {duration(elapsed / f * (1 - f))} left"
        elif f is None and (self.total or self.plan.calls):
            line += ", no estimate yet (none done)"
        return line


def set_enabled(on: bool) -> None:
    """Turn progress and status lines off (tests, -q) or on."""
    global _enabled
    _enabled = on


@contextmanager
def quiet() -> Iterator[None]:
    """No progress or status lines inside (work whose one line the caller says itself)."""
    global _enabled
    before, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = before


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


class StageWork(ProgressColumn):
    """The model calls and decisions of the task's stage, redrawn with the bar (so it moves with
    every call while no item is done)."""

    def render(self, task) -> Text:
        stage = task.fields.get("stage")
        return Text(stage.calls_text() if isinstance(stage, Stage) else "")


def _bar() -> Progress:
    """Description, bar, done/total, calls and decisions, rate, elapsed time and ETA, cleared when
    finished."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        StageWork(),
        SecondsEach(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=console, transient=True)


class Lines:
    """Progress of one stage as plain lines: a line when it starts, a line every ``interval``
    seconds (from a timer thread, so a slow item does not hold it back) with the items, calls and
    decisions done, and a closing line when it ends. A context manager; ``advance`` counts done
    items."""

    def __init__(self, description: str, total: int | None, interval: float | None = None):
        self.stage = Stage(description, total)
        self.interval = interval_s() if interval is None else interval
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="rag-eval-progress", daemon=True)

    @property
    def description(self) -> str:
        return self.stage.description

    @property
    def total(self) -> int | None:
        return self.stage.total

    @property
    def done(self) -> int:
        return self.stage.done

    @property
    def start(self) -> float:
        return self.stage.start

    @start.setter
    def start(self, value: float) -> None:
        self.stage.start = value

    def __enter__(self) -> Lines:
        of = f" ({self.total} item{'s' if self.total != 1 else ''})" if self.total is not None else ""
        _line(f"{self.description}{of}: started")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            calls = self.stage.calls_text()
            _line(
                f"{self.description}: {self.stage.count()} done"
                + (f", {calls}" if calls else "")
                + f" in {duration(self.stage.elapsed())}"
            )

    def advance(self, n: int = 1) -> None:
        self.stage.done += n

    def status(self) -> str:
        """``judging answers: 12/40 done, 37 of ~101 calls, 1 min 02 s elapsed, about 2 min 25 s left``."""
        return self.stage.status()

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
        task = progress.add_task(description, total=_total(items, total), stage=Stage(description, total))
        for item in items:
            yield item
            progress.advance(task)


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
            task = progress.add_task(description, total=len(tasks), stage=Stage(description, len(tasks)))
            for fut in asyncio.as_completed(tasks):
                result = await fut
                progress.advance(task)
                yield result
    finally:
        for t in tasks:
            t.cancel()
