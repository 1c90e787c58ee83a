"""Run against run: two real retrieval runs whose second system is worse on known questions and
better on others; runs over two chunkings of the same documents; an identical rerun in two
processes; judged runs in the run folder's own shape (no model started)."""

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scipy import stats as sps

import rag_eval
from rag_eval.cli import main

from ..conftest import ROOT, SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl

N = 20  # answerable questions q01..q20; q21 is unanswerable
# The rank of each question's relevant chunk (None: not retrieved) for two run-file retrievers.
SYS_BASE = {i: 2 if i <= 15 else 1 for i in range(1, N + 1)}
SYS_NEW = {**SYS_BASE, **{i: 1 for i in range(1, 15)}, 16: 3}  # better on q01..q14, worse on q16
ALT_BASE = {**{i: 1 for i in range(1, N + 1)}, 5: 2, 6: None}
ALT_NEW = {**{i: 1 for i in range(1, N + 1)}, 7: 2}  # better on q05, q06; worse on q07


def qid(i: int) -> str:
    return f"q{i:02d}"


CORPUS = [{"id": f"c{i:02d}", "text": f"Topic {i}: the word w{i}x answers question {i}."} for i in range(1, N + 3)]
CORPUS += [{"id": f"d{j}", "text": f"Distractor {j} about nothing in particular."} for j in range(1, 5)]
QUESTIONS = [{"id": qid(i), "question": f"Which passage has w{i}x?", "answer_in": f"c{i:02d}"} for i in range(1, N + 1)]
QUESTIONS.append({"id": "q21", "question": "Who wrote the tutorial?", "answerable": False})


def run_file(path: Path, ranks: dict[int, int | None], extra: dict[str, int | None] | None = None) -> Path:
    """A JSONL run: the relevant chunk at its rank, distractors around it."""
    rows = []
    for i, rank in {**{qid(i): r for i, r in ranks.items()}, **(extra or {})}.items():
        relevant = "c" + i[1:]
        ranked = [f"d{j}" for j in range(1, 5)]
        if rank is not None:
            ranked.insert(rank - 1, relevant)
        rows += [{"query_id": i, "doc_id": d, "score": 10.0 - n} for n, d in enumerate(ranked)]
    rows += [{"query_id": "q21", "doc_id": "d1", "score": 1.0}]
    return write_jsonl(path, rows)


def config(folder: Path, name: str, sys_run: Path, alt_run: Path, questions: str, gates: dict | None = None) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "corpus: {path: corpus.jsonl}\n"
        f"test_set: {{path: {questions}}}\n"
        "retrieval:\n"
        "  k: [1, 3]\n"
        "  depth: 5\n"
        "  metrics: [hit@1, mrr]\n"
        "  retrievers:\n"
        f"    sys: {{type: run, path: {sys_run.name}}}\n"
        f"    alt: {{type: run, path: {alt_run.name}}}\n"
        "    bm25: {type: bm25}\n"
        f"report: {{out: {folder / 'runs'}}}\n" + (f"gates: {json.dumps(gates)}\n" if gates else "")
    )
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The base system's run and the new system's (which also has one more question, q22)."""
    folder = tmp_path_factory.mktemp("diff")
    write_jsonl(folder / "corpus.jsonl", CORPUS)
    write_jsonl(folder / "questions.jsonl", QUESTIONS)
    write_jsonl(
        folder / "questions_new.jsonl",
        [*QUESTIONS, {"id": "q22", "question": "Which passage has w22x?", "answer_in": "c22"}],
    )
    base_cfg = config(
        folder,
        "base",
        run_file(folder / "sys_base.jsonl", SYS_BASE),
        run_file(folder / "alt_base.jsonl", ALT_BASE),
        "questions.jsonl",
    )
    new_cfg = config(
        folder,
        "new",
        run_file(folder / "sys_new.jsonl", SYS_NEW, {"q22": 1}),
        run_file(folder / "alt_new.jsonl", ALT_NEW, {"q22": 1}),
        "questions_new.jsonl",
    )
    base = rag_eval.retrieval(str(base_cfg)).run_dir
    new = rag_eval.retrieval(str(new_cfg)).run_dir
    return folder, base, new


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out here so the test does not trust the code under test."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def test_diff_lists_exactly_the_questions_that_moved_with_their_ranks(two_runs):
    _, base, new = two_runs
    d = rag_eval.diff(base, new)
    sys_moves = {m.question_id: m for m in d.moved if m.system == "sys"}
    assert set(sys_moves) == {qid(i) for i in range(1, 15)} | {"q16"}
    for q, m in sys_moves.items():
        i = int(q[1:])
        assert (m.base.rank, m.new.rank) == (SYS_BASE[i], SYS_NEW[i])
        assert m.base.top[m.base.rank - 1].dump() == {
            "id": f"c{i:02d}",
            "relevant": True,
            "score": pytest.approx(11 - SYS_BASE[i]),
        }
    assert d.moved[0].question_id == "q16" and d.moved[0].system == "sys"  # the worst regression first
    assert d.moved[0].worse == ["retrieval.sys.hit@1", "retrieval.sys.mrr"]
    alt_moves = {m.question_id: (m.base.rank, m.new.rank) for m in d.moved if m.system == "alt"}
    assert alt_moves == {"q05": (2, 1), "q06": (None, 1), "q07": (1, 2)}
    assert not [m for m in d.moved if m.system == "bm25"]
    hit = d.figure("retrieval.sys.hit@1")
    assert hit.worse_ids == ["q16"] and hit.better_ids == [qid(i) for i in range(1, 15)]
    assert (hit.better_on, hit.worse_on, hit.same_on, hit.n) == (14, 1, 5, 20)
    assert hit.base == pytest.approx(5 / 20) and hit.new == pytest.approx(18 / 20)
    assert hit.diff == pytest.approx(13 / 20) and hit.ci_low <= hit.diff <= hit.ci_high
    assert d.only_in_new == ["q22"] and d.only_in_base == []
    assert any("compared on the 21 questions both runs have" in n for n in d.notes)
    assert not d.empty
    out = d.to_json()
    assert out["moved"]["retrieval.alt.hit@1"] == {"better": ["q05", "q06"], "worse": ["q07"]}
    assert set(out["figures"]["retrieval.sys.mrr"]) >= {
        "base",
        "new",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
        "verdict",
    }
    df = d.moved_df()
    assert list(df.loc[df.system == "sys", "question_id"])[0] == "q16"


def test_settled_or_not_as_an_independent_paired_computation(two_runs):
    _, base, new = two_runs
    d = rag_eval.diff(base, new)
    figs = [f for f in d.figures if f.p_value is not None]
    assert {f.name for f in figs} == {f"retrieval.{r}.{m}" for r in ("sys", "alt", "bm25") for m in ("hit@1", "mrr")}
    for f in figs:
        if f.binary:  # exact sign test (McNemar) on the discordant questions
            k = f.better_on + f.worse_on
            expected = sps.binomtest(f.better_on, k, 0.5).pvalue if k else 1.0
            assert f.p_value == pytest.approx(expected), f.name
    adjusted = dict(zip([f.name for f in figs], holm([f.p_value for f in figs])))
    for f in figs:
        assert f.p_holm == pytest.approx(adjusted[f.name])
        settled = adjusted[f.name] < 0.05
        assert ("beats" in f.verdict) == settled, f.verdict
    assert d.figure("retrieval.sys.hit@1").p_holm < 0.05  # 14 wins, 1 loss
    alt = d.figure("retrieval.alt.hit@1")
    assert alt.p_value == pytest.approx(1.0) and "not settled by 20 questions" in alt.verdict
    assert "better on 2, worse on 1, same on 17" in alt.verdict and "smallest detectable difference" in alt.verdict
    assert "agree on all 20 questions" in d.figure("retrieval.bm25.hit@1").verdict


def test_diff_gate_fails_with_exit_1_and_a_looser_one_passes(two_runs, tmp_path, capsys):
    folder, base, _ = two_runs
    sys_run, alt_run = folder / "sys_new.jsonl", folder / "alt_new.jsonl"
    strict = config(folder, "gated", sys_run, alt_run, "questions_new.jsonl", {"diff.retrieval.alt.hit@1": ">= -0.02"})
    junit, md = tmp_path / "gates.xml", tmp_path / "summary.md"
    code = main(
        ["-q", "retrieval", str(strict), "--baseline", str(base), "--junit-xml", str(junit), "--summary-md", str(md)]
    )
    out = capsys.readouterr().out
    assert code == 1
    run_dir = Path(out.split("run folder: ")[1].split(" ")[0])
    entry = json.loads((run_dir / "diff.json").read_text())["figures"]["retrieval.alt.hit@1"]
    assert entry["diff"] == pytest.approx(1 / 20) and entry["ci_low"] < -0.02  # the point estimate alone would pass
    assert "gate FAIL: diff.retrieval.alt.hit@1 = +0.05" in out and "lower bound needs >= -0.02" in out
    assert "q07: first relevant chunk at rank 1 -> 2" in out
    case = ET.parse(junit).getroot().find(".//testcase")
    assert case.get("name") == "diff.retrieval.alt.hit@1 >= -0.02" and case.find("failure") is not None
    assert "q07" in case.find("failure").text
    summary = md.read_text()
    assert "| `diff.retrieval.alt.hit@1` | +0.05 [95% CI" in summary and "**FAIL**" in summary
    assert "Against the baseline" in summary and (run_dir / "diff.md").exists()

    again = rag_eval.load_run(run_dir)  # read back later: the same diff and the same decision
    assert again.diff.to_json() == json.loads((run_dir / "diff.json").read_text())
    assert [g.passed for g in again.gates()] == [False]

    loose = config(folder, "gated", sys_run, alt_run, "questions_new.jsonl", {"diff.retrieval.alt.hit@1": ">= -0.25"})
    assert main(["-q", "retrieval", str(loose), "--baseline", str(base)]) == 0
    assert "gate pass: diff.retrieval.alt.hit@1" in capsys.readouterr().out

    # A folder of runs as the baseline: its newest finished run of this config (the last audit).
    previous = sorted((folder / "runs").glob("gated-*"))[-1]
    assert main(["-q", "retrieval", str(loose), "--baseline", str(folder / "runs")]) == 0
    out = capsys.readouterr().out
    newest = Path(out.split("run folder: ")[1].split(" ")[0])
    data = json.loads((newest / "diff.json").read_text())
    assert data["base"] == str(previous.resolve()) and data["empty"]

    # Without a baseline the diff gate is reported as skipped, never silently passed or failed.
    junit2 = tmp_path / "skip.xml"
    assert main(["-q", "retrieval", str(loose), "--junit-xml", str(junit2)]) == 0
    assert "gate skip: diff.retrieval.alt.hit@1 (needs a baseline" in capsys.readouterr().out
    assert ET.parse(junit2).getroot().find(".//testcase/skipped") is not None

    # A diff figure that cannot exist is a config error naming the close one, before the run (no
    # run folder made); a bad baseline too.
    wrong = config(folder, "gated", sys_run, alt_run, "questions_new.jsonl", {"diff.retrieval.alt.hit@2": ">= 0"})
    runs_before = sorted((folder / "runs").iterdir())
    assert main(["-q", "retrieval", str(wrong), "--baseline", str(base)]) == 2
    err = capsys.readouterr().err
    assert "'hit@2' is not measured; did you mean 'hit@1'?" in err and "diff.retrieval.alt.hit@2" in err
    assert sorted((folder / "runs").iterdir()) == runs_before
    assert main(["-q", "retrieval", str(loose), "--baseline", str(tmp_path)]) == 2
    assert (
        "neither a run folder (it has no summary.json) nor a folder of runs of config 'gated'"
        in capsys.readouterr().err
    )


def test_the_diff_command_writes_json_and_markdown(two_runs, tmp_path, capsys):
    _, base, new = two_runs
    out_json, out_md = tmp_path / "d.json", tmp_path / "d.md"
    assert main(["diff", str(base), str(new), "--json", str(out_json), "--md", str(out_md)]) == 0
    screen = capsys.readouterr().out
    assert "retrieval.sys.hit@1: +0.650" in screen and "q16: sys rank 1 -> 3" in screen
    data = json.loads(out_json.read_text())
    assert data["moved"]["retrieval.sys.hit@1"]["worse"] == ["q16"]
    md = out_md.read_text()
    assert "### q16: retrieval `sys`" in md and "| rank of the first relevant chunk | 1 | 3 |" in md
    assert "only in the new run (1): q22" in md
    # --pair compares retrievers named differently: base alt against new sys.
    paired = rag_eval.diff(base, new, pairs={"alt": "sys"})
    f = paired.figure("retrieval.sys.hit@1")
    assert f.base_system == "alt" and f.base == pytest.approx(18 / 20)
    assert main(["diff", str(base), str(new), "--pair", "alt"]) == 2
    assert main(["diff", str(base), str(tmp_path)]) == 2
    assert "not a finished rag-eval run folder" in capsys.readouterr().err
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    for f in ("summary.json", "report.json"):
        (unfinished / f).write_text((new / f).read_text())
    (unfinished / "status.json").write_text('{"status": "started"}')
    assert main(["diff", str(base), str(unfinished)]) == 2
    assert "the new run did not finish" in capsys.readouterr().err


DOCS = {
    "guide.md": (
        "Sets hold distinct hashable objects and answer membership tests fast.\n\n"
        "Lists keep their items in order and may be changed in place at any time.\n\n"
        "Tuples are fixed once made and are often used as dictionary keys.\n\n"
        "Dictionaries map keys to values and keep the order of insertion.\n"
    ),
    "note.md": "Generators produce their values lazily, one at a time.\n",
}
CHUNK_QUESTIONS = [
    {"id": "e1", "question": "What answers membership tests fast?", "evidence": "answer membership tests fast"},
    {"id": "e2", "question": "What keeps items in order?", "evidence": "keep their items in order"},
    {"id": "e3", "question": "What maps keys to values?", "evidence": "map keys to values"},
    {"id": "c1", "question": "What may be changed in place?", "answer_in": "guide.md#1"},
    {"id": "c2", "question": "What produces values lazily?", "answer_in": "note.md#0"},
]


def chunked_run(folder: Path, name: str, size: int) -> Path:
    docs = folder / name
    docs.mkdir()
    for fn, text in DOCS.items():
        (docs / fn).write_text(text)
    write_jsonl(folder / "chunk_questions.jsonl", CHUNK_QUESTIONS)
    cfg = {
        "name": name,
        "corpus": {"folder": str(docs), "chunker": {"type": "fixed", "size": size, "overlap": 0}},
        "test_set": {"path": str(folder / "chunk_questions.jsonl")},
        "retrieval": {"k": [1, 3], "retrievers": {"bm25": {"type": "bm25"}}},
    }
    return rag_eval.retrieval(cfg, out=folder / "runs").run_dir


def test_runs_over_two_chunkings_compare_the_evidence_labelled_questions(tmp_path):
    small = chunked_run(tmp_path, "small", 80)  # one paragraph a chunk: guide.md#0..#3
    large = chunked_run(tmp_path, "large", 150)  # two paragraphs a chunk: guide.md#1 now holds others
    d = rag_eval.diff(small, large)
    assert (
        not d.same_corpus and d.notes[0].startswith("the corpora differ (5 chunks from") and " vs 3 from " in d.notes[0]
    )
    hit = d.figure("retrieval.bm25.hit@1")
    assert hit.n == 4  # e1, e2, e3 by their quotes; c2's chunk has the same passage in both
    why = {x.question_id: x.why for x in d.not_compared}
    assert set(why) == {"c1"} and "labelled by chunk id 'guide.md#1', whose passage differs" in why["c1"]
    rows = {r["question_id"]: r for r in rag_eval.load_run(large).retrieval_df().to_dict("records")}
    assert rows["e2"]["relevant"] == {"guide.md#0": 1}  # the quote found its chunk in the new chunking
    assert any("the corpora differ" in n for n in d.notes)
    assert "## Not compared (1 questions)" in __import__(
        "rag_eval.report.diff_report", fromlist=["x"]
    ).render_diff_markdown(d.to_json())


@pytest.mark.slow
def test_an_identical_rerun_in_another_process_gives_an_empty_diff(small_project, tmp_path, capsys):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "rag_eval.cli", "-q", "retrieval", str(small_project / "audit.yaml")]
    for _ in range(2):
        subprocess.run(cmd, check=True, env=env, capture_output=True, cwd=tmp_path)
    first, second = sorted((small_project / "runs").iterdir())
    assert main(["diff", str(first), str(second), "--json", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["empty"] and data["questions"] == [] and data["not_compared"] == []
    assert all(e["diff"] == 0 and e["better_on"] == e["worse_on"] == 0 for e in data["figures"].values())
    assert all(m == {"better": [], "worse": []} for m in data["moved"].values())
    assert len(data["figures"]) == len(json.loads((first / "summary.json").read_text())["retrieval"]["bm25"])
    assert "No difference: every figure agrees on every question both runs decided it for (4 questions" in out
    # Gates of "no change beyond 0.05" either way pass on an unchanged system (the trial's H3: the
    # interval of a difference was the one-sided [0, u] of a proportion, so `<=` failed).
    for e in data["figures"].values():
        assert e["ci_low"] == pytest.approx(-e["ci_high"]) and e["ci_low"] < 0 < e["ci_high"]


# --- Judged runs, written in the run folder's own shape (the stages' functions; no model) ---


def judged_run(folder: Path, name: str, answers: dict[str, tuple[str, str]], agreement: float | None = 0.9) -> Path:
    """A run with one prompt judged by correctness and refusal: ``answers`` maps a question id to
    (answer, correctness verdict); the refusal judge says "answered" for all."""
    from rag_eval.config import config_from_dict
    from rag_eval.data.inputs import load_inputs
    from rag_eval.hashing import inputs_hash
    from rag_eval.judges.judgement import Judgement
    from rag_eval.judges.judging import judged_figures
    from rag_eval.orchestration.sources import retrieval_report
    from rag_eval.report.assemble import add_judging, generation_section, retrieved_in_top_k
    from rag_eval.report.files import write_report
    from rag_eval.rundir import new_run_dir

    write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(folder / "questions.jsonl", SMALL_QUESTIONS[:3])
    cfg = config_from_dict(
        {
            "name": name,
            "corpus": {"path": "corpus.jsonl"},
            "test_set": {"path": "questions.jsonl"},
            "retrieval": {"k": [1, 3], "depth": 5, "retrievers": {"bm25": {"type": "bm25"}}},
            "generation": {"retriever": "bm25", "top_k": 2, "prompts": {"baseline": str(ROOT / "prompts/answer.md")}},
            "judges": {"metrics": ["correctness", "refusal"]},
        },
        folder,
    )
    inputs = load_inputs(cfg)
    run_dir = new_run_dir(cfg, str(folder / "runs"))
    res, report = retrieval_report(cfg, inputs, run_dir)
    report.test_set.path = "questions.jsonl"
    gens, judgements = [], []
    for i, q in enumerate(res.questions):
        answer, verdict = answers[q.id]
        contexts = res.retrievers["bm25"].rankings.ids(inputs.corpus, i)[:2]
        gens.append({"question_id": q.id, "prompt": "baseline", "contexts": contexts, "answer": answer, "error": None})
        for judge, v in (("correctness", verdict), ("refusal", "answered")):
            judgements.append(
                Judgement(
                    judge,
                    q.id,
                    "baseline",
                    "judged",
                    score=float(v in ("correct", "refused")),
                    verdict=v,
                    reason=f"{judge} says {v} for '{answer}'",
                    input_hash=inputs_hash(judge, q.id, answer),
                )
            )
    write_jsonl(run_dir / "generation.jsonl", gens)
    write_jsonl(run_dir / "judgements.jsonl", [j.to_dict() for j in judgements])
    report.generation = generation_section(cfg, gens, len(gens), [], len(gens))
    agree = {"accuracy": agreement, "n": 40, "measured_on": "test cases"}
    calibration = {"correctness": {"cutoff": 0.5, "cutoffs": {"correct": 0.5}, "calibrated": True, "agreement": agree}}
    reuse = {"calibration": calibration if agreement is not None else {}}
    add_judging(
        report,
        cfg,
        res.questions,
        report.generation.records,
        judgements,
        retrieved_in_top_k(cfg, res),
        figures=judged_figures(cfg, res.questions, judgements),
        reuse=reuse,
    )
    report.judges.same_model = False
    write_report(run_dir, report)
    return run_dir


def test_judged_figures_and_outcomes_with_both_answers_and_judge_noise(tmp_path):
    base = judged_run(
        tmp_path, "gen", {"q1": ("Lists.", "correct"), "q2": ("A set.", "correct"), "q3": ("Use with.", "incorrect")}
    )
    # q1's answer changed and is now wrong; q3's answer is the same, yet the judge changed its mind.
    new = judged_run(
        tmp_path, "gen", {"q1": ("Tuples.", "incorrect"), "q2": ("A set.", "correct"), "q3": ("Use with.", "correct")}
    )
    d = rag_eval.diff(base, new)
    corr = d.figure("generation.baseline.correctness")
    assert (corr.better_on, corr.worse_on, corr.same_on) == (1, 1, 1) and corr.diff == pytest.approx(0)
    assert corr.p_value == pytest.approx(sps.binomtest(1, 2, 0.5).pvalue)
    assert corr.worse_ids == ["q1"] and corr.better_ids == ["q3"]
    # The rerun disagreement on identical inputs (1 of 2) is the larger measured noise.
    assert corr.judge_noise.noise == pytest.approx(0.5) and "identical inputs" in corr.judge_noise.source
    ok = d.figure("attribution.baseline.ok")
    assert ok.better == "higher" and (ok.better_on, ok.worse_on) == (1, 1)
    incorrect = d.figure("attribution.baseline.incorrect")
    assert incorrect.better == "lower" and incorrect.worse_ids == ["q1"]
    q1 = next(m for m in d.moved if m.question_id == "q1")
    assert d.moved[0] is q1 and q1.severity < 0
    assert (q1.base.answer, q1.new.answer) == ("Lists.", "Tuples.")
    assert (q1.base.outcome, q1.new.outcome) == ("ok", "incorrect")
    assert q1.changes == {
        "generation.baseline.correctness": -1.0,
        "attribution.baseline.ok": -1.0,
        "attribution.baseline.incorrect": 1.0,  # its share went up: worse, in the figure's own units
    }
    assert q1.worse == list(q1.changes) and q1.better == []
    assert q1.new.judges["correctness"].reason == "correctness says incorrect for 'Tuples.'"
    q3 = next(m for m in d.moved if m.question_id == "q3")
    assert q3.judge_noise == ["correctness"] and q1.judge_noise == []
    assert "generation.baseline.needless_refusal" in {f.name for f in d.figures}
    # The same answers and verdicts written twice: nothing moved.
    again = judged_run(
        tmp_path, "gen", {"q1": ("Lists.", "correct"), "q2": ("A set.", "correct"), "q3": ("Use with.", "incorrect")}
    )
    assert rag_eval.diff(base, again).empty
    from rag_eval.orchestration.diff import RunDiff
    from rag_eval.report.diff_report import render_diff_markdown

    assert RunDiff.from_json(json.loads(json.dumps(d.to_json(), allow_nan=False))).to_json() == d.to_json()
    md = render_diff_markdown(d.to_json())
    assert "### q1: prompt `baseline`: ok → incorrect" in md
    assert "| answer | Lists. | Tuples. |" in md
    assert (
        "| correctness | correct: correctness says correct for 'Lists.' | incorrect: correctness says incorrect" in md
    )
    assert "Judge noise: correctness gave another verdict on identical inputs" in md


def test_the_readme_diff_example_runs(tmp_path, monkeypatch):
    """The diff block of docs/guides/run-vs-run.md, run as written (in tmp_path, where it writes runs/)."""
    readme = (ROOT / "docs" / "guides" / "run-vs-run.md").read_text()
    block = readme.split("<!-- diff-example -->\n```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(block, "docs/guides/run-vs-run.md", "exec"), namespace)
    d = namespace["d"]
    assert not d.same_corpus and d.not_compared == []  # evidence labels survive the corpus change
    assert d.figure("retrieval.bm25.hit@1").worse_ids == ["q2"]


def test_baseline_is_an_option_of_run_compare_and_retrieval():
    from rag_eval.cli import build_parser

    for command in ("run", "compare", "retrieval"):
        assert build_parser().parse_args([command, "audit.yaml", "--baseline", "runs/"]).baseline == "runs/"


def test_figures_only_one_run_measured_are_named(two_runs, tmp_path):
    folder, base, _ = two_runs
    cfg = config(folder, "other_k", folder / "sys_base.jsonl", folder / "alt_base.jsonl", "questions.jsonl")
    cfg.write_text(cfg.read_text().replace("metrics: [hit@1, mrr]", "metrics: [hit@1, hit@3]"))
    d = rag_eval.diff(base, rag_eval.retrieval(str(cfg)).run_dir)
    assert "retriever 'sys': figures not compared, only in the base run: mrr; only in the new run: hit@3" in d.notes
    assert {f.name for f in d.figures} == {"retrieval.sys.hit@1", "retrieval.alt.hit@1", "retrieval.bm25.hit@1"}
    assert d.empty and not d.moved  # the same rankings: nothing moved, though fewer figures were compared


def test_a_pair_naming_what_a_run_lacks_is_an_error_naming_what_exists(two_runs, capsys):
    _, base, new = two_runs
    assert main(["diff", str(base), str(new), "--pair", "bm25=hybrid"]) == 2
    err = capsys.readouterr().err
    assert "--pair bm25=hybrid" in err
    assert "'hybrid' is no retriever or prompt of the new run (retrievers: sys, alt, bm25)" in err
    with pytest.raises(rag_eval.ConfigError, match="'nope' is no retriever or prompt of the base run"):
        rag_eval.diff(base, new, pairs={"nope": "sys"})


def test_runs_of_two_configs_are_named_and_runs_sharing_no_question_are_refused(two_runs, tmp_path, capsys):
    folder, base, new = two_runs
    d = rag_eval.diff(base, new)
    assert d.warnings == [
        "the base run is of config 'base', the new run of config 'new': compared as two runs of one test set, "
        "question by question"
    ]
    assert "warning: the base run is of config 'base'" in str(d)
    # A test set with none of the base run's questions: refused, never "every figure is the same".
    write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", [{**q, "id": "x" + q["id"]} for q in QUESTIONS])
    (tmp_path / "other.yaml").write_text(
        "name: other\ncorpus: {path: corpus.jsonl}\ntest_set: {path: questions.jsonl}\n"
        f"retrieval: {{k: [1, 3], retrievers: {{bm25: {{type: bm25}}}}}}\nreport: {{out: {tmp_path / 'runs'}}}\n"
    )
    other = rag_eval.retrieval(str(tmp_path / "other.yaml")).run_dir
    assert main(["diff", str(base), str(other)]) == 2
    err = capsys.readouterr().err
    assert "the runs share no question id (base: 21 questions of config 'base', new: 21 of config 'other')" in err
    assert "every figure" not in err.lower()
    # --baseline with a run of another test set: the diff is refused (the new run folder is kept).
    with pytest.raises(rag_eval.DataError, match="share no question"):
        rag_eval.retrieval(str(tmp_path / "other.yaml"), baseline=base)


def test_a_change_of_the_judges_cut_offs_between_runs_is_named(tmp_path, capsys):
    """User trial 3 F6: a judge-check --save between two runs moved verdicts on identical answers;
    diff warns that the judges decided with other settings (naming them), and history marks it."""
    from rag_eval.orchestration.history import collect_history

    answers = {"q1": ("Lists.", "correct"), "q2": ("A set.", "correct"), "q3": ("Use with.", "incorrect")}
    base = judged_run(tmp_path, "gen", answers)
    time.sleep(1.1)  # run folders are named by the second
    new = judged_run(tmp_path, "gen", answers)
    assert not [w for w in rag_eval.diff(base, new).warnings if "other settings" in w]  # the same settings
    raw = json.loads((new / "report.json").read_text())
    raw["judges"]["calibration"]["correctness"]["cutoffs"] = {"correct": 0.22}
    (new / "report.json").write_text(json.dumps(raw))
    d = rag_eval.diff(base, new)
    [warning] = [w for w in d.warnings if "other settings" in w]
    assert "correctness cut-offs: correct 0.500 -> correct 0.220" in warning
    # Review 54 M5: the judge model is the records' model name, not the endpoint's address.
    for run, model in ((base, "small-judge"), (new, "big-judge")):
        raw = json.loads((run / "report.json").read_text())
        for r in raw["judges"]["records"]:
            r["model"] = model
        (run / "report.json").write_text(json.dumps(raw))
    [warning] = [w for w in rag_eval.diff(base, new).warnings if "other settings" in w]
    assert "correctness model: small-judge -> big-judge" in warning
    # history reads summary.json and report.json: the new run is marked as judged otherwise.
    hist = collect_history(tmp_path / "runs", config="gen")
    [first, second] = hist.systems["gen"]
    assert first.changes == [] and [c.kind for c in second.changes] == ["judges"]
    assert (
        "correctness cut-offs: correct 0.500 -> correct 0.220 (verdicts are not comparable)" in second.changes[0].what
    )


def test_no_difference_says_which_figures_were_compared_on_few_answers():
    """User trial 4 F14: "No difference" while a criterion's figure, decided on 1 of 6 answers in both
    runs, moved from 1.00 to 0.50 between the runs' own summaries."""
    from rag_eval.report.diff_report import headline

    same = {"base": 1.0, "new": 1.0, "diff": 0.0, "n": 9}
    data = {
        "empty": True,
        "shared_questions": 10,
        "figures": {"retrieval.bm25.hit@3": same, "generation.plain.names_api": {**same, "n": 1}},
    }
    assert headline(data) == (
        "No difference: every figure agrees on every question both runs decided it for (10 questions compared by "
        "id; 1 figure compared on fewer (as few as 1: generation.plain.names_api))."
    )
    data["figures"]["generation.plain.names_api"]["n"] = 8
    assert headline(data).endswith("(10 questions compared by id).")
