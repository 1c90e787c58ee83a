"""A new draw added to a labels file that already holds labels (``rag-eval label`` on a run labelled
in the browser or by hand). No label is lost: every row of the file stays, its labels and note
exactly as they were; the answers the new draw picks that the file does not hold are appended; no
answer appears twice. A file without any label (or note) is a draw nobody started: it is replaced.

The union's inclusion probability. A draw added to a file is drawn independently of the draws
before it: its random numbers come from ``[seed, k]``, ``k`` the number of draws the file already
holds (the first draw of a file uses ``seed`` itself, as ``rag-eval view`` does). An answer is then
left out of the union only when the previous design and the new draw both leave it out, so with
``p`` its probability under the previous design and ``q`` under the new draw:

    pi = 1 - (1 - p) (1 - q)

``p`` of a row in the file is its ``inclusion_probability`` (1 for an answer ``rag-eval view``
added because its verdict was uncertain: then ``pi`` stays 1); ``p`` of an answer not in the file
is what the previous design gave its question, kept beside the file in ``labels.draws.json`` (the
draws and every question's probability under their union). For a file without that record (written
by ``rag-eval view`` or an older ``rag-eval label``), the previous design is worked out from the
file: the one draw of this run (its size and kind) whose probabilities are those of the file's rows.
Where it cannot be worked out (rows without a probability, or of another run, or a run re-decided
since), the file is left as it is and the error says how to go on. The prediction-powered figures
(``labels/active.py``) weight each label by ``1 / pi``, so they stay unbiased for the union.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rag_eval.base_records import Model
from rag_eval.errors import DataError, Problem
from rag_eval.labels.human import Drawn, DrawnAnswer, LabelsRow, Sampler, answer_differs
from rag_eval.labels.store import has_label, locked, read_rows, write_atomically, write_rows

# The file keeps probabilities to 6 decimals.
TOLERANCE = 1.5e-6


class DrawSpec(Model):
    """One draw of a labels file's design."""

    n: int  # questions drawn
    active: bool  # favouring uncertain and outcome-deciding verdicts (else a plain random draw)
    seed: int | None = None  # None: worked out from a file that had no record (its seed unknown)
    stream: list[int] = []  # what seeded its random numbers: [seed] for a file's first draw, [seed, k] after
    added: int = 0  # answers it added to the file


class Design(Model):
    """A labels file's sampling design (``labels.draws.json`` beside ``labels.csv``): its draws, and
    every question's probability of being in their union."""

    draws: list[DrawSpec] = []
    inclusion_probability: dict[str, float] = {}


@dataclass
class Merged:
    """A labels file after a draw was added: its rows, its design, and what changed."""

    rows: list[dict[str, str]]
    design: Design
    kept_labelled: int = 0
    kept_unlabelled: int = 0
    added: int = 0
    same_draw: bool = False  # the file already held this draw: nothing added
    replaced: int = 0  # rows of an unlabelled file that the draw replaced
    worked_out: bool = False  # the previous design worked out from the file (it had no record)
    backup: Path | None = None  # the file as it was, where a draw was merged into it


def design_path(labels_csv: Path) -> Path:
    """Where a labels file's design is kept: ``labels.draws.json`` beside ``labels.csv``."""
    return labels_csv.with_name(f"{labels_csv.stem}.draws.json")


def read_design(path: Path) -> Design | None:
    """The recorded design, or None where there is none (or it cannot be read: worked out again)."""
    try:
        return Design.load(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def design_text(design: Design) -> str:
    """The design as ``labels.draws.json`` holds it."""
    return json.dumps(design.dump(), indent=2) + "\n"


def union(p: float, q: float) -> float:
    """The probability of an answer in the union of two independent draws that hold it with
    probabilities ``p`` and ``q``."""
    return 1.0 - (1.0 - p) * (1.0 - q)


def _cell(p: float) -> str:
    return str(round(p, 6))


def _probability(row: dict[str, str]) -> float | None:
    try:
        p = float(LabelsRow.of(row).inclusion_probability or "")
    except ValueError:
        return None
    return p if 0 < p <= 1 else None


def _kept(row: dict[str, str]) -> bool:
    """Whether a row holds a person's work: a label under any column, or a note."""
    return has_label(row) or bool((LabelsRow.of(row).note or "").strip())


def _refuse(path: Path, rows: list[dict[str, str]], why: str) -> DataError:
    labelled = sum(has_label(r) for r in rows)
    return DataError(
        Problem(
            str(path),
            f"it holds {labelled} labelled answers, and a new draw cannot be added to it with the figures kept "
            f"unbiased: {why}; the file is left as it is",
            "label the answers it holds (rag-eval view, or yes/no in the file), or write a new draw to a file of "
            "its own with --out DIR",
        )
    )


def _refuse_other_answers(sampler: Sampler, rows: list[dict[str, str]], path: Path) -> None:
    """DataError naming each labelled row whose answer is not the run's answer to its question and
    prompt (an earlier run's file given to a run whose answers changed): merged, its labels would be
    shown and counted as the new answer's."""
    stale = []
    for i, r in enumerate(rows):
        named = LabelsRow.of(r)
        gen = sampler.by_key.get(named.key)
        if has_label(r) and gen is not None and answer_differs(named.answer, gen.answer):
            stale.append(f"line {i + 2} ({named.key[0]}, {named.key[1]})")
    if stale:
        raise DataError(
            Problem(
                str(path),
                f"{len(stale)} labelled row{'s' if len(stale) > 1 else ''} of the file label another answer than "
                f"this run's to the same question and prompt ({', '.join(stale[:5])}{', ...' if len(stale) > 5 else ''}"
                "): the file was labelled on a run whose answers have changed since; a new draw is not added to it, "
                "and the file is left as it is",
                "write this run's draw to a file of its own with --out DIR (the earlier labels stay the earlier run's)",
            )
        )


def work_out(sampler: Sampler, rows: list[dict[str, str]], path: Path) -> tuple[DrawSpec, dict[str, float]]:
    """The one draw of this run whose probabilities are those of the file's rows (an answer with
    probability 1 may also be one the view added as uncertain), and every question's probability
    under it; DataError where none is."""
    ps = []
    for i, r in enumerate(rows, start=2):
        key = LabelsRow.of(r).key
        if key not in sampler.by_key:
            raise _refuse(path, rows, f"line {i} (question '{key[0]}', prompt '{key[1]}') is no answer of this run")
        p = _probability(r)
        if p is None:
            raise _refuse(path, rows, f"line {i} has no inclusion probability, so the draw it came from is unknown")
        ps.append((key[0], p))
    drawn = {q for q, p in ps if p < 1 - TOLERANCE}
    held = {q for q, _ in ps}
    everything = set(sampler.questions)
    if not drawn:
        if held == everything:  # every question drawn with certainty: a census
            return DrawSpec(n=len(everything), active=True), dict.fromkeys(everything, 1.0)
        raise _refuse(
            path, rows, "every row has inclusion probability 1 but not every question is in it, so the draw is unknown"
        )
    for n in range(len(drawn), len(held) + 1):
        for active in (True, False):
            pv = sampler.probabilities(n, active)
            if all(abs(pv[q] - p) <= TOLERANCE for q, p in ps if p < 1 - TOLERANCE) and all(
                q in held for q, p in pv.items() if p >= 1 - TOLERANCE
            ):
                return DrawSpec(n=n, active=active), pv
    raise _refuse(
        path,
        rows,
        "there is no labels.draws.json beside it, and its inclusion probabilities are those of no draw of this run "
        "(drawn from another run, or the run's verdicts changed since)",
    )


def previous_design(sampler: Sampler, rows: list[dict[str, str]], recorded: Design | None, path: Path) -> Design:
    """The file's design so far: the recorded one where every row agrees with it (probability 1,
    or its question's), else the one draw it was worked out to be (``work_out``)."""
    if recorded is not None and recorded.draws:
        p = recorded.inclusion_probability
        agrees = all(
            (x := _probability(r)) is not None
            and (x >= 1 - TOLERANCE or abs(x - p.get(LabelsRow.of(r).key[0], -1.0)) <= TOLERANCE)
            for r in rows
        )
        if agrees and all(q in p for q in sampler.questions):
            return recorded
    spec, pv = work_out(sampler, rows, path)
    return Design(draws=[spec], inclusion_probability={q: round(x, 6) for q, x in pv.items()})


def _same(spec: DrawSpec, n: int, seed: int, active: bool) -> bool:
    return (spec.n, spec.active) == (n, active) and spec.seed == seed


def add_draw(
    sampler: Sampler, rows: list[dict[str, str]], recorded: Design | None, path: Path, n: int, seed: int, active: bool
) -> Merged:
    """The labels file ``rows`` (at ``path``, with its recorded design) with a draw of ``n``
    questions added: a fresh file (or one nobody labelled) is the draw itself, seeded with
    ``seed``; otherwise the draw, seeded with ``[seed, k]``, is merged in (module docstring).
    Asking again for a draw the file holds adds nothing."""
    n = min(n, len(sampler.questions))
    if not any(_kept(r) for r in rows):
        fresh = sampler.draw(n, seed, active)
        design = Design(
            draws=[DrawSpec(n=n, active=active, seed=seed, stream=[seed], added=len(fresh.rows))],
            inclusion_probability={q: round(x, 6) for q, x in fresh.probabilities.items()},
        )
        return Merged(
            [_as_row(d, sampler.columns) for d in fresh.rows], design, added=len(fresh.rows), replaced=len(rows)
        )
    _refuse_other_answers(sampler, rows, path)
    before = previous_design(sampler, rows, recorded, path)
    kept = [dict(r) for r in rows]
    merged = Merged(
        kept,
        before,
        kept_labelled=sum(has_label(r) for r in rows),
        kept_unlabelled=sum(not has_label(r) for r in rows),
        worked_out=before is not recorded,
    )
    if merged.worked_out:
        # The file's first draw may be this very one (the view's, or an earlier rag-eval label's):
        # drawn again with its seed, it picks only answers the file holds.
        spec = before.draws[0]
        again = sampler.draw(spec.n, seed, spec.active)
        held = {(n.question_id, n.prompt) for n in map(LabelsRow.of, rows)}
        if all((d.question_id, d.prompt) in held for d in again.rows):
            spec.seed, spec.stream = seed, [seed]
    if any(_same(d, n, seed, active) for d in before.draws):
        merged.same_draw = True
        return merged
    stream = [seed, len(before.draws)]
    new: Drawn = sampler.draw(n, stream, active)
    q = new.probabilities
    for r in kept:
        p = _probability(r)
        if p is not None:
            r.update(inclusion_probability=_cell(union(p, q.get(LabelsRow.of(r).key[0], 0.0))))
    held = {(n.question_id, n.prompt) for n in map(LabelsRow.of, kept)}
    p_before = before.inclusion_probability
    for d in new.rows:
        if (d.question_id, d.prompt) not in held:
            row = _as_row(d, sampler.columns)
            row.update(inclusion_probability=_cell(union(p_before.get(d.question_id, 0.0), q[d.question_id])))
            kept.append(row)
            merged.added += 1
    merged.design = Design(
        draws=[*before.draws, DrawSpec(n=n, active=active, seed=seed, stream=stream, added=merged.added)],
        inclusion_probability={
            x: round(union(p_before.get(x, 0.0), q.get(x, 0.0)), 6) for x in sorted({*p_before, *q})
        },
    )
    return merged


def _as_row(d: DrawnAnswer, columns: Iterable[str]) -> dict[str, str]:
    """A drawn answer as a labels-file row, its labels (``columns``: the run's) blank."""
    values = {k: "" if v is None else str(v) for k, v in d.dump().items() if not isinstance(v, list | bool)}
    return {**values, **dict.fromkeys(columns, ""), "note": ""}


def draw_into(sampler: Sampler, path: Path, n: int, seed: int, active: bool) -> Merged:
    """``add_draw`` on the labels file at ``path`` (made if missing) and its design, read and
    written under the file's lock (``rag-eval view`` may be saving a label meanwhile), atomically.
    Before a draw is merged into a file that holds labels, the file as it was is copied to
    ``labels.csv.bak``."""
    with locked(path):
        rows = read_rows(path)
        merged = add_draw(sampler, rows, read_design(design_path(path)), path, n, seed, active)
        if not merged.same_draw:
            if merged.kept_labelled or merged.kept_unlabelled:
                merged.backup = path.with_name(f"{path.name}.bak")
                write_atomically(merged.backup, path.read_text(encoding="utf-8"))
            write_rows(path, merged.rows)
        write_atomically(design_path(path), design_text(merged.design))
    return merged


def page_rows(
    sampler: Sampler, rows: list[dict[str, str]]
) -> tuple[list[DrawnAnswer], dict[tuple[str, str], dict[str, str]]]:
    """The labels file's rows as the labelling page's items (in the file's order, each with its own
    inclusion probability and weight), and the rows by (question id, prompt), whose labels the page
    starts with."""
    items, given = [], {}
    for r in rows:
        named = LabelsRow.of(r)
        key = named.key
        try:
            weight = float(named.weight or "")
        except ValueError:
            weight = None
        d = sampler.row(key, _probability(r), weight)
        if d is not None:
            items.append(d)
            given[key] = r
    return items, given
