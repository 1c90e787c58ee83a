"""Cut-offs for probability-scored judges: fitted on labelled cases, saved per model and prompt.

A judge's decision is P(yes) >= cut-off. ``rag-eval judge-check --save`` fits each cut-off on
labelled cases (the one that maximises balanced accuracy) and saves it under the judge model's
identity (the endpoint, or the local model file's hash) and the judge prompt's hash, in
``<cache>/calibrations.json``. Audits read it from there, else from the calibration shipped for
the embedded model; an edited prompt or another model has none until it is measured.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from rag_eval.base_records import Model, Num, required
from rag_eval.cache_dirs import cache_root
from rag_eval.calibration.lexical import Blend
from rag_eval.config_errors import ValidationDetail
from rag_eval.errors import DataError, Problem
from rag_eval.judges.registry import prompt_files, variants
from rag_eval.rundir import write_json

SHIPPED = "calibration_embedded.json"
# The name suffix of a judge's second blend, for its question asked against every given passage
# (the citations judge's "is the claim supported anywhere?").
EVERY_PASSAGE = "every_passage"


def model_identity(identity: str) -> str:
    """The part of an endpoint's cache identity that a calibration belongs to: for the embedded
    server, the model file and context size (``local:<sha256>:ctx=8192``), not the server's build
    and flags. Those change numerics slightly (``benchmarks/server_flags/server_flags.py`` counts the outputs
    that differ); the response cache keeps them apart, the cut-offs are shared."""
    if not identity.startswith("local:"):
        return identity
    parts = identity.split(":")
    ctx = next((p for p in parts if p.startswith("ctx=")), None)
    return ":".join(parts[:2] + ([ctx] if ctx else []))


def key(identity: str, judge: str, prompt_hash: str) -> str:
    return f"{model_identity(identity)}|{judge}|{prompt_hash}"


def user_path() -> Path:
    return cache_root() / "calibrations.json"


def _read(path) -> dict:
    try:
        return json.loads(Path(str(path)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def user_saved() -> dict:
    """The user's own saved calibrations (``judge-check --save``), without the shipped ones."""
    return _read(user_path())


def saved() -> dict:
    """Every saved calibration: the shipped ones, overridden by the user's."""
    return {**_read(files("rag_eval.calibration").joinpath(SHIPPED)), **_read(user_path())}


class SavedCalibration(Model):
    """One saved calibration (an entry of ``calibrations.json``): a judge prompt's cut-off with its
    band and blend (``judge-check --save``), or only the measured agreement (a Ragas metric's).
    Keys an entry lacks are None; the ones not named here (the cases, the band's figures) are kept."""

    cutoff: Num | None = None
    blend: dict[str, Any] | None = None
    # The citations judge's blend for its question against every given passage (``EVERY_PASSAGE``).
    blend_every_passage: dict[str, Any] | None = None
    band: list[Num] | None = None
    band_target: Num | None = None
    band_out_of_fold: dict[str, Any] | None = None  # judge-check's out-of-fold figures of the judge's bands
    fitted_on: str | None = None
    agreement: dict[str, Any] | None = None
    accuracy_out_of_fold: Num | None = None
    n: Num | None = None
    sources: list[str] | None = None


def saved_calibrations() -> dict[str, SavedCalibration]:
    """Every saved calibration (``saved``), each read as a record; an entry that is not one stops
    with the file and the entry named."""
    user = _read(user_path())
    out = {}
    for k, e in saved().items():
        try:
            out[k] = SavedCalibration.model_validate(e)
        except ValidationError as exc:
            where = user_path() if k in user else files("rag_eval.calibration").joinpath(SHIPPED)
            first = ValidationDetail.model_validate(exc.errors()[0])
            field = ".".join(str(x) for x in first.loc) or "the entry"
            raise DataError(
                Problem(
                    f"{where} (entry {k!r}, {field})",
                    f"not a saved calibration: {first.msg}",
                    "fix or delete the entry, or save it again with `rag-eval judge-check --save`",
                )
            ) from None
    return out


def cutoffs_for(identity: str, scored, overrides: dict[str, float]) -> tuple[dict[str, float], dict[str, bool]]:
    """(cut-off per judge, whether it is calibrated) for every scored judge with a saved calibration
    for this model and its current prompt; the config's ``judges.cutoffs`` win."""
    table = saved_calibrations()
    cutoffs, calibrated = {}, {}
    for judge in prompt_files():
        k = key(identity, judge, scored.prompt_hash(judge))
        entry = table.get(k)
        if entry is not None:
            cutoffs[judge], calibrated[judge] = (
                float(required(entry.cutoff, f"the saved calibration {k}'s cutoff")),
                True,
            )
    for judge, cut in overrides.items():
        # A judge's name sets every variant of it that the config does not name itself.
        for name in [v for v in variants(judge) if v == judge or v not in overrides] or [judge]:
            cutoffs[name], calibrated[name] = float(cut), False
    return cutoffs, calibrated


def blends_for(identity: str, scored) -> dict[str, Blend]:
    """The saved blend of the model's probability with word evidence (``lexical.py``) of every
    scored judge that has one for this model and its current prompt (and, under
    ``<judge>/every_passage``, a second blend for a question asked against every given passage)."""
    table = saved_calibrations()
    out = {}
    for judge in prompt_files():
        entry = table.get(key(identity, judge, scored.prompt_hash(judge))) or SavedCalibration()
        if entry.blend:
            out[judge] = Blend.from_dict(entry.blend)
        if entry.blend_every_passage:
            out[f"{judge}/{EVERY_PASSAGE}"] = Blend.from_dict(entry.blend_every_passage)
    return out


def saved_band(identity: str, judge: str, scored) -> tuple[float, float] | None:
    """The band saved with ``judge``'s calibration for this model and its current prompt, if any."""
    entry = saved_calibrations().get(key(identity, judge, scored.prompt_hash(judge)))
    if entry is None or not entry.band:
        return None
    return float(entry.band[0]), float(entry.band[1])


def agreement_for(identity: str, scored) -> dict[str, dict]:
    """The measured agreement with human labels (accuracy, n, where measured) of each scored judge
    with a saved calibration for this model and its current prompt."""
    table = saved_calibrations()
    out = {}
    for judge in prompt_files():
        entry = table.get(key(identity, judge, scored.prompt_hash(judge))) or SavedCalibration()
        if entry.agreement is not None:
            out[judge] = entry.agreement
        elif entry.accuracy_out_of_fold is not None:
            out[judge] = {
                "accuracy": entry.accuracy_out_of_fold,
                "n": entry.n,
                "measured_on": "judge-check --save (out of fold): " + ", ".join(entry.sources or []),
            }
    return out


def save(identity: str, judge: str, prompt_hash: str, entry: dict, path: Path | None = None) -> Path:
    """Add or replace one calibration in the user's file (or ``path``)."""
    return save_entry(key(identity, judge, prompt_hash), entry, path)


def save_entry(entry_key: str, entry: dict, path: Path | None = None) -> Path:
    """Add or replace the entry ``entry_key`` in the user's file (or ``path``)."""
    path = path or user_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    table = _read(path)
    table[entry_key] = {**entry, "saved": datetime.now(UTC).isoformat(timespec="seconds")}
    write_json(path, dict(sorted(table.items())))
    return path


def ragas_key(identity: str, metric: str, requests: str) -> str:
    """Where a Ragas metric's measured agreement is kept: per model and way of sending its requests
    (``judges.ragas_requests``), since Ragas' prompts are Ragas' own and not edited here."""
    return f"{model_identity(identity)}|{metric}|ragas-{requests}"


def ragas_agreement_for(identity: str, metrics: list[str], requests: str) -> dict[str, dict]:
    """The measured agreement with people of each Ragas metric among ``metrics`` for this model and
    way of sending (``benchmarks/real_answers/ragas_agreement.py --save``)."""
    table = saved_calibrations()
    out = {}
    for m in metrics:
        entry = table.get(ragas_key(identity, m, requests)) or SavedCalibration()
        if entry.agreement is not None:
            out[m] = entry.agreement
    return out


def balanced_accuracy(positive: np.ndarray, predicted: np.ndarray) -> float:
    """Mean of the recall of each class present."""
    positive, predicted = np.asarray(positive, bool), np.asarray(predicted, bool)
    recalls = [np.mean(predicted[positive == c] == c) for c in (True, False) if np.any(positive == c)]
    return float(np.mean(recalls)) if recalls else float("nan")


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, float), 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def candidate_cutoffs(probs: np.ndarray) -> np.ndarray:
    """Every cut-off that separates the cases differently: the midpoints, in log-odds, between
    consecutive distinct probabilities, and one beyond each end. A 0.01 grid on the probability
    scale cannot split 0.9991 from 0.9998, and a small model's verdict probabilities are often
    that close to 0 or 1."""
    z = np.unique(_logit(np.asarray(probs, float).ravel()))
    if len(z) == 0:
        return np.array([0.5])
    mids = np.concatenate([[z[0] - 1.0], (z[:-1] + z[1:]) / 2, [z[-1] + 1.0]])
    return 1.0 / (1.0 + np.exp(-mids))


def fit_cutoff(probs: np.ndarray, positive: np.ndarray, decide=None) -> float:
    """The cut-off that maximises balanced accuracy on these cases: among the cut-offs that reach
    the best value, the middle one in log-odds (so that a held-out case near the edge of the
    training cases is not decided by where exactly one training case fell).

    ``decide(cutoff) -> predicted`` replaces ``probs >= cutoff`` for judges whose decision combines
    several probabilities (a share of statements); ``probs`` then holds all of them."""
    probs = np.asarray(probs, float)
    decide = decide or (lambda c: probs >= c)
    cands = candidate_cutoffs(probs)
    scores = np.array([balanced_accuracy(positive, decide(c)) for c in cands])
    if not np.isfinite(scores).any() or np.nanmax(scores) <= 0.5:
        return 0.5  # nothing separates the classes: the plain reading of the probability
    best = cands[scores >= np.nanmax(scores) - 1e-12]
    z = _logit(best)
    mid = (z.min() + z.max()) / 2
    # The best cut-offs may form more than one run; take the candidate nearest the middle.
    chosen = float(best[np.argmin(np.abs(z - mid))])
    return float(f"{chosen:.6g}")


def out_of_fold(
    n: int, positive: np.ndarray, fit, predict, *, folds: int = 5, seed: int = 0
) -> tuple[np.ndarray, list[float]]:
    """Out-of-fold predictions: each case predicted with a cut-off fitted on the other folds
    (stratified by label, seeded). ``fit(train_idx) -> cutoff``; ``predict(idx, cutoff) -> bools``."""
    fold_of = fold_assignment(positive, folds, seed)
    predicted = np.zeros(n, dtype=bool)
    cutoffs = []
    for f in range(folds):
        test, train = np.flatnonzero(fold_of == f), np.flatnonzero(fold_of != f)
        if len(test) == 0:
            continue
        cut = fit(train)
        cutoffs.append(cut)
        predicted[test] = predict(test, cut)
    return predicted, cutoffs


def fold_assignment(positive: np.ndarray, folds: int = 5, seed: int = 0) -> np.ndarray:
    """The fold of each case: stratified by label, seeded (what ``out_of_fold`` uses)."""
    rng = np.random.default_rng(seed)
    positive = np.asarray(positive, bool)
    fold_of = np.empty(len(positive), dtype=int)
    for c in (True, False):
        idx = np.flatnonzero(positive == c)
        rng.shuffle(idx)
        fold_of[idx] = np.arange(len(idx)) % folds
    return fold_of
