"""The user's own criteria on real RAG answers, labelled blind (issue 48 item 6).

Three criteria of different kinds (``data/criteria.yaml``), asked of the embedded model's real
answers of ``benchmarks/real_answers`` (those its readers did not label a refusal): one visible in
the answer (``names_api``), one that needs the contexts (``quotes_context``), one a matter of
judgement (``only_asked``). Readers who saw only ``data/labeller.md`` and their packets labelled
every answer for the three before any judge ran on them (``data/labels/``).

Parts, each added after the one before had been looked at: labels are drawn from the
**calibration** part (attrs, structlog) as ``rag-eval label`` draws them, and figures measured on
the **held-out** part (python-dotenv, tinytag, tenacity, tabulate), then on a **fresh** part (parse,
xmltodict, python), a **second fresh** part (marshmallow, the citing prompt), for method v3 a
**third fresh** part (the citing prompt's answers on nine corpora) and for method v4 a **fourth fresh**
part (the plain prompt on new python-docs questions and on marshmallow); on the last two, labels are
drawn within the part and figures measured on its other answers. Each fresh part was labelled blind before any judge
ran on it; the README says what was chosen on which.

    python benchmarks/criteria/criteria_study.py packets          # the blind packets and their halves
    python benchmarks/criteria/criteria_study.py packets-fresh    # the fresh part's, one file per reader
    python benchmarks/criteria/criteria_study.py packets-fresh3 RUNS  # the third fresh part's
    python benchmarks/criteria/criteria_study.py packets-fresh4 RUNS  # the fourth fresh part's
    python benchmarks/criteria/criteria_study.py judge [--fresh|--fresh2|--fresh3|--fresh4]  # the model (cached)
    python benchmarks/criteria/criteria_study.py analyse [--model-alone|--rule v3]  # no model: results/

``judge`` asks each criterion through judge-check's code (``rag_eval.judges.judge_check.predict``:
the registry's criterion judge, its one template, the verdict's probability read from the first
token), one request per criterion and answer with the verdict alone (the request an audit makes for
a decision no reader is shown; a shown reason is one more), and records per criterion the calls,
prompt and generated tokens and model seconds, with the machine's load. ``analyse``: with 0 labels
the criterion as shipped (cut-off 0.5, uncertain band [0.1, 0.9)); with 10, 20 and 30 labels drawn
from the calibration part as ``rag-eval label``'s active draw draws them (whole questions, every
prompt's answer; seeded draws), each criterion adapted as ``rag-eval report --labels F --adapt``
adapts it (``calibration.adaptation.adapt_criterion``); decided verdicts right and the uncertain
share on each measured part, with 95% intervals and how many draws meet the target.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from run_info import commit, machine  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rule_v3  # noqa: E402

from rag_eval.base_records import required  # noqa: E402
from rag_eval.cache_dirs import cache_root  # noqa: E402
from rag_eval.calibration.adaptation import Decider, Item, adapt  # noqa: E402
from rag_eval.calibration.criterion_evidence import criterion_features  # noqa: E402
from rag_eval.config import load_config  # noqa: E402
from rag_eval.judges.registry import JUDGES, Families, Inputs, criteria_registered  # noqa: E402
from rag_eval.judges.registry import criteria as registered_criteria  # noqa: E402
from rag_eval.judges.scored import ScoredJudges  # noqa: E402
from rag_eval.judges.yesno import REASONS_WANTED  # noqa: E402
from rag_eval.labels.active import OTHER_WEIGHT, decision_uncertainty, inclusion_probabilities, systematic_draw  # noqa: E402
from rag_eval.llm.session import LLMSession  # noqa: E402
from rag_eval.llm.settings import LLMConfig  # noqa: E402
from rag_eval.stats import wilson_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results"
REAL = ROOT / "benchmarks" / "real_answers" / "data"
PARTS = {
    "attrs": "calibration",
    "structlog": "calibration",
    "dotenv": "heldout",
    "tinytag": "heldout",
    "tenacity": "heldout",
    "tabulate": "heldout",
}
# The fresh part (added after the first judge run: no method was chosen on it): the real answers of
# three more corpora, labelled blind by three more readers before any judge ran on them.
FRESH = {"parse": "fresh", "xmltodict": "fresh", "python": "fresh"}
FRESH_FILES = (3, 4, 5)  # packets-criteria-<n>.jsonl, one per reader
PACKETS = DATA / "packets-criteria.jsonl"
FRESH_PACKETS = DATA / "packets-criteria-fresh.jsonl"
# A second fresh part (added after a review changed how labels choose a feature): the embedded
# model's answers to every marshmallow question with the citing prompt (benchmarks/citations), as
# its blind packets showed them; labelled blind by two more readers before any judge ran on them.
FRESH2 = {"marshmallow": "fresh2"}
FRESH2_FILES = (6, 7)
FRESH2_PACKETS = DATA / "packets-criteria-fresh2.jsonl"
CITATIONS = ROOT / "benchmarks" / "citations" / "data"
# A third fresh part (added after the method v3 was fixed on every part above, all of which had been
# looked at by then): the embedded model's answers with the citing prompt to the questions of six
# corpora (new runs of benchmarks/citations/make_answers.sh) and the citations study's model answers
# of three more (attrs, parse, xmltodict), no answer that only declines; labelled blind by three more
# readers before any judge ran on them. Labels are drawn within it, figures on its other answers.
FRESH3_CORPORA = ("python", "dotenv", "tinytag", "tenacity", "tabulate", "structlog")
FRESH3_CITED = ("attrs", "parse", "xmltodict")
FRESH3_FILES = (8, 9, 10)
FRESH3_PACKETS = DATA / "packets-criteria-fresh3.jsonl"
FRESH3_KEY = DATA / "packet-key-fresh3.json"
# A fourth fresh part (added after method v4 was fixed on every part above): the plain prompt's
# answers (prompts/answer.md) to the demo's python-docs questions no earlier part holds and to every
# marshmallow question (data/fresh4-*.yaml, hybrid's top 3), no answer that only declines; labelled
# blind by three more readers before any judge ran on them. Labels are drawn within it.
FRESH4_CONFIGS = {"python": DATA / "fresh4-python.yaml", "marshmallow": DATA / "fresh4-marshmallow.yaml"}
FRESH4_FILES = (11, 12, 13)
FRESH4_PACKETS = DATA / "packets-criteria-fresh4.jsonl"
FRESH4_KEY = DATA / "packet-key-fresh4.json"
CONFIG = DATA / "criteria.yaml"
JUDGED = RESULTS / "judged.jsonl"
# A method: the criteria as declared (a config) and the file its decisions are kept in. ``v1``: the
# one-line questions (the first run); ``v2``: each question with the evaluation steps (``steps``)
# that say what counts, as a user who wrote that definition for their labellers declares it.
METHODS = {
    "v1": (CONFIG, JUDGED),
    "v2": (DATA / "criteria-v2.yaml", RESULTS / "judged-v2.jsonl"),
}
USAGE = ("calls", "cache_hits", "prompt_tokens", "prompt_evaluated", "prompt_reused", "completion_tokens", "model_ms")
RESULT = RESULTS / "result.json"
HALVES = 2
MIN_PART = 10  # a criterion is measured once each part has this many judged answers
CRITERIA = ("names_api", "quotes_context", "only_asked")
# One criterion over every answer before the next: the visible one, the one that reads the
# contexts, then the judgement one (on a machine this slow a run stops before the end; the
# criteria the target names come first).
ORDER = (("names_api",), ("quotes_context",), ("only_asked",))
KIND = {"names_api": "visible", "quotes_context": "context", "only_asked": "judgement"}
NS = (0, 10, 20, 30)
HOWS = ("both", "cutoff")
# Issue 48's target, on the held-out part with 20 labels, for the visible and the context criterion.
TARGET_ACCURACY = 0.85
TARGET_UNCERTAIN = 0.30
SHIPPED = Decider(None, 0.5, (0.1, 0.9))  # a criterion before labels: cut at 0.5, the wide default band


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _unrefused(corpora) -> list[dict]:
    rows = []
    for corpus in corpora:
        refused = {r["packet_id"]: r["refused"] for r in _jsonl(REAL / "labels" / f"labels-{corpus}.jsonl")}
        for p in _jsonl(REAL / "packets" / f"packets-{corpus}.jsonl"):
            if not refused[p["packet_id"]]:
                rows.append({k: p[k] for k in ("packet_id", "question", "contexts", "answer")})
    return rows


def packets_fresh() -> None:
    """The fresh part's blind packets (``FRESH``'s corpora), as ``packets`` makes them, in
    ``packets-criteria-fresh.jsonl`` and one file per reader (``FRESH_FILES``); the existing
    packets and labels are not touched."""
    _write_part(_unrefused(FRESH), 4848, FRESH_PACKETS, FRESH_FILES)


def _write_part(rows: list[dict], seed: int, path: Path, files: tuple[int, ...]) -> None:
    """``rows`` shuffled (``seed``) into ``path`` and cut into one packet file per reader."""
    random.Random(seed).shuffle(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    size = -(-len(rows) // len(files))
    for i, n in enumerate(files):
        part = rows[i * size : (i + 1) * size]
        (DATA / f"packets-criteria-{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    print(f"{len(rows)} packets in {path.relative_to(ROOT)}, {len(files)} files of up to {size}")


def packets_fresh2() -> None:
    """The second fresh part's blind packets (``FRESH2``): the model answers of the citations
    study's marshmallow packets (question, contexts as shown, answer), one file per reader."""
    key = json.loads((CITATIONS / "packet-key.json").read_text())
    rows = [
        {k: p[k] for k in ("packet_id", "question", "contexts", "answer")}
        for p in _jsonl(CITATIONS / "packets-marshmallow.jsonl")
        if key[p["packet_id"]]["kind"] == "model"
    ]
    _write_part(rows, 4849, FRESH2_PACKETS, FRESH2_FILES)


def packets_fresh3(runs: Path) -> None:
    """The third fresh part's blind packets (``FRESH3_*``): the model answers of the newest citing
    run of each of ``FRESH3_CORPORA`` under ``runs`` and the citations study's model packets of
    ``FRESH3_CITED``, rendered as the citations study's packets render them, without the answers
    that only decline (``make_packets.declines``); one file per reader and the key."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "citations"))
    import make_packets as mp

    newest = mp.newest_runs([d for d in runs.iterdir() if d.is_dir()])
    rows, key = [], {}
    for name in FRESH3_CORPORA:
        c = mp.Corpus(name, newest[name])
        for i, g in enumerate(sorted(c.answers, key=lambda g: g["question_id"]), 1):
            if g.get("error") or not g.get("answer") or mp.declines(g["answer"], c.given(g["contexts"])):
                continue
            pid = f"f3-{name[:3]}-{i:03d}"
            p = mp.packet(c, g["question_id"], g["contexts"], g["answer"])
            rows.append({"packet_id": pid, **{k: p[k] for k in ("question", "contexts", "answer")}})
            key[pid] = f"{name}/{g['question_id']}"
    cited = json.loads((CITATIONS / "packet-key.json").read_text())
    for name in FRESH3_CITED:
        for p in _jsonl(CITATIONS / f"packets-{name}.jsonl"):
            k = cited[p["packet_id"]]
            # declines() reads the contexts only to resolve citations; whether a sentence makes a
            # claim is the sentence's own, so the packet's rendered contexts are not needed here.
            if k["kind"] != "model" or mp.declines(p["answer"], []):
                continue
            rows.append({k2: p[k2] for k2 in ("packet_id", "question", "contexts", "answer")})
            key[p["packet_id"]] = f"{name}/{k['question_id']}"
    FRESH3_KEY.write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")
    _write_part(rows, 4850, FRESH3_PACKETS, FRESH3_FILES)


def packets_fresh4(runs: Path) -> None:
    """The fourth fresh part's blind packets (``FRESH4_*``): the answers of the newest run of each
    of ``FRESH4_CONFIGS`` under ``runs``, the contexts numbered as the model saw them, without the
    answers that only decline; one file per reader and the key."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "citations"))
    import make_packets as mp

    from rag_eval.answers.generation import number_contexts
    from rag_eval.api import as_config
    from rag_eval.data.inputs import load_inputs

    rows, key = [], {}
    for name, path in FRESH4_CONFIGS.items():
        cfg = as_config(path)
        inputs = load_inputs(cfg)
        chunks = {c.id: c for c in inputs.corpus.chunks}
        questions = {q.id: q for q in inputs.questions}
        run = sorted(runs.glob(f"{cfg.name}-*"))[-1]
        answers = sorted(_jsonl(run / "generation.jsonl"), key=lambda g: g["question_id"])
        for i, g in enumerate(answers, 1):
            given = [chunks[c] for c in g["contexts"]]
            if g.get("error") or not g.get("answer") or mp.declines(g["answer"], given):
                continue
            pid = f"f4-{name[:3]}-{i:03d}"
            shown = [
                number_contexts([ch], cfg.generation.max_context_chars).replace("[1]", f"[{n}]", 1)
                for n, ch in enumerate(given, 1)
            ]
            rows.append(
                {
                    "packet_id": pid,
                    "question": questions[g["question_id"]].question,
                    "contexts": shown,
                    "answer": g["answer"],
                }
            )
            key[pid] = f"{name}/{g['question_id']}"
    FRESH4_KEY.write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")
    _write_part(rows, 4851, FRESH4_PACKETS, FRESH4_FILES)


def packet_key() -> dict[str, str]:
    """Each packet's corpus and question (``corpus/question id``): the real answers', the
    citations study's and the third and fourth fresh parts' packets."""
    key = json.loads((REAL / "packet-key.json").read_text())
    cited = json.loads((CITATIONS / "packet-key.json").read_text())
    fresh3 = json.loads(FRESH3_KEY.read_text()) if FRESH3_KEY.exists() else {}
    fresh4 = json.loads(FRESH4_KEY.read_text()) if FRESH4_KEY.exists() else {}
    return {**key, **{pid: f"{k['corpus']}/{k['question_id']}" for pid, k in cited.items()}, **fresh3, **fresh4}


def packets() -> None:
    """The blind packets: every answer of the parts' corpora that its reader did not label a
    refusal, with what a reader of the criteria needs (question, contexts as the model saw them,
    answer) and nothing of any judge, prompt or reference; shuffled, and cut in halves, one per
    labeller."""
    rows = _unrefused(PARTS)
    random.Random(48).shuffle(rows)
    PACKETS.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    size = -(-len(rows) // HALVES)
    for i in range(HALVES):
        half = rows[i * size : (i + 1) * size]
        (DATA / f"packets-criteria-{i + 1}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in half), encoding="utf-8"
        )
    print(f"{len(rows)} packets in {PACKETS.relative_to(ROOT)}, {HALVES} halves of up to {size}")


def labels() -> dict[str, dict[str, bool]]:
    """The readers' labels by packet: each criterion's yes (passes) or no; only the packets labelled
    so far (no judge runs on an answer before its label exists)."""
    found: dict[str, dict[str, bool]] = {}
    for path in sorted((DATA / "labels").glob("labels-*.jsonl")):
        for r in _jsonl(path):
            found[r["packet_id"]] = {c: str(r[c]).strip().lower() == "yes" for c in CRITERIA}
    if not found:
        raise SystemExit("no packet is labelled yet: no judge runs before its labels exist")
    return found


def _corpus(packet_id: str, key: dict[str, str]) -> str:
    return key[packet_id].split("/")[0]


def _usage(session: LLMSession) -> dict[str, float]:
    totals: dict[str, float] = dict.fromkeys(USAGE, 0.0)
    for u in session.usage():
        for k in USAGE:
            totals[k] += u.get(k) or 0
    return totals


async def _judge_all(rows: list[dict], done: set[tuple[str, str]], write, stop_at: float | None, order=None) -> str:
    """Each criterion on each answer not ``done``: the two short criteria first, back to back on each
    answer (they see the same inputs, so the second reuses the prompt's beginning in the server's
    cache, as in an audit), then the one that reads the contexts; through the
    registry's judge (``ScoredJudges.verdict``: the one template, the verdict's probability); each
    request's usage measured around it. Returns the model's identity."""
    session = LLMSession(cache_root())
    llm = session.llm(LLMConfig(provider="local", repack=True), "criteria study")
    scored = ScoredJudges.load(llm, None)
    families = Families(scored, None)
    try:
        for group in order or ORDER:
            for p in rows:
                for name in group:
                    if (p["packet_id"], name) in done:
                        continue
                    if stop_at is not None and time.time() > stop_at:
                        return llm.identity
                    before, load, t0 = _usage(session), os.getloadavg()[0], time.perf_counter()
                    x = Inputs(p["packet_id"], "study", p["question"], p["answer"], list(p["contexts"]), None)
                    j = await JUDGES[name].judge(families, x)
                    after = _usage(session)
                    write(
                        {
                            "packet_id": p["packet_id"],
                            "criterion": name,
                            "p_pass": j.probability if j.status == "judged" else None,
                            "error": j.error if j.status != "judged" else None,
                            "usage": {k: round(after[k] - before[k], 3) for k in USAGE},
                            "wall_seconds": round(time.perf_counter() - t0, 2),
                            "load_average_1m": round(load, 2),
                        }
                    )
    finally:
        await session.aclose()
        session.close()
    return llm.identity


def judge(
    minutes: float | None,
    method: str = "v1",
    fresh: str | None = None,
    corpora: set[str] | None = None,
    criteria: tuple[str, ...] = CRITERIA,
) -> None:
    """Each criterion (of ``criteria``) on every packet (the study's, or the fresh part's with
    ``fresh``; only those of ``corpora`` when given), once: the response cache keeps every request,
    so a rerun continues where one stopped. Appended to the method's judged file; ``minutes``: stop
    asking after this long (what was asked is kept)."""
    config, judged_file = METHODS[method]
    labelled = labels()
    load_config(config)  # registers the criteria
    # The verdict alone: what an audit asks of a decision whose reason no reader is shown.
    REASONS_WANTED.set(False)
    parts = {"fresh": FRESH_PACKETS, "fresh2": FRESH2_PACKETS, "fresh3": FRESH3_PACKETS, "fresh4": FRESH4_PACKETS}
    every = _jsonl(parts.get(fresh or "", PACKETS))
    key = packet_key()
    if corpora:
        every = [p for p in every if _corpus(p["packet_id"], key) in corpora]
    # Only the answers already labelled: no judge runs on an answer before its label exists.
    rows = [p for p in every if p["packet_id"] in labelled]
    print(f"{len(rows)} of {len(every)} packets labelled: judging those ({method}: {', '.join(criteria)})")
    RESULTS.mkdir(parents=True, exist_ok=True)
    done = {(r["packet_id"], r["criterion"]) for r in _jsonl(judged_file)} if judged_file.exists() else set()
    stop_at = time.time() + 60 * minutes if minutes else None
    order = [tuple(c for c in group if c in criteria) for group in ORDER]
    with judged_file.open("a", encoding="utf-8") as fh:

        def write(record: dict) -> None:
            fh.write(json.dumps(record) + "\n")
            fh.flush()

        identity = asyncio.run(_judge_all(rows, done, write, stop_at, [g for g in order if g]))
    judged = _jsonl(judged_file)
    info = {"model": identity, "machine": machine(), "commit": commit(), "judged": len(judged)}
    run_file = judged_file.with_name(judged_file.stem + "-run.json")
    run_file.write_text(json.dumps(info, indent=1) + "\n")
    print(f"{len(judged)} decisions in {judged_file.relative_to(ROOT)}")


# -- the analysis (no model) ---------------------------------------------------------------------


def _item(r: dict, positive: bool | None = None) -> Item:
    """The decision as an adaptation reads it: the model's P(pass) and the answer's word features
    (``criterion_evidence``, as the audit keeps them; none with ``--model-alone``)."""
    return Item((float(r["p_pass"]),), (r.get("features") or {},), positive)


def _features(judged: list[dict]) -> None:
    """Each decision's word features, from its packet and the inputs its criterion sees (what the
    criterion judge keeps in an audit)."""
    paths = (PACKETS, FRESH_PACKETS, FRESH2_PACKETS, FRESH3_PACKETS, FRESH4_PACKETS)
    packets = {p["packet_id"]: p for path in paths if path.exists() for p in _jsonl(path)}
    for r in judged:
        p = packets[r["packet_id"]]
        sees = required(JUDGES[r["criterion"]].criterion, "a criterion").sees
        r["features"] = criterion_features(sees, p["answer"], p["question"], p["contexts"])


def draw(rows: list[dict], n_answers: int, seed: int) -> set[str]:
    """The labelled packets: whole questions of the calibration part drawn as ``rag-eval label``'s
    active draw draws them (inclusion probabilities that favour the questions whose decisions are
    least sure, every prompt's answer to a drawn question labelled), until about ``n_answers``."""
    questions = sorted({r["question"] for r in rows})
    per_q = len({r["packet_id"] for r in rows}) / len(questions)
    n_q = min(len(questions), max(1, round(n_answers / per_q)))
    score = dict.fromkeys(questions, 0.0)
    for r in rows:
        record = {"status": "judged", "probability": r["p_pass"], "cutoff": SHIPPED.cutoff}
        unsure, _ = SHIPPED.decide(_item(r))
        u = 0.5 if unsure else decision_uncertainty(record) or 0.0
        # A criterion decides no outcome: it counts half, as in the audit's draw.
        score[r["question"]] = max(score[r["question"]], OTHER_WEIGHT * u)
    pi = inclusion_probabilities(np.sqrt([score[q] for q in questions]), n_q)
    chosen = {q for q, c in zip(questions, systematic_draw(pi, seed), strict=True) if c}
    return {r["packet_id"] for r in rows if r["question"] in chosen}


def evaluate(d: Decider, rows: list[dict], truth: dict[str, bool]) -> tuple[int, int, int]:
    """(decided right, decided, all) of ``d`` on ``rows``."""
    right = decided = 0
    for r in rows:
        unsure, passes = d.decide(_item(r))
        if not unsure:
            decided += 1
            right += int(passes == truth[r["packet_id"]])
    return right, decided, len(rows)


def _auc(rows: list[dict], truth: dict[str, bool]) -> float | None:
    pos = [r["p_pass"] for r in rows if truth[r["packet_id"]]]
    neg = [r["p_pass"] for r in rows if not truth[r["packet_id"]]]
    if not pos or not neg:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def _figures(counts: list[tuple[int, int, int]]) -> dict:
    """Decided accuracy and uncertain share over the draws: their means (and the accuracy of every
    draw's decisions pooled), the 95% interval of one draw's mean counts (draws re-measure the same
    held-out answers), the 5-95% range of draws, and how many draws meet the target."""
    right, dec, total = (np.array([c[i] for c in counts], float) for i in range(3))
    acc = np.where(dec > 0, right / np.maximum(dec, 1), np.nan)
    unc = 1 - dec / np.maximum(total, 1)
    r1, d1, t1 = (int(round(x.mean())) for x in (right, dec, total))
    acc_ci = wilson_interval(r1, d1) if d1 else None
    unc_ci = wilson_interval(t1 - d1, t1)
    meets = np.nan_to_num(acc, nan=0.0) >= TARGET_ACCURACY
    return {
        "draws": len(counts),
        "decided_accuracy": float(np.nanmean(acc)) if np.isfinite(acc).any() else None,
        # Every draw's decisions pooled: the estimate the interval below is centred on.
        "decided_accuracy_pooled": float(right.sum() / dec.sum()) if dec.sum() else None,
        # Draws whose own figures meet issue 48's target (decided right >= 0.85, <= 30% uncertain).
        "draws_meeting_target": int(np.sum(meets & (unc <= TARGET_UNCERTAIN))),
        "decided_accuracy_ci": [acc_ci.ci_low, acc_ci.ci_high] if acc_ci else None,
        "decided_accuracy_low": acc_ci.ci_low if acc_ci else None,
        "decided_accuracy_high": acc_ci.ci_high if acc_ci else None,
        "decided_accuracy_range": [float(np.nanpercentile(acc, 5)), float(np.nanpercentile(acc, 95))]
        if np.isfinite(acc).any()
        else None,
        "uncertain_share": float(unc.mean()),
        "uncertain_share_ci": [unc_ci.ci_low, unc_ci.ci_high],
        "uncertain_share_range": [float(np.percentile(unc, 5)), float(np.percentile(unc, 95))],
        "decided": float(dec.mean()),
        "measured_on": int(t1),
    }


def _usage_of(records: list[dict]) -> dict:
    """A criterion's cost per answer: its requests (asked, or answered from the response cache) and,
    over the requests the model answered, prompt tokens (and those the server evaluated rather than
    reused from the cache), generated tokens and model seconds, with the machine's load meanwhile."""
    asked = [r for r in records if r["usage"]["calls"] > 0]
    n = max(len(asked), 1)
    return {
        "answers": len(records),
        "requests_per_answer": sum(r["usage"]["calls"] + r["usage"]["cache_hits"] for r in records)
        / max(len(records), 1),
        "asked": len(asked),
        "prompt_tokens_per_answer": sum(r["usage"]["prompt_tokens"] for r in asked) / n,
        "prompt_evaluated_per_answer": sum(r["usage"]["prompt_evaluated"] for r in asked) / n,
        "completion_tokens_per_answer": sum(r["usage"]["completion_tokens"] for r in asked) / n,
        "model_seconds_per_answer": sum(r["usage"]["model_ms"] for r in asked) / 1000 / n,
        "load_average_1m": float(np.mean([r["load_average_1m"] for r in asked])) if asked else None,
    }


def _v2_check(truth_all: dict[str, dict[str, bool]]) -> dict:
    """Method v2 (the questions with steps) against v1 on the calibration answers v2 judged: the
    AUC of each one's P(pass) on the same answers."""
    path = METHODS["v2"][1]
    if not path.exists():
        return {}
    v2 = {(r["packet_id"], r["criterion"]): r["p_pass"] for r in _jsonl(path) if r["p_pass"] is not None}
    v1 = {(r["packet_id"], r["criterion"]): r["p_pass"] for r in _jsonl(JUDGED) if r["p_pass"] is not None}
    out = {}
    for name in CRITERIA:
        both = [pid for (pid, c) in v2 if c == name and (pid, c) in v1 and pid in truth_all]
        if len(both) < MIN_PART:
            continue
        truth = {pid: truth_all[pid][name] for pid in both}
        out[name] = {
            "answers": len(both),
            "auc_v1": _auc([{"packet_id": pid, "p_pass": v1[(pid, name)]} for pid in both], truth),
            "auc_v2": _auc([{"packet_id": pid, "p_pass": v2[(pid, name)]} for pid in both], truth),
        }
    return out


# The rule a criterion is adapted by: None, the package's (method v4); "v3", method v3's rule frozen
# in rule_v3.py, to compare both on the parts judged after v3 was replaced (``analyse --rule v3``).
RULES = {"v3": rule_v3.adapt_criterion}
RULE: str | None = None

# Where figures are measured. Labels are drawn from the calibration part, except on the third and
# fourth fresh parts (``WITHIN``), where they are drawn from the part itself as a user labels their own
# answers, the figures on its other answers; ``<part>_cross`` measures such a part with the
# calibration part's labels and ``<part>_<corpus>`` each of its corpora alone.
EVAL_PARTS = ("heldout", "fresh", "fresh2", "fresh3", "fresh4")
WITHIN = ("fresh3", "fresh4")


def _figures_on(
    name: str, cal: list[dict], held: list[dict], truth: dict[str, bool], draws: int, within: bool = False
) -> list[dict]:
    """One criterion's figures on ``held`` with 0, 10, 20 and 30 labels drawn from ``cal`` (from
    ``held`` itself with ``within``, each draw measured on the answers it did not label)."""
    out = []
    for n in NS:
        for how in ("shipped",) if n == 0 else HOWS:
            counts, cutoffs, bands, at_cut, aucs, features, caught = [], [], [], [], [], [], []
            for d in range(1 if n == 0 else draws):
                source = held if within else cal
                chosen = draw(source, n, seed=[48, n, d]) if n else set()
                items = [_item(r, truth[r["packet_id"]]) for r in source if r["packet_id"] in chosen]
                decider = (
                    (RULES[RULE](SHIPPED, items, how) if RULE else adapt(SHIPPED, items, how, judge=name))
                    if n
                    else SHIPPED
                )
                measured = [r for r in held if r["packet_id"] not in chosen]
                counts.append(evaluate(decider, measured, truth))
                # Failing answers (by the labels) decided fail: what a criterion is there to catch.
                failing = [r for r in measured if not truth[r["packet_id"]]]
                caught.append((sum(decider.decide(_item(r)) == (False, False) for r in failing), len(failing)))
                # How the decided probability ranks the answers (the blend's, where labels chose a feature).
                decided_p = [{**r, "p_pass": decider.probs(_item(r))[0]} for r in measured]
                aucs.append(_auc(decided_p, truth))
                # The features the blend weighs (v4: every one that separates the labels; none: no blend).
                features.extend((decider.notes or {}).get("features") or ["none"])
                # Every answer decided at the cut-off, no band: what the band buys.
                at_cut.append(
                    evaluate(decider.model_copy(update={"band": None}), measured, truth)[0] / max(len(measured), 1)
                )
                cutoffs.append(decider.cutoff)
                bands.append(decider.band)
            out.append(
                {
                    "criterion": name,
                    "kind": KIND[name],
                    "n": n,
                    "how": how,
                    **_figures(counts),
                    "accuracy_without_band": float(np.mean(at_cut)),
                    # Means over the draws: failing answers decided fail, and failing answers measured.
                    "failures_caught": float(np.mean([c for c, _ in caught])),
                    "failing_answers": float(np.mean([f for _, f in caught])),
                    "auc": float(np.mean([a for a in aucs if a is not None]))
                    if any(a is not None for a in aucs)
                    else None,
                    # In how many draws the blend weighed each feature ("none": no blend).
                    "features_chosen": {f: features.count(f) for f in sorted(set(features))},
                    "features_chosen_text": ", ".join(
                        f"{f} in {features.count(f)}"
                        for f in sorted(set(features), key=lambda f: (-features.count(f), f))
                    ),
                    "cutoff_median": float(np.median(cutoffs)),
                    "band_median": [float(np.median([b[0] for b in bands])), float(np.median([b[1] for b in bands]))],
                }
            )
    return out


def analyse(
    draws: int,
    method: str = "v1",
    model_alone: bool = False,
    eval_parts: tuple[str, ...] = EVAL_PARTS,
    rule: str | None = None,
) -> dict:
    """Per criterion, method and n: the figures of each evaluation part judged so far (see the
    module's docstring); the first run's held-out part keeps its keys (``at_20``, ``at_0``), the
    fresh part's are ``at_20_fresh`` and ``at_0_fresh``. ``model_alone``: the labels calibrate the
    model's P(pass) alone (no word feature; at the aim of the config). The earlier methods' figures
    are kept in their own files (``results/result-before-v3.json``, ``results/result-v3.json``),
    written by this function at the commits the README names. ``rule``: adapt by that frozen rule
    (``RULES``) instead of the package's."""
    global RULE
    config, _ = METHODS[method]
    load_config(config)  # registers the criteria as declared
    before, RULE = RULE, rule
    try:
        with criteria_registered(registered_criteria()):
            out = _analyse(draws, method, model_alone, eval_parts)
    finally:
        RULE = before
    if rule:
        out["command"] += f" --rule {rule}"
        out["rule"] = rule
    return out


def _analyse(draws: int, method: str, model_alone: bool, eval_parts: tuple[str, ...]) -> dict:
    """``analyse`` with the criteria registered."""
    config, judged_file = METHODS[method]
    judged = _jsonl(judged_file)
    if not model_alone:
        _features(judged)
    info = judged_file.with_name(judged_file.stem + "-run.json")  # written when a judge run ends
    run = json.loads(info.read_text()) if info.exists() else {"model": None, "machine": None, "commit": None}
    key = packet_key()
    truth_all = labels()
    every_part = {**PARTS, **FRESH, **FRESH2}
    fresh3 = set(json.loads(FRESH3_KEY.read_text())) if FRESH3_KEY.exists() else set()
    fresh4 = set(json.loads(FRESH4_KEY.read_text())) if FRESH4_KEY.exists() else set()
    for r in judged:
        corpus = _corpus(r["packet_id"], key)
        part = "fresh3" if r["packet_id"] in fresh3 else "fresh4" if r["packet_id"] in fresh4 else every_part[corpus]
        r.update(corpus=corpus, part=part, question=f"{corpus}/{key[r['packet_id']].split('/')[-1]}")
    results, parts, measured, not_measured = [], {}, [], {}
    for name in CRITERIA:
        rows = [r for r in judged if r["criterion"] == name and r["p_pass"] is not None and r["packet_id"] in truth_all]
        truth = {pid: t[name] for pid, t in truth_all.items()}
        by_part = {part: [r for r in rows if r["part"] == part] for part in ("calibration", *eval_parts)}
        parts[name] = {
            part: {
                "answers": len(mine),
                "pass_share": sum(truth[r["packet_id"]] for r in mine) / len(mine),
                "auc": _auc(mine, truth),
                "agreement_at_0_5": sum((r["p_pass"] >= 0.5) == truth[r["packet_id"]] for r in mine) / len(mine),
            }
            for part, mine in by_part.items()
            if mine
        }
        evaluated = [p for p in eval_parts if len(by_part[p]) >= MIN_PART]
        if len(by_part["calibration"]) < MIN_PART or not evaluated:
            # Judged on too few answers so far (the run stopped): no figure.
            not_measured[name] = {part: len(mine) for part, mine in by_part.items()}
            continue
        measured.append(name)
        for part in evaluated:
            results += [
                {**r, "part": part}
                for r in _figures_on(name, by_part["calibration"], by_part[part], truth, draws, part in WITHIN)
            ]
            if part in WITHIN:  # the same part with the calibration part's labels, for comparison
                results += [
                    {**r, "part": f"{part}_cross"}
                    for r in _figures_on(name, by_part["calibration"], by_part[part], truth, draws)
                ]
                # Each corpus of the part alone, as a user labels one corpus (labels drawn within it).
                for corpus in sorted({r["corpus"] for r in by_part[part]}):
                    mine = [r for r in by_part[part] if r["corpus"] == corpus]
                    if len(mine) >= 40:
                        results += [
                            {**r, "part": f"{part}_{corpus}"}
                            for r in _figures_on(name, mine, mine, truth, draws, within=True)
                        ]
    for r in results:
        r["meets_target"] = (
            r["decided_accuracy"] is not None
            and r["decided_accuracy"] >= TARGET_ACCURACY
            and r["uncertain_share"] <= TARGET_UNCERTAIN
        )
    usage = {name: _usage_of([r for r in judged if r["criterion"] == name]) for name in CRITERIA}
    v2 = _v2_check(truth_all) if method == "v1" else {}
    # The fresh part was judged in one run of its own (the others over several, on a loaded machine).
    usage_fresh = {
        name: _usage_of([r for r in judged if r["criterion"] == name and r["part"] == "fresh"])
        for name in CRITERIA
        if any(r["criterion"] == name and r["part"] == "fresh" for r in judged)
    }
    # The third and fourth fresh parts were each judged in one run of their own.
    usage_fresh3, usage_fresh4 = (
        {
            name: _usage_of([r for r in judged if r["criterion"] == name and r["part"] == part])
            for name in CRITERIA
            if any(r["criterion"] == name and r["part"] == part for r in judged)
        }
        for part in ("fresh3", "fresh4")
    )
    by = {(r["criterion"], r["how"], r["n"], r["part"]): r for r in results}
    picks = {}
    suffixes = (("heldout", ""), ("fresh", "_fresh"), ("fresh2", "_fresh2"))
    later = tuple((f"{p}{x}", f"_{p}{x}") for p in ("fresh3", "fresh4") for x in ("", "_cross"))
    later += tuple(
        (p, f"_{p}") for p in sorted({r["part"] for r in results}) if p.startswith("fresh4_") and p != "fresh4_cross"
    )
    for part, suffix in (*suffixes, *later):
        for n, label in ((20, "at_20"), (0, "at_0"), (30, "at_30")):
            how = "both" if n else "shipped"
            picks[label + suffix] = {name: by[(name, how, n, part)] for name in measured if (name, how, n, part) in by}
    return {
        "command": f"python benchmarks/criteria/criteria_study.py analyse --method {method} --draws {draws}"
        + (" --model-alone" if model_alone else ""),
        "method": method,
        "word_features": not model_alone,
        "config": str(config.relative_to(ROOT)),
        "model": run["model"],
        "parts": {corpus: part for corpus, part in every_part.items()},
        # The third fresh part is new answers of these corpora (by packet, not by corpus).
        "parts_fresh3": sorted({_corpus(pid, key) for pid in fresh3}),
        "parts_fresh4": sorted({_corpus(pid, key) for pid in fresh4}),
        "answers": len(truth_all),
        "judged": {name: sum(r["criterion"] == name and r["p_pass"] is not None for r in judged) for name in CRITERIA},
        "targets": {"decided_accuracy": TARGET_ACCURACY, "uncertain_share": TARGET_UNCERTAIN, "n": 20},
        "labels": parts,
        "usage": usage,
        "usage_fresh": usage_fresh,
        "usage_fresh3": usage_fresh3,
        "usage_fresh4": usage_fresh4,
        "v2_calibration": v2,
        "judged_on": {"machine": run["machine"], "commit": run["commit"]},
        "results": results,
        "measured": measured,
        "not_measured": not_measured,
        **picks,
        "analysed": {"machine": machine(), "commit": commit()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("packets", help="write the blind packets and their halves")
    sub.add_parser("packets-fresh", help="write the fresh part's blind packets, one file per reader")
    sub.add_parser("packets-fresh2", help="write the second fresh part's blind packets, one file per reader")
    f3 = sub.add_parser("packets-fresh3", help="write the third fresh part's blind packets, one file per reader")
    f3.add_argument("runs", type=Path, help="the folder of the citing runs (benchmarks/citations/make_answers.sh)")
    f4 = sub.add_parser("packets-fresh4", help="write the fourth fresh part's blind packets, one file per reader")
    f4.add_argument("runs", type=Path, help="the folder of the runs of data/fresh4-*.yaml")
    j = sub.add_parser("judge", help="the criteria on every answer (embedded model, cached): results/judged.jsonl")
    j.add_argument("--minutes", type=float, help="stop asking after this long (a rerun continues)")
    j.add_argument("--method", choices=sorted(METHODS), default="v1", help="the criteria as declared (METHODS)")
    j.add_argument("--fresh", action="store_const", const="fresh", dest="fresh", help="the fresh part's packets")
    j.add_argument(
        "--fresh2", action="store_const", const="fresh2", dest="fresh", help="the second fresh part's packets"
    )
    j.add_argument(
        "--fresh3", action="store_const", const="fresh3", dest="fresh", help="the third fresh part's packets"
    )
    j.add_argument(
        "--fresh4", action="store_const", const="fresh4", dest="fresh", help="the fourth fresh part's packets"
    )
    j.add_argument("--corpora", help="only these corpora, comma-separated")
    j.add_argument("--criteria", help="only these criteria, comma-separated")
    a = sub.add_parser("analyse", help="no model: the held-out figures with 0-30 labels, results/result.json")
    a.add_argument("--draws", type=int, default=20, help="seeded label draws per n")
    a.add_argument("--method", choices=sorted(METHODS), default="v1", help="the criteria as declared (METHODS)")
    a.add_argument(
        "--parts", default=",".join(EVAL_PARTS), help="the parts measured (heldout, fresh, fresh2, fresh3, fresh4)"
    )
    a.add_argument("--model-alone", action="store_true", help="labels calibrate the model's P alone (no word feature)")
    a.add_argument("--rule", choices=sorted(RULES), help="adapt by this frozen rule (v3: method v3's, rule_v3.py)")
    args = parser.parse_args(argv)
    if args.command == "packets":
        packets()
    elif args.command == "packets-fresh":
        packets_fresh()
    elif args.command == "packets-fresh2":
        packets_fresh2()
    elif args.command == "packets-fresh3":
        packets_fresh3(args.runs)
    elif args.command == "packets-fresh4":
        packets_fresh4(args.runs)
    elif args.command == "judge":
        judge(
            args.minutes,
            args.method,
            args.fresh,
            set(args.corpora.split(",")) if args.corpora else None,
            tuple(args.criteria.split(",")) if args.criteria else CRITERIA,
        )
    else:
        result = analyse(args.draws, args.method, args.model_alone, tuple(args.parts.split(",")), args.rule)
        out = RESULT.with_name(
            "result"
            + ("" if args.method == "v1" else f"-{args.method}")
            + ("-model-alone" if args.model_alone else "")
            + (f"-rule-{args.rule}" if args.rule else "")
            + ".json"
        )
        out.write_text(json.dumps(result, indent=1) + "\n")
        for name, by_part in result["labels"].items():
            print(
                name,
                ", ".join(
                    f"{part}: AUC {f['auc'] or float('nan'):.2f} ({f['answers']})" for part, f in by_part.items()
                ),
            )
        for r in result["results"]:
            if r["how"] in ("both", "shipped"):
                acc = r["decided_accuracy"]
                print(
                    f"{r['part']:8} {r['criterion']:15} n={r['n']:2}: decided right {'-' if acc is None else f'{acc:.2f}'}, "
                    f"uncertain {r['uncertain_share']:.2f}, cut-off {r['cutoff_median']:.2f}"
                )
        print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
