"""Installed-looking plug-ins for tests: a distribution's modules and its ``.dist-info`` (with
``entry_points.txt``) in a folder on sys.path, which is what ``pip install`` of a plug-in leaves."""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_eval.registry import Registry


def install(folder: Path, monkeypatch: pytest.MonkeyPatch, entry_points: str, modules: dict[str, str]) -> None:
    """The distribution ``rag-eval-plugin`` with ``modules`` (name: source) and ``entry_points``
    (the text of entry_points.txt), importable until the test ends."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    info = folder / "rag_eval_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rag-eval-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    monkeypatch.syspath_prepend(str(folder))
    for name in modules:
        monkeypatch.delitem(sys.modules, name, raising=False)


@contextlib.contextmanager
def plugins_read_again(registry: Registry) -> Iterator[None]:
    """``registry`` reads the installed plug-ins again on its next lookup; after the block it holds
    what it held before and reads none again (the test's plug-in stays on sys.path until teardown)."""
    before = registry.so_far()
    registry._plugins_loaded = False
    try:
        yield
    finally:
        for name in [n for n in registry.so_far() if n not in before]:
            del registry[name]
        registry._plugins_loaded = True
