"""Writes the run folders under tests/data/old_runs/ that tests/report/test_old_runs.py re-renders.

They were written by rag-eval before the typed report (main at 724a6f0), with the scripted
server: an audit of two prompts compared (with misses, diagnoses, a comparison and human
labels), a retrieval-only run and supplied answers. ``demo-retrieval`` is
`rag-eval retrieval configs/demo.yaml` of the same code (misses with their diagnoses). Run it only to add a new kind of folder:
the point of the committed ones is that they come from the earlier code.

    PYTHONPATH=. python tests/data/old_runs/make_runs.py
"""

import csv
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

KEEP = ("report.json", "summary.json", "report.md")


def _keep(run_dir: Path, name: str) -> None:
    dest = HERE / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    for f in KEEP:
        if (run_dir / f).exists():
            shutil.copy(run_dir / f, dest / f)
    for f in ("generation.jsonl", "judgements.jsonl"):
        if (run_dir / f).exists():  # the labels and the API read them
            shutil.copy(run_dir / f, dest / f)


def main() -> None:
    import rag_eval
    from rag_eval import progress
    from rag_eval.config import load_config
    from rag_eval.labels.human import label_run
    from rag_eval.orchestration.runner import run_compare, run_retrieval
    from rag_eval.report.files import write_report
    from rag_eval.report.report_records import Report
    from tests.conftest import SMALL_CORPUS, SMALL_QUESTIONS, write_jsonl
    from tests.scripted_server import ScriptedServer, judge_name, structured_reply

    progress.set_enabled(False)
    tmp = Path(tempfile.mkdtemp())
    import os

    os.environ["RAG_EVAL_CACHE_DIR"] = str(tmp / "cache")
    write_jsonl(tmp / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp / "questions.jsonl", SMALL_QUESTIONS)
    (tmp / "a.md").write_text((ROOT / "prompts" / "answer.md").read_text())
    (tmp / "b.md").write_text((ROOT / "prompts" / "answer.md").read_text().replace("You", "You, a careful assistant,"))
    base = (
        "name: small\ncorpus: {path: corpus.jsonl}\ntest_set: {path: questions.jsonl}\n"
        "retrieval:\n  k: [1, 3]\n  depth: 5\n  retrievers:\n    bm25: {type: bm25}\n"
        f"report: {{out: {tmp / 'runs'}}}\n"
    )
    (tmp / "retrieval.yaml").write_text(base)
    _keep(run_retrieval(load_config(tmp / "retrieval.yaml")), "retrieval")

    def reply(body):
        text = json.dumps(body["messages"])
        if judge_name(body) == "refusal" and "The documents do not answer" in text:
            return "No: it declines."
        if judge_name(body) == "correctness" and "distinct hashable" in body["messages"][-1]["content"]:
            return "No: the answer misses the reference."
        if judge_name(body) is None and "careful assistant" in text:
            return "The documents do not answer this question."
        return structured_reply(body)

    with ScriptedServer(reply=reply) as s:
        llm = f"{{provider: openai, model: scripted, base_url: '{s.base_url}', max_retries: 1}}"
        (tmp / "compare.yaml").write_text(
            base.replace("name: small", "name: small-compare")
            + f"generation:\n  retriever: bm25\n  top_k: 2\n  prompts: {{a: a.md, b: b.md}}\n  llm: {llm}\n"
            + f"judges:\n  llm: {llm}\n  prompts_dir: {ROOT / 'prompts' / 'judges'}\n"
        )
        run_dir = run_compare(load_config(tmp / "compare.yaml"))
        labels = tmp / "labels.csv"
        with labels.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["question_id", "prompt", "correct", "faithful", "refused"])
            w.writerows([["q1", "a", "yes", "yes", "no"], ["q2", "a", "yes", "yes", "no"], ["q4", "a", "", "", "no"]])
        report = Report.load(json.loads((run_dir / "report.json").read_text()))
        write_report(run_dir, label_run(report, run_dir, labels, 0.95))
        _keep(run_dir, "compare-labelled")

        result = rag_eval.judge_answers(
            [
                {
                    "question": "What is a set?",
                    "contexts": [SMALL_CORPUS[3]["text"]],
                    "answer": "A collection.",
                    "reference": "An unordered collection of distinct hashable objects.",
                },
                {
                    "question": "Who wrote the tutorial?",
                    "contexts": ["Bananas are yellow."],
                    "answer": "Guido.",
                    "answerable": False,
                },
            ],
            judges={
                "llm": {"provider": "openai", "model": "scripted", "base_url": s.base_url, "max_retries": 1},
                "metrics": ["refusal", "correctness", "context_recall_yesno", "faithfulness_yesno"],
            },
            out=tmp / "runs",
        )
        _keep(result.run_dir, "supplied")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
