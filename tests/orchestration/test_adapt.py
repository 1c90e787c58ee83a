"""`rag-eval report RUN --labels F --adapt`: the judges adapted to the run's corpus with its own
labels, the verdicts re-decided without a model call, the figures cross-fitted, and the adaptation
reused by a later audit of the same documents in another process."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval.calibration import adaptation as adaptation_module
from rag_eval.calibration.adaptation import Decider
from rag_eval.cli import main
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import Criterion, criteria_registered
from rag_eval.labels.human import Label
from rag_eval.orchestration.adapt import _held_out_check
from rag_eval.orchestration.diff import diff_runs
from rag_eval.report.report_records import AdaptationSection, AdaptedJudge

from ..conftest import ROOT, write_jsonl
from ..scripted_server import ScriptedServer, judge_name, structured_reply

N = 16
# Questions whose answers people call correct; the judge model, too strict on these documents,
# says "No" to them with P(yes) = 0.4, and to the others with P(yes) = 0.1.
GOOD = {f"q{i:02d}" for i in range(N) if i % 2 == 0}


def _project(tmp_path):
    corpus = [
        {"id": f"c{i:02d}", "text": f"Topic {i}: the widget number {i} is painted colour {i * 7}."} for i in range(N)
    ]
    questions = [
        {
            "id": f"q{i:02d}",
            "question": f"What colour is widget number {i}?",
            "answer_in": f"c{i:02d}",
            "reference": f"Colour {i * 7}.",
        }
        for i in range(N)
    ]
    write_jsonl(tmp_path / "corpus.jsonl", corpus)
    write_jsonl(tmp_path / "questions.jsonl", questions)
    (tmp_path / "answer.md").write_text((ROOT / "prompts" / "answer.md").read_text())
    return tmp_path


def _server():
    def is_good(body):
        text = body["messages"][-1]["content"]
        return any(f"widget number {int(q[1:])}?" in text for q in GOOD)

    def reply(body):
        if judge_name(body) == "correctness":
            return "No: the answer misses the reference."
        return structured_reply(body)

    def probability(body):
        if judge_name(body) == "correctness":
            return 0.6 if is_good(body) else 0.9  # P of the first word, "No"
        return 0.9

    return ScriptedServer(reply=reply, probability=probability)


def _config(tmp_path, server, name="widgets"):
    llm = f"{{provider: openai, model: scripted, base_url: '{server.base_url}', max_retries: 1}}"
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "corpus: {path: corpus.jsonl}\n"
        "test_set: {path: questions.jsonl}\n"
        "retrieval: {k: [1, 3], retrievers: {bm25: {type: bm25}}}\n"
        f"generation: {{retriever: bm25, top_k: 2, prompts: {{base: answer.md}}, llm: {llm}}}\n"
        f"judges: {{llm: {llm}, metrics: [correctness, refusal]}}\n"
        f"report: {{out: {tmp_path / 'runs'}}}\n"
    )
    return path


def _label(run_dir, n):
    assert main(["label", str(run_dir), "--n", str(n), "--seed", "3"]) == 0
    path = run_dir / "labels" / "labels.csv"
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        r["correct"] = "yes" if r["question_id"] in GOOD else "no"
        r["refused"] = "no"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    return path, {r["question_id"] for r in rows}


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder``, by its path there, with the hash of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _beside(run_dir: Path, kind: str) -> set[str]:
    return {
        f"{run_dir.name}/{base}.{kind}.{ext}"
        for base, ext in (("report", "json"), ("summary", "json"), ("report", "md"), ("report", "html"))
    }


def test_a_re_decision_is_written_beside_the_run_and_changes_nothing_else(tmp_path, capsys):
    """`report --labels F --adapt --no-save` and `report --labels F`: the run's record (report.json,
    report.md, report.html, summary.json, the judge records) and the per-corpus adaptation store
    stay byte for byte as they were; each re-decision is in its own named files beside the record,
    and a plain `report` re-renders the audit's own report again."""
    project = _project(tmp_path)
    with _server() as server:
        assert main(["run", str(_config(project, server))]) == 0
    runs = project / "runs"
    run_dir = next(runs.iterdir())
    labels, _ = _label(run_dir, 10)
    cache = Path(os.environ["RAG_EVAL_CACHE_DIR"])
    before, cache_before = _files(runs), _files(cache)
    original_md = (run_dir / "report.md").read_text()
    assert "Judges adapted" not in original_md and "With human labels" not in original_md
    capsys.readouterr()

    assert main(["report", str(run_dir), "--labels", str(labels), "--adapt", "--no-save"]) == 0
    out = capsys.readouterr().out
    adapted = _files(runs)
    assert {k: adapted[k] for k in before} == before  # nothing of the run changed
    assert set(adapted) - set(before) == _beside(run_dir, "adapted")
    assert _files(cache) == cache_before  # no adaptation kept for the corpus (adaptations.json)
    for name in sorted(_beside(run_dir, "adapted")):
        assert f"  {runs / name}\n" in out  # each file written, named
    report = json.loads((run_dir / "report.adapted.json").read_text())
    assert report["adaptation"]["answers_labelled"] == 10 and "saved" not in report["adaptation"]
    correctness = [r for r in report["judges"]["records"] if r["judge"] == "correctness"]
    assert len(correctness) == N and all(r["details"]["adapted"]["labels"] == 10 for r in correctness)
    assert report["labels"]["answers_labelled"] == 10
    assert "## Judges adapted to this corpus (10 labelled answers)" in (run_dir / "report.adapted.md").read_text()

    assert main(["report", str(run_dir), "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    labelled = _files(runs)
    assert {k: labelled[k] for k in adapted} == adapted
    assert set(labelled) - set(adapted) == _beside(run_dir, "labelled")
    assert _files(cache) == cache_before
    for name in sorted(_beside(run_dir, "labelled")):
        assert f"  {runs / name}\n" in out
    md = (run_dir / "report.labelled.md").read_text()
    assert "## With human labels (10 answers" in md and "Judges adapted" not in md

    # A plain re-render gives the audit's own report again.
    assert main(["report", str(run_dir)]) == 0
    assert (run_dir / "report.md").read_text() == original_md
    assert _files(runs) == labelled


def _answered_otherwise(changed: set[str]):
    """The scripted judge, answering the questions of ``changed`` with another text than ``_server``'s."""
    server = _server()
    plain = server.reply

    def reply(body):
        text = body["messages"][-1]["content"]
        if judge_name(body) is None and any(f"widget number {int(q[1:])}?" in text for q in changed):
            return "Widgets are painted by hand; the colour is not in the documents."
        return plain(body)

    server.reply = reply
    return server


def test_labels_of_answers_a_later_run_changed_are_refused_not_counted(tmp_path, capsys):
    """findings-50b H1: a labels file of one run given to a later run whose answers changed. A label
    belongs to the answer the person read (the file's `answer` column): the rows whose answer this
    run no longer gives are refused, each named by file and line, with nothing adapted, saved or
    written; the person's file is left as it was. An answer that differs only in spaces and line
    ends (a spreadsheet's) is the same answer."""
    project = _project(tmp_path)
    with _server() as server:
        assert main(["run", str(_config(project, server))]) == 0
    first = next((project / "runs").iterdir())
    labels, drawn = _label(first, 10)
    changed = set(sorted(drawn)[:2])
    with _answered_otherwise(changed) as server:
        assert main(["run", str(_config(project, server)), "--out", str(tmp_path / "later")]) == 0
    later = next((tmp_path / "later").iterdir())
    answers = {
        json.loads(line)["question_id"]: json.loads(line)["answer"] for line in (later / "generation.jsonl").open()
    }
    assert {q for q in answers if answers[q].startswith("Widgets are painted by hand")} == changed
    cache = Path(os.environ["RAG_EVAL_CACHE_DIR"])
    before, cache_before, labels_bytes = _files(tmp_path), _files(cache), labels.read_bytes()
    lines = {r["question_id"]: i + 2 for i, r in enumerate(csv.DictReader(labels.open()))}
    for extra in ([], ["--adapt"]):
        capsys.readouterr()
        assert main(["report", str(later), "--labels", str(labels), *extra]) == 2
        err = capsys.readouterr().err
        for q in changed:
            assert f"{labels}:{lines[q]}" in err
            assert f"the answer labelled for question '{q}' with prompt 'base' is not this run's answer" in err
        assert err.count("is not this run's answer") == len(changed)
        assert "label this run's answers" in err
        assert _files(tmp_path) == before and labels.read_bytes() == labels_bytes
        assert _files(cache) == cache_before  # no adaptation saved
    # The same labels on the first run, whose answers a spreadsheet rewrote with other spaces and
    # line ends: the answers the person read, so they count.
    rows = list(csv.DictReader(labels.open()))
    for r in rows:
        r["answer"] = "\r\n  ".join(r["answer"].split(" "))
    respaced = tmp_path / "respaced.csv"
    with respaced.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    capsys.readouterr()
    assert main(["report", str(first), "--labels", str(respaced), "--adapt", "--no-save"]) == 0
    assert json.loads((first / "report.adapted.json").read_text())["adaptation"]["answers_labelled"] == 10


@pytest.mark.slow
def test_adapted_verdicts_honest_figures_and_a_later_run_reuses_them(tmp_path, capsys, monkeypatch):
    # A corpus where the judge is far off: priors weak enough for 10 labels to move it (the shipped
    # priors, chosen on real corpora where the judges were close already, barely move it).
    monkeypatch.setattr(adaptation_module, "PRIORS", {"correctness": (1.0, 0.5), "refusal": (1.0, 0.5)})
    project = _project(tmp_path)
    with _server() as server:
        cfg = _config(project, server)
        assert main(["run", str(cfg)]) == 0
        run_dir = next((project / "runs").iterdir())
        before = json.loads((run_dir / "summary.json").read_text())
        # The strict judge calls every answer incorrect.
        assert before["generation"]["base"]["correctness"]["value"] == pytest.approx(0.0)
        labels, drawn = _label(run_dir, 10)
        shipped_run = tmp_path / "shipped-run"
        shutil.copytree(run_dir, shipped_run)
        capsys.readouterr()
        assert main(["report", str(run_dir), "--labels", str(labels), "--adapt"]) == 0
        out = capsys.readouterr().out
        assert "verdicts adapted to this corpus with 10 labelled answers" in out
        # The re-decision is written beside the audit's own report, which stays the run's record.
        assert (run_dir / "report.json").read_bytes() == (shipped_run / "report.json").read_bytes()
        report = json.loads((run_dir / "report.adapted.json").read_text())
        records = [r for r in report["judges"]["records"] if r["judge"] == "correctness"]
        # Every verdict re-decided from its recorded probability, the adapted cut-off between the
        # judge's 0.1 for wrong answers and 0.4 for right ones: each now agrees with the truth.
        assert {r["question_id"] for r in records if r["verdict"] == "correct"} == GOOD
        assert all(r["details"]["adapted"]["labels"] == 10 for r in records)
        summary = json.loads((run_dir / "summary.adapted.json").read_text())
        corr = summary["generation"]["base"]["correctness"]
        assert corr["value"] == pytest.approx(0.5)
        # Cross-fitted: the label-corrected figure says so, and covers the truth (0.5).
        assert corr["ppi"]["method"].startswith("cross-ppi")
        assert corr["ppi"]["ci_low"] <= 0.5 <= corr["ppi"]["ci_high"]
        assert summary["attribution"]["base"]["ok"]["value"] == pytest.approx(0.5)
        adaptation = report["adaptation"]
        [a] = [a for a in adaptation["judges"] if a["judge"] == "correctness"]
        assert a["labels"] == 10 and a["changed"] == len(GOOD) and 0.1 < a["cutoff_after"] < 0.4
        assert adaptation["saved"] and os.path.exists(adaptation["saved"])
        md = (run_dir / "report.adapted.md").read_text()
        assert "## Judges adapted to this corpus (10 labelled answers)" in md
        assert "Judges adapted to this corpus" in (run_dir / "report.adapted.html").read_text()
        assert "Judges adapted to this corpus" not in (run_dir / "report.md").read_text()

        # A later audit of the same documents, in another process and from another folder, decides
        # with the saved adaptation (no label given to it).
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        env = {**os.environ, "RAG_EVAL_CACHE_DIR": os.environ["RAG_EVAL_CACHE_DIR"]}
        done = subprocess.run(
            [sys.executable, "-m", "rag_eval.cli", "run", str(cfg), "--out", str(tmp_path / "later")],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        # The console says the saved adaptation decides (user trial L8), not only the report.
        assert "judges adapted to this corpus decide this run: `correctness_short` with 10 labels" in done.stderr
    later = next((tmp_path / "later").iterdir())
    rep = json.loads((later / "report.json").read_text())
    assert rep["judges"]["calibration"]["correctness"]["adapted"]["correctness_short"]["labels"] == 10
    assert "adapted to this corpus: `correctness_short` with 10 labels" in (later / "report.md").read_text()
    got = {
        r["question_id"] for r in rep["judges"]["records"] if r["judge"] == "correctness" and r["verdict"] == "correct"
    }
    assert got == GOOD
    # Adapting the later run, which the saved adaptation decided, with the same labels: it adapts
    # again from the shipped judge (the labels are not counted twice), so the adaptation, its fold
    # judges and their held-out check are those of the first run's.
    capsys.readouterr()
    assert main(["report", str(later), "--labels", str(labels), "--adapt", "--no-save"]) == 0
    [b] = [
        a
        for a in json.loads((later / "report.adapted.json").read_text())["adaptation"]["judges"]
        if a["judge"] == "correctness"
    ]
    assert b["from_saved"] and b["held_out"] == 10
    same = ("cutoff_after", "band_after", "held_out_decided", "held_out_right")
    assert {k: b[k] for k in same} == {k: a[k] for k in same}
    assert b["cutoff_before"] == pytest.approx(a["cutoff_after"]) != a["cutoff_before"]  # decided as adapted
    assert b["earlier_labels"] == 0  # every saved label is of an answer labelled here: none counts twice
    # Labels of other answers of the later run: fitted beside the 10 the saved adaptation rests on,
    # from the shipped judge, and saved with all 16.
    others = sorted({f"q{i:02d}" for i in range(N)} - drawn)[:6]
    more = tmp_path / "more.csv"
    more.write_text(
        "question_id,prompt,correct,refused\n"
        + "".join(f"{q},base,{'yes' if q in GOOD else 'no'},no\n" for q in others)
    )
    capsys.readouterr()
    assert main(["report", str(later), "--labels", str(more), "--adapt"]) == 0
    [c] = [
        a
        for a in json.loads((later / "report.adapted.json").read_text())["adaptation"]["judges"]
        if a["judge"] == "correctness"
    ]
    assert c["from_saved"] and c["earlier_labels"] == 10 and c["labels"] == 10 + len(others)
    assert "(with 10 labels of other answers kept from the saved adaptation)" in capsys.readouterr().out
    store = json.loads((Path(os.environ["RAG_EVAL_CACHE_DIR"]) / "adaptations.json").read_text())
    [entry] = [e for k, e in store.items() if "|correctness_short|" in k]
    assert entry["labels"] == 10 + len(others) and len(entry["items"]) == 10 + len(others)
    assert {json.loads(i["id"].split("#")[0])[0] for i in entry["items"]} == drawn | set(others)
    # The same fit as all 16 labels given at once (the saved ones are then all replaced by these):
    # the saved labels were fitted, not only counted.
    every = tmp_path / "every.csv"
    every.write_text(
        "question_id,prompt,correct,refused\n"
        + "".join(f"{q},base,{'yes' if q in GOOD else 'no'},no\n" for q in sorted(drawn | set(others)))
    )
    assert main(["report", str(later), "--labels", str(every), "--adapt", "--no-save"]) == 0
    [e] = [
        a
        for a in json.loads((later / "report.adapted.json").read_text())["adaptation"]["judges"]
        if a["judge"] == "correctness"
    ]
    assert e["earlier_labels"] == 0 and e["labels"] == 16
    assert (e["cutoff_after"], e["band_after"]) == (c["cutoff_after"], c["band_after"])
    assert c["cutoff_after"] != pytest.approx(b["cutoff_after"])  # 16 labels fit otherwise than 10
    # A diff of the run (its record decided as shipped) against the later, adapted one says the
    # judges differ too.
    for run in (shipped_run, run_dir):
        warnings = " ".join(diff_runs(run, later).warnings)
        assert "adapted differently to the corpus" in warnings and "as shipped" in warnings


def test_adapt_needs_labels(small_project, capsys):
    run = small_project / "runs" / "x"
    run.mkdir(parents=True)
    (run / "report.json").write_text(json.dumps({"name": "x"}))
    assert main(["report", str(run), "--adapt"]) == 2
    assert "add --labels FILE" in capsys.readouterr().err


def test_a_run_whose_judgements_kept_no_word_evidence_adapts_on_the_models_probability(tmp_path, capsys):
    """A run written before judgements kept their word evidence (tests/data/old_runs) decides with
    the model's probability alone: adapting it refits no word weight it never recorded (it stopped
    with an internal error, KeyError 'new_words'), and writes the adapted report beside the run."""
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "old_runs" / "compare-labelled", run)
    labels = tmp_path / "labels.csv"
    labels.write_text("question_id,prompt,correct,faithful,refused\nq1,a,no,yes,no\nq1,b,no,yes,no\nq2,b,yes,yes,no\n")
    before = _files(run)
    assert main(["report", str(run), "--labels", str(labels), "--adapt", "--no-save"]) == 0
    assert "refusal: 3 labels" in capsys.readouterr().out
    after = _files(run)
    assert {k: after[k] for k in before} == before
    assert {f"run/{k}" for k in set(after) - set(before)} == _beside(run, "adapted")
    judges = {a["variant"]: a for a in json.loads((run / "report.adapted.json").read_text())["adaptation"]["judges"]}
    assert "new_words" in judges["refusal"]["blend_before"]
    assert judges["refusal"]["blend_after"].endswith("x model log-odds)") and judges["refusal"]["labels"] == 3


def test_each_labelled_answer_is_checked_by_the_fold_judge_adapted_without_it():
    """The adaptation's held-out check: every labelled answer decided by its fold's judge (here two
    fold judges written by hand), counted decided and right against its label, so a user sees how
    the adapted judge does on answers it was not fitted to."""
    with criteria_registered({"names_it": Criterion(question="Does it name it?")}):
        ps = {"q1": 0.95, "q2": 0.7, "q3": 0.2, "q4": 0.55, "q5": 0.9}
        records = [Judgement("names_it", q, "a", "judged", probability=p, verdict="pass") for q, p in ps.items()]
        labels = {
            (q, "a"): Label(q, "a", {"names_it": y}, "labels.csv:2")
            for q, y in {"q1": True, "q2": False, "q3": False, "q4": True}.items()  # q5 not labelled
        }
        fold_of = {("q1", "a"): 0, ("q2", "a"): 0, ("q3", "a"): 1, ("q4", "a"): 1}
        # Fold 0's judge cuts at 0.5 with no band; fold 1's leaves [0.4, 0.6) uncertain.
        folds = [{"names_it": Decider(None, 0.5)}, {"names_it": Decider(None, 0.5, (0.4, 0.6))}]
        section = AdaptationSection(judges=[AdaptedJudge(judge="names_it", variant="names_it")])
        _held_out_check(section, records, labels, fold_of, folds)
    j = section.judges[0]
    # q1 0.95 pass (right), q2 0.7 pass (wrong, labelled no), q3 0.2 fail (right), q4 0.55 uncertain.
    assert (j.held_out, j.held_out_decided, j.held_out_right) == (4, 3, 2)
    assert j.held_out_text() == "2 of 3 decided right, 1 of 4 uncertain"
    # Most of the run's decisions uncertain (not of the labelled ones, which an active draw picks
    # among the unsure): the console then says what decides them.
    assert not j.mostly_uncertain()  # no decision counted
    assert AdaptedJudge(judge="names_it", variant="names_it", decisions=5, uncertain_after=3).mostly_uncertain()
    assert not AdaptedJudge(judge="names_it", variant="names_it", decisions=6, uncertain_after=3).mostly_uncertain()


@pytest.mark.parametrize("setting", ["off", "auto"])
def test_adapt_leaves_close_calls_uncertain_only_where_the_run_did(tmp_path, capsys, monkeypatch, setting):
    """`report --adapt` reads the run's `judges.uncertain` (review 53 M3): under off the adapted
    verdicts are all decided, as the next audit under off decides them; under auto a verdict near the
    adapted cut-off is left uncertain. The noise margin is widened here so that every verdict is near."""
    project = _project(tmp_path)
    with _server() as server:
        path = _config(project, server)
        text = path.read_text().replace(
            "metrics: [correctness, refusal]}", f"metrics: [correctness, refusal], uncertain: {setting}}}"
        )
        path.write_text(text)
        assert main(["run", str(path)]) == 0
    run_dir = next((project / "runs").iterdir())
    labels, _ = _label(run_dir, 10)
    monkeypatch.setattr("rag_eval.judges.uncertain.NUMERIC_NOISE_LOGIT", 50.0)
    assert main(["report", str(run_dir), "--labels", str(labels), "--adapt", "--no-save"]) == 0
    report = json.loads((run_dir / "report.adapted.json").read_text())
    correctness = [r for r in report["judges"]["records"] if r["judge"] == "correctness"]
    assert len(correctness) == N
    left = [r for r in correctness if "left_uncertain" in r["details"]]
    if setting == "off":
        assert left == [] and all(r["status"] == "judged" for r in correctness)
    else:
        assert len(left) == N and all(r["status"] == "uncertain" for r in left)
