"""A run's judgements re-decided by judges adapted to its corpus, and adaptations saved per corpus.

A judgement keeps what its decision was made of: the model's probability and the word evidence of
each decision (``details.evidence.words`` of a verdict, of each statement of a faithfulness
judgement), the cut-off and the band. So an adaptation (``adaptation.py``) re-decides a finished
run without a model call, and an audit of the same documents later starts from the adapted
judges: ``<cache>/adaptations.json`` keeps one entry per corpus fingerprint, judge model, prompt
variant and judge prompt hash, as ``calibrations.json`` keeps the cut-offs per model and prompt.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval.base_records import Model, required
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.adaptation import Decider, Item, adapt
from rag_eval.calibration.cutoffs import key, model_identity, saved_calibrations
from rag_eval.calibration.lexical import Blend
from rag_eval.hashing import text_hash
from rag_eval.judges.details import StatementsDetails, VerdictDetails
from rag_eval.judges.judge_records import Calibration
from rag_eval.judges.judgement import Judgement
from rag_eval.judges.registry import JUDGES, banded
from rag_eval.judges.scored import DEFAULT_CUTOFF, word_evidence
from rag_eval.judges.uncertain import (
    LEFT_UNCERTAIN,
    mark_close_call,
    mark_reference_restated,
    without_uncertain_note,
)
from rag_eval.rundir import write_json

FILE = "adaptations.json"


def adaptable(judge: str) -> bool:
    """Judges decided at a cut-off on a probability, with a band: what an adaptation can move."""
    spec = JUDGES.get(judge)
    return spec is not None and spec.family == "scored" and judge in banded()


def variant_of(j: Judgement) -> str:
    return str(j.typed_details.variant or j.judge)


def statement_rows(j: Judgement) -> list[dict] | None:
    """A statement judgement's statements as its details hold them (every key kept, in order)."""
    return j.details.get("statements")


def item_of(j: Judgement, positive: bool | None = None) -> Item | None:
    """What ``j``'s decision was made of, as an adaptation reads it; None for a judgement with no
    probability (not judged, a Ragas score)."""
    if j.status not in ("judged", "uncertain"):
        return None
    details = j.typed_details
    if isinstance(details, StatementsDetails):
        ps, fs = [], []
        for s in details.statements:
            words = word_evidence(s.evidence)
            ps.append(float(words.p_model) if words else float(required(s.p_supported, "a statement's P(supported)")))
            fs.append(dict(words.features) if words else {})
        return Item(tuple(ps), tuple(fs), positive) if ps else None
    if j.probability is None:
        return None
    words = word_evidence(details.evidence) if isinstance(details, VerdictDetails) else None
    if words:
        return Item((float(words.p_model),), (dict(words.features),), positive)
    return Item((float(j.probability),), ({},), positive)


def deciding(it: Item, d: Decider) -> Decider:
    """``d`` as it decides ``it``: a decision recorded without the blend's word evidence (no blend
    when it was made) stays on the model's P."""
    has = d.blend is None or all(f and set(d.blend.weights) <= set(f) for f in it.features)
    return d if has else d.model_copy(update={"blend": None})


class Texts(Model):
    """What the rules that leave a decided verdict uncertain read of one answer (``redecide``)."""

    question: str
    reference: str | None = None
    answer: str


def redecide(
    j: Judgement, d: Decider, note: dict[str, Any], *, rules: bool = True, texts: Texts | None = None
) -> Judgement:
    """``j`` decided by ``d``: verdict (or share of supported statements), probability, cut-off and
    uncertain status as the adapted judge gives them; ``details.adapted`` says how. ``rules``
    (False under ``judges.uncertain: off``, as an audit does): a close call at the adapted cut-off,
    and an ``incorrect`` of an answer restating its reference (read from ``texts``), are left
    uncertain, as the next audit with the saved adaptation leaves them."""
    it = item_of(j)
    if it is None:
        return j
    spec = JUDGES[j.judge]
    use = deciding(it, d)
    probs = use.probs(it)
    unsure, positive = use.decide(it)
    details = {**j.details, "adapted": note, "band": list(d.band) if d.band else None}
    for k in ("leaning", "leaning_score", "score_range", "uncertain_statements", LEFT_UNCERTAIN):
        details.pop(k, None)
    rows = statement_rows(j)
    if rows is not None:
        supported = [p >= d.cutoff for p in probs]
        statements = [
            {**s, "p_supported": round(p, 6), "supported": ok} for s, p, ok in zip(rows, probs, supported, strict=True)
        ]
        details = {**details, "statements": statements}
        score: float | None = sum(supported) / len(supported)
        verdict = None
        probability = round(min(probs), 6)
    else:
        labels = spec.labels
        verdict = spec.positive if positive else next(v for v in labels[:2] if v != spec.positive)
        score = 1.0 if positive else 0.0
        probability = round(probs[0], 6)
    status = "judged"
    if unsure:  # the leaning is kept in the details; the verdict is left undecided
        details.update(leaning=verdict, leaning_score=score)
        status, verdict, score = "uncertain", None, None
    redecided = j.model_copy(
        update={
            "status": status,
            "verdict": verdict,
            "score": score,
            "probability": probability,
            "cutoff": d.cutoff,
            "details": details,
            "reason": without_uncertain_note(j.reason),
        }
    )
    if not rules:
        return redecided
    # A close call at the adapted cut-off is one too (its noise scaled by the blend's weight on it).
    redecided = mark_close_call(redecided, d.blend.model if d.blend is not None else 1.0)
    if texts is None:
        return redecided
    return mark_reference_restated(redecided, texts.reference, texts.question, texts.answer)


def deciders_of(calibration: Mapping[str, Any], records: Iterable[Judgement], threshold: float) -> dict[str, Decider]:
    """Each prompt variant's decider as the run decided: its cut-off, band and blend (read from the
    report's calibration, else from the saved calibration of the variant's prompt)."""
    out: dict[str, Decider] = {}
    records = list(records)
    for name, cal in calibration.items():
        if not adaptable(name):
            continue
        c = Calibration.load(cal)
        cuts: Mapping[str, float | None] = c.cutoffs or {name: c.cutoff}
        for variant, cut in cuts.items():
            if cut is None:
                continue
            band = c.bands.get(variant)
            blend = c.blends.get(variant)
            if "blends" not in c.model_fields_set:  # a report written before reports kept their blends
                blend = _saved_blend(variant, records)
            out[variant] = Decider(
                Blend.from_dict(blend) if blend else None,
                float(cut),
                (float(band.low), float(band.high)) if band else None,
                threshold if _is_statement_judge(name) else None,
            )
    return out


# How a run's calibration names a band that a saved adaptation set (``judging.use_saved_adaptations``).
ADAPTED_BAND = "adapted to this corpus"


class SavedItem(Model):
    """One labelled answer as a saved adaptation keeps it (``adaptations.json``' ``items``): its
    ``answer_id``, what its decision was made of (the model's P per decision and their word
    features) and its label, so that a later adaptation of the corpus can fit on it again."""

    id: str
    p: list[float]
    f: list[dict[str, float]]
    y: bool

    def item(self) -> Item:
        return Item(tuple(self.p), tuple(self.f), self.y)

    @classmethod
    def of(cls, answer: str, it: Item) -> SavedItem:
        return cls(id=answer, p=[float(x) for x in it.p_model], f=[dict(x) for x in it.features], y=bool(it.positive))


def answer_id(question_id: str, prompt: str, answer: str | None) -> str:
    """A labelled answer as an adaptation keeps it: question, prompt and the hash of the answer's
    words (the same question answered anew is another answer; the same words in other spaces and
    line ends are the same answer, as a labels file reads them); without the text, question and
    prompt."""
    base = json.dumps([question_id, prompt], ensure_ascii=False)
    return f"{base}#{text_hash(' '.join(answer.split()))}" if answer is not None else base


def answer_ids(question_id: str, prompt: str, answer: str | None) -> set[str]:
    """Every id a saved adaptation may hold for this answer: ``answer_id``, and the hash of the
    answer's text as it was before spaces were set aside (an adaptation saved then)."""
    base = json.dumps([question_id, prompt], ensure_ascii=False)
    return {answer_id(question_id, prompt, answer)} | ({f"{base}#{text_hash(answer)}"} if answer is not None else set())


def saved_items(corpus: str, identity: str, variant: str, prompt_hash: str) -> dict[str, Item] | None:
    """The labelled answers the adaptation saved for this corpus, judge model and prompt rests on,
    by ``answer_id``; {} where none is saved, None where one is saved without them (before
    adaptations kept them)."""
    entry = saved_adaptation(corpus, identity, variant, prompt_hash)
    if entry is None:
        return {}
    items = SavedItems.load(entry).items
    return None if items is None else {i.id: i.item() for i in items}


class SavedItems(Model):
    """A saved adaptation's labelled answers (None: saved before adaptations kept them)."""

    items: list[SavedItem] | None = None


def start_again(calibration: Mapping[str, Any], threshold: float) -> dict[str, Decider]:
    """The built-in judges' variants that a saved adaptation decided in this run, each as shipped for
    the run's judge model (``shipped_deciders``: cut-off and blend): where a new adaptation starts,
    so that no label counts twice (the saved adaptation's labels are fitted again with these). The
    band is the shipped one only where the run's band was the adaptation's: a band the config set,
    or none, stays. A criterion is left out: it refits from the model's P alone."""
    again: dict[str, Decider] = {}
    for name, cal in calibration.items():
        c = Calibration.load(cal)
        spec = JUDGES.get(name)
        if not c.adapted or not c.identity or spec is None or spec.criterion is not None:
            continue
        hashes = dict(c.prompt_hashes)

        def prompt_hash(variant: str, hashes: dict[str, str] = hashes) -> str:
            return hashes.get(variant, "")

        shipped = shipped_deciders(c.identity, prompt_hash, threshold)
        for v in c.adapted:
            if v not in shipped:
                continue
            band = c.bands.get(v)
            d = shipped[v]
            if band is None or not (band.source or "").startswith(ADAPTED_BAND):
                d = d.model_copy(update={"band": (float(band.low), float(band.high)) if band else None})
            again[v] = d
    return again


def _is_statement_judge(name: str) -> bool:
    spec = JUDGES.get(name)
    return bool(spec and spec.check and spec.check.reading == "statements")


def _saved_blend(variant: str, records: list[Judgement]) -> dict | None:
    """The saved blend of ``variant``'s prompt (by its hash in the records), for a report written
    before reports kept their blends."""
    hashes = {r.judge_prompt_hash for r in records if variant_of(r) == variant and r.judge_prompt_hash}
    found = [
        e.blend
        for k, e in saved_calibrations().items()
        if k.split("|")[1:] in ([variant, h] for h in hashes) and e.blend
    ]
    return found[0] if len({json.dumps(f, sort_keys=True) for f in found}) == 1 else None


# -- adaptations saved per corpus --------------------------------------------------------------


def store_path() -> Path:
    return cache_root() / FILE


def store_key(corpus: str, identity: str, variant: str, prompt_hash: str) -> str:
    return f"{corpus}|{model_identity(identity)}|{variant}|{prompt_hash}"


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def save_adaptation(
    corpus: str,
    identity: str,
    variant: str,
    prompt_hash: str,
    decider: Decider,
    source: str,
    path: Path | None = None,
    items: Mapping[str, Item] | None = None,
) -> Path:
    """Keep ``decider`` for audits of this corpus with this judge model and prompt, with the
    labelled answers it was fitted on (by ``answer_id``), so that a later adaptation fits on them
    again beside its own."""
    path = path or store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    table = _read(path)
    table[store_key(corpus, identity, variant, prompt_hash)] = {
        **decider.to_dict(),
        "source": source,
        "saved": datetime.now(UTC).isoformat(timespec="seconds"),
        **({"items": [SavedItem.of(i, it).dump() for i, it in sorted(items.items())]} if items is not None else {}),
    }
    write_json(path, dict(sorted(table.items())))
    return path


def saved_adaptation(
    corpus: str, identity: str, variant: str, prompt_hash: str, path: Path | None = None
) -> dict | None:
    """The adaptation saved for this corpus, judge model and prompt (``Decider.to_dict`` plus its
    source and time), or None."""
    return _read(path or store_path()).get(store_key(corpus, identity, variant, prompt_hash))


# -- judge-check: the adapted judges beside the shipped ones ------------------------------------


def shipped_deciders(identity: str, prompt_hash: Callable[[str], str], threshold: float) -> dict[str, Decider]:
    """Each adaptable judge prompt's decider as saved for this judge model (the shipped calibration,
    or the user's ``judge-check --save``): blend, cut-off and band; the default cut-off without one."""
    table = saved_calibrations()
    out = {}
    for name, spec in JUDGES.items():
        if not adaptable(name):
            continue
        for v in spec.variants:
            e = table.get(key(identity, v, prompt_hash(v)))
            if e is None or "cutoff" not in e.model_fields_set:
                # No calibration for this model and prompt: decided as an audit decides it then.
                out[v] = Decider(None, DEFAULT_CUTOFF, None, threshold if _is_statement_judge(name) else None)
                continue
            band = e.band
            out[v] = Decider(
                Blend.from_dict(e.blend) if e.blend else None,
                float(required(e.cutoff, f"the saved calibration of {v}'s cutoff")),
                (float(band[0]), float(band[1])) if band else None,
                threshold if _is_statement_judge(name) else None,
            )
    return out


@dataclasses.dataclass
class AdaptedCheck:
    """A judge on one source of labelled cases, adapted on ``labels`` of them (seeded draws) and
    measured on the rest, beside the same judge as shipped on the same rest."""

    judge: str
    source: str
    labels: int
    draws: int
    cases: int
    shipped_decided: float | None
    shipped_uncertain: float
    adapted_decided: float | None
    adapted_uncertain: float
    # The saved judge was fitted on this source's cases (a judge-check --save on them): its column
    # is measured in sample.
    saved_on_these: bool = False

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def saved_sources(identity: str, prompt_hash: Callable[[str], str], variants: Iterable[str]) -> set[str]:
    """The case sources the saved calibrations of ``variants`` were fitted on (``judge-check --save``'s
    ``sources``); empty for the shipped ones fitted elsewhere."""
    table = saved_calibrations()
    return {s for v in variants if (e := table.get(key(identity, v, prompt_hash(v)))) for s in e.sources or []}


def _measure(deciders: Mapping[str, Decider], items: list[tuple[str, Item]]) -> tuple[int, int, int]:
    right = decided = 0
    for variant, it in items:
        unsure, pos = deciders[variant].decide(it)
        if not unsure:
            decided += 1
            right += int(pos == it.positive)
    return right, decided, len(items)


def adapted_check(
    judge: str,
    source: str,
    items: list[tuple[str, Item]],
    shipped: Mapping[str, Decider],
    labels: int,
    *,
    draws: int = 20,
    seed: int = 0,
    how: str = "both",
) -> AdaptedCheck | None:
    """``judge`` adapted on ``labels`` of the labelled ``items`` ((variant, item) pairs of one
    source), measured on the others, over seeded draws; None when fewer than ``labels`` + 10 items."""
    items = [(v, it) for v, it in items if v in shipped and it.positive is not None]
    if len(items) < labels + 10:
        return None
    rng = np.random.default_rng(seed)
    totals = np.zeros((2, 3))
    for _ in range(draws):
        order = rng.permutation(len(items))
        train, test = [items[i] for i in order[:labels]], [items[i] for i in order[labels:]]
        adapted = dict(shipped)
        for v in {v for v, _ in train}:
            adapted[v] = adapt(shipped[v], [it for w, it in train if w == v], how, judge=judge)
        totals[0] += _measure(shipped, test)
        totals[1] += _measure(adapted, test)
    (sr, sd, sn), (ar, ad, an) = totals
    return AdaptedCheck(
        judge,
        source,
        labels,
        draws,
        len(items),
        float(sr / sd) if sd else None,
        float(1 - sd / sn),
        float(ar / ad) if ad else None,
        float(1 - ad / an),
    )
