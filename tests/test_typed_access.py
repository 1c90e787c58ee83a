"""Records are read by attribute: the package's string-key look-ups (``x["key"]``) only go down.

Issue 38 counted 807 of them when the stages handed each other dicts; reading ``Report``,
``QuestionRecord``, ``Judgement`` and the other records instead brought the count to the ceiling
below. A change that needs a new look-up on a dict that has a record should read the record; one
that removes look-ups lowers the ceiling to the new count.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_eval"

# The count when this test was written: lower it as look-ups go, never raise it.
CEILING = 234


def string_key_lookups(path: Path) -> list[int]:
    """The lines of a module's subscripts whose key is a string constant (loads and stores)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    )


def test_the_count_counts_loads_and_stores_of_string_keys(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('d = {}\nd["a"] = 1\nx = d["a"] + d.get("b", 0)\ny = d[k] + t[0]\nz = e["s"]["t"]\n')
    # A store and a load of d["a"], each level of a nested look-up; not .get, a variable key or an index.
    assert string_key_lookups(module) == [2, 3, 5, 5]


def test_string_key_lookups_stay_under_the_ceiling() -> None:
    by_file = {p: len(string_key_lookups(p)) for p in sorted(PACKAGE.rglob("*.py"))}
    total = sum(by_file.values())
    worst = sorted(by_file.items(), key=lambda kv: -kv[1])[:5]
    assert total <= CEILING, (
        f"{total} string-key look-ups in rag_eval/ (ceiling {CEILING}); read the record's attribute instead "
        f"of a dict key where a record exists. Most: {', '.join(f'{p.relative_to(PACKAGE)} {n}' for p, n in worst)}"
    )
