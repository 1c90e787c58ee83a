"""Finished run folders for the view's tests, made by real audits against the scripted
OpenAI-compatible server (no model): 24 questions over the small corpus, correctness decided with a
band of uncertain verdicts, one answer that is a ``<script>``; a second run whose judge changed its
mind on a few answers (for the side-by-side page)."""

import concurrent.futures
import os
import shutil
import socket

import pytest

from rag_eval.config import load_config
from rag_eval.orchestration.runner import run_audit

from ..conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from ..scripted_server import ScriptedServer, judge_name, structured_reply

SCRIPT_ANSWER = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> I cannot tell.'
EXTRA = [
    {
        "id": f"q{i}",
        "question": f"{topic} (asked {i} ways)",
        "answer_in": chunk,
        "reference": reference,
    }
    for i, (topic, chunk, reference) in enumerate(
        [
            ("Which sequence type can be changed in place?", "py/lists", "Lists."),
            ("Which sequences are immutable?", "py/tuples", "Tuples."),
            ("What does a mapping object map?", "py/dicts", "Hashable values to arbitrary objects."),
            ("What is a set object?", "py/sets", "An unordered collection of distinct hashable objects."),
            ("What does the with statement wrap?", "py/with", "A block, with methods of a context manager."),
        ]
        * 4,
        start=5,
    )
]
# Correctness is uncertain in [0.85, 0.95): P 0.9 on these questions, 0.97 (decided) elsewhere.
UNSURE = ("changed in place", "immutable", "(asked 7 ways)", "(asked 16 ways)")


def _probability(body: dict) -> float:
    text = body["messages"][-1]["content"]
    return 0.9 if any(u in text for u in UNSURE) else 0.97


def _reply(changed: bool):
    def reply(body):
        text = body["messages"][-1]["content"]
        if judge_name(body) is None and "Who wrote" in text:
            return SCRIPT_ANSWER
        if changed and judge_name(body) == "correctness" and ("mapping object" in text or "distinct hashable" in text):
            return "No: the answer misses the reference."
        return structured_reply(body)

    return reply


def make_run(folder, changed: bool = False, max_context_chars: int = 2000, bodies: list | None = None):
    """One finished audit in ``folder/runs`` (made by the scripted server), started as a person
    starts one: from the project's folder with the config's relative path (so the run records its
    test set's path relative to there); returns its run folder. ``bodies``: gets the requests."""
    with ScriptedServer(reply=_reply(changed), probability=_probability) as s:
        llm = f"{{provider: openai, model: scripted, base_url: '{s.base_url}', max_retries: 1, timeout_s: 5}}"
        cfg = folder / "audit.yaml"
        cfg.write_text(
            "name: small\n"
            "corpus: {path: corpus.jsonl}\n"
            "test_set: {path: questions.jsonl}\n"
            "retrieval:\n  k: [1, 3]\n  depth: 5\n  retrievers:\n    bm25: {type: bm25}\n"
            f"report: {{out: {folder / 'runs'}}}\n"
            f"generation:\n  retriever: bm25\n  top_k: 2\n  max_context_chars: {max_context_chars}\n"
            f"  prompts: {{base: answer.md}}\n  llm: {llm}\n"
            f"judges:\n  llm: {llm}\n  metrics: [correctness, refusal, faithfulness_yesno]\n"
            "  uncertain: {correctness: [0.85, 0.95]}\n"
        )
        here, cache = os.getcwd(), os.environ.get("RAG_EVAL_CACHE_DIR")
        os.chdir(folder)
        if bodies is not None:
            # The requests themselves are wanted: a response cache of its own, so that an identical
            # run earlier in the session (whose scripted server got the same port) answers none.
            os.environ["RAG_EVAL_CACHE_DIR"] = str(folder / "own-cache")
        try:
            run = run_audit(load_config("audit.yaml"))
        finally:
            os.chdir(here)
            if cache is None:
                os.environ.pop("RAG_EVAL_CACHE_DIR", None)
            else:
                os.environ["RAG_EVAL_CACHE_DIR"] = cache
        if bodies is not None:
            bodies += s.bodies
        return run


@pytest.fixture(scope="session")
def built_runs(tmp_path_factory):
    """(runs folder, first run, second run), built once; tests copy it before writing labels."""
    folder = tmp_path_factory.mktemp("view-project")
    write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(folder / "questions.jsonl", SMALL_QUESTIONS + EXTRA)
    shutil.copy(ROOT / "prompts" / "answer.md", folder / "answer.md")
    first = make_run(folder)
    second = make_run(folder, changed=True)
    return folder / "runs", first.name, second.name


# A long section: the generator and the judges see its first CUT_AT characters; the evidence of
# its question lies beyond them.
LONG = {
    "id": "py/range",
    "title": "Ranges",
    "text": "The range type represents an immutable sequence of numbers.   It is given a start, a stop and "
    "a step.\n\nRanges implement all of the common sequence operations except concatenation and repetition. "
    "It is commonly used for looping a specific number of times in for loops.",
}
CUT_AT = 100
LONG_QUESTION = {
    "id": "r1",
    "question": "What is the range type commonly used for?",
    "evidence": "commonly used for looping a specific number of times",
    "reference": "For looping a specific number of times.",
}


@pytest.fixture(scope="session")
def cut_run(tmp_path_factory):
    """A run with ``max_context_chars: 100`` over a corpus with a long section: (runs folder, run
    name, the requests the scripted server got)."""
    folder = tmp_path_factory.mktemp("view-cut")
    write_jsonl(folder / "corpus.jsonl", [*SMALL_CORPUS, LONG])
    write_jsonl(folder / "questions.jsonl", [SMALL_QUESTIONS[1], LONG_QUESTION])
    shutil.copy(ROOT / "prompts" / "answer.md", folder / "answer.md")
    bodies: list = []
    # In a thread of its own: a browser test's event loop may be running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(make_run, folder, max_context_chars=CUT_AT, bodies=bodies).result()
    return folder / "runs", run.name, bodies


@pytest.fixture
def runs(built_runs, tmp_path):
    """A fresh copy of the runs folder: (runs folder, first run's name, second run's name)."""
    src, first, second = built_runs
    dst = tmp_path / "runs"
    shutil.copytree(src, dst)
    return dst, first, second


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
