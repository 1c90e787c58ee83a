"""Saved KV caches of prompt beginnings that repeat, for the embedded server's next start.

Within one server's life llama-server's RAM prompt cache keeps the prompts it processed, so a
template's fixed part (instructions, examples, schema) is evaluated once per run. A new server
starts empty and evaluates each template's fixed part again. The library keeps, on disk beside the
response cache, slot 0 of a prompt whose beginning repeats one the server processed before and that
no saved slot has yet (``/slots/0?action=save``): a template's, since one-off prompts do not repeat.
Before a request it restores (``action=restore``) the saved slot that shares more of the request's
beginning than anything the server holds, by ``MIN_SHARED_CHARS``. llama-server then reuses the
longest common token prefix, as for its own cache; a prefix it does not recognise is evaluated.

What the server holds is tracked as it is: the prompt in the slot, and the prompts the slot held
before (llama-server moves an idle slot's prompt to its RAM cache when a new task takes the slot). A
restore overwrites the slot, so the prompt it held is gone, not cached; templates that alternate on
a fresh server are then restored again, which costs milliseconds.

A slot's KV cache is only valid for the model file, build and settings that computed it: the
library's folder is named by the server's cache identity, so no other numerics ever read it. Only
one-slot servers use it (``parallel: 1``), where slot 0 is the slot every request uses. Nothing here
may fail a request: the transport stops using a library that errs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rag_eval.llm.schedule import shared_prefix

# A restore or a save is worth it only for a shared beginning at least this long (characters of
# the messages' text, about 4 per token: ~100 tokens, ~2 s of prompt evaluation on 2 cores).
MIN_SHARED_CHARS = 400
# The text kept per saved slot for matching; beginnings longer than this count as this long.
MATCH_CHARS = 16_000
# Prompts remembered as held by the server's RAM cache (llama-server keeps more, up to --cache-ram).
HELD_LIMIT = 256
DEFAULT_MAX_BYTES = 512 * 2**20
# Slots saved by one server at most: a run whose shared beginnings are per question (the same
# question under several prompts) does not write one slot per question.
MAX_SAVES_PER_SERVER = 16
# After this many failed saves (a server without slot support, a full disk) the library stops.
MAX_FAILURES = 3
# Slot files not in the index (a run killed between the server's write and the index's) go after this.
ORPHAN_AGE_S = 3600
_FILE = re.compile(r"^[0-9a-f]{24}\.bin$")


@dataclass
class SlotStats:
    """What the library did in one server's life."""

    restored: int = 0
    saved: int = 0
    failed: int = 0


class SlotEntry(BaseModel):
    """A saved slot of the index (``index.json``): its file, the beginning of the prompt it holds, its
    size, its last use. Strict: an entry of another shape is skipped, never coerced."""

    model_config = ConfigDict(strict=True)

    file: str = Field(pattern=_FILE.pattern)
    text: str
    bytes: int
    used: int | float


def _entry(item: object) -> SlotEntry | None:
    """An item of the index as an entry; None where it is malformed."""
    try:
        return SlotEntry.model_validate(item)
    except ValidationError:
        return None


class SlotLibrary:
    """The saved slots of one server identity (model, build, settings), with their prompts' text,
    and what that server holds now."""

    def __init__(self, root: Path, identity: str, *, max_bytes: int = DEFAULT_MAX_BYTES):
        self.dir = Path(root) / hashlib.sha256(identity.encode()).hexdigest()[:16]
        self.max_bytes = max_bytes
        self.slot = ""  # the prompt in slot 0 now
        self.ram: list[str] = []  # prompts the slot held before (the server's RAM cache)
        self.stats = SlotStats()
        self.disabled = False

    @property
    def index_path(self) -> Path:
        return self.dir / "index.json"

    @property
    def active(self) -> bool:
        return not self.disabled and self.stats.failed < MAX_FAILURES

    def ensure(self) -> Path:
        """The library's folder (the server's ``--slot-save-path``), created if needed."""
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir

    def entries(self) -> list[SlotEntry]:
        """The saved slots whose files exist; malformed ones skipped."""
        try:
            data = json.loads(self.index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(data, list):
            return []
        found = [e for e in map(_entry, data) if e is not None]
        return [e for e in found if (self.dir / e.file).is_file()]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The index's read-modify-write, one process at a time."""
        self.ensure()
        with (self.dir / "index.lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _write(self, entries: list[SlotEntry]) -> None:
        tmp = self.index_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps([e.model_dump() for e in entries], ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.index_path)

    def held(self, text: str) -> int:
        """Characters of ``text``'s beginning that the server holds (its slot or its RAM cache)."""
        head = text[:MATCH_CHARS]
        return max([shared_prefix(head, self.slot)] + [shared_prefix(head, s) for s in self.ram])

    def _best(self, head: str) -> tuple[SlotEntry | None, int]:
        best, best_n = None, 0
        for e in self.entries():
            n = shared_prefix(head, e.text)
            if n > best_n:
                best, best_n = e, n
        return best, best_n

    def to_restore(self, text: str) -> SlotEntry | None:
        """The saved slot to load before sending ``text``: the one sharing the longest beginning with
        it, where that beats what the server holds by ``MIN_SHARED_CHARS``."""
        if not self.active:
            return None
        head = text[:MATCH_CHARS]
        best, best_n = self._best(head)
        if best is None or best_n < MIN_SHARED_CHARS or best_n < self.held(head) + MIN_SHARED_CHARS:
            return None
        return best

    def to_save(self, text: str) -> str | None:
        """A new file name for the slot about to hold ``text``, when its beginning repeats one the
        server holds (``MIN_SHARED_CHARS`` or more) and no saved slot shares that much of it; else
        None. Call before ``sent``."""
        head = text[:MATCH_CHARS]
        if not self.active or self.stats.saved >= MAX_SAVES_PER_SERVER or self.held(head) < MIN_SHARED_CHARS:
            return None
        best, best_n = self._best(head)
        if best is not None and best_n >= MIN_SHARED_CHARS:
            self._touch(best)
            return None
        return hashlib.sha256(head.encode()).hexdigest()[:24] + ".bin"

    def sent(self, text: str) -> None:
        """``text`` was processed and is in the slot. What the slot held went to the RAM cache where
        ``text`` switched to another beginning; where it continued the slot's beginning, the slot
        was reused in place and only the shared part is kept (assumed; a wrong guess costs one
        restore, never a wrong reply)."""
        head = text[:MATCH_CHARS]
        if self.slot and shared_prefix(head, self.slot) < MIN_SHARED_CHARS:
            self.ram.append(self.slot)
            del self.ram[:-HELD_LIMIT]
        self.slot = head

    def _touch(self, entry: SlotEntry) -> None:
        # A template still in use stays in the library: its last use, written at most once a minute.
        if time.time() - entry.used < 60:
            return
        with self._locked():
            entries = self.entries()
            for e in entries:
                if e.file == entry.file:
                    e.used = time.time()
            self._write(entries)

    def server_started_anew(self) -> None:
        """The server exited and was started again: it holds nothing, and its life's counts start over."""
        self.slot, self.ram, self.stats = "", [], SlotStats()

    def restored(self, entry: SlotEntry) -> None:
        """The slot now holds ``entry``'s prompt; what it held before is gone (not cached)."""
        self.slot = entry.text
        self.stats.restored += 1
        self._touch(entry)

    def saved(self, file: str, text: str, n_bytes: int) -> None:
        """Record a saved slot, then drop the least recently used ones beyond ``max_bytes`` and
        slot files the index does not know (older than ``ORPHAN_AGE_S``)."""
        with self._locked():
            old = sorted((e for e in self.entries() if e.file != file), key=lambda e: e.used, reverse=True)
            new = SlotEntry(file=file, text=text[:MATCH_CHARS], bytes=int(n_bytes), used=time.time())
            kept: list[SlotEntry] = []
            total = 0
            for e in [new, *old]:
                total += e.bytes
                if total > self.max_bytes and kept:
                    with contextlib.suppress(OSError):
                        (self.dir / e.file).unlink()
                    continue
                kept.append(e)
            self._write(kept)
            known = {e.file for e in kept}
            for path in self.dir.glob("*.bin"):
                with contextlib.suppress(OSError):
                    if path.name not in known and time.time() - path.stat().st_mtime > ORPHAN_AGE_S:
                        path.unlink()
        self.stats.saved += 1
