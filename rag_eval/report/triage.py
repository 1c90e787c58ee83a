"""Where the cheapest truth lies: the uncertain verdicts (label or escalate these first), what the
escalation to a second judge did and cost, and how many labels each judged figure needs for a
given interval width (uniform and active draws) and how many escalations would decide its
uncertain share."""

from __future__ import annotations

import html as html_lib

from rag_eval.judges.active import decision_uncertainty, labels_for_width
from rag_eval.judges.labels import figure_records
from rag_eval.judges.registry import figures
from rag_eval.report.formatting import _table, fmt, text

WIDTHS = (0.05, 0.10)


def _fmt(est: dict | None) -> str:
    return fmt(est, 2)


def uncertain_answers(report: dict) -> list[dict]:
    """Every uncertain verdict still standing, the most unsure first (closest to its cut-off)."""
    questions = {r["question_id"]: r.get("question", "") for r in report.get("attribution", {}).get("rows", [])}
    rows = []
    for r in report.get("judges", {}).get("records", []):
        if r["status"] != "uncertain":
            continue
        d = r.get("details") or {}
        esc = d.get("escalation") or {}
        rows.append(
            {
                "question_id": r["question_id"],
                "prompt": r["prompt"],
                "judge": r["judge"],
                "question": questions.get(r["question_id"], ""),
                "probability": r.get("probability"),
                "band": d.get("band"),
                "leaning": d.get("leaning") if d.get("leaning") is not None else d.get("leaning_score"),
                "escalation": esc.get("not_sent") or esc.get("error") or (esc.get("second") or {}).get("how"),
                "priority": decision_uncertainty({**r, "status": "judged"})
                if r.get("probability") is not None
                else 0.5,
            }
        )
    return sorted(rows, key=lambda x: (-x["priority"], x["question_id"], x["prompt"], x["judge"]))


def _decisions_to_escalate(r: dict) -> int:
    d = r.get("details") or {}
    return len(d.get("uncertain_statements") or []) if "statements" in d else 1


def labels_plan(report: dict, chosen_width: float = 0.10) -> list[dict]:
    """Per prompt and judged figure with a human label: judged and uncertain answers, the labels a
    uniform and an active draw need for ±0.05, ±0.10 and ``chosen_width``, and the escalations
    (decisions sent to a second judge) that would decide its uncertain answers."""
    j = report.get("judges") or {}
    records = j.get("records", [])
    answerable = {r["question_id"]: r["answerable"] for r in report.get("attribution", {}).get("rows", [])}
    calibration = j.get("calibration") or {}
    out = []
    for prompt in sorted({r["prompt"] for r in records}):
        for spec, fig in figures(j.get("metrics", [])):
            if spec.human_label is None:
                continue
            rows = figure_records(records, spec.name, prompt, fig.subset, answerable)
            if not rows:
                continue
            errors = [decision_uncertainty(r) for r in rows]
            agree = (calibration.get(spec.name) or {}).get("agreement") or {}
            measured = 1 - agree["accuracy"] if agree.get("accuracy") is not None else None
            need = {}
            for w in sorted({*WIDTHS, chosen_width}):
                n_u, n_a = labels_for_width(errors, w, uniform_variance=measured)
                need[f"{w:g}"] = {"uniform": n_u, "active": n_a}
            unsure = [r for r in rows if r["status"] == "uncertain"]
            out.append(
                {
                    "prompt": prompt,
                    "figure": fig.name,
                    "label": spec.human_label,
                    "answers": len(rows),
                    "uncertain": len(unsure),
                    "escalations": sum(_decisions_to_escalate(r) for r in unsure),
                    "agreement": agree.get("accuracy"),
                    "labels_needed": need,
                    "width": chosen_width,
                }
            )
    return out


def escalation_lines(report: dict) -> list[str]:
    """What the escalation did and cost, and each figure with and without it (Markdown)."""
    e = (report.get("judges") or {}).get("escalation")
    if not e:
        return []
    u = e.get("usage") or {}
    budget = f", {e['over_budget']} not sent (max_calls {e['max_calls']})" if e.get("over_budget") else ""
    calibrated = [v for v, ok in (e.get("calibrated") or {}).items() if ok]
    how = (
        f"its calibrated cut-off for {', '.join(calibrated)}, its text verdict for the rest"
        if calibrated
        else "its text verdict (no calibration saved for this model)"
    )
    out = [
        "",
        "### Escalated to a second judge",
        "",
        f"{e['escalated']} of {e['uncertain']} uncertain verdicts were asked again of `{e['model']}` "
        f"({e['calls']} decisions; {u.get('calls', 0)} calls, {u.get('cache_hits', 0)} from cache, "
        f"{u.get('prompt_tokens', 0)} + {u.get('completion_tokens', 0)} tokens, cost {u.get('cost', 0.0):.4f})"
        f"{budget}; {e['decided']} decided by it, deciding by {how}.",
        "",
    ]
    rows = []
    for prompt, figs in (report["judges"].get("figures") or {}).items():
        before = (e.get("figures_without") or {}).get(prompt, {})
        for name, est in figs.items():
            b = before.get(name)
            rows.append(
                [
                    prompt,
                    name,
                    f"{_fmt(b)} n={b['n']} unc={b.get('n_uncertain', 0)}" if b else "–",
                    f"{_fmt(est)} n={est['n']} unc={est.get('n_uncertain', 0)}",
                ]
            )
    for prompt, shares in (e.get("outcomes_without") or {}).items():
        now = report.get("attribution", {}).get("shares", {}).get(prompt, {})
        if "uncertain" in shares:
            rows.append(
                [
                    prompt,
                    "outcome uncertain",
                    f"{shares['uncertain']['count']} ({_fmt(shares['uncertain'])})",
                    f"{now.get('uncertain', {}).get('count', 0)} ({_fmt(now.get('uncertain'))})",
                ]
            )
    out += _table(["prompt", "figure", "first judge alone", "with escalation"], rows)
    return out


def triage_markdown(report: dict) -> list[str]:
    """The report's section on uncertain verdicts, escalation and labels needed (Markdown)."""
    if "judges" not in report:
        return []
    unsure = uncertain_answers(report)
    plan = labels_plan(report)
    esc = escalation_lines(report)
    if not unsure and not esc and not plan:
        return []
    out = ["", "## Uncertain verdicts, escalation and labels needed", ""]
    if unsure:
        out += [
            f"### Label these first: {len(unsure)} uncertain verdicts",
            "",
            "Decisions whose probability lies in the band around the judge's cut-off: counted apart (`unc`), "
            "never in a mean or share. `rag-eval label RUN_DIR` draws them first; `judges.escalate` asks a "
            "second judge.",
            "",
        ]
        out += _table(
            ["question", "id", "prompt", "judge", "P", "band", "leans to", "escalation"],
            [
                [
                    text(u["question"], 80),
                    u["question_id"],
                    u["prompt"],
                    u["judge"],
                    f"{u['probability']:.3f}" if u["probability"] is not None else "–",
                    f"[{u['band'][0]:.3f}, {u['band'][1]:.3f})" if u["band"] else "–",
                    str(u["leaning"] if not isinstance(u["leaning"], float) else f"{u['leaning']:.2f}"),
                    u["escalation"] or "–",
                ]
                for u in unsure[:50]
            ],
        )
        if len(unsure) > 50:
            out.append(f"\n... and {len(unsure) - 50} more (report.json, judges.records with status uncertain).")
    out += esc
    if plan:
        out += [
            "",
            "### Labels needed for a prediction-powered interval",
            "",
            "Labelled answers for an interval of ±0.05 and ±0.10 on each judged figure: a plain random draw "
            "(`--uniform`; from the judge's measured agreement where known, else its probabilities) and the "
            "active draw of `rag-eval label` (from how unsure the judge is on each answer of this run; it assumes "
            "the judge's probabilities rank its errors). `escalations`: decisions a second judge would be asked "
            "to decide the uncertain ones. `all N`: only labelling every answer gets there (the figure is then the labels' own).",
            "",
        ]
        out += _table(
            [
                "prompt",
                "figure",
                "answers",
                "uncertain",
                "escalations",
                "±0.05 uniform / active",
                "±0.10 uniform / active",
            ],
            [
                [
                    p["prompt"],
                    p["figure"],
                    str(p["answers"]),
                    str(p["uncertain"]),
                    str(p["escalations"]),
                    _needed(p, "0.05"),
                    _needed(p, "0.1"),
                ]
                for p in plan
            ],
        )
    return out


def _needed(plan: dict, width: str) -> str:
    """``uniform / active`` labels, or "all N" where a draw would need every answer (labelling all
    of them gives the figure itself)."""
    n = plan["answers"]
    got = plan["labels_needed"][width]
    return " / ".join(f"all {n}" if got[k] >= n else str(got[k]) for k in ("uniform", "active"))


def triage_html(report: dict) -> list[str]:
    """The same section as HTML."""
    lines = triage_markdown(report)
    if not lines:
        return []
    out, table = [], []

    def flush():
        if table:
            head = [c.strip() for c in table[0].strip("|").split("|")]
            body = [[c.strip() for c in row.strip("|").split(" | ")] for row in table[2:]]
            out.append(
                "<table><thead><tr>"
                + "".join(f"<th>{html_lib.escape(h)}</th>" for h in head)
                + "</tr></thead><tbody>"
                + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body)
                + "</tbody></table>"
            )
            table.clear()

    for line in lines:
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2>{html_lib.escape(line[3:])}</h2>")
        elif line.startswith("### "):
            out.append(f"<h3>{html_lib.escape(line[4:])}</h3>")
        elif line.strip():
            out.append(f"<p>{html_lib.escape(line).replace('`', '')}</p>")
    flush()
    return out
