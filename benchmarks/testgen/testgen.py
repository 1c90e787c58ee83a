"""Test generation on the demo corpus: what ``rag-eval generate`` keeps, drops and costs, and how
the generated set ranks the demo's retrievers beside the hand-written questions.

    python benchmarks/testgen/testgen.py [--n 20] [--config configs/demo.yaml] [--out FILE]

Runs, each as a fresh process as a user would: ``rag-eval generate CONFIG --n N --no-cache``
(from an empty response cache, so every model call is really made and timed), then
``rag-eval retrieval CONFIG --test-set GENERATED`` and ``rag-eval retrieval CONFIG`` (the
config's hand-written questions). Writes ``result.json`` beside this script (the file
``docs/validation/testgen.md`` reads): the generation report (asked, drafted, kept, dropped and
why, kinds, quotes, seconds, model calls, lint findings), each retriever's hit@5 and MRR with
their 95% bootstrap intervals on both sets, the smallest Holm-corrected p of the paired
comparisons on each set, and the command, date, commit and machine. Needs the embedded model;
about 20 minutes on 2 cores, so run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULT = Path(__file__).resolve().parent / "result.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
from run_info import commit, machine  # noqa: E402

RETRIEVERS = ("bm25", "dense", "hybrid")
METRICS = ("hit@5", "mrr")


def rag_eval(*args: str) -> None:
    """Run the CLI as a fresh process from the repository root; stop on failure."""
    cmd = [str(Path(sys.executable).parent / "rag-eval"), *args]
    print("$ rag-eval", " ".join(args), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def retrieval_figures(config: str, out: Path, test_set: Path | None) -> dict[str, Any]:
    """hit@5 and MRR per retriever, and the smallest Holm-corrected p of the paired comparisons."""
    rag_eval("retrieval", config, "--out", str(out), *(["--test-set", str(test_set)] if test_set else []))
    summary = json.loads(next(out.glob("*/summary.json")).read_text(encoding="utf-8"))
    figures = {r: {m: summary["retrieval"][r][m] for m in METRICS} for r in RETRIEVERS}
    p_holm = [pair["p_holm"] for pairs in summary["retrieval_comparison"].values() for pair in pairs.values()]
    return {
        "questions": summary["test_set"]["answerable"],
        "retrievers": figures,
        "min_p_holm": min((p for p in p_holm if p is not None), default=None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20, help="questions to keep (default: %(default)s)")
    parser.add_argument("--config", default="configs/demo.yaml")
    parser.add_argument("--out", type=Path, default=RESULT, help="where the result goes (default: %(default)s)")
    parser.add_argument(
        "--generated",
        type=Path,
        help="a test set an earlier run of this script generated (its report beside it): measure the rest on it",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="testgen-"))
    wall = None
    if args.generated:
        generated = args.generated.resolve()
    else:
        generated = work / f"demo{args.n}.jsonl"
        start = time.perf_counter()
        rag_eval("generate", args.config, "--n", str(args.n), "--no-cache", "--out", str(generated))
        wall = round(time.perf_counter() - start, 1)
    # rag-eval generate writes its report beside the test set: demo20.jsonl -> demo20.report.json
    report = json.loads(generated.with_suffix(".report.json").read_text(encoding="utf-8"))
    calls = sum(u.get("calls", 0) for u in report.get("usage", []))
    result = {
        "generate": {
            "asked": report["asked"],
            "drafts": report["drawn"],
            "kept": report["kept"],
            "dropped": report["dropped"],
            "kinds": report["kinds"],
            "wanted_kinds": report["wanted_kinds"],
            "quotes": report["quotes"],
            "seconds": report["seconds"],
            "seconds_per_kept": report["seconds_per_kept"],
            "wall_s": wall,
            "model_calls": calls,
            "lint": {f["code"]: f for f in report["lint"]},
        },
        "retrieval": {
            "generated": retrieval_figures(args.config, work / "runs-generated", generated),
            "hand_written": retrieval_figures(args.config, work / "runs-hand", None),
        },
        "command": f"python benchmarks/testgen/testgen.py --n {args.n} --config {args.config}"
        + (" --generated <the test set the previous command of this script generated>" if args.generated else ""),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for path in (generated, generated.with_suffix(".report.json")):
        (args.out.parent / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    print(f"written to {args.out} (and the generated set and its report beside it, {generated.name})")


if __name__ == "__main__":
    main()
