"""The labelling workflow end to end: draw a sample of a run's answers, fill the labels in, read
them back into prediction-powered figures; bad labels give errors that name the line."""

import csv
import json

import pytest

from rag_eval.cli import main
from rag_eval.config import load_config
from rag_eval.errors import DataError
from rag_eval.orchestration.runner import run_audit
from rag_eval.report.gates import check_gates

from ..conftest import ROOT
from ..scripted_server import ScriptedServer, judge_name, structured_reply


def _audit(small_project, extra=""):
    (small_project / "answer.md").write_text((ROOT / "prompts" / "answer.md").read_text())

    def reply(body):
        # The correctness judge says "No" for q2's answer: a judge error the labels will correct.
        if judge_name(body) == "correctness" and "distinct hashable" in body["messages"][-1]["content"]:
            return "No: the answer misses the reference."
        return structured_reply(body)

    server = ScriptedServer(reply=reply)
    server.__enter__()
    llm = f"{{provider: openai, model: scripted, base_url: '{server.base_url}', max_retries: 1}}"
    cfg = small_project / "audit.yaml"
    cfg.write_text(
        cfg.read_text()
        + f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{base: answer.md}}\n  llm: {llm}\n"
        + f"judges:\n  llm: {llm}\n  metrics: [correctness, refusal, faithfulness_yesno]\n{extra}"
    )
    return server, cfg


def _fill(path, values):
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        r.update(values.get(r["question_id"], {}))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    return rows


def test_label_draw_fill_and_report_with_ppi(small_project, capsys):
    server, cfg = _audit(small_project)
    try:
        run_dir = run_audit(load_config(cfg))
    finally:
        server.__exit__(None, None, None)
    assert main(["label", str(run_dir), "--n", "3", "--seed", "1"]) == 0
    csv_path, page = run_dir / "labels" / "labels.csv", run_dir / "labels" / "labels.html"
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 3 and {"correct", "faithful", "refused", "question", "answer"} <= set(rows[0])
    html = page.read_text()
    assert html.count("<section") == 3 and 'class="judges" hidden' in html and "Save labels" in html
    assert "A set object is an unordered collection" in html or "Lists are mutable" in html  # context texts
    drawn = {r["question_id"] for r in rows}
    # Same seed, same sample.
    assert main(["label", str(run_dir), "--n", "3", "--seed", "1", "--out", str(small_project / "again")]) == 0
    assert {r["question_id"] for r in csv.DictReader((small_project / "again" / "labels.csv").open())} == drawn

    truth = {
        "q1": {"correct": "yes", "faithful": "yes", "refused": "no"},
        "q2": {"correct": "yes", "faithful": "yes", "refused": "no"},
        "q3": {"faithful": "yes", "refused": "no"},
        "q4": {"refused": "no"},
    }
    _fill(csv_path, truth)
    assert main(["report", str(run_dir), "--labels", str(csv_path)]) == 0
    summary = json.loads((run_dir / "summary.labelled.json").read_text())
    corr = summary["generation"]["base"]["correctness"]
    assert corr["value"] == pytest.approx(0.5)  # the judge called q2's answer incorrect
    if "q2" in drawn and "q1" in drawn:
        # Both answers with a reference are labelled correct: nothing is left unlabelled, so the
        # figure is what the people said.
        assert corr["ppi"]["value"] == pytest.approx(1.0) and corr["ppi"]["method"] == "human only"
    assert corr["human"]["value"] == pytest.approx(1.0)
    assert summary["attribution"]["base"]["ok"]["ppi"]["n_labels"] == 3
    gates = check_gates({"generation.base.correctness.ppi": ">= 0.9"}, summary)
    assert [g.passed for g in gates if g.figure == "generation.base.correctness.ppi"] == [True]
    md = (run_dir / "report.labelled.md").read_text()
    assert "## With human labels (3 answers" in md and "prediction-powered" in md
    assert "With human labels" in (run_dir / "report.labelled.html").read_text()


def test_bad_labels_name_the_line_and_the_column(small_project, capsys):
    server, cfg = _audit(small_project)
    try:
        run_dir = run_audit(load_config(cfg))
    finally:
        server.__exit__(None, None, None)
    main(["label", str(run_dir), "--n", "4"])
    path = run_dir / "labels" / "labels.csv"
    rows = _fill(path, {"q1": {"correct": "maybe"}, "q3": {"refused": "no"}})
    rows[1]["question_id"] = "q99"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    capsys.readouterr()
    assert main(["report", str(run_dir), "--labels", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2 (column correct): 'maybe' is not yes or no" in err
    assert f"{path}:3: question 'q99' with prompt 'base' is not an answer of this run" in err


def test_labels_in_the_config_feed_the_audit(small_project):
    labels = small_project / "labels.csv"
    labels.write_text("question_id,prompt,correct\nq1,base,yes\nq2,base,yes\n")
    server, cfg = _audit(small_project, extra="  labels: labels.csv\n")
    try:
        run_dir = run_audit(load_config(cfg))
    finally:
        server.__exit__(None, None, None)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generation"]["base"]["correctness"]["ppi"]["value"] == pytest.approx(1.0)
    assert "faithfulness_yesno" not in json.loads((run_dir / "report.json").read_text())["labels"]["figures"]["base"]


def test_labels_in_the_config_that_do_not_fit_the_answers_end_the_run_with_its_report_written(small_project, capsys):
    """`judges.labels` holding a label of an answer this run does not give (the file of an earlier
    run whose answers changed): the audit's judgements are kept, its report written without the
    labels and the run marked finished, and the command exits 2 naming the config line, the labels
    file's row and how to apply the labels later; the labels file is left as it was."""
    labels = small_project / "labels.csv"
    labels.write_text("question_id,prompt,correct,answer\nq1,base,yes,An answer this run never gave.\n")
    before = labels.read_bytes()
    server, cfg = _audit(small_project, extra="  labels: labels.csv\n")
    try:
        capsys.readouterr()
        assert main(["run", str(cfg), "--out", str(small_project / "runs")]) == 2
    finally:
        server.__exit__(None, None, None)
    err = capsys.readouterr().err
    [run_dir] = list((small_project / "runs").iterdir())
    assert f"{cfg}:" in err and "(judges.labels): the labels file could not be applied (the problems below)" in err
    assert f"{labels}:2: the answer labelled for question 'q1' with prompt 'base' is not this run's answer" in err
    assert f"rag-eval report {run_dir} --labels FILE" in err
    report = json.loads((run_dir / "report.json").read_text())
    assert report["judges"]["records"] and report.get("labels") is None
    # The audit itself is whole: finished (a baseline, a history entry), and the command exits 2.
    assert json.loads((run_dir / "status.json").read_text())["status"] == "finished"
    assert labels.read_bytes() == before


def test_paired_ppi_difference_between_prompts():
    """Two prompts judged on the same 6 questions; labels on 4 of them for both prompts."""
    from rag_eval.labels.human import Label, paired_differences

    records, rows = [], []
    judge_says = {"a": [1, 1, 1, 1, 0, 1], "b": [1, 0, 1, 0, 0, 0]}
    for prompt, verdicts in judge_says.items():
        for i, v in enumerate(verdicts):
            q = f"q{i}"
            records.append(
                {
                    "judge": "correctness",
                    "question_id": q,
                    "prompt": prompt,
                    "status": "judged",
                    "verdict": "correct" if v else "incorrect",
                    "score": float(v),
                }
            )
            rows.append({"question_id": q, "prompt": prompt, "answerable": True})
    report = {"judges": {"metrics": ["correctness"], "records": records}, "attribution": {"rows": rows}}
    people = {"a": [1, 0, 1, 1], "b": [1, 0, 0, 0]}  # the judge was too kind to a on q1
    labels = [
        Label(f"q{i}", p, {"correct": bool(v), "faithful": None, "refused": None}, "x")
        for p, vs in people.items()
        for i, v in enumerate(vs)
    ]
    [c] = paired_differences(report, labels, 0.95)
    assert (c.metric, c.a, c.b) == ("correctness", "a", "b")
    assert c.human.value == pytest.approx(0.5)  # labelled differences 0, 0, 1, 1
    # plain PPI: mean of unlabelled judge differences (q4: 0, q5: 1) + mean(label - judge) on pairs
    # = 0.5 + (0.5 - 0.5) = 0.5; the power-tuned estimate stays within the human interval.
    assert c.ppi.n_labels == 4 and c.ppi.n_unlabelled == 2
    assert c.human.ci_low <= c.ppi.value <= c.human.ci_high


def test_the_labelling_page_hides_verdicts_until_labelled_and_saves_the_csv(tmp_path):
    """The page in a real browser: labelling every question of an item reveals its judges, and
    Save labels produces the CSV that read_labels accepts."""
    import shutil
    import subprocess

    from rag_eval.labels.human import read_labels, write_html

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    rows = [
        {
            "question_id": q,
            "prompt": "base",
            "weight": 1.0,
            "question": f"Question {q}?",
            "reference": "R, with a comma",
            "answerable": True,
            "answer": 'An "answer"',
            "contexts": ["c1"],
        }
        for q in ("q1", "q2")
    ]
    page = tmp_path / "labels.html"
    write_html(
        rows,
        page,
        {"c1": "Context text."},
        {("q1", "base"): {"correctness": {"verdict": "correct", "reason": "SECRET-VERDICT"}}},
    )
    # Label item 0 fully and item 1 partly, then save; the saved CSV is put into the DOM to read back.
    harness = page.read_text().replace(
        "</body>",
        """<script>
        for (const [c, v] of [["correct", "yes"], ["faithful", "no"], ["refused", "skip"], ["correct", "no"]]) {
          const i = c === "correct" && v === "no" ? 1 : 0;
          const el = document.querySelector(`[name="${c}-${i}"][value="${v}"]`);
          el.checked = true; el.dispatchEvent(new Event("change", {bubbles: true}));
        }
        HTMLAnchorElement.prototype.click = function () {};  // no navigation away from the page
        URL.createObjectURL = b => { b.text().then(t => { const p = document.createElement("pre");
          p.id = "saved"; p.textContent = t; document.body.appendChild(p); }); return "about:blank"; };
        document.getElementById("save").click();
        </script></body>""",
    )
    test_page = tmp_path / "harness.html"
    test_page.write_text(harness)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--virtual-time-budget=3000", "--dump-dom", test_page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    sections = dom.split("<section")[1:]
    assert 'class="judges" hidden' not in sections[0] and "SECRET-VERDICT" in sections[0]
    assert 'class="judges" hidden' in sections[1]
    import html as html_lib

    saved = html_lib.unescape(dom.split('<pre id="saved">')[1].split("</pre>")[0])
    csv_path = tmp_path / "saved.csv"
    csv_path.write_text(saved)
    labels = {lab.question_id: lab.values for lab in read_labels(csv_path, {("q1", "base"), ("q2", "base")})}
    assert labels["q1"] == {"correct": True, "faithful": False, "refused": None}
    assert labels["q2"] == {"correct": False, "faithful": None, "refused": None}


def test_blank_rows_count_for_nothing(tmp_path, capsys):
    """Issue 46 item 4: the view writes a row for every answer of its queue. A labels file with such
    blank rows gives exactly the figures of the file without them (values, n, intervals, the outcome
    shares too), and the counts printed and shown are the labelled answers, per column."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "old_runs" / "compare-labelled", run)
    header = "question_id,prompt,weight,inclusion_probability,correct,faithful,refused,note\n"
    labelled = "q1,a,1.0,0.5,no,yes,no,\nq1,b,1.0,0.5,no,yes,no,odd\nq2,b,1.0,0.25,yes,,no,\n"
    blank = "q2,a,1.0,0.25,,,,\nq3,a,1.0,0.75,,,,\nq3,b,1.0,0.75,,,,\nq4,a,1.0,0.5,,,,\nq4,b,1.0,0.5,,,,\n"
    (tmp_path / "only.csv").write_text(header + labelled)
    (tmp_path / "blank.csv").write_text(header + labelled + blank)
    sections = {}
    for name in ("only", "blank"):
        capsys.readouterr()
        assert main(["report", str(run), "--labels", str(tmp_path / f"{name}.csv")]) == 0
        assert "labels: 3 answers (correct 3, faithful 2, refused 3)" in capsys.readouterr().out
        counted = "3 answers labelled: correct 3, faithful 2, refused 3"
        assert f"## With human labels ({counted}; {tmp_path / name}.csv)" in (run / "report.labelled.md").read_text()
        assert f"With human labels ({counted})" in (run / "report.labelled.html").read_text()
        lab = json.loads((run / "report.labelled.json").read_text())["labels"]
        assert lab.pop("source") == str(tmp_path / f"{name}.csv")
        sections[name] = lab
    assert sections["blank"] == sections["only"]
    outcomes = sections["blank"]["outcomes"]
    assert [outcomes[p]["ok"]["human"]["n_labels"] for p in ("a", "b")] == [1, 2]
    assert sections["blank"]["answers_labelled"] == 3


def _page_in_chromium(tmp_path, page, script):
    """The page with ``script`` run after its own, in headless Chromium (one profile for every call,
    so what the page keeps in the browser stays); returns the DOM."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    harness = tmp_path / "harness.html"
    harness.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--virtual-time-budget=3000", "--dump-dom", harness.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    # Chromium's helper processes (its storage among them) can outlive the main one on a loaded
    # CPU; the next load of the same profile must not start before they have written it and gone
    # (CI at 439fd74 and 926a5ab lost a stored pick that way).
    import time

    for _ in range(100 if shutil.which("pgrep") else 0):
        if subprocess.run(["pgrep", "-f", str(tmp_path / "chromium")], capture_output=True).returncode != 0:
            break
        time.sleep(0.1)
    return dom


SAVE = """HTMLAnchorElement.prototype.click = function () {};
URL.createObjectURL = b => { b.text().then(t => { const p = document.createElement("pre");
  p.id = "saved"; p.textContent = t; document.body.appendChild(p); }); return "about:blank"; };
document.getElementById("save").click();"""


def test_the_page_written_again_over_a_merged_draw_keeps_every_label_on_its_answer(tmp_path):
    """rag-eval label writes labels.html again after a merge: the labels already in the file are on
    the page (and in its download), and a pick made on the earlier page and kept in the browser
    stays on its own answer although the answers moved (the page keeps picks by question and prompt,
    not by place: by place, q2's pick would land on q1)."""
    import shutil

    from rag_eval.labels.human import read_labels, write_html

    def rows(ids):
        return [{"question_id": q, "prompt": "base", "question": f"Question {q}?", "answer": "A."} for q in ids]

    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
    )
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    page = tmp_path / "labels.html"
    write_html(rows(["q1", "q2"]), page, {}, {})
    pick = """() => { const el = document.querySelector('[name="correct-1"][value="yes"]');
      el.checked = true; el.dispatchEvent(new Event("change", {bubbles: true})); }"""
    given = {("q1", "base"): {"correct": "no", "faithful": "yes", "refused": "", "note": "kept, as given"}}
    # One browser, as a person keeps it open and opens the page again: what the page kept in the
    # browser is there for the second load (two Chromium processes lost it on a loaded CPU, where
    # the first had not written its storage before it stopped).
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"], headless=True)
        try:
            tab = browser.new_context().new_page()
            tab.goto(page.as_uri())
            tab.evaluate(pick)
            # What the page kept in the browser for the pick (written by its change handler at once).
            kept = tab.evaluate("() => Object.fromEntries(Object.entries(localStorage))")
            assert any("yes" in v for v in kept.values()), kept
            write_html(rows(["q0", "q1", "q2"]), page, {}, {}, given=given)
            assert "1 answers came labelled from the labels file" in page.read_text()
            # The new page opened with that storage (set here again before its script reads it: on a
            # loaded CPU, Chromium's write of the first page's storage could reach the next load late).
            tab.goto("about:blank")
            tab.add_init_script(
                "(() => { const kept = " + json.dumps(kept) + "; for (const [k, v] of Object.entries(kept)) "
                "if (location.protocol === 'file:' && localStorage.getItem(k) === null) localStorage.setItem(k, v); })()"
            )
            tab.goto(page.as_uri())
            tab.evaluate("() => { " + SAVE + " }")
            tab.wait_for_selector("#saved", state="attached", timeout=15_000)
            text = tab.inner_text("#saved")
        finally:
            browser.close()
    saved = tmp_path / "saved.csv"
    saved.write_text(text)
    labels = {lab.question_id: lab.values for lab in read_labels(saved, {(q, "base") for q in ("q0", "q1", "q2")})}
    assert labels == {
        "q1": {"correct": False, "faithful": True, "refused": None},
        "q2": {"correct": True, "faithful": None, "refused": None},
    }
    assert "kept, as given" in saved.read_text()


def test_a_labelled_row_whose_answer_the_run_no_longer_gives_is_refused(tmp_path):
    """A label belongs to the answer the person read: read_labels refuses a labelled row whose
    `answer` cell is another text than the run's answer (file and line named), takes one that
    differs in spaces and line ends only, and one with no answer cell; a blank row is no label, so
    its stale text is no problem."""
    from rag_eval.errors import DataError
    from rag_eval.labels.human import read_labels

    run = {("q1", "base"): "Paris is the capital.", ("q2", "base"): "It is 42.", ("q3", "base"): None}
    path = tmp_path / "labels.csv"
    path.write_text(
        "question_id,prompt,correct,answer\n"
        'q1,base,yes,"Paris  is the\r\ncapital."\n'
        "q2,base,no,It is 41.\n"
        "q3,base,,Something once said.\n"
    )
    with pytest.raises(DataError) as err:
        read_labels(path, run)
    [problem] = err.value.problems
    # q1's answer cell spans two lines: q2's row starts on the file's fourth.
    assert problem.where == f"{path}:4" and "'q2' with prompt 'base' is not this run's answer" in problem.what
    assert "'It is 41.'" in problem.what and "'It is 42.'" in problem.what
    path.write_text("question_id,prompt,correct,answer\nq1,base,yes,Paris is the capital.\nq2,base,no,\n")
    assert {lab.question_id: lab.values["correct"] for lab in read_labels(path, run)} == {"q1": True, "q2": False}
    # A failed answer (None) labelled with a text that run never gave.
    path.write_text("question_id,prompt,correct,answer\nq3,base,no,An answer.\n")
    with pytest.raises(DataError, match=r"this run's \(none: its generation failed\)"):
        read_labels(path, run)
    # Two long answers that differ late: the message shows where.
    long = " ".join(f"w{i}" for i in range(40))
    path.write_text(f"question_id,prompt,correct,answer\nq1,base,yes,{long} end.\n")
    with pytest.raises(DataError) as err:
        read_labels(path, {("q1", "base"): f"{long} finish."})
    assert "differ at word 41: labelled '...w37 w38 w39 end.'; this run's '...w37 w38 w39 finish.'" in str(err.value)


def test_a_pick_kept_in_the_browser_is_restored_only_onto_the_same_answer(tmp_path):
    """findings-51 M1: the labelling page keeps unsaved picks in the browser by the page's path. A
    page written again at that path for a run whose answer to q1 changed restores the pick of q2
    (same answer) and not that of q1 (another answer nobody labelled yet); nor, findings-52 L11, a
    pick kept by an older page (no answer hash: nothing says it was made on this answer; it stays in
    the browser's storage)."""
    import json as json_lib
    import shutil
    import subprocess

    from rag_eval.hashing import text_hash
    from rag_eval.labels.human import write_html

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    answers = {"q1": "Use Z instead.", "q2": "Use Y.", "q3": "Use W."}
    rows = [
        {
            "question_id": q,
            "prompt": "base",
            "weight": 1.0,
            "question": f"Question {q}?",
            "reference": "R",
            "answerable": True,
            "answer": a,
            "contexts": [],
        }
        for q, a in answers.items()
    ]
    path = tmp_path / "labels.html"
    write_html(rows, path, {}, {})
    # What the earlier page at this path kept: a pick of q1's earlier answer "Use X." and of q2's
    # answer, each with its answer's hash as the page keeps them, and q3's kept by an older page.
    kept = {
        json_lib.dumps(["q1", "base", "correct", text_hash("Use X.")[:16]], separators=(",", ":")): "yes",
        json_lib.dumps(["q2", "base", "correct", text_hash("Use Y.")[:16]], separators=(",", ":")): "yes",
        json_lib.dumps(["q3", "base", "correct"], separators=(",", ":")): "yes",
    }
    before = f"<script>localStorage.setItem('rag-eval-labels:v2:' + location.pathname, {json_lib.dumps(json_lib.dumps(kept))});</script>"
    after = """<script>document.body.insertAdjacentHTML("beforeend", "<pre id=checked>" + [0, 1, 2].map(i =>
      document.querySelector(`[name="correct-${i}"][value="yes"]`).checked).join(",") + "</pre>");</script>"""
    text = path.read_text()
    path.write_text(text.replace("<body>", "<body>" + before, 1).replace("</body>", after + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'c'}"]
    dom = subprocess.run(
        [browser, *flags, "--virtual-time-budget=3000", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert '<pre id="checked">false,true,false</pre>' in dom


def test_the_labelling_page_shows_each_context_s_title(tmp_path):
    """Review 53 M5: the judges read a context's title before its text; the person labelling does too."""
    from rag_eval.labels.human import write_html

    row = {
        "question_id": "q1",
        "prompt": "base",
        "weight": 1.0,
        "question": "How do I add --version?",
        "reference": "R",
        "answerable": True,
        "answer": "Use click.version_option.",
        "contexts": ["c1"],
    }
    path = tmp_path / "labels.html"
    write_html([row], path, {"c1": "Add a --version option."}, {}, titles={"c1": "click.version_option"})
    assert "context 1: c1 · <b>click.version_option</b>" in path.read_text()


def test_agreement_counts_only_the_answers_the_judge_decided():
    """User trial 2 L2: an uncertain verdict's leaning enters the prediction-powered figure but is no
    decision, so the agreement is on the decided labelled answers, and none where all were uncertain."""
    from rag_eval.labels.human import Label, labelled_figures
    from rag_eval.report.markdown import agreement_cell
    from rag_eval.report.report_records import Report

    def record(q, prompt, status, v):
        base = {"judge": "correctness", "question_id": q, "prompt": prompt, "status": status}
        if status == "uncertain":
            return {**base, "details": {"leaning": "correct" if v else "incorrect", "leaning_score": float(v)}}
        return {**base, "verdict": "correct" if v else "incorrect", "score": float(v)}

    # Prompt a: 2 decided (one right, one wrong) and 2 uncertain leaning right. Prompt b: all uncertain.
    records = [
        record("q0", "a", "judged", 1),
        record("q1", "a", "judged", 1),
        record("q2", "a", "uncertain", 1),
        record("q3", "a", "uncertain", 0),
        *(record(f"q{i}", "b", "uncertain", 1) for i in range(4)),
    ]
    rows = [{"question_id": f"q{i}", "prompt": p, "answerable": True} for p in "ab" for i in range(4)]
    report = Report.load({"judges": {"metrics": ["correctness"], "records": records}, "attribution": {"rows": rows}})
    people = [1, 0, 1, 0]
    labels = [
        Label(f"q{i}", p, {"correct": bool(v), "faithful": None, "refused": None}, "x")
        for p in "ab"
        for i, v in enumerate(people)
    ]
    figs = labelled_figures(report, labels, {}, 0.95)
    a, b = figs["a"]["correctness"], figs["b"]["correctness"]
    assert (a.agreement_on_labelled, a.agreement_n) == (0.5, 2)  # the leanings (both right) do not count
    assert (b.agreement_on_labelled, b.agreement_n) == (None, 0)
    assert b.ppi is not None and b.ppi.n_labels == 4  # the leanings still enter the figure
    assert agreement_cell(a.agreement_on_labelled, a.agreement_n) == "0.50 of 2"
    assert agreement_cell(None, 0) == "– (none decided)"


def test_a_misnamed_label_column_is_refused_not_dropped(tmp_path):
    """User trial 4 F11: 'namesapi' and 'Third_Party' for the criteria names_api and third_party were
    read as no column at all: 24 labels dropped, exit 0. A person's own extra column stays allowed."""
    from rag_eval.labels.human import read_labels

    path = tmp_path / "labels.csv"
    path.write_text(
        "question_id,prompt,Correct,refusedd,my notes,citations_suport\nq1,base,yes,no,looked twice,yes\nq2,base,,,,\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError) as err:
        read_labels(path, {("q1", "base"), ("q2", "base")})
    text = str(err.value)
    assert f"{path}:2 (Correct): column 'Correct' is no label column of this run" in text
    assert "did you mean 'correct'?" in text and "did you mean 'refused'?" in text
    assert "did you mean 'citations_support'?" in text and "my notes" not in text
    # Review 55 M9: a column named after its judge.
    path.write_text("question_id,prompt,refusal,correctness\nq1,base,yes,no\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_labels(path, {("q1", "base")})
    assert "did you mean 'refused'?" in str(err.value) and "did you mean 'correct'?" in str(err.value)
    path.write_text("question_id,prompt,correct,my notes\nq1,base,yes,looked twice\n", encoding="utf-8")
    [label] = read_labels(path, {("q1", "base")})
    assert label.values["correct"] is True


def test_a_run_without_a_faithfulness_judge_asks_no_faithful_label(small_project):
    """User trial 4 F16/F21: labels.csv had a 'faithful' column no judge of the run read, and the
    labelling page showed an uncertain verdict as Python's None."""
    from rag_eval.attribution.records import JudgeBrief
    from rag_eval.labels.human import _shown_verdict

    server, cfg = _audit(small_project)
    cfg.write_text(cfg.read_text().replace("[correctness, refusal, faithfulness_yesno]", "[correctness, refusal]"))
    try:
        run_dir = run_audit(load_config(cfg))
    finally:
        server.__exit__(None, None, None)
    assert main(["label", str(run_dir), "--n", "4"]) == 0
    header = next(csv.reader((run_dir / "labels" / "labels.csv").open(encoding="utf-8")))
    assert "faithful" not in header and {"correct", "refused"} <= set(header)
    page = (run_dir / "labels" / "labels.html").read_text(encoding="utf-8")
    assert "Is everything the answer states supported by the contexts?" not in page
    assert _shown_verdict(JudgeBrief(status="uncertain")) == "uncertain"
    assert _shown_verdict(JudgeBrief(status="judged", score=0.5)) == "0.50"
