"""`rag-eval validate` on a config with a deployed service: a misspelt or missing placeholder is a
config error naming the line and the known names, every check `run` makes before its first model
call is made (URL scheme, prompt file), and `--try` shows the filled request, the raw reply and
what was parsed from it."""

import json

import yaml

from rag_eval.cli import main

from ..conftest import SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
from .rag_service import RagService


def project(tmp_path, url: str = "http://127.0.0.1:9/ask", **system) -> str:
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", SMALL_QUESTIONS)
    cfg = {
        "name": "svc",
        "corpus": {"path": "corpus.jsonl"},
        "test_set": {"path": "questions.jsonl"},
        "retrieval": {"k": [1, 3]},
        "system": {
            "type": "http",
            "url": url,
            "body": {"query": "{question}", "trace": "{question_id}"},
            "answer": "$.data.answer",
            "contexts": "$.sources[*].text",
            "ids": "$.sources[*].id",
            **system,
        },
        "report": {"out": "runs"},
    }
    path = tmp_path / "svc.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)


def _line(config: str, key: str) -> int:
    return next(i for i, line in enumerate(open(config).read().splitlines(), 1) if line.strip().startswith(f"{key}:"))


def test_a_misspelt_placeholder_is_a_config_error(tmp_path, capsys):
    config = project(tmp_path, body={"query": "{questoin}"})
    assert main(["-q", "validate", config]) == 2
    err = capsys.readouterr().err
    assert f"svc.yaml:{_line(config, 'body')} (system.body): body.query: unknown placeholder {{questoin}}" in err
    assert "did you mean {question}? known: {question}, {question_id}" in err
    # run refuses it the same way, before asking anything
    assert main(["-q", "run", config]) == 2
    assert "unknown placeholder {questoin}" in capsys.readouterr().err


def test_a_body_without_the_question_is_a_config_error(tmp_path, capsys):
    config = project(tmp_path, body={"query": "hello", "trace": "{question_id}"})
    assert main(["-q", "validate", config]) == 2
    err = capsys.readouterr().err
    assert f"svc.yaml:{_line(config, 'body')} (system.body): the request never sends the question" in err
    assert 'fix: write e.g. body: {query: "{question}"}' in err
    # A GET request sends it in params.
    config = project(tmp_path, method="GET", params={"q": "{question}"}, body=None)
    assert main(["-q", "validate", config]) == 0, capsys.readouterr().err


def test_validate_refuses_what_run_refuses(tmp_path, capsys):
    config = project(tmp_path, url="127.0.0.1:18202/ask")
    assert main(["-q", "validate", config]) == 2
    err = capsys.readouterr().err
    assert f"svc.yaml:{_line(config, 'url')} (system.url): '127.0.0.1:18202/ask' is not an http(s) URL" in err
    assert "fix: write url: http://127.0.0.1:18202/ask" in err

    # A missing prompt file: validate says so, as run would after retrieval.
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", SMALL_QUESTIONS)
    (tmp_path / "gen.yaml").write_text(
        "name: gen\ncorpus: {path: corpus.jsonl}\ntest_set: {path: questions.jsonl}\n"
        "retrieval: {k: [1, 3], retrievers: {bm25: {type: bm25}, own: {type: callable, function: 'no_pkg.x:f'}}}\n"
        "generation:\n  retriever: bm25\n  prompts: {mine: prompts/nowhere.md}\n"
    )
    assert main(["-q", "validate", str(tmp_path / "gen.yaml")]) == 2
    err = capsys.readouterr().err
    assert "2 problems found" in err
    assert "gen.yaml:7 (generation.prompts.mine): cannot read prompt file" in err and "nowhere.md" in err
    assert "gen.yaml:4 (retrieval.retrievers.own.function): cannot import module 'no_pkg.x'" in err

    # An unset environment variable in a header: validate says so too.
    config = project(tmp_path, headers={"Authorization": "Bearer ${RAG_NOT_SET_ANYWHERE}"})
    assert main(["-q", "validate", config]) == 2
    assert "RAG_NOT_SET_ANYWHERE is not set" in capsys.readouterr().err


def test_try_shows_the_request_the_raw_reply_and_what_was_parsed(tmp_path, capsys):
    with RagService(SMALL_CORPUS, k=2) as svc:
        config = project(tmp_path, svc.url)
        assert main(["-q", "validate", config, "--try", "What is a set?"]) == 0
        out = capsys.readouterr().out
        assert f"request: POST {svc.url}" in out
        assert 'body: {"query": "What is a set?", "trace": "try"}' in out
        assert "reply: HTTP 200" in out and '"sources"' in out
        assert "answer: 'A set object is an unordered collection of distinct hashable objects.'" in out
        assert "passages: 2" in out
        assert "1. id 'py/sets'" in out and "a corpus chunk (by id)" in out

        # Paths that do not fit the reply: the raw reply is shown, and the error says what to fix.
        config = project(tmp_path, svc.url, answer="$.answer")
        assert main(["-q", "validate", config, "--try", "What is a set?"]) == 2
        captured = capsys.readouterr()
        assert '"data": {"answer"' in captured.out or json.dumps({"answer": "A"})[:5] in captured.out
        assert "error: unusable response: the response has no answer at $.answer" in captured.out
        assert "match answer, contexts and ids to the reply shown above" in captured.err
