"""compare --stop-when-settled: the always-valid sign test, and a comparison that stops once one
prompt has won enough discordant questions, judging only those."""

import json
import shutil

import numpy as np
import pytest

from rag_eval.orchestration.sequential import sign_evalue

from ..conftest import ROOT, SMALL_CORPUS, write_jsonl


def test_the_evalue_grows_with_one_sided_wins_and_rarely_crosses_under_no_difference():
    assert sign_evalue(0, 0) == pytest.approx(1.0)
    assert sign_evalue(7, 0) > 20 > sign_evalue(6, 0)  # 7 straight wins settle one pair at alpha 0.05
    assert sign_evalue(10, 10) < 1
    # Under no difference, watched after every discordant question for 300 of them: the share of
    # 2,000 seeded runs that ever reach 1 / alpha = 20 stays under alpha (Ville's inequality).
    rng = np.random.default_rng(0)
    crossed = 0
    for _ in range(2000):
        wins = np.cumsum(rng.random(300) < 0.5)
        n = np.arange(1, 301)
        crossed += any(sign_evalue(int(w), int(k - w)) >= 20 for w, k in zip(wins[::5], n[::5]))
    assert crossed / 2000 <= 0.05


@pytest.mark.slow
def test_compare_stops_once_settled_and_judges_only_the_questions_used(tmp_path, capsys):
    from rag_eval.cli import main

    from ..scripted_server import ScriptedServer, judge_name, structured_reply

    questions = [
        {"id": f"q{i:02d}", "question": f"{c['text'].split(',')[0]} (variant {i})?", "answer_in": c["id"]}
        for i, c in enumerate(SMALL_CORPUS * 4)
    ]
    write_jsonl(tmp_path / "corpus.jsonl", SMALL_CORPUS)
    write_jsonl(tmp_path / "questions.jsonl", questions)
    shutil.copy(ROOT / "prompts" / "answer.md", tmp_path / "answer.md")
    (tmp_path / "refuse.md").write_text("REFUSE-PROMPT " + (ROOT / "prompts" / "answer.md").read_text())

    def reply(body):
        # The refusal judge calls every answer of the refuse prompt a refusal.
        if judge_name(body) == "refusal" and "REFUSE-PROMPT" in body["messages"][-1]["content"]:
            return "No: it declines."
        return structured_reply(body)

    with ScriptedServer(reply=reply) as s:
        llm = f"{{provider: openai, model: scripted, base_url: '{s.base_url}', max_retries: 1}}"
        (tmp_path / "audit.yaml").write_text(
            "name: seq\ncorpus: {path: corpus.jsonl}\ntest_set: {path: questions.jsonl}\n"
            "retrieval: {k: [1, 3], depth: 5, retrievers: {bm25: {type: bm25}}}\n"
            f"generation: {{retriever: bm25, top_k: 3, prompts: {{a: answer.md, b: refuse.md}}, llm: {llm}}}\n"
            f"judges: {{llm: {llm}, metrics: [refusal, faithfulness_yesno]}}\n"
            f"report: {{out: {tmp_path / 'runs'}}}\n"
        )
        code = main(["compare", str(tmp_path / "audit.yaml"), "--stop-when-settled", "--batch", "4"])
    assert code == 0
    printed = capsys.readouterr()
    assert "stopped when settled: 8 of 20 questions" in printed.out
    # User trial 3 L4: the second batch's "resumed ..." line follows one that says why.
    assert "--stop-when-settled: not settled on 4 questions; the same run folder goes on with 8 (4 more)" in printed.err
    [run_dir] = list((tmp_path / "runs").iterdir())
    report = json.loads((run_dir / "report.json").read_text())
    seq = report["comparison"]["sequential"]
    assert (seq["questions_used"], seq["questions_total"], seq["settled"]) == (8, 20, True)
    assert [look["questions"] for look in seq["looks"]] == [4, 8]
    [pair] = seq["looks"][-1]["pairs"]
    assert (pair["wins"], pair["losses"]) == (8, 0) and pair["e_value"] >= 20
    assert seq["calls_saved_estimate"] == round(seq["calls"] / 8 * 12) > 0
    generated = [json.loads(x) for x in (run_dir / "generation.jsonl").read_text().splitlines()]
    assert len(generated) == 16  # 8 questions x 2 prompts, none beyond the stop
    ok = next(c for c in report["comparison"]["comparisons"] if c["metric"] == "ok")
    assert (ok["wins"], ok["losses"]) == (8, 0)  # the fixed-sample test on the questions judged
    md = (run_dir / "report.md").read_text()
    assert "**Stopped when settled**" in md and "Jeffreys-mixture e-value" in md
