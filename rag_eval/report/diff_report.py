"""Rendering a run-against-run diff (``DiffData``, the JSON of ``rag_eval.orchestration.diff.RunDiff``)
as Markdown and as a few lines for the terminal."""

from __future__ import annotations

from rag_eval.attribution.records import ContextMark, JudgeBrief
from rag_eval.report.diff_records import DiffData, FigureEntry, MovedEntry
from rag_eval.report.formatting import _table, text
from rag_eval.stats import format_p


def fmt_diff(e: FigureEntry, digits: int = 3) -> str:
    """``-0.083 [-0.250, 0.083]``, or ``–`` when nothing was compared."""
    if e.diff is None:
        return "–"
    return f"{e.diff:+.{digits}f} [{e.ci_low:+.{digits}f}, {e.ci_high:+.{digits}f}]"


def headline(d: DiffData | dict) -> str:
    """One sentence: what changed, settled or not."""
    d = DiffData.load(d)
    if d.empty:
        # A judged figure is compared on the answers both runs decided: one left uncertain in a run
        # is in neither side, so "all N questions" would overstate what agrees.
        # A figure compared on few of them says little (user trial 4 F14: 1 of 6 answers decided in
        # both runs read as "no difference" while its values moved from 1.00 to 0.50).
        thin = sorted(
            (e.n, name)
            for name, e in d.figures.items()
            # Two answers or fewer: a figure of a subset by design (refusal_accuracy: the unanswerable
            # questions) is not flagged for its size alone (review 55 L3).
            if name.startswith("generation.") and e.n <= 2 < d.shared_questions
        )
        fewest = (
            f"; {len(thin)} figure{'s' * (len(thin) > 1)} compared on fewer (as few as {thin[0][0]}: {thin[0][1]})"
            if thin
            else ""
        )
        return (
            f"No difference: every figure agrees on every question both runs decided it for "
            f"({d.shared_questions} questions compared by id{fewest})."
        )
    changed = d.changed()
    worse = [n for n, e in changed.items() if e.settled(d.alpha) and e.direction < 0]
    better = [n for n, e in changed.items() if e.settled(d.alpha) and e.direction > 0]
    open_ = [n for n in changed if n not in worse and n not in better]
    noise = [n for n, e in changed.items() if e.within_noise]
    tail = f"; {len(noise)} within judge noise" if noise else ""
    if not changed:
        return "Every figure is the same on the questions compared, but not every question could be compared."
    if not worse and not better:
        return (
            f"The new run differs on {len(open_)} figure{'s' * (len(open_) > 1)}, none settled (Holm-corrected){tail}."
        )
    parts = []
    if worse:
        parts.append(f"worse on {len(worse)} figure{'s' * (len(worse) > 1)} ({', '.join(worse)})")
    if better:
        parts.append(f"better on {len(better)} ({', '.join(better)})")
    if open_:
        parts.append(f"{len(open_)} more differ without being settled")
    return "The new run is " + "; ".join(parts) + f" (Holm-corrected){tail}."


def diff_screen(d: DiffData | dict, limit: int = 10) -> str:
    """The diff in a few lines: the headline, the verdict of each figure that moved, the worst
    regressions, and what was not compared."""
    d = DiffData.load(d)
    lines = [f"diff {d.base} -> {d.new}: {d.shared_questions} questions compared by id"]
    lines += [f"warning: {w}" for w in d.warnings]
    lines.append(headline(d))
    for name, e in d.changed().items():
        lines.append(f"- {name}: {fmt_diff(e)}: {e.verdict}")
    worst = sorted((m for m in d.questions if m.severity < 0), key=lambda m: m.severity)[:limit]
    if worst:
        lines.append(f"worst regressions ({sum(m.severity < 0 for m in d.questions)} in all):")
        lines += [f"  {_move_line(m)}" for m in worst]
    if d.not_compared or d.only_in_base or d.only_in_new:
        lines.append(
            f"not compared: {len({x.question_id for x in d.not_compared})} questions (see the reason of each); "
            f"only in the base run {len(d.only_in_base)}, only in the new run {len(d.only_in_new)}"
        )
    return "\n".join(lines)


def _move_line(m: MovedEntry) -> str:
    if m.scope == "retrieval":
        what = f"{m.system} rank {m.base.rank or 'none'} -> {m.new.rank or 'none'}"
    else:
        what = f"{m.system} {m.base.outcome} -> {m.new.outcome}"
    names = [_short(x) for x in m.worse]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    worse = f"; worse on {shown}" if names else ""
    return f"{m.question_id}: {what}{worse}"


def _short(figure: str) -> str:
    return figure.split(".", 2)[-1]


def _top(top: list[ContextMark]) -> str:
    return ", ".join(f"**{t.id}**" if t.relevant else t.id for t in top) or "–"


def _judge_cell(j: JudgeBrief | None) -> str:
    if not j:
        return "–"
    if j.status != "judged":
        return f"{j.status}: {j.error or j.reason or ''}"
    shown = j.verdict or (f"{j.score:.2f}" if j.score is not None else "")
    return f"{shown}: {j.reason or ''}".rstrip(": ")


def moved_markdown(m: MovedEntry) -> list[str]:
    """One moved question with both runs' evidence side by side."""
    changes = ", ".join(f"{_short(k)} {v:+.2f}" for k, v in m.changes.items())
    b, n = m.base, m.new
    if m.scope == "retrieval":
        title = f"retrieval `{m.system}`"
        rows = [
            ["rank of the first relevant chunk", str(b.rank or "not retrieved"), str(n.rank or "not retrieved")],
            ["top chunks (relevant in bold)", _top(b.top), _top(n.top)],
            ["relevant chunks", ", ".join(b.relevant), ", ".join(n.relevant)],
        ]
    else:
        title = f"prompt `{m.system}`: {b.outcome} → {n.outcome}"
        rows = [
            ["outcome", f"{b.outcome}: {b.why or ''}", f"{n.outcome}: {n.why or ''}"],
            ["answer", text(b.answer, 400), text(n.answer, 400)],
            ["contexts (relevant in bold)", _top(b.contexts), _top(n.contexts)],
        ]
        for judge in sorted(set(b.judges) | set(n.judges)):
            rows.append([judge, _judge_cell(b.judges.get(judge)), _judge_cell(n.judges.get(judge))])
    base_sys = f" (base: `{m.base_system}`)" if m.base_system != m.system else ""
    out = [f"### {m.question_id}: {title}{base_sys}", "", f"> {text(m.question, 300)}", ""]
    out += [
        f"Moved: {changes}"
        + (
            f". Judge noise: {', '.join(m.judge_noise)} gave another verdict on identical inputs"
            if m.judge_noise
            else ""
        ),
        "",
    ]
    # Cells may hold bold markers: build the table here instead of escaping them away.
    out += ["| | base | new |", "|---|---|---|"]
    out += ["| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in r) + " |" for r in rows]
    return out + [""]


def render_diff_markdown(d: DiffData | dict) -> str:
    """The whole diff as Markdown."""
    d = DiffData.load(d)
    out = [
        f"# rag-eval diff: {text(d.base_name)} → {text(d.new_name)}",
        "",
        f"- base: `{d.base}`",
        f"- new: `{d.new}`",
        f"- {d.shared_questions} questions matched by id; corpus {'the same' if d.same_corpus else 'different'}",
    ]
    out += [f"- **warning**: {text(w)}" for w in d.warnings]
    out += [f"- {text(n)}" for n in d.notes]
    out += ["", f"**{text(headline(d))}**", "", "## Figures", ""]
    changed = d.changed()
    rows = []
    for name, e in sorted(changed.items(), key=lambda kv: (kv[1].p_holm, kv[0])):
        rows.append(
            [
                name,
                f"{e.base:.3f}",
                f"{e.new:.3f}",
                fmt_diff(e),
                f"{e.better_on} / {e.worse_on} / {e.same_on}",
                format_p(e.p_holm) if e.p_holm is not None else "–",
                e.verdict + (" (within judge noise)" if e.within_noise else ""),
            ]
        )
    if rows:
        ci = f"diff [{d.confidence:.0%} CI]"
        out += _table(["figure", "base", "new", ci, "better / worse / same", "Holm", "verdict"], rows)
        out.append("")
    same = [n for n, e in d.figures.items() if n not in changed and e.n]
    if same:
        out += [f"Identical on every compared question: {', '.join(f'`{n}`' for n in same)}.", ""]
    none = [n for n, e in d.figures.items() if not e.n]
    if none:
        out += [f"No question could be compared for: {', '.join(f'`{n}`' for n in none)}.", ""]
    unmeasured = sorted({e.judge_noise.note for e in changed.values() if e.judge_noise and e.judge_noise.note})
    out += [f"- {text(n)}" for n in unmeasured] + ([""] if unmeasured else [])
    if d.questions:
        out += [
            f"## Questions that moved ({len(d.questions)}; per retriever and prompt, worst regression first)",
            "",
        ]
        for m in d.questions:
            out += moved_markdown(m)
    if d.not_compared:
        out += [f"## Not compared ({len({x.question_id for x in d.not_compared})} questions)", ""]
        grouped: dict[tuple[str, str, str], list[str]] = {}
        for x in d.not_compared:
            grouped.setdefault((x.question_id, x.scope, x.why), []).append(x.system)
        out += _table(
            ["question", "scope", "systems", "why"],
            [[q, scope, ", ".join(systems), why] for (q, scope, why), systems in grouped.items()],
        )
        out.append("")
    if d.only_in_base or d.only_in_new:
        out += ["## Questions in one run only", ""]
        if d.only_in_base:
            out.append(f"- only in the base run ({len(d.only_in_base)}): {', '.join(d.only_in_base)}")
        if d.only_in_new:
            out.append(f"- only in the new run ({len(d.only_in_new)}): {', '.join(d.only_in_new)}")
        out.append("")
    return "\n".join(out)


def diff_gate_markdown(d: DiffData | dict) -> str:
    """The short diff section of a CI summary (``--baseline``)."""
    d = DiffData.load(d)
    lines = [f"### Against the baseline `{d.base}`", "", headline(d), ""]
    for name, e in d.changed().items():
        lines.append(f"- `{name}`: {fmt_diff(e)}; {text(e.verdict)}")
    return "\n".join(lines) + "\n"
