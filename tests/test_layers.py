"""Imports follow the flow, counted by folder: every import between two layers goes down ``LAYERS``.

A layer is a folder of the package (``retrievers/``, ``judges/``, ...), named in ``LAYERS`` or mapped
to one in ``FOLDERS``; a top-level module sits in the layer ``TOP_LEVEL`` gives it. One rule places
modules apart from their folder: a stage's ``settings.py`` (its part of the config) and
``registry.py`` (the names the config may choose from) are the config layer, which ``config.py``
assembles; they import only leaf modules and other settings. There is no list of allowed
exceptions: an import from a lower layer to a higher one fails the test, and so does any import
cycle between modules.

Imports are read with ``ast`` from the source (imports inside functions and under TYPE_CHECKING
count too), so the test needs nothing installed beyond the standard library."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_eval"

# Bottom up; docs/reference/development.md ("How the code is laid out") states the same order.
LAYERS = (
    "leaf",  # top-level modules every layer may use: errors, records' base, types, statistics, the registry shape
    "config",  # config.py and config_*.py, and each stage's settings.py and registry.py
    "llm",  # the one client layer to the models, and the engine that runs calls
    "data",  # the corpus, the test set, the run folder
    "retrievers",
    "answers",  # generated from the prompts, supplied
    "system",  # answers from a deployed system or its traces
    "calibration",  # how a probability-scored judge decides: cut-offs, bands, blends, adaptation
    "judges",
    "testgen",  # a test set written with the model and the judges' scoring
    "attribution",
    "labels",  # people's labels: which to draw, read back, the prediction-powered estimators
    "report",
    "orchestration",  # the pipeline over answer sources, comparisons, diffs, history
    "api",  # api.py, cli.py, commands/, view/, testing.py
)

# Folders that are not a layer of their own.
FOLDERS = {"view": "api", "commands": "api"}

# A stage's declarations, read by the config as it loads (module names inside any folder).
DECLARATIONS = ("settings", "registry")

TOP_LEVEL = {
    "errors": "leaf",
    "base_records": "leaf",
    "types": "leaf",
    "hashing": "leaf",
    "version": "leaf",
    "resources": "leaf",
    "cache_dirs": "leaf",
    "offline": "leaf",
    "text": "leaf",
    "words": "leaf",
    "stats": "leaf",
    "metrics": "leaf",
    "progress": "leaf",
    "embedding": "leaf",
    "json_paths": "leaf",  # the JSON paths of a system's replies, parsed when its config loads
    "registry": "leaf",  # the one shape of every registry (judges, retriever kinds, sources, systems)
    "config": "config",
    "config_base": "config",
    "config_yaml": "config",
    "config_errors": "config",
    "engine": "llm",
    "rundir": "data",
    "preflight": "orchestration",  # every check a run makes before its first model call
    "api": "api",
    "cli": "api",
    "testing": "api",
    "__init__": "api",
}


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
    """The layer of a module of rag_eval (dotted name under rag_eval): its folder's, or for a
    top-level module the one ``TOP_LEVEL`` gives it; a stage's settings and registry are the config's."""
    parts = module.split(".")
    if len(parts) == 1 and not (PACKAGE / module).is_dir():
        if module not in TOP_LEVEL:
            raise AssertionError(f"rag_eval/{module}.py is in no layer: add it to TOP_LEVEL in tests/test_layers.py")
        return TOP_LEVEL[module]
    if len(parts) > 1 and parts[-1] in DECLARATIONS:
        return "config"
    folder = FOLDERS.get(parts[0], parts[0])
    if folder not in LAYERS:
        raise AssertionError(
            f"rag_eval/{parts[0]}/ is in no layer: add it to LAYERS or FOLDERS in tests/test_layers.py"
        )
    return folder


def upward(edges: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The imports that reach from a lower layer to a higher one."""
    return sorted((a, b) for a, b in edges if LAYERS.index(layer(b)) > LAYERS.index(layer(a)))


def test_every_module_is_in_a_layer():
    for module in _modules():
        assert layer(module) in LAYERS


def test_no_import_reaches_up_a_layer():
    # rag_eval/__init__.py loads the API on first use (PEP 562); it is the top layer anyway.
    up = upward(imports())
    assert not up, f"{len(up)} imports from a lower layer to a higher one: " + ", ".join(
        f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, b in up
    )


def test_no_two_layers_import_each_other():
    pairs = {(layer(a), layer(b)) for a, b in imports() if layer(a) != layer(b)}
    both = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs})
    assert both == [], f"layers that import each other: {both}"


def test_a_stages_settings_sit_in_the_config_layer():
    assert layer("retrievers.settings") == layer("judges.registry") == layer("config") == "config"
    assert layer("retrievers.bm25") == "retrievers" and layer("view.app") == "api"
    assert LAYERS.index(layer("config")) < LAYERS.index(layer("data.corpus"))


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
    assert upward({("report.gates", "orchestration.diff"), ("report.gates", "judges.registry")}) == [
        ("report.gates", "orchestration.diff")
    ]
    assert upward({("judges.settings", "judges.scored")}) == [("judges.settings", "judges.scored")]
    assert ("report.gates", "orchestration.diff") not in imports()
