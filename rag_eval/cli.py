"""The ``rag-eval`` command line. Exit status: 0 ok, 1 a gate failed, 2 bad config or data, 3 internal error."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import traceback
from pathlib import Path

from rag_eval import api, progress
from rag_eval.answers.answer_records import Usage
from rag_eval.base_records import required
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.adapted import AdaptedCheck
from rag_eval.calibration.cutoffs import user_path
from rag_eval.config import load_config
from rag_eval.data.inputs import load_inputs
from rag_eval.data.settings import TestSetConfig
from rag_eval.errors import ConfigError, DataError, Problem, RagEvalError
from rag_eval.judges.cascade import measure, second_opinions
from rag_eval.judges.judge_check import Prediction, halueval_cases, read_case_files, run_judge_check
from rag_eval.judges.judge_records import BandOutOfFold, FittedBand
from rag_eval.judges.registry import FAITHFUL_SHARE, JUDGES
from rag_eval.labels.human import known_answers, label_run, read_labels, weights_of
from rag_eval.labels.merge import design_path
from rag_eval.llm.settings import LLMConfig, PriceConfig
from rag_eval.offline import go_offline
from rag_eval.orchestration.adapt import adapt_run
from rag_eval.orchestration.finished import read_run
from rag_eval.orchestration.history import collect_history, history_text
from rag_eval.orchestration.label_draw import draw_labels
from rag_eval.orchestration.pipeline import RunInterrupted
from rag_eval.orchestration.sources import LABELS_DRAWN
from rag_eval.preflight import preflight
from rag_eval.report.ci_outputs import write_ci_outputs
from rag_eval.report.diff_report import diff_gate_markdown, render_diff_markdown
from rag_eval.report.files import ADAPTED, LABELLED, write_report
from rag_eval.report.gates import describe_failure
from rag_eval.report.history_html import render_history_html
from rag_eval.report.markdown import fmt
from rag_eval.report.report_records import LintFinding
from rag_eval.report.screen import one_screen
from rag_eval.retrievers.lint import fails, generic_labels, split_evidence
from rag_eval.rundir import write_json, write_text
from rag_eval.system.replies import failure_lines
from rag_eval.system.trial import describe, try_system
from rag_eval.testgen.question_writer import GenerationReport
from rag_eval.version import __version__
from rag_eval.view.serve import DEFAULT_HOST, DEFAULT_PORT, serve


def _validate(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    inputs = load_inputs(cfg)
    # Every check before the verdict: "ok" is printed only for a config that has no problem.
    preflight(cfg)
    if getattr(args, "try_question", None):
        if cfg.system is None:
            raise ConfigError(
                Problem(str(args.config), "--try asks the system, but the config has no system: section", "add one")
            )
        trial = try_system(cfg, args.try_question)
        print(describe(cfg, trial, inputs.corpus))
        if trial.reply.error is not None:
            raise DataError(
                Problem(
                    cfg.where("system"),
                    f"the system's reply to --try is unusable: {trial.reply.error}",
                    "match answer, contexts and ids to the reply shown above (JSON paths such as $.sources[*].id)"
                    if trial.status == 200
                    else "check the URL, the body and that the service is up",
                )
            )
    n_ans = sum(q.answerable for q in inputs.questions)
    print(
        f"{args.config}: ok. Corpus: {len(inputs.corpus)} chunks ({inputs.corpus.source}). "
        f"Test set: {len(inputs.questions)} questions, {n_ans} answerable, "
        f"{len(inputs.questions) - n_ans} unanswerable."
    )
    counts = [n for q in inputs.questions for n in q.quote_matches.values()]
    if counts:
        print(
            f"Evidence quotes: {len(counts)}, matching {min(counts)} to {max(counts)} chunks each "
            f"(median {sorted(counts)[len(counts) // 2]})."
        )

    for f in generic_labels(cfg, inputs.questions):
        print(f"warning: {f.message} ({', '.join(f.questions[:8])}). Fix: {f.fix}")
    for f in split_evidence(inputs.questions):
        print(f"note: {f.message}")
    return 0


def _retrieval(args: argparse.Namespace) -> int:
    result = api.retrieval(_with_test_set(args), out=args.out, progress=progress.shown(), baseline=args.baseline)
    summary = result.summary
    n = sum(len(pairs) for pairs in summary["retrieval_comparison"].values())
    if n:
        print(
            f"Paired comparisons (p-values Holm-corrected across all {n}; the 95% intervals of the differences "
            "are per comparison, not adjusted):"
        )
    for pairs in summary["retrieval_comparison"].values():
        for pair in pairs.values():
            print(f"- {pair['verdict']}")
    return _finish(result, args, "retrieval")


def _lint(args: argparse.Namespace) -> int:
    cfg = _with_test_set(args)
    findings = api.lint(cfg)
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
    resume = True if args.resume == "newest" else args.resume
    result = api.audit(
        _with_test_set(args),
        out=args.out,
        use_cache=not args.no_cache,
        resume=resume,
        progress=progress.shown(),
        baseline=args.baseline,
    )
    return _finish(result, args, "audit")


def _print_failures(result) -> None:
    """The questions a deployed system failed, with each reason (the first 5, then a count)."""
    system = result.typed_report.system
    if system is None or not system.failed:
        return
    print(f"{len(system.failed)} of {system.questions} questions failed (not judged; gate: system.failed):")
    failed = [(f.question_id, f.error or "no error recorded") for f in system.failed]
    print("\n".join(failure_lines(result.config, failed)))


def _with_test_set(args: argparse.Namespace):
    """The config, with ``--test-set PATH`` (relative to the working folder) in place of its test set."""
    cfg = api.as_config(args.config)
    if getattr(args, "test_set", None):
        cfg = cfg.model_copy(update={"test_set": TestSetConfig(path=str(Path(args.test_set).resolve()))})
    return cfg


def _finish(result, args: argparse.Namespace, suite: str) -> int:
    """The one-screen summary, what opening the run folder did (a resume), the failed questions
    of a deployed system, then the gates (exit 1 when one fails) and the CI files asked for."""
    print(one_screen(result.summary))
    status = result.status
    if status is not None and status.opened and status.opened.startswith(("--resume", "resumed")):
        print(status.opened)
    _print_failures(result)
    print(f"run folder: {result.run_dir} (report.md, report.html, summary.json)")
    extra = None
    if result.diff is not None:
        print(str(result.diff))
        print(f"diff against the baseline: {result.run_dir}/diff.md and diff.json")
        extra = diff_gate_markdown(result.diff.to_json())
    results = result.gates()
    for r in results:
        print(f"gate {r.message}")
        if not r.passed:
            print("\n".join(describe_failure(r, result.summary, result.report, result.run_dir).splitlines()[1:]))
    write_ci_outputs(
        results, result.summary, result.report, result.run_dir, suite, args.junit_xml, args.summary_md, extra
    )
    return 0 if all(r.passed for r in results) else 1


def _judge_check(args: argparse.Namespace) -> int:
    if args.criteria:  # the config's own criteria become judges, measured on cases labelled for them
        criteria_cfg = load_config(args.criteria)
        if criteria_cfg.judges is None or not criteria_cfg.judges.criteria:
            raise ConfigError(
                Problem(args.criteria, "the config has no judges.criteria", "add criteria, or leave out --criteria")
            )
        if not args.prompts_dir and criteria_cfg.judges.prompts_dir:
            args.prompts_dir = str(criteria_cfg.resolve_path(criteria_cfg.judges.prompts_dir))
    cases = read_case_files(args.cases)
    for spec in args.halueval or []:
        path, _, span = spec.partition(":")
        start, _, stop = span.partition("-")
        cases += halueval_cases(Path(path), int(start or 0), int(stop) if stop else None)
    llm = LLMConfig(provider=args.llm, model=args.model, base_url=args.base_url, api_key_env=args.api_key_env)
    judges = args.judges.split(",") if args.judges else None
    scores, usage = run_judge_check(
        cases,
        llm,
        cache_root(),
        Path(args.prompts_dir) if args.prompts_dir else None,
        judges=judges,
        threshold=args.threshold,
        folds=args.folds,
        save=args.save,
        uncertain_target=args.uncertain_target,
        adapt=args.adapt,
    )
    print("Out-of-fold figures (each case decided with a cut-off fitted on the other folds):")
    print(
        f"{'judge':<20}{'source':<14}{'accuracy [95% CI]':>22}{'bal.acc':>9}{'kappa [95% CI]':>24}{'AUC':>6}{'n':>5}{'nj':>4}"
    )
    for s in scores:
        auc = f"{s.auc:.2f}" if s.auc is not None else "–"
        bal = f"{s.balanced_accuracy:.2f}" if s.balanced_accuracy is not None else "–"
        print(
            f"{s.judge:<20}{s.source:<14}{fmt(s.accuracy.to_dict(), 2):>22}{bal:>9}{fmt(s.kappa.to_dict(), 2):>24}"
            f"{auc:>6}{s.accuracy.n:>5}{s.not_judged:>4}"
        )
        if s.source == "all":
            cut = f"; cut-off fitted on all: {s.cutoff_text()}" if s.cutoffs else ""
            print(
                f"    {s.method}{cut}; confusion (label -> predicted): "
                + "; ".join(
                    f"{lab}: " + ", ".join(f"{p} {n}" for p, n in row.items()) for lab, row in s.confusion.items()
                )
            )
            print(_band_line(s))
    adapted = [AdaptedCheck(**s.extra["adapted"]) for s in scores if "adapted" in s.extra]
    if adapted:
        print(
            f"\nAdapted on {args.adapt} labelled cases of each source (seeded draws), measured on the source's other "
            "cases, beside the saved judge on the same cases (decided verdicts right; share uncertain):"
        )
        for a in adapted:
            sd = f"{a.shipped_decided:.2f}" if a.shipped_decided is not None else "–"
            ad = f"{a.adapted_decided:.2f}" if a.adapted_decided is not None else "–"
            print(
                f"  {a.judge:<20}{a.source:<14} saved {sd} ({a.shipped_uncertain:.0%} uncertain)  "
                f"adapted {ad} ({a.adapted_uncertain:.0%} uncertain)  {a.cases} cases, {a.draws} draws"
            )
    for u in map(Usage.load, usage):
        print(
            f"model {u.model}: {u.calls} calls, {u.cache_hits} from cache, {u.prompt_tokens} prompt "
            f"and {u.completion_tokens} completion tokens"
        )
    if args.save:
        print(f"cut-offs and bands saved to {user_path()}")
    cascade = _cascade(args, cases, scores, usage) if args.escalate else None
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"scores": [s.to_dict() for s in scores], "usage": usage, **({"cascade": cascade} if cascade else {})},
                indent=2,
            )
        )
    return 0


def _band_line(s) -> str:
    """A judge's band of uncertain decisions, as judge-check fitted and measured it."""
    fitted, out_of_fold = s.extra.get("bands"), s.extra.get("band_out_of_fold")
    if not fitted:
        return "    no band of uncertain decisions (no probabilities)"
    bands = {v: FittedBand.load(b) for v, b in fitted.items()}
    oof = BandOutOfFold.load(out_of_fold)
    edges = ", ".join(
        f"{v + ' ' if len(bands) > 1 else ''}"
        + (f"[{b.low:.3f}, {b.high:.3f})" if b.high > b.low else "empty (the cut-off alone reaches it)")
        + (f" (target {b.target:.2f})" if b.reached else f" (target {b.target:.2f} not reached)")
        for v, b in bands.items()
    )
    acc = f"{oof.decided_accuracy:.2f}" if oof.decided_accuracy is not None else "–"
    return (
        f"    uncertain band {edges}; out of fold: decided {oof.n_decided} of {oof.n} agree on {acc}, "
        f"{oof.uncertain_share:.0%} uncertain"
    )


def _cascade(args: argparse.Namespace, cases, scores, usage: list[dict]) -> list[dict]:
    """judge-check --escalate: first judge alone, second alone and the cascade on the cases."""
    prices = PriceConfig()
    if args.escalate_prices:
        inp, _, out = args.escalate_prices.partition(",")
        prices = PriceConfig(input=float(inp), output=float(out or inp))
    second = LLMConfig(
        provider="openai",
        model=args.escalate_model or "second",
        base_url=args.escalate,
        api_key_env=args.escalate_api_key_env,
        prices=prices,
    )

    # Judges without a prompt of their own to ask again (Ragas) cannot be escalated.
    names = [n for n in dict.fromkeys(s.judge for s in scores) if JUDGES[n].family == "scored"]
    prompts = Path(args.prompts_dir) if args.prompts_dir else None
    # The first judge's probabilities, as judge-check kept them per case.
    preds = {}
    for s in scores:
        if s.source == "all" and s.judge in names:
            got = {c["id"]: Prediction(probs=c["p"], variant=c["variant"]) for c in s.extra.get("cases", [])}
            preds[s.judge] = [got.get(c["id"], Prediction(error="not judged")) for c in cases]
    ops, usage_second = second_opinions(cases, names, second, cache_root(), prompts)
    used = [Usage.load(u) for u in usage]
    first_usage = {"calls": sum(u.calls + u.cache_hits for u in used), "cost": sum(u.cost for u in used)}
    rows = []
    for name in names:
        rows += measure(
            name,
            cases,
            preds[name],
            ops[name],
            first_usage,
            usage_second,
            threshold=args.threshold,
            folds=args.folds,
            seed=0,
            target=args.uncertain_target,
        )
    print(f"\nCascade (uncertain decisions of the first judge asked of {second.model} at {second.base_url}):")
    print(
        f"{'judge':<20}{'way':<14}{'accuracy [95% CI]':>22}{'n':>5}{'undecided':>10}{'calls 1st':>10}{'calls 2nd':>10}{'cost':>10}"
    )
    for r in rows:
        print(
            f"{r.judge:<20}{r.way:<14}{fmt(r.accuracy.to_dict(), 2):>22}{r.accuracy.n:>5}{r.undecided:>10}"
            f"{r.calls_first:>10}{r.calls_second:>10}{r.cost:>10.4f}"
        )
    return [r.to_dict() for r in rows]


def _compare(args: argparse.Namespace) -> int:
    result = api.compare(
        args.config,
        out=args.out,
        use_cache=not args.no_cache,
        progress=progress.shown(),
        stop_when_settled=args.stop_when_settled,
        batch=args.batch,
        seed=args.seed,
        baseline=args.baseline,
    )
    comparison = result.typed_report.comparison
    seq = comparison.sequential if comparison else None
    if seq:
        print(
            f"stopped {'when settled' if seq.settled else 'at the end, not settled'}: {seq.questions_used} of "
            f"{seq.questions_total} questions, about {seq.calls_saved_estimate} model calls saved"
        )
    for pairs in result.summary.get("comparison", {}).values():
        for c in pairs.values():
            print(f"- {c['verdict']}")
    return _finish(result, args, "compare")


def _report(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    report = read_run(run_dir).report
    if args.adapt and not args.labels:
        raise DataError(Problem("--adapt", "adapting the judges needs the run's labels", "add --labels FILE"))
    if not args.labels:
        written = write_report(run_dir, report)
        print("re-rendered the audit's report: " + ", ".join(str(p) for p in written))
        return 0
    kind = LABELLED
    if args.adapt:
        labels = read_labels(Path(args.labels), known_answers(run_dir))
        report = adapt_run(
            report,
            labels,
            run_dir=run_dir,
            weights=weights_of(run_dir),
            how=args.adapt,
            confidence=args.confidence,
            source=args.labels,
            save=not args.no_save,
        )
        if report.adaptation is None:
            print("no judge of this run decides at a cut-off on a probability: nothing adapted, the labels alone count")
        else:
            kind = ADAPTED
            print(report.adaptation.note)
            for a in report.adaptation.judges:
                print(
                    f"  {a.variant}: {a.labels} labels, cut-off {a.cutoff_before:.3f} -> {a.cutoff_after:.3f}, "
                    f"{a.changed} verdicts changed, uncertain {a.uncertain_before} -> {a.uncertain_after}"
                )
            if args.no_save:
                print("--no-save: the adaptation is not kept for later audits")
    else:
        report = label_run(report, run_dir, Path(args.labels), args.confidence)
    lab = required(report.labels, "the report's labels section")
    print(
        f"labels: {lab.answers_labelled} answers ("
        + ", ".join(f"{c} {n}" for c, n in lab.per_column.items())
        + "); prediction-powered figures added"
    )
    # The audit's own report is the run's record: a re-decision is written beside it, never over it.
    written = write_report(run_dir, report, kind)
    print("wrote, beside the audit's own report (left as it was):")
    for path in written:
        print(f"  {path}")
    return 0


def _label(args: argparse.Namespace) -> int:
    got = draw_labels(
        Path(args.run_dir),
        args.n,
        args.seed,
        active=not args.uniform,
        out=args.out and Path(args.out),
        width=args.width,
    )
    merged, draw, csv_path = got.merged, got.draw, got.csv
    how = "a plain random draw" if args.uniform else "drawn favouring uncertain and outcome-deciding verdicts"
    if merged.same_draw:
        print(
            f"{csv_path} already holds this draw ({draw.n} questions, seed {args.seed}): nothing added; its "
            f"{merged.kept_labelled} labelled answers and {merged.kept_unlabelled} still to label kept as they were. "
            "Another --seed (or a larger --n) adds the answers of a new draw."
        )
    elif merged.backup is not None:
        print(
            f"kept {merged.kept_labelled} labelled answers and {merged.kept_unlabelled} still to label in {csv_path} "
            f"(labels and notes as they were), added {merged.added} new answers: a new draw ({draw.n} questions, "
            f"seed {args.seed}, {how}) drawn independently of the {len(merged.design.draws) - 1} before it; every "
            "row's inclusion probability is now that of the union of the draws "
            f"({design_path(csv_path).name}). The file as it was: {merged.backup}."
        )
    else:
        replaced = f" (replacing the {merged.replaced} unlabelled rows that were there)" if merged.replaced else ""
        print(
            f"{got.rows} answers to label ({got.questions} questions, seed {args.seed}, {how}): "
            f"{csv_path}{replaced} (fill in yes/no) or {got.html} (open in a browser; Save labels "
            "downloads labels.csv)."
        )
    if got.max_chars is not None:
        print(
            f"{got.html} shows each context as the generator and the judges were given it (the first "
            f"{got.max_chars} characters; the rest folded, marked not seen by the model)."
        )
    print(f"Then: rag-eval report {Path(args.run_dir)} --labels {csv_path}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in {"n": args.n, "seed": args.seed}.items() if v is not None}
    if args.mix:
        overrides["mix"] = _parse_mix(args.mix)
    report = GenerationReport.load(
        api.generate(args.config, out=args.out, progress=progress.shown(), use_cache=not args.no_cache, **overrides)
    )
    print(
        f"{report.kept} questions kept of {report.drawn} drafted ({report.asked} asked) in "
        f"{report.seconds:.0f} s ({report.seconds_per_kept or 0:.1f} s per kept question), model {report.model}"
    )
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in report.kinds.items()))
    if report.quotes:
        print("evidence quotes of answerable drafts: " + ", ".join(f"{k} {n}" for k, n in report.quotes.items()))
    if report.dropped:
        print("dropped: " + ", ".join(f"{why} {n}" for why, n in report.dropped.items()))
    for f in map(LintFinding.load, report.lint):
        print(f"lint [{f.severity}] {f.code}: {f.message}")
    if report.lint_error:
        print(f"lint: {report.lint_error}")
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.report.json')}")
    return 0 if report.kept else 1


def _parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        kind, _, share = part.partition("=")
        try:
            mix[kind.strip()] = float(share)
        except ValueError:
            raise ConfigError(
                Problem("--mix", f"'{part}' is not KIND=SHARE", "e.g. --mix fact=0.5,paraphrase=0.3,unanswerable=0.2")
            ) from None
    return mix


def _diff(args: argparse.Namespace) -> int:
    result = api.diff(args.base, args.new, pairs=_parse_pairs(args.pair or []))
    data = result.to_json()
    print(str(result))
    if args.json:
        write_json(Path(args.json), data)
        print(f"wrote {args.json}")
    if args.md:
        write_text(Path(args.md), render_diff_markdown(data))
        print(f"wrote {args.md}")
    return 0


def _parse_pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        base, sep, new = item.partition("=")
        if not sep or not base.strip() or not new.strip():
            raise ConfigError(
                Problem(
                    f"--pair {item}", "a pair is BASE_NAME=NEW_NAME", "e.g. --pair bm25=hybrid (a retriever or prompt)"
                )
            )
        pairs[base.strip()] = new.strip()
    return pairs


def _history(args: argparse.Namespace) -> int:
    hist = collect_history(Path(args.runs_dir), config=args.config)
    print(history_text(hist))
    html = Path(args.html) if args.html else Path(args.runs_dir) / "history.html"
    write_text(html, render_history_html(hist))
    print(f"wrote {html}")
    if args.json:
        write_json(Path(args.json), hist.dump())
        print(f"wrote {args.json}")
    return 0


def _ci_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline",
        metavar="RUN_DIR",
        help="a finished run to diff against: diff.json and diff.md in the new run, and diff.<figure> gates "
        "(decided on the interval of the difference)",
    )
    p.add_argument("--junit-xml", metavar="PATH", help="write the gates as a JUnit XML file (one test case per gate)")
    p.add_argument(
        "--summary-md",
        metavar="PATH",
        help="write a Markdown summary of gates and figures (also appended to $GITHUB_STEP_SUMMARY when set)",
    )


def _view(args: argparse.Namespace) -> int:
    return serve(Path(args.runs_dir), host=args.host, port=args.port, adapt=args.adapt)


def _traces(args: argparse.Namespace) -> int:
    result = api.judge_traces(
        args.files,
        config=args.config,
        out=args.out,
        labels=args.labels,
        seed=args.seed,
        use_cache=not args.no_cache,
        progress=progress.shown(),
    )
    t = required(result.typed_report.traces, "the report's traces section")
    skipped = ", ".join(f"{n} {why}" for why, n in t.skipped.items()) or "none"
    print(f"traces: {t.read} read, {t.audited} audited; skipped: {skipped}")
    for s in t.skipped_traces[:10]:
        print(f"    skipped {s.trace_id} ({s.reason}): {s.question or '(no question)'}")
    if len(t.skipped_traces) > 10:
        print(f"    ... and {len(t.skipped_traces) - 10} more (report.md)")
    for line in t.skipped_lines[:10]:
        print(f"    skipped {line.file}:{line.line} ({line.reason}): {line.detail}")
    if len(t.skipped_lines) > 10:
        print(f"    ... and {len(t.skipped_lines) - 10} more unreadable parts (report.md)")
    print(f"run folder: {result.run_dir} (report.md, report.html, summary.json, labels/)")
    results = result.gates()
    for r in results:
        print(f"gate {r.message}")
    return 0 if all(r.passed for r in results) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-eval", description="Audit a RAG system stage by stage.")
    parser.add_argument("--version", action="version", version=f"rag-eval {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or status lines")
    # -q also after the command (rag-eval run CONFIG -q); SUPPRESS keeps a top-level -q from being reset.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    config_help = "the audit's YAML file (see configs/demo.yaml); its paths are relative to its own folder"

    def add(name: str, summary: str, description: str, config: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=summary, description=description, parents=[common])
        if config:
            p.add_argument("config", help=config_help)
        return p

    p = add(
        "validate",
        "check the config, the corpus and the test set's labels; no retrieval",
        "Check the config, load the corpus and resolve every label of the test set, and make every check run "
        "makes before its first model call (the system's URL and secrets, prompt files, judge prompts, labels "
        "and answers files, API keys); list every problem with its file and line, and how many chunks each "
        "evidence quote matches. Exit 2 on any problem. --try asks the system one question and shows the "
        "request, the raw reply and what was parsed from it.",
    )
    p.add_argument(
        "--try",
        dest="try_question",
        metavar="QUESTION",
        help="also ask the configured system this question once and show the filled request, the raw reply "
        "and what was parsed from it (answer, passages, ids)",
    )
    p.set_defaults(func=_validate)

    p = add(
        "run",
        "the whole audit: retrieval, generation, judges, report",
        "Retrieval, generation, judges, attribution and the report, written to a run folder as each record "
        "completes; then the gates (exit 1 when one fails).",
    )
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.add_argument(
        "--resume",
        nargs="?",
        const="newest",
        metavar="RUN_DIR",
        help="continue the newest unfinished run of this config (or RUN_DIR), reusing finished records",
    )
    _ci_options(p)
    p.add_argument("--test-set", metavar="PATH", help="use this test set instead of the config's test_set")
    p.set_defaults(func=_run)

    p = add(
        "compare",
        "compare prompts on the same retrieved contexts, with paired statistics",
        "Every prompt of generation.prompts on identical contexts, judged, then compared question by question "
        "(exact sign test or permutation test, Holm-corrected across metrics and pairs).",
    )
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.add_argument(
        "--stop-when-settled",
        action="store_true",
        help="judge the questions in a seeded random order, a batch at a time, and stop once an always-valid "
        "sequential test settles every prompt pair's difference of the outcome ok",
    )
    p.add_argument("--batch", type=int, default=10, help="questions per look with --stop-when-settled (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the question order with --stop-when-settled")
    _ci_options(p)
    p.set_defaults(func=_compare)

    p = add(
        "report",
        "re-render a finished run's report, or re-decide it with labels beside it (no model call)",
        "Re-render summary.json, report.md and report.html from a run folder's report.json (the audit's own "
        "record). With --labels (and --adapt) the re-decided report is written beside it as report.labelled.json, "
        "summary.labelled.json, report.labelled.md and report.labelled.html (report.adapted.* with --adapt); the "
        "audit's own files are never rewritten by it.",
        config=False,
    )
    p.add_argument("run_dir", help="a run folder (runs/<name>-<time>/)")
    p.add_argument(
        "--labels",
        help="a filled-in labels file (rag-eval label): the report with prediction-powered figures, written beside "
        "the audit's own as report.labelled.{json,md,html} and summary.labelled.json",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="interval level of the labelled figures")
    p.add_argument(
        "--adapt",
        nargs="?",
        const="both",
        choices=["both", "cutoff", "weights"],
        help="with --labels: adapt the judges to this corpus with the labels (cut-off and band, blend weights, "
        "or both: the default), re-decide every verdict, cross-fit the prediction-powered figures, write the "
        "report beside the audit's own as report.adapted.{json,md,html} and summary.adapted.json, and save the "
        "adaptation for later audits of the same documents",
    )
    p.add_argument(
        "--no-save",
        action="store_true",
        help="with --adapt: do not keep the adaptation for later audits (only the report.adapted.* files are written)",
    )
    p.set_defaults(func=_report)

    p = add(
        "label",
        "draw a random sample of audited answers for people to label (CSV and an HTML page)",
        "Draw a seeded random sample of the run's questions (within the audit's strata, every prompt's answer), "
        "and write labels.csv and labels.html to fill in. Read them back with rag-eval report RUN_DIR --labels "
        "FILE or judges.labels in the config: every judged figure gets a prediction-powered estimate. A labels "
        "file that holds labels is never overwritten: the new draw is merged into it (every label kept, the new "
        "answers appended, each row's inclusion probability that of the union of the draws).",
        config=False,
    )
    p.add_argument("run_dir", help="a finished run folder")
    p.add_argument("--n", type=int, default=30, help="questions to draw (default 30)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="folder for labels.csv and labels.html (default: RUN_DIR/labels/)")
    p.add_argument(
        "--uniform",
        action="store_true",
        help="a plain random draw (default: favour uncertain and outcome-deciding verdicts, each answer's "
        "inclusion probability kept in labels.csv so the figures stay unbiased)",
    )
    p.add_argument(
        "--width",
        type=float,
        default=0.10,
        help="the interval half-width the labelling page tracks progress toward (default 0.10)",
    )
    p.set_defaults(func=_label)

    p = add(
        "judge-check",
        "how far the judges agree with labelled cases (out-of-fold accuracy, kappa, AUC); --save calibrates",
        "Every probability-scored judge on labelled cases; each case is decided with a cut-off fitted on the "
        "other folds, so every figure is out-of-fold. --save stores the cut-offs fitted on all cases for "
        "audits with this judge model and prompt.",
        config=False,
    )
    p.add_argument("--cases", nargs="*", default=["data/judge-check/cases.jsonl"], help="JSONL files of labelled cases")
    p.add_argument("--halueval", nargs="*", help="HaluEval QA JSONL as PATH[:START-STOP] (items START..STOP-1)")
    p.add_argument(
        "--judges",
        help="comma-separated judges to measure (default: the probability-scored ones; add faithfulness for Ragas)",
    )
    p.add_argument("--llm", choices=["local", "openai"], default="local", help="provider of the judge model")
    p.add_argument("--model", help="model name (provider openai, or a custom local server)")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint")
    p.add_argument("--api-key-env", help="environment variable holding the API key")
    p.add_argument("--prompts-dir", help="folder of the own judges' prompts (default: the shipped ones)")
    p.add_argument(
        "--criteria",
        metavar="CONFIG",
        help="a config whose judges.criteria are measured too, on cases labelled for them (judge: the criterion's "
        "name, label: pass or fail)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=FAITHFUL_SHARE,
        help="share of supported statements counted as faithful (the audit's judges.faithfulness_threshold)",
    )
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds for the cut-offs")
    p.add_argument("--save", action="store_true", help="save the cut-offs fitted on all cases for audits to use")
    p.add_argument("--json", help="also write the figures to this JSON file")
    p.add_argument(
        "--uncertain-target",
        type=float,
        help="agreement the decided verdicts must reach; the band of uncertain decisions is fitted to it "
        "(default: 0.95 refusal, 0.90 the others)",
    )
    p.add_argument(
        "--adapt",
        type=int,
        metavar="N",
        help="also measure each judge adapted to each source with N of its labelled cases (seeded draws; "
        "measured on the source's other cases, beside the saved judge)",
    )
    p.add_argument(
        "--escalate",
        metavar="BASE_URL",
        help="a second judge (OpenAI-compatible endpoint): measure it alone and in a cascade with the first",
    )
    p.add_argument("--escalate-model", help="the second judge's model name")
    p.add_argument("--escalate-api-key-env", help="environment variable holding the second judge's API key")
    p.add_argument("--escalate-prices", metavar="IN,OUT", help="the second judge's price per million tokens")
    p.set_defaults(func=_judge_check)

    p = add(
        "generate",
        "generate a test set from the corpus; every evidence quote verified (embedded model by default)",
        "Draw chunks of the config's corpus (seeded, spread over documents), have the model (testgen.llm) write "
        "a question, a reference and an evidence quote for each, keep only questions whose quote is in the chunk, "
        "whose wording is not copied, whose reference the quote supports; unanswerable questions are kept when no "
        "top chunk answers them. Writes a JSONL test set (OUT) and its report beside it (questions.jsonl: questions.report.json).",
    )
    p.add_argument("--n", type=int, help="questions to keep (default: testgen.n, 50)")
    p.add_argument("--out", default="questions.generated.jsonl", help="the test set to write (JSONL)")
    p.add_argument("--seed", type=int, help="seed of the chunk draw (default: testgen.seed)")
    p.add_argument(
        "--mix", help="kinds and shares, e.g. fact=0.35,symbol=0.2,paraphrase=0.2,multi=0.1,unanswerable=0.15"
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.set_defaults(func=_generate)

    p = add(
        "lint",
        "test-set health: copied wording, missing hard cases, suspect labels, size",
        "Test-set health findings with the questions concerned and what to do; exit 1 on a finding at or "
        "above lint.fail_on.",
    )
    p.add_argument("--test-set", metavar="PATH", help="use this test set instead of the config's test_set")
    p.set_defaults(func=_lint)

    p = add(
        "retrieval",
        "run the retrieval stage only (no LLM)",
        "Rank every question with every retriever; metrics with bootstrap intervals, paired comparisons "
        "(p-values Holm-corrected across comparisons), misses with their probable causes.",
    )
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    _ci_options(p)
    p.add_argument("--test-set", metavar="PATH", help="use this test set instead of the config's test_set")
    p.set_defaults(func=_retrieval)

    p = add(
        "diff",
        "two finished runs compared question by question: paired tests per figure, the questions that moved",
        "Match the questions of two run folders by id; for every figure both have (retrieval metrics per "
        "retriever, judged figures and outcome shares per prompt) the paired difference new - base with its "
        "bootstrap interval, the exact sign test (binary) or permutation test (scores), Holm-corrected, and the "
        "verdict; then the questions that moved, worst regression first, with both runs' evidence. Runs over "
        "different chunkings compare the questions labelled by evidence quotes; the others are listed with why.",
        config=False,
    )
    p.add_argument("base", help="the baseline run folder (e.g. the main branch's last audit)")
    p.add_argument("new", help="the run folder to compare with it")
    p.add_argument("--json", metavar="PATH", help="write the diff as JSON (figures, moved questions, not compared)")
    p.add_argument("--md", metavar="PATH", help="write the diff as Markdown, with both runs' evidence per question")
    p.add_argument(
        "--pair",
        action="append",
        metavar="BASE=NEW",
        help="compare a retriever or prompt of the base run with one named differently in the new run (repeatable)",
    )
    p.set_defaults(func=_diff)

    p = add(
        "history",
        "a system's runs over time: headline figures with intervals, and where the config or corpus changed",
        "List the finished run folders under RUNS_DIR (of one config with --config) in time order with their "
        "headline figures and intervals, marking the runs whose config, corpus or test set changed; write a "
        "self-contained HTML page plotting each headline figure across the runs.",
        config=False,
    )
    p.add_argument("runs_dir", help="the folder holding run folders (report.out of the config, e.g. runs/)")
    p.add_argument("--config", metavar="NAME", help="only the runs of this config name")
    p.add_argument("--html", metavar="PATH", help="the HTML page to write (default: RUNS_DIR/history.html)")
    p.add_argument("--json", metavar="PATH", help="also write the history as JSON")
    p.set_defaults(func=_history)

    p = add(
        "traces",
        "audit production traces (OTLP JSON with OpenInference attributes, as Phoenix exports them)",
        "Read OpenTelemetry trace exports (OTLP JSON; the Collector's JSON lines; opentelemetry-sdk console "
        "spans) with OpenInference attributes: the root span's question and answer, the retriever spans' "
        "documents. Judge every complete trace (the config's judges), attribute failures (retrieval misses by "
        "the context-recall judge, or by the labels when the config names a corpus and a test set the traces' "
        "questions are in), draw a seeded sample to label; traces missing a part are counted and named.",
        config=False,
    )
    p.add_argument("files", nargs="+", help="trace export files (JSON or JSON lines)")
    p.add_argument("--config", required=True, help="YAML with name and judges (optionally corpus and test_set)")
    p.add_argument("--out", help="folder for run folders (default: report.out in the config)")
    p.add_argument(
        "--labels", type=int, default=LABELS_DRAWN, help=f"traces drawn to label (default {LABELS_DRAWN}; 0: none)"
    )
    p.add_argument("--seed", type=int, help="seed of the draw (default: stats.seed)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the LLM response cache")
    p.set_defaults(func=_traces)

    p = add(
        "view",
        "browse runs, compare two, and label answers in the browser (a local web app)",
        "Serve a local web app over RUNS_DIR: the runs with their headline figures and status, a run's report "
        "and questions (filtered by outcome, judge, verdict, uncertain), two runs side by side with the "
        "questions that moved, and labelling one answer at a time (keyboard: y / n / s), each label written at "
        "once to RUN_DIR/labels/labels.csv with the prediction-powered figures updated. Run folders are only "
        "read; only labels files are written.",
        config=False,
    )
    p.add_argument("runs_dir", nargs="?", default="runs", help="the folder holding run folders (default: runs)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument(
        "--adapt",
        action="store_true",
        help="show each run's figures with its judges adapted to its corpus by the labels given so far "
        "(cross-fitted, as rag-eval report --labels F --adapt; nothing saved)",
    )
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}, this machine only; another address prints a warning)",
    )
    p.set_defaults(func=_view)
    return parser


def main(argv: list[str] | None = None) -> int:
    go_offline()
    args = build_parser().parse_args(argv)

    progress.set_enabled(not getattr(args, "quiet", False))
    # A polite kill ends like Ctrl-C: the local model server is stopped and records are kept.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return args.func(args)
    except RagEvalError as exc:
        print(f"rag-eval: {exc.render()}", file=sys.stderr)
        if (kept := getattr(exc, "run_dir", None)) is not None:
            print(
                f"rag-eval: the run stopped; its folder keeps what was written: {kept} (status.json: failed, with "
                f"the reason); fix the problem and run again, or continue it with --resume {kept}",
                file=sys.stderr,
            )
        return exc.exit_code
    except RunInterrupted as exc:
        how = (
            f"resume it with: rag-eval run {args.config} --resume {exc.run_dir}"
            if args.func is _run
            else "run the command again: cached model calls are free"
        )
        print(f"rag-eval: interrupted; finished records are in {exc.run_dir}; {how}", file=sys.stderr)
        return 130
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
