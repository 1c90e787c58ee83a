"""The generation stage: prompts, identical contexts, sampling, resume, supplied answers."""

import json
import shutil

import pytest

from rag_eval.answers.generation import PromptTemplate, format_contexts, select_questions
from rag_eval.config import load_config
from rag_eval.data.inputs import load_inputs
from rag_eval.orchestration.runner import run_audit
from rag_eval.retrievers.stage import evaluate
from rag_eval.types import Chunk

from ..conftest import ROOT, SMALL_CORPUS
from ..scripted_server import ScriptedServer, structured_reply


def test_prompt_render_keeps_other_braces():
    p = PromptTemplate("t", "t.md", 'Q: {question}\nDocs:\n{contexts}\nJSON like {"a": 1}')
    assert p.render("why?", "[c1] x") == 'Q: why?\nDocs:\n[c1] x\nJSON like {"a": 1}'
    assert len(p.hash) == 12


def test_contexts_are_labelled_and_cut():
    text = format_contexts([Chunk("a#1", "x" * 50, "A"), Chunk("b", "short", "B")], max_chars=10)
    assert text == "[a#1] A\nxxxxxxxxxx [...]\n\n[b] B\nshort"


def _project(small_project, base_url, extra=""):
    cfg = small_project / "audit.yaml"
    shutil.copy(ROOT / "prompts" / "answer.md", small_project / "answer.md")
    shutil.copy(ROOT / "prompts" / "answer_strict.md", small_project / "strict.md")
    cfg.write_text(
        cfg.read_text()
        + (
            "generation:\n  retriever: bm25\n  top_k: 2\n"
            f"  prompts: {{base: {small_project / 'answer.md'}, strict: {small_project / 'strict.md'}}}\n"
            f"  llm: {{provider: openai, model: scripted, base_url: '{base_url}', max_retries: 0}}\n" + extra
        )
    )
    (small_project / "cache").mkdir(exist_ok=True)
    cfg.write_text(cfg.read_text() + f"cache_dir: {small_project / 'cache'}\n")
    return load_config(cfg)


def test_every_prompt_gets_the_same_contexts_and_a_rerun_calls_nothing(small_project, monkeypatch):
    monkeypatch.delenv("RAG_EVAL_CACHE_DIR")
    with ScriptedServer() as s:
        cfg = _project(small_project, s.base_url)
        run_dir = run_audit(cfg)
        assert s.calls == 8  # 4 questions x 2 prompts
        records = [json.loads(line) for line in (run_dir / "generation.jsonl").read_text().splitlines()]
        by_q = {}
        for r in records:
            by_q.setdefault(r["question_id"], []).append(r)
            assert r["error"] is None and r["answer"].startswith("ok: ")
            assert len(r["contexts"]) == 2
        assert all(len({tuple(r["contexts"]) for r in rs}) == 1 for rs in by_q.values())
        assert {r["prompt"] for r in records} == {"base", "strict"}
        # The prompt really went out with the question and the contexts in it.
        sent = s.bodies[0]["messages"][0]["content"]
        assert "Question: " in sent and "[py/" in sent
        run_audit(cfg)
        assert s.calls == 8  # everything from the cache
        usage = json.loads(
            (run_dir.parent / sorted(p.name for p in run_dir.parent.iterdir())[-1] / "llm_usage.json").read_text()
        )
        assert usage[0]["cache_hits"] == 8 and usage[0]["calls"] == 0


def test_failed_answers_are_recorded_and_redone_on_resume(small_project, monkeypatch):
    from rag_eval.answers.generation import read_done

    with ScriptedServer(lambda n, b: "500" if n < 2 else "ok") as s:
        cfg = _project(small_project, s.base_url)
        run_dir = run_audit(cfg)
        records = [json.loads(line) for line in (run_dir / "generation.jsonl").read_text().splitlines()]
        assert sum(r["error"] is not None for r in records) == 2
        done = read_done(run_dir / "generation.jsonl")
        assert len(done) == 8 and sum(a.error is not None for a, _ in done.values()) == 2
        # The resumed run asks exactly the two failed answers again and says so.
        before = s.calls
        assert run_audit(cfg, resume=run_dir) == run_dir
        redone = [b for b in s.bodies[before:] if not b["messages"][0]["content"].startswith("You check")]
    records = [json.loads(line) for line in (run_dir / "generation.jsonl").read_text().splitlines()]
    assert len(records) == 8 and all(r["error"] is None for r in records)
    assert len(redone) == 2
    report = json.loads((run_dir / "report.json").read_text())
    assert report["resume"]["generation"] == {"reused": 6, "redone": {"earlier attempt failed": 2}}
    assert "- generation: 6 reused; redone: 2 whose earlier attempt failed" in (run_dir / "report.md").read_text()


def test_stratified_sample_is_seeded_and_covers_each_stratum(small_project):
    with ScriptedServer() as s:
        cfg = _project(small_project, s.base_url, "  sample: 3\n")
    inputs = load_inputs(cfg)
    from rag_eval.retrievers.factory import run_retrievers

    res = evaluate(
        cfg,
        inputs.corpus,
        inputs.questions,
        run_retrievers(cfg, inputs.corpus, inputs.questions, small_project / "cache"),
    )
    picked = select_questions(cfg, res)
    assert len(picked) == 3 and picked == select_questions(cfg, res)
    assert any(not inputs.questions[i].answerable for i in picked)


def test_supplied_answers_are_used_instead_of_a_model(small_project):
    (small_project / "answers.jsonl").write_text(
        json.dumps({"question_id": "q1", "answer": "Lists."})
        + "\n"
        + json.dumps({"question_id": "q2", "answer": "A set."})
        + "\n"
    )
    with ScriptedServer() as s:
        cfg = _project(small_project, s.base_url, f"  answers: {small_project / 'answers.jsonl'}\n")
        run_dir = run_audit(cfg)
        assert s.calls == 0
    records = [json.loads(line) for line in (run_dir / "generation.jsonl").read_text().splitlines()]
    given = {(r["question_id"], r["answer"]) for r in records if r["error"] is None}
    assert given == {("q1", "Lists."), ("q2", "A set.")}
    assert all(r["answer"] is None for r in records if r["question_id"] not in ("q1", "q2"))


def test_missing_placeholder_is_a_config_error(small_project, capsys):
    from rag_eval.cli import main

    with ScriptedServer() as s:
        cfg = _project(small_project, s.base_url)
    (small_project / "strict.md").write_text("Answer: {question}\n")
    code = main(["--quiet", "run", cfg.config_path])
    assert code == 2
    assert "the prompt has no {contexts} placeholder" in capsys.readouterr().err


def test_the_citing_prompt_numbers_the_contexts_and_its_numbers_name_them(small_project):
    """prompts/answer_cite.md loads and renders through the same code as answer.md, with the
    contexts numbered [1], [2] in the order the record lists them, so an answer's [2] names the
    record's second context."""
    from rag_eval.judges.citations import read_citations

    def reply(body: dict) -> str:
        return "Stated twice [2]." if "[1] " in body["messages"][-1]["content"] else "Stated."

    with ScriptedServer(reply=reply) as s:
        cfg = _project(small_project, s.base_url)
        cfg.generation.prompts = {"base": "prompts/answer.md", "cite": "prompts/answer_cite.md"}
        run_dir = run_audit(cfg)
        sent = {(b["messages"][-1]["content"].count("[1] "), b["messages"][-1]["content"]) for b in s.bodies}
    corpus = {c["id"]: c for c in SMALL_CORPUS}
    records = [json.loads(line) for line in (run_dir / "generation.jsonl").read_text().splitlines()]
    cited = [r for r in records if r["prompt"] == "cite"]
    assert len(cited) == 4 and {r["prompt"] for r in records} == {"base", "cite"}
    for r in cited:
        first, second = (corpus[i] for i in r["contexts"])
        numbered = f"[1] {first['title']}\n{first['text']}\n\n[2] {second['title']}\n{second['text']}"
        assert any(numbered in content and f"[{first['id']}]" not in content for _, content in sent)
        assert r["answer"] == "Stated twice [2]."
        chunks = [Chunk(c["id"], c["text"], c["title"]) for c in (first, second)]
        assert read_citations(r["answer"], chunks).sentences[0].cited == [1]
    for r in records:
        if r["prompt"] == "base":
            assert r["answer"] == "Stated."  # answer.md still shows [chunk id] title, unnumbered


@pytest.mark.slow
def test_real_local_model_answers_demo_questions(tmp_path, monkeypatch):
    """End to end: the embedded model behind llama-server, through the real openai client."""
    monkeypatch.chdir(ROOT)
    cfg = load_config(ROOT / "configs" / "demo.yaml")
    cfg.generation.sample = 2
    cfg.generation.top_k = 2
    cfg.generation.max_context_chars = 600
    cfg.generation.llm.max_tokens = 60
    cfg.report.out = str(tmp_path)
    run_dir = run_audit(cfg, use_cache=False)
    records = [json.loads(line) for line in (run_dir / "generation.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert r["error"] is None, r["error"]
        assert r["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"
        assert r["answer"] and r["completion_tokens"] > 0 and r["prompt_tokens"] > 100


def test_sample_weights_make_shares_estimate_the_whole_test_set(small_project):
    """Each sampled question stands for its stratum: a share weighted back equals the stratum-size
    weighted mean, not the share among the sampled questions."""
    import numpy as np

    from rag_eval.answers.generation import sample_weights
    from rag_eval.retrievers.factory import run_retrievers
    from rag_eval.stats import weighted_share

    with ScriptedServer() as s:
        cfg = _project(small_project, s.base_url, "  sample: 2\n")
    inputs = load_inputs(cfg)
    res = evaluate(
        cfg, inputs.corpus, inputs.questions, run_retrievers(cfg, inputs.corpus, inputs.questions, small_project / "c")
    )
    picked = select_questions(cfg, res)
    w = sample_weights(cfg, res, picked)
    assert set(w) == {res.questions[i].id for i in picked}
    # 4 questions: 1 unanswerable, 3 answerable; the sample of 2 takes one of each kind present.
    assert sum(v["weight"] for v in w.values()) == len(res.questions)
    hits = np.array([float(not res.questions[i].answerable) for i in picked])
    est = weighted_share(hits, np.array([w[res.questions[i].id]["weight"] for i in picked]))
    assert est.value == sum(not q.answerable for q in res.questions) / len(res.questions)  # 0.25, not 0.5
    assert select_questions(
        cfg.model_copy(update={"generation": cfg.generation.model_copy(update={"sample": None})}), res
    ) == list(range(4))


def test_an_answers_file_naming_no_question_of_the_test_set_is_refused_and_a_missing_answer_fails(
    small_project, capsys
):
    """User trial 2 H3: a question_id with a typo (Q1 for q1) dropped the question from every figure,
    exit 0. Now validate and run name the line and the closest id (exit 2, no run made); a selected
    question the file does not answer is a failed answer, named, so the default gate fails."""
    from rag_eval.cli import main

    path = small_project / "answers.jsonl"
    path.write_text(json.dumps({"question_id": "Q1", "answer": "Lists."}) + "\n")
    with ScriptedServer() as s:
        judges = (
            f"judges:\n  metrics: [refusal]\n  llm: {{provider: openai, model: scripted, base_url: '{s.base_url}'}}\n"
        )
        cfg = _project(small_project, s.base_url, f"  answers: {path}\n{judges}")
        for command in ("validate", "run"):
            capsys.readouterr()
            assert main(["--quiet", command, cfg.config_path]) == 2
            err = capsys.readouterr().err
            assert f"{path}:1: question_id 'Q1' is no question of the test set; did you mean 'q1'?" in err
        path.write_text(json.dumps({"question_id": "q1", "answer": "Lists."}) + "\n")
        assert main(["--quiet", "run", cfg.config_path]) == 1  # the default gate: answers without verdicts
        assert s.calls > 0  # the answer given is judged
    run_dir = max((small_project / "runs").iterdir(), key=lambda p: (p / "generation.jsonl").exists())
    records = {r["question_id"]: r for r in map(json.loads, (run_dir / "generation.jsonl").read_text().splitlines())}
    assert records["q1"]["answer"] == "Lists." and records["q1"]["error"] is None
    missing = [r for q, r in records.items() if q != "q1"]
    assert missing and all(r["answer"] is None and "no answer to this question in" in r["error"] for r in missing)


def test_an_answers_files_own_contexts_decide_whether_the_relevant_passage_was_given(small_project, capsys):
    """User trial 4 F12: an answer given only an irrelevant passage came out ok (retrieval read from
    the configured retriever's ranking), and an unknown chunk id was accepted silently. Review 55
    M3/M5: a passage of the user's own chunking stays a passage (relevant where it holds an evidence
    quote), and an empty list is the system's own answer from no passage."""
    from rag_eval.cli import main

    path = small_project / "answers.jsonl"
    lists = "Lists are mutable sequences, typically used to store collections."
    rows = [
        {"question_id": "q1", "answer": "Lists.", "contexts": ["py/tuples"]},  # the relevant py/lists not given
        {"question_id": "q2", "answer": "A set.", "contexts": ["py/sets"]},
        {"question_id": "q1", "prompt": "v2", "answer": "Lists.", "contexts": [f"  {lists} "]},  # its text
        # q2's evidence quote, in a passage of the system's own chunking: relevant.
        {
            "question_id": "q2",
            "prompt": "v2",
            "answer": "A set.",
            "contexts": ["Sets: an unordered collection of distinct hashable objects, fast."],
        },
        {"question_id": "q1", "prompt": "v3", "answer": "Lists.", "contexts": []},  # nothing retrieved
    ]
    with ScriptedServer(reply=structured_reply) as s:
        judges = (
            f"judges:\n  metrics: [refusal]\n  llm: {{provider: openai, model: scripted, base_url: '{s.base_url}'}}\n"
        )
        bad = {"question_id": "q2", "prompt": "v4", "answer": "x", "contexts": ["py/nope", "py/set"]}
        path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, bad]))
        cfg = _project(small_project, s.base_url, f"  answers: {path}\n{judges}")
        capsys.readouterr()
        assert main(["--quiet", "validate", cfg.config_path]) == 2
        err = capsys.readouterr().err
        assert f"{path}:6 (contexts): context 'py/nope' is no chunk id of the corpus" in err
        assert "context 'py/set' is no chunk id" in err and "did you mean 'py/sets'?" in err
        assert "known:" not in err  # no list of every chunk id
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        run_audit(cfg)
    run_dir = max((small_project / "runs").iterdir(), key=lambda p: (p / "report.json").exists())
    report = json.loads((run_dir / "report.json").read_text())
    out = {(r["question_id"], r["prompt"]): r for r in report["attribution"]["rows"]}
    assert out[("q1", "system")]["outcome"] == "retrieval_miss"
    assert out[("q1", "system")]["why"] == "no relevant passage among the contexts the answers file gives"
    assert out[("q2", "system")]["outcome"] != "retrieval_miss"
    assert out[("q1", "v2")]["outcome"] != "retrieval_miss"
    assert [c["id"] for c in out[("q1", "v2")]["contexts"]] == ["py/lists"]  # the text read as its chunk
    assert out[("q2", "v2")]["outcome"] != "retrieval_miss"  # its own passage holds the quote
    assert out[("q1", "v3")]["outcome"] == "retrieval_miss" and out[("q1", "v3")]["contexts"] == []


def test_an_answers_file_reads_ragas_names_and_refuses_a_misspelt_key_or_a_second_answer(tmp_path):
    """User trial 5 F1/F2: 'context' (for contexts) was dropped silently, leaving the answer on the
    configured retriever's passages; 'retrieved_contexts' (Ragas' name, which judge_answers reads)
    too; a second answer to one question and prompt replaced the first without a word."""
    from rag_eval.answers.generation import read_answers_file
    from rag_eval.errors import DataError

    path = tmp_path / "answers.jsonl"
    path.write_text(
        json.dumps({"question_id": "q1", "response": "Lists.", "retrieved_contexts": ["py/lists"], "latency": 3})
        + "\n",
        encoding="utf-8",
    )
    [(key, line)] = read_answers_file(path, ["q1", "q2"]).items()
    assert key == ("q1", "system") and (line.answer, line.contexts) == ("Lists.", ["py/lists"])
    path.write_text(
        json.dumps({"question_id": "q1", "answer": "x", "context": ["py/lists"]})
        + "\n"
        + json.dumps({"question_id": "q2", "answer": "y"})
        + "\n"
        + json.dumps({"question_id": "q2", "answer": "z"})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError) as err:
        read_answers_file(path, ["q1", "q2"])
    text = str(err.value)
    assert f"{path}:1 (context): unknown key 'context'" in text and "did you mean 'contexts'?" in text
    assert f"{path}:3: a second answer to question 'q2' for prompt 'system' (first at {path}:2)" in text


def test_an_excerpt_of_a_chunk_stays_the_passage_the_system_gave(small_project):
    """User trial 5 F7: an excerpt was widened to its whole chunk: the answer was judged on text its
    system never gave, and counted as retrieved though the excerpt lacks the evidence."""
    from rag_eval.answers.generation import read_answers_file
    from rag_eval.data.inputs import load_inputs

    cfg = load_config(small_project / "audit.yaml")
    corpus = load_inputs(cfg).corpus
    path = small_project / "answers.jsonl"
    whole = "A set object is an unordered collection of distinct hashable objects."
    part = "A set object is an unordered collection"
    path.write_text(json.dumps({"question_id": "q2", "answer": "x", "contexts": [whole, part]}) + "\n")
    [line] = read_answers_file(path, ["q2"], corpus).values()
    assert line.contexts == ["py/sets", part]
