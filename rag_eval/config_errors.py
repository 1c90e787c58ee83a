"""pydantic's validation errors of a config as Problems naming the file, the line and the key."""

from __future__ import annotations

import re
from types import UnionType
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
)

from rag_eval.config_yaml import line_of
from rag_eval.errors import Problem, did_you_mean
from rag_eval.retrievers.settings import RETRIEVER_KINDS, RetrievalConfig
from rag_eval.system.settings import SYSTEM_KINDS


class _Context(BaseModel):
    """What pydantic's error says it expected (a literal's or an enum's values), if it says."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    expected: Any = ""


class ValidationDetail(BaseModel):
    """One of pydantic's error details (its ``ErrorDetails``), read once."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    loc: tuple[int | str, ...]
    msg: str
    type: str
    input: Any = None
    ctx: _Context | None = None


def problems_from(
    exc: ValidationError, path: str, root: yaml.Node | None, raw: dict, model: type[BaseModel]
) -> list[Problem]:
    """Each error of ``model``'s validation as a Problem: ``path:line (key)``, what is wrong, the fix."""
    problems = []
    systems: dict[str, type[BaseModel]] = dict(SYSTEM_KINDS)
    for err in (ValidationDetail.model_validate(e) for e in exc.errors()):
        loc = err.loc
        system_model: type[BaseModel] | None = None
        if loc[:1] == ("system",) and len(loc) > 1 and loc[1] in systems:
            # The system's type tag is in pydantic's location; the user never wrote it.
            system_model, loc = systems[loc[1]], (loc[0], *loc[2:])
        # Discriminated unions add the tag name to the location; users never wrote it.
        shown = [
            str(p)
            for i, p in enumerate(loc)
            if not (loc[:2] == ("retrieval", "retrievers") and i == 3 and p in RETRIEVER_KINDS and loc[-1] != p)
            and p != "[key]"  # a mapping's key: the error is about the name itself
        ]
        dotted = ".".join(shown) or "(top level)"
        line = line_of(root, loc)
        where = f"{path}:{line}" if line else path
        msg = err.msg.removeprefix("Value error, ")
        fix = ""
        if err.type == "extra_forbidden":
            parent = sorted(system_model.model_fields) if system_model and len(loc) == 2 else _parent_fields(model, loc)
            msg = f"unknown key '{loc[-1]}'"
            fix = did_you_mean(str(loc[-1]), parent) if parent else "remove it"
        elif err.type == "missing":
            msg = f"'{loc[-1]}' is required here"
            fix = f"add {loc[-1]}: ..."
        elif err.type in ("literal_error", "enum"):
            allowed = re.findall(r"'([^']*)'", str(err.ctx.expected if err.ctx else ""))
            msg = f"{err.input!r} is not a valid value here"
            fix = did_you_mean(str(err.input), allowed) if allowed else msg
        elif err.type in ("list_type", "dict_type", "int_type", "float_type", "bool_type", "string_type"):
            kind = err.type.split("_")[0]
            msg = f"expected a {dict(dict='mapping', list='list', int='whole number', float='number', bool='true or false', string='string').get(kind, kind)}, got {err.input!r}"
            fix = {
                "list": "write it as a list, e.g. [1, 5, 10]",
                "dict": "write it as a mapping, e.g. {key: value}",
            }.get(kind, "correct the value")
        elif (m := re.match(r"retriever '(.+?)' uses '(.+?)'", msg)) and loc[:1] == ("retrieval",):
            line = line_of(root, ("retrieval", "retrievers", m.group(1), "of"))
            where = f"{path}:{line}" if line else path
            dotted = f"retrieval.retrievers.{m.group(1)}.of"
            head, _, tail = msg.partition("; ")
            msg, fix = head, tail
        elif loc[:1] == ("system",) and (m := re.match(r"\((\w+)\) ", msg)):
            # A check of the whole system section that concerns one key: point at that key's line.
            key = m.group(1)
            line = line_of(root, ("system", key))
            where, dotted = (f"{path}:{line}" if line else path), f"system.{key}"
            msg, _, fix = msg[m.end() :].partition("; ")
        elif loc[:1] == ("system",) and (
            re.match(r"(body|params|inputs)[.\[:]", msg) or " is not an http(s) URL; " in msg
        ):
            msg, _, fix = msg.partition("; ")  # what is wrong; how to fix it
        elif err.type in ("union_tag_invalid", "union_tag_not_found"):
            # The section the user wrote, with the type tag pydantic did not know (or none).
            tag = err.input.get("type") if isinstance(err.input, dict) else None
            if loc[:1] == ("system",):
                msg = f"unknown system type {tag!r}" if tag else "the system has no 'type'"
                fix = "set type to one of them: " + did_you_mean(str(tag or ""), list(systems))
            else:
                msg = f"unknown retriever type {tag!r}" if tag else "retriever has no 'type'"
                fix = "set type to one of them: " + did_you_mean(str(tag or ""), tuple(RETRIEVER_KINDS))
        elif not loc and (m := re.match(r"([a-z_]+(?:\.[a-z_]+)+) ", msg)):
            # A check of the whole config that names one key (generation.retriever '...'): that key's line.
            dotted = m.group(1)
            line = line_of(root, tuple(dotted.split(".")))
            where = f"{path}:{line}" if line else path
            msg, _, fix = msg.partition("; ")
        problems.append(Problem(f"{where} ({dotted})", msg, fix))
    return problems


def _parent_fields(top: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed beside loc[-1], found by walking the models along loc."""
    model: Any = top
    entry: Any = None
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if model is RetrievalConfig and part == "retrievers":
            model = "retrievers"
            continue
        if model == "retrievers":
            model = "retriever"
            continue
        if model == "retriever":
            model = RETRIEVER_KINDS.get(part)
            continue
        if model is _ENTRY:
            model = entry  # a mapping's key (a criterion's name): its value's model
            continue
        field = getattr(model, "model_fields", {}).get(part)
        model = _model_of(getattr(field, "annotation", None)) if field else None
        if get_origin(model) is dict:
            model, entry = _ENTRY, _model_of(get_args(model)[1])
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(f.alias or name for name, f in model.model_fields.items())  # as written in YAML
    return []


_ENTRY = object()  # walking a dict[str, Model] field: the next part is a key


def _model_of(annotation: Any) -> Any:
    """The model of an annotation: ``X | None`` read as X; a dict kept as it is."""
    if get_origin(annotation) in (Union, UnionType):
        models = [a for a in get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return models[0] if len(models) == 1 else annotation
    return annotation
