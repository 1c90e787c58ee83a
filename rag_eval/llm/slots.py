"""Saved KV caches of prompt beginnings that repeat, for the embedded server's next start.

Within one server's life llama-server's RAM prompt cache keeps every prompt it processed, so a
template's fixed part (instructions, examples, schema) is evaluated once per run. A new server
starts empty and evaluates each template's fixed part again. The library keeps, on disk beside
the response cache, the slot of the first prompt of each beginning it has not seen yet
(``/slots/0?action=save``), and before a request of a fresh server restores the saved
slot that shares more of the request's beginning than anything the server already holds
(``action=restore``). llama-server then reuses the longest common token prefix, as it does for its
own cache; a prefix the server does not recognise is simply evaluated.

A slot's KV cache is only valid for the model file, build and settings that computed it: the
library's folder is named by the server's cache identity, so no other numerics ever read it.
Only one-slot servers use it (``parallel: 1``), where slot 0 is the slot every request uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from rag_eval.llm.schedule import shared_prefix

# A restore or a save is worth it only for a shared beginning at least this long (characters of
# the messages' text, about 4 per token: ~100 tokens, ~2 s of prompt evaluation on 2 cores).
MIN_SHARED_CHARS = 400
# The text kept per saved slot for matching; beginnings longer than this count as this long.
MATCH_CHARS = 16_000
# Prompts of this server's life remembered for matching (its RAM cache holds more).
SEEN_LIMIT = 256
DEFAULT_MAX_BYTES = 512 * 2**20
# After this many failed saves or restores (a server without slot support, a full disk) the library
# stops trying for the server's life.
MAX_FAILURES = 3


@dataclass
class SlotStats:
    """What the library did in one server's life."""

    restored: int = 0
    saved: int = 0
    failed: int = 0

    def to_dict(self) -> dict:
        return {"restored": self.restored, "saved": self.saved, "failed": self.failed}


class SlotLibrary:
    """The saved slots of one server identity (model, build, settings), with their prompts' text."""

    def __init__(self, root: Path, identity: str, *, max_bytes: int = DEFAULT_MAX_BYTES):
        self.dir = Path(root) / hashlib.sha256(identity.encode()).hexdigest()[:16]
        self.max_bytes = max_bytes
        self.seen: list[str] = []
        self.stats = SlotStats()

    @property
    def index_path(self) -> Path:
        return self.dir / "index.json"

    def ensure(self) -> Path:
        """The library's folder (the server's ``--slot-save-path``), created if needed."""
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir

    def entries(self) -> list[dict]:
        """The saved slots whose files exist: {file, text, bytes, used}."""
        try:
            data = json.loads(self.index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [e for e in data if isinstance(e, dict) and (self.dir / str(e.get("file", ""))).is_file()]

    def _write(self, entries: list[dict]) -> None:
        tmp = self.index_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.index_path)

    def _best_seen(self, text: str) -> int:
        return max((shared_prefix(text, s) for s in self.seen), default=0)

    def to_restore(self, text: str) -> str | None:
        """The saved slot to load before sending ``text``: the one sharing the longest beginning with
        it, where that beats every prompt this server already processed by ``MIN_SHARED_CHARS``."""
        if self.stats.failed >= MAX_FAILURES:
            return None
        head = text[:MATCH_CHARS]
        best, best_n = None, 0
        for e in self.entries():
            n = shared_prefix(head, e["text"])
            if n > best_n:
                best, best_n = e, n
        if best is None or best_n < MIN_SHARED_CHARS or best_n < self._best_seen(head) + MIN_SHARED_CHARS:
            return None
        return str(best["file"])

    def to_save(self, text: str) -> str | None:
        """A new file name for the slot that just processed ``text`` when no saved slot shares
        ``MIN_SHARED_CHARS`` of its beginning (the first request of a template); else None. Nearly
        every prompt rag-eval sends is a template's, so the first of each is worth keeping; a
        one-off goes when the byte budget needs room."""
        head = text[:MATCH_CHARS]
        if self.stats.failed >= MAX_FAILURES:
            return None
        if any(shared_prefix(head, e["text"]) >= MIN_SHARED_CHARS for e in self.entries()):
            return None
        return hashlib.sha256(head.encode()).hexdigest()[:24] + ".bin"

    def sent(self, text: str) -> None:
        """``text`` was processed by this server (its RAM cache now holds it)."""
        self.seen.append(text[:MATCH_CHARS])
        del self.seen[:-SEEN_LIMIT]

    def restored(self, file: str) -> None:
        entries = self.entries()
        for e in entries:
            if e["file"] == file:
                e["used"] = time.time()
        self._write(entries)
        self.stats.restored += 1

    def saved(self, file: str, text: str, n_bytes: int) -> None:
        """Record a saved slot, then drop the least recently used ones beyond ``max_bytes``."""
        entries = [e for e in self.entries() if e["file"] != file]
        entries.append({"file": file, "text": text[:MATCH_CHARS], "bytes": int(n_bytes), "used": time.time()})
        entries.sort(key=lambda e: e.get("used", 0), reverse=True)
        kept, total = [], 0
        for e in entries:
            total += int(e.get("bytes", 0))
            if total > self.max_bytes and kept:
                with contextlib.suppress(OSError):
                    (self.dir / e["file"]).unlink()
                continue
            kept.append(e)
        self._write(kept)
        self.stats.saved += 1
