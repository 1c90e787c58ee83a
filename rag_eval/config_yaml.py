"""A config's YAML read with the line of every key, and the errors of a file that is no config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rag_eval.errors import ConfigError, Problem


def line_of(node: yaml.Node | None, path: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at a key path, or of its nearest parent."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    node, line = v, k.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def looks_like_test_set(text: str) -> bool:
    """A JSON/JSONL file of questions, given where a config belongs."""
    first = text.lstrip()[:1]
    return first in ("{", "[") and '"question"' in text[:2000] and "retrieval" not in text[:2000]


def read_yaml(path: Path) -> tuple[yaml.Node | None, dict]:
    """A config file's node tree (for the line of a key) and its mapping; ConfigError naming the file
    and line for a file that cannot be read, is a test set, is not YAML or is not a mapping."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        here = sorted(str(p) for p in [*Path.cwd().glob("*.yaml"), *Path.cwd().glob("configs/*.yaml")])[:5]
        raise ConfigError(
            Problem(
                str(path),
                f"cannot read the config: {exc.strerror or exc}",
                f"check the path (relative to {Path.cwd()})"
                + (
                    f"; YAML files here: {', '.join(here)}"
                    if here
                    else "; a config is a YAML file like configs/demo.yaml"
                ),
            )
        ) from None
    if path.suffix.lower() in (".jsonl", ".json", ".csv", ".parquet") or looks_like_test_set(text):
        raise ConfigError(
            Problem(
                str(path),
                "this is a test set (questions), not an audit config",
                f"write a config that names it, e.g. test_set: {{path: {path.name}}} (see configs/demo.yaml), "
                "and give the config to rag-eval",
            )
        )
    try:
        root = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark, opened = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
        context = getattr(exc, "context", "") or ""
        if opened is not None and "flow" in context and (mark is None or opened.line != mark.line):
            bracket = "{" if "mapping" in context else "["
            raise ConfigError(
                Problem(
                    f"{path}:{opened.line + 1}",
                    f"a '{bracket}' opened on line {opened.line + 1} is not closed (the parser noticed on line "
                    f"{mark.line + 1 if mark else '?'})",
                    f"close it with '{'}' if bracket == '{' else ']'}' on line {opened.line + 1}",
                )
            ) from None
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(
            Problem(
                where, f"not valid YAML: {getattr(exc, 'problem', exc)}", "check indentation and quoting on that line"
            )
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(
            Problem(
                str(path),
                "the config must be a YAML mapping (name:, corpus:, ...)",
                'start from the README\'s config ("Five minutes on your own documents"); every key is in the '
                "configuration reference (docs/reference/config.md)",
            )
        )
    return root, raw
