"""The user's own criteria on real RAG answers, labelled blind (issue 48 item 6).

Three criteria of different kinds, asked of the embedded model's real answers of
``benchmarks/real_answers`` (the answers its readers did not label a refusal): one visible in the
answer (``names_api``), one that needs the contexts (``quotes_context``), one a matter of judgement
(``only_asked``). Readers who saw only ``data/labeller.md`` and their packets labelled every answer
for the three before any judge ran on them.

Parts are fixed by corpus before anything ran: labels are drawn from the **calibration** part
(attrs, structlog) as ``rag-eval label`` draws them; every figure is measured on the **held-out**
part (python-dotenv, tinytag, tenacity, tabulate), on which nothing is chosen.

    python benchmarks/criteria/criteria_study.py packets    # the blind packets and their halves
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
REAL = ROOT / "benchmarks" / "real_answers" / "data"
PARTS = {
    "attrs": "calibration",
    "structlog": "calibration",
    "dotenv": "heldout",
    "tinytag": "heldout",
    "tenacity": "heldout",
    "tabulate": "heldout",
}
PACKETS = DATA / "packets-criteria.jsonl"
HALVES = 2


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def packets() -> None:
    """The blind packets: every answer of the parts' corpora that its reader did not label a
    refusal, with what a reader of the criteria needs (question, contexts as the model saw them,
    answer) and nothing of any judge, prompt or reference; shuffled, and cut in halves, one per
    labeller."""
    rows = []
    for corpus in PARTS:
        refused = {r["packet_id"]: r["refused"] for r in _jsonl(REAL / "labels" / f"labels-{corpus}.jsonl")}
        for p in _jsonl(REAL / "packets" / f"packets-{corpus}.jsonl"):
            if not refused[p["packet_id"]]:
                rows.append({k: p[k] for k in ("packet_id", "question", "contexts", "answer")})
    random.Random(48).shuffle(rows)
    PACKETS.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    size = -(-len(rows) // HALVES)
    for i in range(HALVES):
        half = rows[i * size : (i + 1) * size]
        (DATA / f"packets-criteria-{i + 1}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in half), encoding="utf-8"
        )
    print(f"{len(rows)} packets in {PACKETS.relative_to(ROOT)}, {HALVES} halves of up to {size}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("packets", help="write the blind packets and their halves")
    args = parser.parse_args(argv)
    if args.command == "packets":
        packets()


if __name__ == "__main__":
    main()
