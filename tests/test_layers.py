"""Imports follow the flow: config -> data -> retrieval -> answers -> judges -> attribution -> labels -> report
-> orchestration -> api/cli. Every module of the package belongs to a layer; an import from a lower
layer to a higher one is allowed only where ``UPWARD`` lists it, and no import cycle exists.

Imports are read with ``ast`` from the source (imports inside functions and under TYPE_CHECKING
count too), so the test needs nothing installed beyond the standard library."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_eval"

LAYERS = (
    "base",  # errors, records' base, statistics, progress: what every layer may use
    "config",
    "data",  # the corpus and test set, the run folder, the model clients
    "retrieval",
    "answers",  # generated, a deployed system's, supplied, traced
    "judges",
    "attribution",
    "labels",  # people's labels: figures and outcome shares re-estimated with them
    "report",
    "orchestration",
    "api",
)

# Each module (or package) of rag_eval by its dotted name under rag_eval, the longest match wins.
MODULES = {
    "__init__": "api",
    "errors": "base",
    "base_records": "base",
    "types": "base",
    "hashing": "base",
    "version": "base",
    "resources": "base",
    "cache_dirs": "base",
    "offline": "base",
    "text": "base",
    "stats": "base",
    "metrics": "base",
    "progress": "base",
    "embedding": "base",
    "registry": "base",  # the one shape of every registry (judges, retriever kinds, sources, systems)
    "json_paths": "base",
    "config": "config",
    "config_base": "config",
    "config_yaml": "config",
    "config_errors": "config",
    # Each stage's settings, beside the stage: the config assembles them.
    "data.settings": "config",
    "retrievers.settings": "config",
    "llm.settings": "config",
    "answers.settings": "config",
    "testgen.settings": "config",
    "judges.settings": "config",
    "report.settings": "config",
    "system.settings": "config",
    "data": "data",
    "rundir": "data",
    "llm": "data",
    "engine": "data",
    "retrievers": "retrieval",
    "answers": "answers",
    "system": "answers",
    "judges": "judges",
    "calibration": "judges",  # how a judge decides: cut-offs, bands, blends, adapted to a corpus
    "testgen": "judges",  # writes a test set with the model and the judges' scoring
    "attribution": "attribution",
    "labels": "labels",
    "report": "report",
    "orchestration": "orchestration",
    "preflight": "orchestration",  # every check a run makes before its first model call
    "api": "api",
    "cli": "api",
    "testing": "api",
    "view": "api",
}

# The imports allowed to reach up a layer, each with why it stays.
UPWARD = {
    # The config validates judge names and roles against the judge registry as it loads.
    ("judges.settings", "judges.registry"),
    # Human labels add their section to the report's records (the report renders it).
    ("labels.human", "report.report_records"),
}
MAX_UPWARD = 4


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The module of rag_eval an absolute import names (``rag_eval.x.y`` -> ``x.y``)."""
    if name == "rag_eval":
        return "__init__"
    if not name.startswith("rag_eval."):
        return None
    return name.removeprefix("rag_eval.")


def imports() -> set[tuple[str, str]]:
    """(importing module, imported module) for every import of rag_eval inside the package."""
    known = _modules()
    edges: set[tuple[str, str]] = set()
    for mod, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                base = _target(node.module, known)
                if base is None:
                    continue
                # ``from rag_eval.x import y``: y is a submodule, or a name of x.
                subs = [f"{base}.{a.name}" if base != "__init__" else a.name for a in node.names]
                targets += [s for s in subs if s in known] or [base]
            elif isinstance(node, ast.Import):
                targets += [t for a in node.names if (t := _target(a.name, known)) is not None]
            edges |= {(mod, t) for t in targets if t != mod}
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in MODULES:
            return MODULES[key]
    raise AssertionError(f"rag_eval.{module} is in no layer: add it to MODULES in tests/test_layers.py")


def _upward() -> set[tuple[str, str]]:
    return {(a, b) for a, b in imports() if LAYERS.index(layer(b)) > LAYERS.index(layer(a))}


def test_every_module_is_in_a_layer():
    for module in _modules():
        assert layer(module) in LAYERS


def test_no_import_reaches_up_a_layer_except_the_listed_ones():
    up = _upward()
    unlisted = sorted(up - UPWARD)
    assert not unlisted, "imports from a lower layer to a higher one: " + ", ".join(f"{a} -> {b}" for a, b in unlisted)
    assert len(UPWARD) <= MAX_UPWARD
    stale = sorted(UPWARD - up)
    assert not stale, f"listed upward imports that no longer exist (remove them from UPWARD): {stale}"


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    # rag_eval/__init__.py loads the API on first use (PEP 562): not an import of the package's own.
    edges = {(a, b) for a, b in imports() if a != "__init__"}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]


def test_an_upward_import_is_found():
    assert LAYERS.index(layer("report.gates")) < LAYERS.index(layer("orchestration.diff"))
    assert ("report.gates", "orchestration.diff") not in imports()
