"""Files shipped inside the package: the default prompts (``prompts/`` of the source tree,
installed as ``rag_eval.prompts``) and the data a user's audit reads by default (``data/`` of the
source tree, installed as ``rag_eval.bundled``: the demo's questions and the judge-check cases)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def shipped_prompt(relative: str) -> Path:
    """A prompt file or folder shipped with rag-eval, e.g. ``answer.md`` or ``judges``."""
    return Path(str(files("rag_eval.prompts").joinpath(relative)))


def shipped_data(relative: str) -> Path:
    """A data file shipped with rag-eval, e.g. ``python-docs/questions.jsonl`` or ``judge-check/cases.jsonl``."""
    return Path(str(files("rag_eval.bundled").joinpath(relative)))


def resolve_shipped(path: Path) -> Path:
    """``path`` itself, or, when it does not exist and names a shipped data file the way the
    source tree does (``data/python-docs/questions.jsonl``), the installed copy of that file, so
    the repository's paths work from any folder."""
    parts = Path(path).parts
    if Path(path).exists() or "data" not in parts:
        return Path(path)
    rest = parts[len(parts) - parts[::-1].index("data") :]
    shipped = shipped_data(str(Path(*rest))) if rest else None
    return shipped if shipped is not None and shipped.is_file() else Path(path)


def shipped_prompts() -> list[str]:
    """Every prompt file rag-eval ships, by its path under ``prompts/`` (``answer.md``, ``judges/refusal.md``)."""
    root = shipped_prompt("")
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))  # the same names on Windows
