"""A system's runs over time, read from the run folders (no other storage): each finished run's
headline figures with their intervals, and what changed since the run before (config keys, the
corpus, the test set, the rag-eval version)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rag_eval.errors import DataError, Problem, did_you_mean
from rag_eval.rundir import read_jsonl

IGNORED_KEYS = ("report", "gates")  # where runs are written and what they must pass change no figure


def headline_figures(summary: dict, report: dict) -> dict[str, dict]:
    """``{figure name: {value, ci_low, ci_high, n}}``: each retriever's headline metrics (the
    report's table), each prompt's judged figures and its share of ``ok`` answers."""
    out: dict[str, dict] = {}
    table = (report.get("retrieval") or {}).get("table") or []
    for name, figs in (summary.get("retrieval") or {}).items():
        for m in table or list(figs):
            if m in figs:
                out[f"retrieval.{name}.{m}"] = figs[m]
    for prompt, figs in (summary.get("generation") or {}).items():
        for m, e in figs.items():
            if isinstance(e, dict) and "value" in e:
                out[f"generation.{prompt}.{m}"] = e
    for prompt, shares in (summary.get("attribution") or {}).items():
        if "ok" in shares:
            out[f"attribution.{prompt}.ok"] = shares["ok"]
    return {k: {x: e.get(x) for x in ("value", "ci_low", "ci_high", "n")} for k, e in out.items()}


def config_changes(before: dict, after: dict, prefix: str = "", depth: int = 3) -> list[str]:
    """Dotted keys whose values differ between two saved configs (down to ``depth`` levels)."""
    out = []
    for key in sorted(set(before) | set(after), key=str):
        if not prefix and key in IGNORED_KEYS:
            continue
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict) and depth > 1:
            out += config_changes(a, b, f"{name}.", depth - 1)
        else:
            out.append(name)
    return out


def _read_run(path: Path) -> dict | None:
    """One run folder's entry, or None when it is not a finished run."""
    try:
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        report = json.loads((path / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        status = json.loads((path / "status.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError):
        status = None
    if status not in (None, "finished"):
        return {"run": path.name, "unfinished": True}
    try:
        config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    ids = sorted({r["question_id"] for r in read_jsonl(path / "retrieval.jsonl")})
    ids = ids or sorted({r["question_id"] for r in (report.get("attribution") or {}).get("rows", [])})
    return {
        "run": path.name,
        "path": str(path),
        "name": summary.get("name", path.name),
        "created": summary.get("created", ""),
        "rag_eval_version": summary.get("rag_eval_version"),
        "corpus": summary.get("corpus") or {},
        "test_set": {**(summary.get("test_set") or {}), "ids": ids},
        "config": config,
        "figures": headline_figures(summary, report),
    }


def changes_between(prev: dict, cur: dict) -> list[dict]:
    """What changed from one run to the next: ``{kind, what}`` with kind config, corpus, test_set
    or version."""
    out = []
    keys = config_changes(prev["config"], cur["config"])
    if keys:
        out.append({"kind": "config", "what": "config: " + ", ".join(keys)})
    pc, cc = prev["corpus"], cur["corpus"]
    if pc.get("fingerprint") != cc.get("fingerprint"):
        out.append(
            {
                "kind": "corpus",
                "what": f"corpus: {pc.get('chunks', '?')} -> {cc.get('chunks', '?')} chunks ({cc.get('source', '?')})",
            }
        )
    pi, ci = set(prev["test_set"]["ids"]), set(cur["test_set"]["ids"])
    if pi != ci:
        out.append(
            {
                "kind": "test_set",
                "what": f"test set: {len(ci)} questions (+{len(ci - pi)} new, -{len(pi - ci)} gone)",
            }
        )
    if prev.get("rag_eval_version") != cur.get("rag_eval_version"):
        out.append(
            {"kind": "version", "what": f"rag-eval {prev.get('rag_eval_version')} -> {cur.get('rag_eval_version')}"}
        )
    return out


def collect_history(runs_dir: Path, *, config: str | None = None) -> dict:
    """``{"runs_dir", "systems": {config name: [run entries in time order]}, "unfinished": [...]}``;
    each entry has its headline figures and ``changes`` since the run before it."""
    if not runs_dir.is_dir():
        raise DataError(
            Problem(str(runs_dir), "the runs folder does not exist", "give the folder holding run folders (e.g. runs/)")
        )
    entries, unfinished = [], []
    for path in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        e = _read_run(path)
        if e is None:
            continue
        if e.get("unfinished"):
            unfinished.append(e["run"])
        else:
            entries.append(e)
    names = sorted({e["name"] for e in entries})
    if not entries:
        raise DataError(
            Problem(
                str(runs_dir),
                "no finished run folder here (a run folder holds summary.json)",
                "give the folder that report.out names (e.g. runs/), after rag-eval run or retrieval",
            )
        )
    if config is not None and config not in names:
        raise DataError(
            Problem(f"--config {config}", f"no run of config '{config}' in {runs_dir}", did_you_mean(config, names))
        )
    systems: dict[str, list[dict]] = {}
    for name in [config] if config else names:
        runs = sorted((e for e in entries if e["name"] == name), key=lambda e: (e["created"], e["run"]))
        for i, e in enumerate(runs):
            e["changes"] = changes_between(runs[i - 1], e) if i else []
        systems[name] = runs
    return {"runs_dir": str(runs_dir), "systems": systems, "unfinished": unfinished}


def _fmt(e: dict | None) -> str:
    if not e or e.get("value") is None:
        return "–"
    return f"{e['value']:.2f} [{e['ci_low']:.2f}, {e['ci_high']:.2f}]"


def history_text(hist: dict, columns: int = 4) -> str:
    """The history for the terminal: per config, one line per run with its first headline figures,
    and what changed."""
    lines = []
    for name, runs in hist["systems"].items():
        figs = list(dict.fromkeys(f for r in runs for f in r["figures"]))
        shown = figs[:columns]
        lines.append(
            f"{name}: {len(runs)} runs"
            + (f" (all {len(figs)} figures in the HTML page)" if len(figs) > columns else "")
        )
        lines.append("  " + "  ".join(["#  ", f"{'created':<25}", *(f"{f:<24}" for f in shown)]))
        for i, r in enumerate(runs, 1):
            lines.append(
                "  "
                + "  ".join([f"{i:<3}", f"{r['created']:<25}", *(f"{_fmt(r['figures'].get(f)):<24}" for f in shown)])
            )
            lines.append(f"       {r['run']}")
            for c in r["changes"]:
                lines.append(f"       changed: {c['what']}")
    if hist["unfinished"]:
        lines.append(f"unfinished runs left out: {', '.join(hist['unfinished'])}")
    return "\n".join(lines)
