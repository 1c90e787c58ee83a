"""A probe, not a method of the product: does showing the judge labelled answers help the visible
criterion? (issue 48; run after the fourth fresh part's figures were read, so nothing here is held out.)

``names_api`` asked of the fourth fresh part's answers with the criterion template preceded by
``2k`` answers of the third fresh part and their first readers' verdicts (k yes, k no, drawn among
its short answers with a seed), through the registry's criterion judge and a copy of the shipped
prompts with only ``criterion.md`` changed. Per setting: the AUC of the model's P(pass) against the
fourth part's first readers (the shipped template's beside it, from ``results/judged.jsonl``), and
v4 with 20 and 30 labels drawn within the part on that P (as ``criteria_study.py analyse`` measures
it). The examples are the same for every answer, so they are a prefix the server's cache keeps:
each answer's request evaluates about what the shipped template's does.

    python benchmarks/criteria/examples_probe.py     # about 5 minutes on 2 cores: results/result-examples-probe.json
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import criteria_study as cs  # noqa: E402
import limits  # noqa: E402

from rag_eval.cache_dirs import cache_root  # noqa: E402
from rag_eval.config import load_config  # noqa: E402
from rag_eval.judges.registry import JUDGES, Families, Inputs, criteria_registered  # noqa: E402
from rag_eval.judges.registry import criteria as registered_criteria  # noqa: E402
from rag_eval.judges.scored import ScoredJudges  # noqa: E402
from rag_eval.judges.yesno import REASONS_WANTED  # noqa: E402
from rag_eval.llm.session import LLMSession  # noqa: E402
from rag_eval.llm.settings import LLMConfig  # noqa: E402

NAME = "names_api"
SETTINGS = ((3, 5), (5, 5), (3, 7), (5, 7))  # (k yes and k no, seed)
SHORT = 450  # characters: examples short enough to read


def examples(k: int, seed: int, truth: dict[str, dict[str, bool]]) -> list[dict]:
    """k passing and k failing short answers of the third fresh part, shuffled."""
    rng = random.Random(seed)
    short = [p for p in cs._jsonl(cs.FRESH3_PACKETS) if len(p["answer"]) < SHORT and p["packet_id"] in truth]
    chosen = rng.sample([p for p in short if truth[p["packet_id"]][NAME]], k)
    chosen += rng.sample([p for p in short if not truth[p["packet_id"]][NAME]], k)
    rng.shuffle(chosen)
    return chosen


def prompts_with(shown: list[dict], truth: dict[str, dict[str, bool]], folder: Path) -> Path:
    """A copy of the shipped judge prompts whose criterion template shows ``shown`` first."""
    shutil.copytree(cs.ROOT / "prompts" / "judges", folder)
    blocks = [
        f"Example {i}\nQuestion: {p['question']}\nAnswer: {p['answer'].strip()}\n"
        f"Verdict: {'Yes' if truth[p['packet_id']][NAME] else 'No'}"
        for i, p in enumerate(shown, 1)
    ]
    intro = (
        "Answers a reader has already judged for this criterion, with the reader's verdicts:\n\n"
        + "\n\n".join(blocks)
        + "\n\nNow the answer to judge.\n\n"
    )
    template = (folder / "criterion.md").read_text()
    head, rest = template.split("{inputs}")
    (folder / "criterion.md").write_text(head + intro + "{inputs}" + rest)
    return folder


async def ask(folder: Path, packets: list[dict]) -> dict[str, float | None]:
    """P(pass) of ``NAME`` for each packet, with the prompts of ``folder``."""
    session = LLMSession(cache_root())
    llm = session.llm(LLMConfig(provider="local", repack=True), "criteria examples probe")
    families = Families(ScoredJudges.load(llm, folder), None)
    out: dict[str, float | None] = {}
    try:
        for p in packets:
            x = Inputs(p["packet_id"], "study", p["question"], p["answer"], list(p["contexts"]), None)
            j = await JUDGES[NAME].judge(families, x)
            out[p["packet_id"]] = j.probability if j.status == "judged" else None
    finally:
        await session.aclose()
        session.close()
    return out


def main() -> None:
    load_config(cs.CONFIG)
    REASONS_WANTED.set(False)
    truth_all = cs.labels()
    truth = {pid: t[NAME] for pid, t in truth_all.items()}
    packets = [p for p in cs._jsonl(cs.FRESH4_PACKETS) if p["packet_id"] in truth_all]
    rows_out = []
    with criteria_registered(registered_criteria()):
        rows = [r for r in limits.judged_rows() if r["part"] == "fresh4" and r["criterion"] == NAME]

        def measured(rs: list[dict]) -> dict:
            figs = cs._figures_on(NAME, rs, rs, truth, 20, within=True)
            pick = {o["n"]: o for o in figs if o["how"] == "both"}
            return {
                "auc_model": cs._auc(rs, truth),
                **{
                    f"at_{n}": {
                        k: pick[n][k]
                        for k in ("decided_accuracy_pooled", "uncertain_share", "draws_meeting_target", "auc")
                    }
                    for n in (20, 30)
                },
            }

        shipped = {"setting": "shipped template", **measured(rows)}
        for k, seed in SETTINGS:
            with tempfile.TemporaryDirectory() as tmp:
                folder = prompts_with(examples(k, seed, truth_all), truth_all, Path(tmp) / "judges")
                p = asyncio.run(ask(folder, packets))
            alt = [{**r, "p_pass": p[r["packet_id"]]} for r in rows if p.get(r["packet_id"]) is not None]
            row = {"setting": f"{2 * k} examples, seed {seed}", "k": k, "seed": seed}
            rows_out.append({**row, **measured(alt)})
            print(json.dumps(rows_out[-1]))
    result = {
        "command": "python benchmarks/criteria/examples_probe.py",
        "what": "names_api on the fourth fresh part with labelled answers of the third shown to the judge first",
        "shipped": shipped,
        "rows": rows_out,
        "auc_model_range": [min(r["auc_model"] for r in rows_out), max(r["auc_model"] for r in rows_out)],
        "uncertain_at_20_range": [
            min(r["at_20"]["uncertain_share"] for r in rows_out),
            max(r["at_20"]["uncertain_share"] for r in rows_out),
        ],
        "accuracy_at_20_range": [
            min(r["at_20"]["decided_accuracy_pooled"] for r in rows_out),
            max(r["at_20"]["decided_accuracy_pooled"] for r in rows_out),
        ],
        "measured": {"machine": cs.machine(), "commit": cs.commit()},
    }
    path = cs.RESULTS / "result-examples-probe.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path.relative_to(cs.ROOT)}")


if __name__ == "__main__":
    main()
