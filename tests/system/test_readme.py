"""The examples of the system where it runs (docs/guides/deployed-service.md, frameworks.md, traces.md), run as written (the judge model swapped for the
scripted server, the service's URL for the test's service)."""

import re

import pytest
import yaml

import rag_eval
from rag_eval.cli import main

from ..conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from ..scripted_server import ScriptedServer, structured_reply
from .rag_service import RagService

# The examples live on the guides of the documentation site (docs/guides/).
README = "\n".join(
    (ROOT / "docs" / "guides" / f).read_text() for f in ("deployed-service.md", "frameworks.md", "traces.md")
)


def blocks(marker: str) -> list[str]:
    """The fenced code blocks after ``<!-- marker -->``, up to the next heading paragraph."""
    part = re.split(r"\n\*\*|\n## ", README.split(f"<!-- {marker} -->\n", 1)[1], maxsplit=1)[0]
    return re.findall(r"```[a-z]*\n(.*?)```", part, flags=re.S)


def scripted(cfg: dict, url: str) -> dict:
    cfg["judges"]["llm"] = {"provider": "openai", "model": "scripted", "base_url": url}
    return cfg


@pytest.fixture
def folder(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", SMALL_QUESTIONS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_system_example(folder, monkeypatch):
    monkeypatch.setenv("DOCS_API_KEY", "readme-key-123")
    (text,) = blocks("system-example")
    with RagService(SMALL_CORPUS, token="readme-key-123") as svc, ScriptedServer(reply=structured_reply) as judge:
        cfg = scripted(yaml.safe_load(text), judge.base_url)
        cfg["system"]["url"] = svc.url
        (folder / "docs-service.yaml").write_text(yaml.safe_dump(cfg))
        assert main(["-q", "run", "docs-service.yaml"]) == 0
    result = rag_eval.load_run(next((folder / "runs").iterdir()))
    assert result.figure("retrieval.system.hit@3")["n"] == 3 and "bm25" in result.summary.retrieval
    assert result.figure("attribution.system.ok")["count"] >= 1


@pytest.mark.slow
def test_frameworks_example(folder, monkeypatch):
    pytest.importorskip("llama_index.retrievers.bm25")
    pytest.importorskip("haystack")
    code, text = blocks("frameworks-example")
    (folder / "my_rag.py").write_text(code)
    monkeypatch.syspath_prepend(str(folder))
    with ScriptedServer(reply=structured_reply) as judge:
        cfg = scripted(yaml.safe_load(text), judge.base_url)
        result = rag_eval.audit(cfg, base_dir=folder)
    for name in ("li", "hs", "system"):
        assert result.figure(f"retrieval.{name}.hit@3")["n"] == 3
    # The pipeline's retriever is hs: the system's ranks are hs's.
    df = result.retrieval_df()
    by = {n: df[df["retriever"] == n].set_index("question_id")["retrieved"].to_dict() for n in ("hs", "system")}
    assert by["hs"] == by["system"]


def test_traces_example(folder, capsys):
    config, command = blocks("traces-example")
    with ScriptedServer(reply=structured_reply) as judge:
        (folder / "traces.yaml").write_text(yaml.safe_dump(scripted(yaml.safe_load(config), judge.base_url)))
        args = command.split("\n", 1)[0].removeprefix("$ rag-eval ").split()
        args[1] = str(ROOT / args[1])
        assert main(["-q", *args]) == 0
    out = capsys.readouterr().out
    for shown in command.split("\n")[1:3]:  # the counts, and the first skipped trace named
        assert shown.strip() in out
