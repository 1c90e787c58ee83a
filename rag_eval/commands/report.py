"""``rag-eval report``: a finished run's report rendered again, or re-decided with labels beside it."""

from __future__ import annotations

import argparse
from typing import Any

from rag_eval import api
from rag_eval.base_records import required
from rag_eval.commands.common import add_command
from rag_eval.report.files import ADAPTED


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = add_command(
        sub,
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
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    done = api.render_report(
        args.run_dir, labels=args.labels, confidence=args.confidence, adapt=args.adapt, save=not args.no_save
    )
    if done.kind is None:
        print("re-rendered the audit's report: " + ", ".join(str(p) for p in done.written))
        return 0
    if args.adapt:
        _print_adaptation(done, args.no_save)
    lab = required(done.report.labels, "the report's labels section")
    print(
        f"labels: {lab.answers_labelled} answers ("
        + ", ".join(f"{c} {n}" for c, n in lab.per_column.items())
        + "); prediction-powered figures added"
    )
    print("wrote, beside the audit's own report (left as it was):")
    for path in done.written:
        print(f"  {path}")
    return 0


def _print_adaptation(done: api.Rendered, no_save: bool) -> None:
    """What adapting the judges changed, judge by judge."""
    adaptation = done.report.adaptation
    if done.kind != ADAPTED or adaptation is None:
        print("no judge of this run decides at a cut-off on a probability: nothing adapted, the labels alone count")
        return
    print(adaptation.note)
    for a in adaptation.judges:
        print(
            f"  {a.variant}: {a.labels} labels, cut-off {a.cutoff_before:.3f} -> {a.cutoff_after:.3f}, "
            f"{a.changed} verdicts changed, uncertain {a.uncertain_before} -> {a.uncertain_after}"
        )
        if a.held_out:
            print(f"    on its labels, each decided by a judge adapted without it: {a.held_out_text()}")
        if a.labels and a.positives in (0, a.labels):
            print(
                f"    all {a.labels} labels give one verdict: where the other lies is not learned, so decisions "
                "right on them say little; label answers of the other verdict too"
                + ("; not saved for later audits" if a.not_saved else "")
            )
        if a.mostly_uncertain():
            print(
                f"    {a.uncertain_after} of its {a.decisions} decisions stay uncertain: the judge model reads this "
                "poorly on these answers. More labels may help a little; for a criterion, a lower aim decides more "
                "but gets more wrong; escalating the uncertain decisions to a stronger judge model (judges.escalate) "
                "is the way to decide them"
            )
        if a.blend_after and a.blend_after != a.blend_before:
            print(f"    decides on {a.blend_after}")
        elif a.criterion and a.labels and not a.blend_after and a.how != "cutoff":
            if min(a.positives, a.labels - a.positives) < 2:
                print("    fewer than 2 labels of one verdict: the model's P(pass) alone, no word feature weighed")
            else:
                print(
                    "    no word feature of the answers separated these labels better than chance would one time in "
                    "ten: the model's P(pass) alone"
                )
    if no_save:
        print("--no-save: the adaptation is not kept for later audits")
