"""A disk cache of model responses, keyed on the whole request; safe for several runs at once."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

# Fields of a chat request that do not change its answer; everything else is part of the key.
IGNORED_FIELDS = frozenset({"user", "metadata", "store", "stream_options", "service_tier"})


def cache_key(base_url: str, body: bytes | dict) -> str:
    """sha256 of the base URL and the canonical JSON of the request (model, messages, format, sampling)."""
    data = json.loads(body) if isinstance(body, (bytes, str)) else body
    data = {k: v for k, v in data.items() if k not in IGNORED_FIELDS}
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{base_url.rstrip('/')}\n{canonical}".encode()).hexdigest()


class ResponseCache:
    """SQLite in WAL mode; concurrent writers wait on the lock instead of failing."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA busy_timeout=60000")
        # Switching a new file to WAL takes an exclusive lock that SQLite's busy handler does not
        # wait for: two processes opening the same new cache at once retry it here.
        for attempt in range(200):
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 199:
                    raise
                time.sleep(0.05)
        # WAL with synchronous=NORMAL never corrupts; at worst a power cut loses the last few answers.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, body BLOB NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> bytes | None:
        row = self.db.execute("SELECT body FROM responses WHERE key = ?", (key,)).fetchone()
        return bytes(row[0]) if row else None

    def put(self, key: str, body: bytes) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO responses (key, body, created) VALUES (?, ?, ?)", (key, body, time.time())
        )

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self.db.close()
