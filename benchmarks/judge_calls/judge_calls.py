"""LLM calls per answered question, by judge, counted on a scripted server.

    python benchmarks/judge_calls/judge_calls.py [--questions 20] [--top-k 3]

Baseline: the Ragas-bound budget per answered question with a reference: faithfulness 2, context
precision k (one per context), context recall 1, correctness 1, refusal 1, and faithfulness_yesno
one per sentence of the answer. Prints the measured
calls per judge and question, the ratio to that budget, and checks that no request was sent twice.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

# The scripted server is test support (tests/), beside the package in a checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from rag_eval import progress
from rag_eval.config import load_config
from rag_eval.orchestration.runner import run_audit
from tests.scripted_server import ScriptedServer, judge_name, structured_reply

ROOT = Path(__file__).resolve().parents[2]
STEP = {
    "StatementGeneratorOutput": "faithfulness",
    "NLIStatementOutput": "faithfulness",
    "ContextPrecisionOutput": "context_precision",
    "ContextRecallOutput": "context_recall",
    "correctness": "correctness",
    "refusal": "refusal",
    "supported": "faithfulness_yesno",
    "useful": "context_precision_yesno",
    None: "generation",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--top-k", type=int, default=3)
    args = parser.parse_args()
    progress.set_enabled(False)
    work = Path(tempfile.mkdtemp(prefix="rag-eval-judge-calls-"))
    n = args.questions
    corpus = [
        {"id": f"c{i}", "title": f"Topic {i}", "text": f"Fact number {i} is that item {i} weighs {i} grams."}
        for i in range(n + 5)
    ]
    questions = [
        {
            "id": f"q{i}",
            "question": f"How much does item {i} weigh?",
            "answer_in": f"c{i}",
            "reference": f"Item {i} weighs {i} grams.",
        }
        for i in range(n)
    ]
    (work / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (work / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    with ScriptedServer(reply=structured_reply) as server:
        llm = f"{{provider: openai, model: scripted, base_url: '{server.base_url}', concurrency: 8}}"
        (work / "c.yaml").write_text(
            f"name: judge-calls\ncorpus: {{path: {work / 'corpus.jsonl'}}}\ntest_set: {{path: {work / 'questions.jsonl'}}}\n"
            f"retrieval: {{k: [1, {args.top_k}], retrievers: {{bm25: {{type: bm25}}}}}}\n"
            f"generation: {{retriever: bm25, top_k: {args.top_k}, prompts: {{base: {ROOT / 'prompts' / 'answer.md'}}}, llm: {llm}}}\n"
            f"judges: {{llm: {llm}, prompts_dir: {ROOT / 'prompts' / 'judges'}}}\n"
            f"report: {{out: {work / 'runs'}}}\ncache_dir: {work / 'cache'}\n"
        )
        run_audit(load_config(work / "c.yaml"))
        bodies = list(server.bodies)
    counts = Counter(STEP[judge_name(b)] for b in bodies)
    # faithfulness_yesno: one call per sentence of the answer (one here).
    budget = {
        "faithfulness": 2,
        "context_precision": args.top_k,
        "context_recall": 1,
        "correctness": 1,
        "refusal": 1,
        "faithfulness_yesno": 1,
    }
    print(f"{n} answered questions, top_k = {args.top_k}; calls per answered question:")
    for judge, per_q in budget.items():
        measured = counts[judge] / n
        print(f"  {judge:<18} {measured:5.2f}  (budget {per_q}, ratio {measured / per_q:.2f}x)")
    total = sum(counts[j] for j in budget) / n
    print(
        f"  {'all judges':<18} {total:5.2f}  (budget {sum(budget.values())}, ratio {total / sum(budget.values()):.2f}x)"
    )
    digests = Counter(hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest() for b in bodies)
    repeated = sum(c - 1 for c in digests.values() if c > 1)
    print(f"requests sent twice: {repeated} of {len(bodies)}")


if __name__ == "__main__":
    main()
