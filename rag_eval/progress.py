"""Progress bars and messages on standard error (standard output stays for results)."""

from __future__ import annotations

import asyncio
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


def set_enabled(on: bool) -> None:
    """Turn progress bars off (tests, --quiet) or on."""
    global _enabled
    _enabled = on


def enabled() -> bool:
    return _enabled and console.is_terminal


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


def track(items: Sequence[T] | Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar (with ETA) when standard error is a terminal."""
    if not enabled():
        yield from items
        return
    with _bar() as progress:
        yield from progress.track(items, total=total, description=description)


def say(message: str) -> None:
    """A status line on standard error."""
    if _enabled:
        console.print(message)


async def track_async(awaitables: list[Awaitable[T]], description: str) -> AsyncIterator[T]:
    """Run awaitables concurrently and yield their results as they complete, with a progress bar."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        if not enabled():
            for fut in asyncio.as_completed(tasks):
                yield await fut
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
