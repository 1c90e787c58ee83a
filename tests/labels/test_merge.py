"""A new draw merged into a labels file (``rag_eval/labels/merge.py``): the union's inclusion
probabilities checked against the draws themselves (seeded repetitions), the prediction-powered
estimate unbiased with them (and biased with the first draw's alone), and what a merge keeps,
adds, leaves alone and refuses."""

import json

import numpy as np
import pytest

from rag_eval.errors import DataError
from rag_eval.labels.active import active_mean
from rag_eval.labels.human import Sampler
from rag_eval.labels.merge import design_path, draw_into, read_design, union
from rag_eval.labels.store import has_label, read_rows, write_rows

N = 30


def _run(folder):
    """A finished run of N questions with one prompt, its correctness judge sure of some answers and
    unsure of others (so the active draw's probabilities differ); returns (folder, the judge's P)."""
    probs = np.random.default_rng(7).uniform(0.02, 0.98, N)
    gens, records, rows = [], [], []
    for i, p in enumerate(probs):
        q = f"q{i:02d}"
        gens.append({"question_id": q, "prompt": "base", "answer": f"answer {i}", "contexts": []})
        verdict = "correct" if p >= 0.5 else "incorrect"
        records.append(
            {
                "judge": "correctness",
                "question_id": q,
                "prompt": "base",
                "status": "judged",
                "probability": float(p),
                "cutoff": 0.5,
                "verdict": verdict,
            }
        )
        rows.append({"question_id": q, "prompt": "base", "question": f"Question {i}?", "answerable": True})
    folder.mkdir()
    (folder / "generation.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    (folder / "report.json").write_text(json.dumps({"judges": {"records": records}, "attribution": {"rows": rows}}))
    return folder, probs


def test_the_union_of_two_independent_draws_holds_an_answer_unless_both_miss_it(tmp_path):
    """An active draw of 8 questions, then one of 5 seeded [seed, 1] as rag-eval label seeds a draw
    added to a file: over 1,500 seeds each question is in the union as often as 1 - (1 - p)(1 - q)
    says (within 0.045, 3.5 standard errors at 0.5). The prediction-powered estimate (lambda 1)
    weighted by those probabilities is unbiased (within 4 standard errors of the mean); weighted by
    the first draw's alone it is not (measured: bias -0.029, about 10 standard errors)."""
    run, probs = _run(tmp_path / "run")
    s = Sampler(run)
    p, q = s.probabilities(8, active=True), s.probabilities(5, active=True)
    ids = list(p)
    assert len({round(x, 6) for x in p.values()}) > 10  # unequal probabilities
    reps = 1500
    seen = []
    for seed in range(reps):
        union_of = {d.question_id for d in s.draw(8, seed, True).rows} | {
            d.question_id for d in s.draw(5, [seed, 1], True).rows
        }
        seen.append(np.array([x in union_of for x in ids]))
    pi = np.array([union(p[x], q[x]) for x in ids])
    assert np.abs(np.mean(seen, axis=0) - pi).max() < 0.045

    rng = np.random.default_rng(1)
    yhat = (probs >= 0.5).astype(float)
    y = (rng.random(N) < probs).astype(float)  # the people: the judge errs where it is unsure
    first = np.array([p[x] for x in ids])
    for weights, unbiased in ((pi, True), (first, False)):
        est = np.array(
            [active_mean(y[m], yhat[m], weights[m], yhat[~m], power_tuned=False, bounded=False).value for m in seen]
        )
        bias, se = est.mean() - y.mean(), est.std() / np.sqrt(reps)
        assert (abs(bias) < 4 * se) if unbiased else (abs(bias) > 6 * se)


def test_a_draw_merged_into_a_labelled_file_keeps_it_adds_the_rest_and_records_the_union(tmp_path):
    run, _ = _run(tmp_path / "run")
    s = Sampler(run)
    path = run / "labels" / "labels.csv"
    fresh = draw_into(s, path, 8, 0, active=True)
    assert fresh.added == 8 and fresh.backup is None and len(read_rows(path)) == 8
    design = read_design(design_path(path))
    assert [(d.n, d.seed, d.stream) for d in design.draws] == [(8, 0, [0])]
    p = s.probabilities(8, active=True)
    assert design.inclusion_probability == {x: round(v, 6) for x, v in p.items()}

    # Nobody labelled it yet: a new draw replaces it.
    again = draw_into(s, path, 6, 0, active=True)
    assert again.replaced == 8 and again.added == 6 and len(read_rows(path)) == 6
    draw_into(s, path, 8, 0, active=True)

    rows = read_rows(path)
    rows[0].update(correct="yes", faithful="no")
    rows[1].update(note="unclear question")
    rows[2].update(refused="no", inclusion_probability="1.0")  # as the view marks an uncertain one
    write_rows(path, rows)
    before = path.read_text()
    merged = draw_into(s, path, 5, 3, active=True)
    after = read_rows(path)
    assert (merged.kept_labelled, merged.kept_unlabelled) == (2, 6) and not merged.worked_out
    assert merged.backup.read_text() == before
    assert [{k: r[k] for k in ("question_id", "correct", "faithful", "refused", "note")} for r in after[:8]] == [
        {k: r[k] for k in ("question_id", "correct", "faithful", "refused", "note")} for r in rows
    ]
    assert len({r["question_id"] for r in after}) == len(after) == 8 + merged.added
    q = s.probabilities(5, active=True)
    for r in after:
        x, old = r["question_id"], next((o for o in rows if o["question_id"] == r["question_id"]), None)
        was = float(old["inclusion_probability"]) if old else p[x]
        assert float(r["inclusion_probability"]) == pytest.approx(1 - (1 - was) * (1 - q[x]), abs=2e-6)
    assert after[2]["inclusion_probability"] == "1.0"
    design = read_design(design_path(path))
    assert [(d.n, d.seed, d.stream, d.added) for d in design.draws] == [(8, 0, [0], 8), (5, 3, [3, 1], merged.added)]
    assert design.inclusion_probability["q00"] == pytest.approx(union(p["q00"], q["q00"]), abs=1e-6)

    # Asked again: already there, nothing written.
    text = path.read_text()
    assert draw_into(s, path, 5, 3, active=True).same_draw and path.read_text() == text
    assert sum(has_label(r) for r in read_rows(path)) == 2

    # Without its record, a union of two draws is no single draw of the run: refused, left alone.
    design_path(path).unlink()
    with pytest.raises(DataError) as err:
        draw_into(s, path, 5, 4, active=True)
    assert f"{path}: it holds 2 labelled answers" in err.value.render()
    assert "its inclusion probabilities are those of no draw of this run" in err.value.render()
    assert path.read_text() == text


def test_a_file_without_a_record_is_worked_out_to_its_one_draw(tmp_path):
    """A file the view (or an older rag-eval label) wrote holds one draw and no record: its size and
    kind are worked out from the rows' probabilities, and the new draw is merged against it."""
    run, _ = _run(tmp_path / "run")
    s = Sampler(run)
    path = run / "labels" / "labels.csv"
    draw_into(s, path, 12, 5, active=False)
    design_path(path).unlink()
    rows = read_rows(path)
    rows[3]["correct"] = "no"
    write_rows(path, rows)
    merged = draw_into(s, path, 6, 2, active=True)
    assert merged.worked_out and merged.added > 0
    first, second = read_design(design_path(path)).draws
    assert (first.n, first.active, first.seed) == (12, False, None)  # seed 2 does not draw the same
    assert (second.n, second.active, second.stream) == (6, True, [2, 1])
    q = s.probabilities(6, active=True)
    for r in read_rows(path):
        assert float(r["inclusion_probability"]) == pytest.approx(union(12 / N, q[r["question_id"]]), abs=2e-6)


def test_a_draw_is_not_merged_into_a_file_labelled_on_answers_the_run_no_longer_gives(tmp_path):
    """findings-51 M1: the labelled file of an earlier run whose answers changed (`rag-eval label
    LATER --out DIR`, DIR holding the earlier file): merged, its labels would be shown ticked on the
    new answers and saved under their text. Refused, each stale row named, the file left as it is;
    a row whose answer differs only in spaces is no stale row."""
    run, _ = _run(tmp_path / "run")
    path = tmp_path / "labels" / "labels.csv"
    draw_into(Sampler(run), path, 8, 0, active=True)
    rows = read_rows(path)
    rows[0].update(correct="yes")
    rows[1].update(correct="no", answer=rows[1]["answer"].replace(" ", "\n  "))
    rows[2].update(refused="no")
    write_rows(path, rows)
    later = tmp_path / "later"
    later.mkdir()
    gens = [json.loads(line) for line in (run / "generation.jsonl").read_text().splitlines()]
    for g in gens:
        if g["question_id"] in (rows[0]["question_id"], rows[2]["question_id"]):
            g["answer"] = "A different answer."
    (later / "generation.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    (later / "report.json").write_text((run / "report.json").read_text())
    text = path.read_text()
    with pytest.raises(DataError) as err:
        draw_into(Sampler(later), path, 5, 3, active=True)
    message = err.value.render()
    assert f"{path}: 2 labelled rows of the file label another answer than this run's" in message
    assert f"line 2 ({rows[0]['question_id']}, base), line 4 ({rows[2]['question_id']}, base)" in message
    assert "--out DIR" in message and path.read_text() == text
    # The earlier run itself: its answers, the respaced one too.
    assert draw_into(Sampler(run), path, 5, 3, active=True).kept_labelled == 3
