"""MkDocs hook: the configuration reference from the pydantic models of ``rag_eval/config.py`` and
the command-line reference from ``rag_eval.cli.build_parser()``, generated while the site is built.

A page holds ``<!-- generated: config -->`` or ``<!-- generated: cli -->`` where the generated
Markdown goes; nothing of either reference is written by hand, so it cannot drift from the code.
"""

from __future__ import annotations

import argparse
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rag_eval.cli import build_parser
from rag_eval.config import AuditConfig
from rag_eval.retrievers.settings import RETRIEVER_KINDS

CONFIG_MARKER = "<!-- generated: config -->"
CLI_MARKER = "<!-- generated: cli -->"


@dataclass
class _Section:
    """One model's table: every key of the model, found at ``paths`` in a config."""

    model: type[BaseModel]
    paths: list[str] = field(default_factory=list)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (directly, in a union, a list or a dict's values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        out.extend(_models_in(arg))
    return out


def _anchor(model: type[BaseModel]) -> str:
    return model.__name__.lower()


def _type_name(annotation: Any) -> str:
    """A short, readable type: ``int``, ``str | null``, ``list[str]``, ``"heading" | "fixed"``."""
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{_anchor(annotation)})"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return " \\| ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args)
    if origin in (list, tuple, set):
        inner = ", ".join(_type_name(a) for a in args if a is not Ellipsis)
        return f"{origin.__name__}[{inner}]"
    if origin is dict:
        return f"dict[{_type_name(args[0])}, {_type_name(args[1])}]"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        try:
            value = info.default_factory()
        except TypeError:  # a factory of the validated data: computed from the other keys
            return "(computed)"
    elif info.default is PydanticUndefined:
        return "**required**"
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if value is None:
        return "null"
    return f"`{value!r}`".replace("|", "\\|")


def _braces_as_code(text: str) -> str:
    """Every ``{...}`` (nested braces included, with a ``$`` right before it) as a code span, and
    ``<name>`` kept as text: Markdown's attribute lists take a ``{...}`` that ends a paragraph or a
    cell for the element's attributes (``{"a.b@5": ">= 0.6"}`` became ``<td _a.b_5_: ...>``), and
    ``<name>`` for an HTML tag; either way the text was lost."""
    out: list[str] = []
    depth, start, done = 0, 0, 0
    for i, char in enumerate(text):
        if char == "{":
            if depth == 0:
                start = i - 1 if i and text[i - 1] == "$" else i
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                out += [_as_text(text[done:start]), f"`{text[start : i + 1]}`"]
                done = i + 1
    out.append(_as_text(text[done:]))
    return "".join(out)


def _as_text(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _inline(text: str | None) -> str:
    """Text of a docstring or description as one line of Markdown: the code spans as written, the
    rest with its ``{...}`` as code and ``<name>`` as text."""
    spans = " ".join((text or "").split()).replace("``", "`").split("`")
    return "`".join(s if i % 2 else _braces_as_code(s) for i, s in enumerate(spans))


def _cell(text: str | None) -> str:
    """Text for a table cell: :func:`_inline`, with its pipes escaped."""
    return _inline((text or "").replace("|", "\\|"))


def _collect(model: type[BaseModel], path: str, sections: dict[str, _Section]) -> None:
    """Every model reachable from ``model`` (at config path ``path``), in the order first met."""
    section = sections.setdefault(model.__name__, _Section(model))
    if path in section.paths:
        return
    section.paths.append(path)
    for name, info in model.model_fields.items():
        if info.exclude:
            continue
        key = f"{path}.{name}" if path else name
        annotation = info.annotation
        if model is AuditConfig and name == "retrieval":
            _collect(annotation, key, sections)
            for kind in RETRIEVER_KINDS.values():
                _collect(kind, f"retrieval.retrievers.NAME (type: {kind.tag()})", sections)
            continue
        origin = typing.get_origin(annotation)
        if origin is dict:
            key = f"{key}.NAME"
        for sub in _models_in(annotation):
            if sub.__name__ not in {k.__name__ for k in RETRIEVER_KINDS.values()}:
                _collect(sub, key, sections)


def describe(name: str, info: FieldInfo) -> str:
    """A key's description: the field's own, else the docstring of the section it holds, else
    (for a kind's ``type``) the kind; empty where rag_eval/config.py gives none."""
    if info.description:
        return info.description
    models = _models_in(info.annotation)
    if len(models) == 1 and models[0].__doc__ and models[0].__doc__ != BaseModel.__doc__:
        return models[0].__doc__
    args = typing.get_args(info.annotation)
    if name == "type" and typing.get_origin(info.annotation) is Literal and len(args) == 1:
        return f"this kind: {args[0]}"
    return ""


def config_sections() -> dict[str, _Section]:
    """Every model of the config by name, in the order the reference lists them."""
    sections: dict[str, _Section] = {}
    _collect(AuditConfig, "", sections)
    return sections


def config_reference() -> str:
    """The Markdown of every config key: one table per model, with key, type, default, description."""
    lines: list[str] = []
    for section in config_sections().values():
        model = section.model
        title = "The top level" if model is AuditConfig else f"`{section.paths[0]}`"
        lines += [f"## {title} {{ #{_anchor(model)} }}", ""]
        if len(section.paths) > 1:
            lines += ["Found at " + ", ".join(f"`{p}`" for p in section.paths) + ".", ""]
        doc = (model.__doc__ or "").strip()
        if doc and model.__doc__ != BaseModel.__doc__:
            lines += [_inline(doc), ""]
        lines += [f"Model: `{model.__module__}.{model.__name__}`.", ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for name, info in model.model_fields.items():
            if info.exclude:
                continue
            lines.append(
                f"| `{info.alias or name}` | {_type_name(info.annotation)} | {_default(info)} | {_cell(describe(name, info))} |"
            )
        lines.append("")
    return "\n".join(lines)


def config_keys(described: bool | None = None) -> set[str]:
    """Every (model, key) pair the reference lists, as ``Model.key`` (for the tests); only those
    with (True) or without (False) a description when ``described`` is given."""
    return {
        f"{s.model.__name__}.{k}"
        for s in config_sections().values()
        for k, i in s.model.model_fields.items()
        if not i.exclude and (described is None or bool(describe(k, i)) == described)
    }


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        if action.option_strings:
            names = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0 and action.metavar != "":
                metavar = action.metavar or action.dest.upper()
                names += f" `{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
        else:
            names = f"`{action.metavar or action.dest}`"
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{default!r}`"
        rows.append(f"| {names} | {shown} | {_cell(action.help)} |")
    return rows


def cli_commands() -> list[str]:
    """Every subcommand of ``rag-eval``."""
    return list(_subparsers(build_parser()))


def cli_reference() -> str:
    """The Markdown of ``rag-eval`` and every subcommand: usage, description and each option."""
    parser = build_parser()
    lines = ["## `rag-eval`", "", _cell(parser.description), "", "```text", parser.format_usage().strip(), "```", ""]
    lines += ["| option | default | what it does |", "|---|---|---|", *_option_rows(parser), ""]
    for name, sub in _subparsers(parser).items():
        lines += [f"## `rag-eval {name}` {{ #{name} }}", "", _cell(sub.description), ""]
        lines += ["```text", sub.format_usage().strip().replace("usage: ", ""), "```", ""]
        lines += ["| argument | default | what it does |", "|---|---|---|", *_option_rows(sub), ""]
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put the generated references where their markers are."""
    if CONFIG_MARKER in markdown:
        markdown = markdown.replace(CONFIG_MARKER, config_reference())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown
