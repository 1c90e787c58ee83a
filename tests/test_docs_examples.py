"""Every code and config example of README.md and docs/ is run, so none can rot.

A fenced block with a language (``yaml``, ``json``, ``sh``, ``python``, ...) carries an HTML
comment right above it that says how it is checked (output blocks, fenced without a language or as
``text``, show what a command prints and are not run):

- ``<!-- run: config [NAME] -->``: a whole config; saved as NAME (default ``config.yaml``) in the
  page's folder and checked with ``rag-eval validate`` (exit 0).
- ``<!-- run: config merge -->``: part of a config; laid over the page's previous config, then
  validated the same way.
- ``<!-- run: testset -->``: test-set records; validated against the python-docs corpus.
- ``<!-- run: file NAME -->``: saved as NAME in the page's folder for the blocks after it.
- ``<!-- run: sh -->``: every command run by bash in the page's folder (exit 0);
  ``<!-- run: sh scripted -->`` first points every config's model at tests/scripted_server.py.
- ``<!-- run: python -->``: executed in the page's folder.
- ``<!-- tested-by: tests/FILE.py::TEST -->``: run by that test (which must exist).
- ``<!-- not-run: REASON -->``: not run, with the reason.

The blocks of one page run in order in one folder, which holds the small corpus and questions of
the tests (``corpus.jsonl``, ``questions.jsonl``), a folder of Markdown documents (``my-docs/``,
the README's tour) and the repository's ``configs/``, ``data/`` and ``prompts/``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from .scripted_server import ScriptedServer, structured_reply

RUN_LANGS = {"yaml", "yml", "json", "jsonl", "sh", "bash", "shell", "console", "python", "py", "toml"}
MARKER = re.compile(r"<!--\s*(run|tested-by|not-run):?\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)(`{3,})([\w+-]*)[^\n]*$")

# The README tour's documents: what its questions ask about.
MY_DOCS = {
    "account.md": "# Account\n\n## Passwords\n\nForgot it? Reset password sends a link to your e-mail address; "
    "the link works for one hour.\n\n## E-mail\n\nChange the address under Settings, Profile.\n",
    "plans.md": "# Plans\n\n## Business\n\nSingle sign-on is part of the Business plan, with SAML and OIDC.\n\n"
    "## Free\n\nThe Free plan has three projects and community support.\n",
    "billing.md": "# Billing\n\n## Invoices\n\nInvoices are sent on the first day of each month as PDF files.\n",
}


@dataclass
class Block:
    """One fenced block of a page, with the marker above it."""

    page: Path
    line: int
    lang: str
    text: str
    kind: str | None  # run, tested-by, not-run; None when unmarked
    arg: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, in order, each with the marker comment right above it."""
    lines = page.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        text = "\n".join(line[len(indent) :] for line in lines[i + 1 : j]) + "\n"
        kind, arg = None, ""
        k = i - 1
        while k >= 0 and lines[k].strip().startswith("<!--"):
            mm = MARKER.search(lines[k])
            if mm:
                kind, arg = mm.group(1), mm.group(2)
                break
            k -= 1
        out.append(Block(page, i + 1, lang.lower(), text, kind, arg))
        i = j + 1
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def test_every_example_is_marked_run_tested_or_not_run_with_a_reason():
    problems = []
    for b in all_blocks():
        if b.lang not in RUN_LANGS:
            continue
        if b.kind is None:
            problems.append(f"{b.where}: a {b.lang} block without <!-- run: ... --> or <!-- not-run: REASON -->")
        elif b.kind == "not-run" and len(b.arg.split()) < 3:
            problems.append(f"{b.where}: not-run needs a reason")
    assert not problems, "\n".join(problems)


def test_tested_by_names_a_test_that_exists():
    for b in all_blocks():
        if b.kind != "tested-by":
            continue
        file, _, name = b.arg.partition("::")
        source = (ROOT / file).read_text(encoding="utf-8")
        assert f"def {name}(" in source, f"{b.where}: {b.arg} does not exist"


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(folder / "questions.jsonl", SMALL_QUESTIONS)
    (folder / "my-docs").mkdir()
    for name, text in MY_DOCS.items():
        (folder / "my-docs" / name).write_text(text)
    # The repository's configs and data, as its examples name them; not prompts/: a user's folder has
    # none, and the examples reach the shipped prompts as an installed rag-eval does.
    for name in ("configs", "data"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def _rag_eval(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "-q", *args], cwd=folder, capture_output=True, text=True, timeout=600
    )


def _validate(folder: Path, name: str, b: Block) -> None:
    proc = _rag_eval(folder, "validate", name)
    assert proc.returncode == 0, (
        f"{b.where}: rag-eval validate {name} exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    )


def _scripted(folder: Path, url: str) -> None:
    """Every config in the folder with its models pointed at the scripted server."""
    llm = {"provider": "openai", "model": "scripted", "base_url": url, "max_retries": 1}
    for path in folder.glob("*.yaml"):
        cfg = yaml.safe_load(path.read_text())
        for section in ("generation", "judges", "testgen"):
            if isinstance(cfg.get(section), dict) and "llm" in cfg[section]:
                cfg[section]["llm"] = dict(llm)
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def _sh(folder: Path, b: Block, env: dict) -> None:
    proc = subprocess.run(
        ["bash", "-e", "-c", b.text], cwd=folder, capture_output=True, text=True, timeout=900, env=env
    )
    assert proc.returncode == 0, f"{b.where}: exit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"


def _run_page(page: Path, tmp_path: Path, monkeypatch) -> int:
    """Run every runnable block of the page in order; the number run."""
    folder = _folder(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    last_config: dict | None = None
    ran = 0
    for b in blocks(page):
        if b.kind != "run":
            continue
        words = b.arg.split()
        what, rest = words[0], words[1:]
        ran += 1
        if what == "config":
            cfg = yaml.safe_load(b.text)
            if rest[:1] == ["merge"]:
                assert last_config is not None, f"{b.where}: config merge with no config before it"
                cfg = {**last_config, **cfg}
                name = "merged.yaml"
            else:
                name = rest[0] if rest else "config.yaml"
            (folder / name).write_text(yaml.safe_dump(cfg, sort_keys=False))
            _validate(folder, name, b)
            last_config = cfg
        elif what == "testset":
            (folder / "testset.jsonl").write_text(b.text)
            (folder / "testset-check.yaml").write_text(
                "name: testset-check\ncorpus: {source: python-docs}\ntest_set: {path: testset.jsonl}\n"
                "retrieval: {k: [1], retrievers: {bm25: {type: bm25}}}\n"
            )
            _validate(folder, "testset-check.yaml", b)
        elif what == "file":
            (folder / rest[0]).write_text(b.text)
        elif what == "sh":
            if "scripted" in rest:
                with ScriptedServer(reply=structured_reply) as server:
                    _scripted(folder, server.base_url)
                    _sh(folder, b, env)
            else:
                _sh(folder, b, env)
        elif what == "python":
            monkeypatch.chdir(folder)
            exec(compile(b.text, b.where, "exec"), {"__name__": "__docs_example__"})
        else:
            pytest.fail(f"{b.where}: unknown marker run: {b.arg}")
    shutil.rmtree(folder / "runs", ignore_errors=True)
    return ran


RUNNABLE_PAGES = [p for p in pages() if any(b.kind == "run" for b in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE_PAGES])
def test_the_examples_of_each_page_run(page, tmp_path, monkeypatch):
    assert _run_page(page, tmp_path, monkeypatch) > 0
