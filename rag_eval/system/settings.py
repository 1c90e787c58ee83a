"""The settings of a system where it runs (``system:``): a deployed HTTP service, a LlamaIndex query
engine or a Haystack pipeline (each a :class:`SystemKind` in ``SYSTEM_KINDS``), and the defaults a
config with a system gets."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Optional, Union, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    Field,
    field_validator,
    model_validator,
)

from rag_eval.config_base import Settings
from rag_eval.json_paths import parse_path
from rag_eval.registry import Registry

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
TEMPLATE_NAMES = ("question", "question_id")


def _template_strings(value: Any, at: str) -> Iterator[tuple[str, str]]:
    """Every string of a templated JSON value, with where it is (``body.query``)."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _template_strings(v, f"{at}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _template_strings(v, f"{at}[{i}]")


def check_placeholders(value: Any, at: str) -> Any:
    """ValueError for a ``{name}`` in a template that is not a known placeholder (a misspelt
    ``{questoin}`` would be sent as it is written)."""
    for where, text in _template_strings(value, at):
        for name in _PLACEHOLDER.findall(text):
            if name not in TEMPLATE_NAMES:
                close = difflib.get_close_matches(name, TEMPLATE_NAMES, n=1, cutoff=0.5)
                hint = f"did you mean {{{close[0]}}}? " if close else ""
                raise ValueError(
                    f"{where}: unknown placeholder {{{name}}} (it would be sent as written); "
                    f"{hint}known: {{question}}, {{question_id}}"
                )
    return value


def asks_question(*values: Any) -> bool:
    """Some string of the templates holds ``{question}``."""
    return any("{question}" in text for v in values for _, text in _template_strings(v, ""))


def _check_url(url: str) -> str:
    if _ENV_REF.match(url):
        return url  # the scheme comes from the environment: checked when the run starts
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        fix = f"write url: http://{url}" if "://" not in url else "write e.g. url: https://rag.example.com/ask"
        raise ValueError(f"'{url}' is not an http(s) URL; {fix}")
    return url


_SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie", re.IGNORECASE)


class SystemKind(Settings):
    """The config of one kind of system, tagged in the YAML by its ``type`` (a Literal).

    ``client`` names the class that asks it, ``package.module:Class`` (imported when it runs) or the
    class itself; every kind's client is built the same way, ``Client(cfg, cache=..., where=...)``
    (``cache``: the response cache, ``where``: the config's place, for errors), and has ``await
    ask(question) -> SystemReply`` and ``await aclose()``, and may keep ``usage`` (its model calls,
    ``rag_eval.llm`` Usage; ``system/http.py``). A new
    kind is one such class registered in ``SYSTEM_KINDS`` (``@SYSTEM_KINDS.register``) and its client.
    """

    client: ClassVar[str | type]
    if TYPE_CHECKING:  # each kind's own Literal, declared by the kind
        type: str

    @classmethod
    def tag(cls) -> str:
        """Its ``type``."""
        return get_args(cls.model_fields["type"].annotation)[0]


class HttpSystemConfig(SystemKind):
    """A deployed RAG service called once per question (``system: {type: http, ...}``)."""

    client: ClassVar[str] = "rag_eval.system.http:HttpSystem"

    type: Literal["http"]
    url: str = Field(description="the endpoint; ${VAR} is replaced by the environment variable VAR")
    method: Literal["POST", "GET"] = Field(
        "POST", description="POST sends body as JSON (and params); GET sends only params, in the query string"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description='e.g. {Authorization: "Bearer ${MY_KEY}"}; secrets only as ${VAR}'
    )
    body: Any = Field(
        default_factory=lambda: {"question": "{question}"},
        description="the JSON body; {question} and {question_id} are replaced in every string",
    )
    params: dict[str, str] = Field(default_factory=dict, description="query-string parameters, templated like body")
    answer: str = Field("$.answer", description="JSON path of the answer in the response")
    contexts: str | None = Field(None, description="JSON path of the passage texts it used, e.g. $.sources[*].text")
    ids: str | None = Field(None, description="JSON path of the passages' chunk ids, e.g. $.sources[*].id")
    scores: str | None = Field(None, description="JSON path of the passages' scores (shown, not used to rank)")
    concurrency: int = Field(4, ge=1, description="requests in flight to the service at once")
    max_retries: int = Field(3, ge=0, description="retries on 429, 5xx, timeouts and connection errors")
    backoff_s: float = Field(0.5, ge=0, description="first retry's wait, doubled each retry (Retry-After wins)")
    timeout_s: float = Field(
        60, gt=0, description="seconds to wait for one response (then retried); raise it for a slow service"
    )
    cache: bool = Field(True, description="keep successful responses in the response cache (a rerun calls nothing)")

    @field_validator("answer", "contexts", "ids", "scores")
    @classmethod
    def _json_path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return _check_url(value)

    @field_validator("body", "params")
    @classmethod
    def _known_placeholders(cls, value: Any, info) -> Any:
        return check_placeholders(value, info.field_name)

    @model_validator(mode="after")
    def _asks_the_question(self) -> HttpSystemConfig:
        where = ("params",) if self.method == "GET" else ("body", "params")
        if not asks_question(*(getattr(self, w) for w in where)):
            raise ValueError(
                f"({where[0]}) the request never sends the question: no {{question}} placeholder in "
                f'{" or ".join(where)}; write e.g. {where[0]}: {{query: "{{question}}"}} '
                "(placeholders: {question}, {question_id})"
            )
        return self

    @model_validator(mode="after")
    def _secrets_by_env(self) -> HttpSystemConfig:
        for name, value in self.headers.items():
            if _SECRET_HEADER.search(name) and not _ENV_REF.search(value):
                raise ValueError(
                    f"header {name} holds a literal value; secrets come from the environment only: write "
                    f'{name}: "Bearer ${{MY_KEY_ENV}}" and export MY_KEY_ENV'
                )
        if not self.ids and not self.contexts:
            raise ValueError(
                "give ids (JSON path of the returned chunk ids) or contexts (of the passage texts), or both: "
                "without them the system's retrieval cannot be measured"
            )
        return self


class LlamaIndexSystemConfig(SystemKind):
    """A LlamaIndex query engine built by ``factory()``: its response is the answer, its source
    nodes the passages."""

    client: ClassVar[str] = "rag_eval.system.framework_systems:LlamaIndexSystem"

    type: Literal["llamaindex"]
    factory: str = Field(description="package.module:function() -> a LlamaIndex query engine (or index)")
    id_key: str | None = Field(None, description="node.metadata key holding the chunk id; default: the node id")
    concurrency: int = Field(1, ge=1, description="questions asked at once (in threads)")


class HaystackSystemConfig(SystemKind):
    """A Haystack pipeline built by ``factory()``, run once per question."""

    client: ClassVar[str] = "rag_eval.system.framework_systems:HaystackSystem"

    type: Literal["haystack"]
    factory: str = Field(description="package.module:function() -> a Haystack Pipeline")
    inputs: dict[str, Any] = Field(
        description='the data of Pipeline.run, templated like body: e.g. {retriever: {query: "{question}"}, '
        'prompt_builder: {question: "{question}"}}'
    )
    answer: str = Field("$.llm.replies[0]", description="JSON path of the answer in the pipeline's outputs")
    documents: str = Field("$.retriever.documents", description="JSON path of the documents it used")
    id_key: str | None = Field(None, description="Document.meta key holding the chunk id; default: the document id")
    concurrency: int = Field(1, ge=1, description="questions asked at once (in threads)")

    @field_validator("answer", "documents")
    @classmethod
    def _json_path(cls, value: str) -> str:
        parse_path(value)
        return value

    @field_validator("inputs")
    @classmethod
    def _known_placeholders(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_placeholders(value, "inputs")
        if not asks_question(value):
            raise ValueError(
                "(inputs) the pipeline never gets the question: no {question} placeholder in inputs; write e.g. "
                'inputs: {retriever: {query: "{question}"}} (placeholders: {question}, {question_id})'
            )
        return value


# Every system kind by its type: the config's union, its error messages and the client that asks
# it read this (``SYSTEM_KINDS.register(XSystemConfig)``, also a class decorator; an installed
# plug-in's entry point in ``rag_eval.systems``). A change rebuilds the config's schema (below).
SYSTEM_KINDS: Registry[type[SystemKind]] = Registry("system type", lambda kind: kind.tag(), group="rag_eval.systems")
for _kind in (HttpSystemConfig, LlamaIndexSystemConfig, HaystackSystemConfig):
    SYSTEM_KINDS.register(_kind)


def _system_union() -> Any:
    # The kinds registered so far, plug-ins not read: the union is first made while the package imports.
    return Annotated[Union[tuple(SYSTEM_KINDS.so_far().values())], Field(discriminator="type")]  # noqa: UP007


if TYPE_CHECKING:  # a union made at run time is no type to a type checker: every kind is a SystemKind
    SystemConfig = SystemKind
else:
    SystemConfig = _system_union()  # the shipped kinds; the config's system field takes registered ones too

# The models with a ``system`` field (the whole config), rebuilt when a kind is registered.
HOLDERS: list[type[BaseModel]] = []
_SHIPPED = tuple(SYSTEM_KINDS.so_far())


def held_by(model: type[BaseModel]) -> None:
    """``model``'s ``system`` field takes every kind registered, now and later (a kind registered
    before the model was made, e.g. by a module imported before rag_eval.config, too)."""
    HOLDERS.append(model)
    if tuple(SYSTEM_KINDS.so_far()) != _SHIPPED:
        _rebuild_systems()


def _rebuild_systems() -> None:
    system: Any = Optional[_system_union()]  # noqa: UP045
    for holder in HOLDERS:
        holder.model_fields["system"].annotation = system
        holder.model_rebuild(force=True)


SYSTEM_KINDS.changed = _rebuild_systems


def with_system_defaults(data: Any) -> Any:
    """A config with ``system:`` gets the retriever ``system`` and generation on it unless it names them."""
    if not isinstance(data, dict) or not data.get("system"):
        return data
    data = dict(data)
    retrieval = dict(data.get("retrieval") or {})
    retrievers = dict(retrieval.get("retrievers") or {})
    if not any(isinstance(r, dict) and r.get("type") == "system" for r in retrievers.values()):
        if "system" in retrievers:
            raise ValueError("retrieval.retrievers.system is taken by another retriever; rename it")
        retrievers = {"system": {"type": "system"}, **retrievers}
    retrieval["retrievers"] = retrievers
    data["retrieval"] = retrieval
    name = next(n for n, r in retrievers.items() if isinstance(r, dict) and r.get("type") == "system")
    generation = dict(data.get("generation") or {})
    generation.setdefault("retriever", name)
    generation.setdefault("prompts", {"system": "(the deployed system)"})
    data["generation"] = generation
    return data
