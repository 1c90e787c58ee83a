"""``rag-eval`` with every request the model answered logged: what kind of request it was (which
judge, which Ragas step, the answer), its tokens and the model's milliseconds.

    PYTHONPATH=TREE python benchmarks/audit_cost/logged_run.py LOG.jsonl -- run configs/demo.yaml --out DIR

Works on any checkout whose client layer has ``CachingTransport._send`` (main since 5d4b0e0), so
the baseline and the current code are measured by the same code: the checkout to run is the one
on ``PYTHONPATH``. Cache hits are not logged (they cost the model nothing).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
from pathlib import Path

# The packages an editable install maps outside rag_eval/ (the source tree's prompts/ and data/):
# taken from the checkout on PYTHONPATH, not from the one the virtualenv was installed from.
MAPPED = {"rag_eval.prompts": "prompts", "rag_eval.bundled": "data"}


class TreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``MAPPED``'s packages (and their modules) in ``tree``."""

    def __init__(self, tree: Path):
        self.tree = tree

    def find_spec(self, fullname, path=None, target=None):
        top = next((m for m in MAPPED if fullname == m or fullname.startswith(m + ".")), None)
        if top is None:
            return None
        folder = self.tree / MAPPED[top] / Path(*fullname[len(top) + 1 :].split(".")) if fullname != top else None
        folder = folder or self.tree / MAPPED[top]
        if (folder / "__init__.py").is_file():
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
            )
        file = folder.with_suffix(".py")
        return importlib.util.spec_from_file_location(fullname, file) if file.is_file() else None


# Which request it was, by a phrase of its prompt (own judges: their question; Ragas: its instruction).
KINDS = (
    ("Does the answer give the information asked for", "refusal"),
    ("Does the candidate answer state the reference answer", "correctness"),
    ("as the answer to the question, without contradicting it", "correctness_short"),
    ("Is everything the answer states supported by the context", "supported"),
    ("Does the passage contain information that leads to the reference", "useful"),
    ("You check one thing about an answer", "criterion"),
    ("analyze the complexity of each sentence in the answer", "ragas_faithfulness_statements"),
    ("judge the faithfulness of a series of statements", "ragas_faithfulness_verdicts"),
    ("verify if the context was useful in arriving at the given answer", "ragas_context_precision"),
    ("classify if the statement can be attributed to the given context", "ragas_context_recall"),
)


def kind_of(request: dict) -> str:
    """The kind of a chat request: a judge's name (``... reason`` for a forced-quote request that
    continues the judge's reply), a Ragas step, else ``generation``."""
    messages = request.get("messages") or []
    text = "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
    for phrase, kind in KINDS:
        if phrase in text:
            forced = bool(messages) and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant"
            return f"{kind} reason" if forced and not kind.startswith("ragas") else kind
    return "generation"


def entry(body: bytes, content: bytes) -> dict:
    """One log line: the request's kind and max_tokens, the response's tokens and milliseconds."""
    request = json.loads(body)
    data = json.loads(content)
    usage, timings = data.get("usage") or {}, data.get("timings") or {}
    return {
        "kind": kind_of(request),
        "max_tokens": request.get("max_tokens"),
        "prompt_tokens": int(usage.get("prompt_tokens") or 0),
        "evaluated": int(timings.get("prompt_n") or 0),
        "reused": int(timings.get("cache_n") or 0),
        "completion_tokens": int(usage.get("completion_tokens") or 0),
        "model_ms": float(timings.get("prompt_ms") or 0) + float(timings.get("predicted_ms") or 0),
    }


def main() -> int:
    log = Path(sys.argv[1])
    argv = sys.argv[sys.argv.index("--") + 1 :]
    tree = Path(os.environ.get("PYTHONPATH", ".").split(os.pathsep)[0]).resolve()
    sys.meta_path.insert(0, TreeFinder(tree))
    from rag_eval.cli import main as cli_main  # noqa: PLC0415 - the checkout on PYTHONPATH, after argv is read
    from rag_eval.llm.client import CachingTransport  # noqa: PLC0415

    send = CachingTransport._send

    async def logged(self, request, body, key):
        status, content, headers = await send(self, request, body, key)
        if status == 200:
            try:
                line = entry(body, content)
            except (ValueError, AttributeError):
                line = {"kind": "unreadable"}
            with log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")
        return status, content, headers

    CachingTransport._send = logged  # type: ignore[method-assign]
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
