"""Stable short hashes of texts and of JSON-able inputs: what keys cached records (answers,
judgements, generated questions), so a rerun knows which records still hold."""

from __future__ import annotations

import hashlib
import json


def text_hash(text: str) -> str:
    """The first 12 hex digits of the SHA-256 of ``text``."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def inputs_hash(*parts: object) -> str:
    """A stable hash of JSON-able parts (judge, prompt hash, model, inputs)."""
    return text_hash(json.dumps(parts, sort_keys=True, ensure_ascii=False))
