"""The ``rag-eval`` command line. Exit status: 0 ok, 1 a gate failed, 2 bad config or data, 3 internal error."""

from __future__ import annotations

import argparse
import signal
import sys
import traceback

from rag_eval import __version__
from rag_eval.errors import RagEvalError


def _validate(args: argparse.Namespace) -> int:
    from rag_eval.config import load_config
    from rag_eval.runner import load_inputs

    cfg = load_config(args.config)
    inputs = load_inputs(cfg)
    n_ans = sum(q.answerable for q in inputs.questions)
    print(
        f"{args.config}: ok. Corpus: {len(inputs.corpus)} chunks ({inputs.corpus.source}). "
        f"Test set: {len(inputs.questions)} questions, {n_ans} answerable, "
        f"{len(inputs.questions) - n_ans} unanswerable."
    )
    return 0


def _retrieval(args: argparse.Namespace) -> int:
    from rag_eval.config import load_config
    from rag_eval.report.markdown import fmt
    from rag_eval.runner import run_retrieval

    cfg = load_config(args.config)
    run_dir = run_retrieval(cfg, out=args.out)
    import json

    summary = json.loads((run_dir / "summary.json").read_text())
    from rag_eval.report.build import table_metrics

    cols = [m for m in table_metrics(cfg.retrieval.k) if m in next(iter(summary["retrieval"].values()))]
    print(f"{'retriever':<12}" + "".join(f"{m:>24}" for m in cols))
    for name, figs in summary["retrieval"].items():
        print(f"{name:<12}" + "".join(f"{fmt(figs[m]):>24}" for m in cols))
    for pairs in summary["retrieval_comparison"].values():
        for pair in pairs.values():
            print(f"- {pair['verdict']}")
    print(f"run folder: {run_dir}")
    return 0


def _lint(args: argparse.Namespace) -> int:
    from rag_eval.config import load_config
    from rag_eval.lint import fails
    from rag_eval.runner import run_lint

    cfg = load_config(args.config)
    findings = run_lint(cfg)
    for f in findings:
        print(f"[{f.severity}] {f.code}: {f.message}")
        if f.questions:
            more = f" (+{len(f.questions) - 12} more)" if len(f.questions) > 12 else ""
            print(f"    questions: {', '.join(f.questions[:12])}{more}")
        if f.fix:
            print(f"    fix: {f.fix}")
    failed = fails(cfg, findings)
    print(f"lint: {len(findings)} findings; " + (f"failing (lint.fail_on: {cfg.lint.fail_on})" if failed else "ok"))
    return 1 if failed else 0


def _run(args: argparse.Namespace) -> int:
    from rag_eval.config import load_config
    from rag_eval.runner import run_audit

    cfg = load_config(args.config)
    run_dir = run_audit(cfg, out=args.out, use_cache=not args.no_cache)
    print(f"run folder: {run_dir}")
    return 0


def _judge_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rag_eval.cache import cache_root
    from rag_eval.config import LLMConfig
    from rag_eval.judge_check import run_judge_check
    from rag_eval.report.markdown import fmt

    llm = LLMConfig(provider=args.llm, model=args.model, base_url=args.base_url, api_key_env=args.api_key_env)
    scores = run_judge_check(Path(args.cases), llm, cache_root(), Path(args.prompts_dir), threshold=args.threshold)
    print(f"{'judge':<14}{'accuracy [95% CI]':>26}{'kappa [95% CI]':>26}{'n':>5}{'not judged':>12}")
    for s in scores:
        print(
            f"{s.judge:<14}{fmt(s.accuracy.to_dict(), 2):>26}{fmt(s.kappa.to_dict(), 2):>26}{s.accuracy.n:>5}"
            f"{s.not_judged:>12}"
        )
        print(
            "    confusion (label -> predicted): "
            + "; ".join(f"{lab}: " + ", ".join(f"{p} {n}" for p, n in row.items()) for lab, row in s.confusion.items())
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-eval", description="Audit a RAG system stage by stage.")
    parser.add_argument("--version", action="version", version=f"rag-eval {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or status lines")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check the config, the corpus and the test set's labels; no retrieval")
    p.add_argument("config")
    p.set_defaults(func=_validate)

    p = sub.add_parser("run", help="the whole audit: retrieval, generation, judges, report")
    p.add_argument("config")
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.set_defaults(func=_run)

    p = sub.add_parser("judge-check", help="accuracy and Cohen's kappa of every judge on a hand-labelled set")
    p.add_argument("--cases", default="data/judge-check/cases.jsonl")
    p.add_argument("--llm", choices=["local", "openai"], default="local", help="provider of the judge model")
    p.add_argument("--model", help="model name (provider openai, or a custom local server)")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint")
    p.add_argument("--api-key-env", help="environment variable holding the API key")
    p.add_argument("--prompts-dir", default="prompts/judges")
    p.add_argument("--threshold", type=float, default=0.5, help="faithfulness score counted as faithful")
    p.set_defaults(func=_judge_check)

    p = sub.add_parser("lint", help="test-set health: copied wording, missing hard cases, suspect labels, size")
    p.add_argument("config")
    p.set_defaults(func=_lint)

    p = sub.add_parser("retrieval", help="run the retrieval stage only (no LLM)")
    p.add_argument("config")
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.set_defaults(func=_retrieval)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rag_eval import progress

    progress.set_enabled(not args.quiet)
    # A polite kill ends like Ctrl-C: the local model server is stopped and records are kept.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return args.func(args)
    except RagEvalError as exc:
        print(f"rag-eval: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("rag-eval: interrupted; finished records are in the run folder", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print(
            "rag-eval: internal error (a bug in rag-eval): please report it with the traceback above", file=sys.stderr
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
